package flatpay_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/flatpay"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

// A flat fee's payment is written in its call's transaction, found by its request id, moved
// only from the states named, and listed by state and age; on both databases.
func TestFlatPaymentLife(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		storetest.Account(t, st, "a")
		rows := flatpay.New(st)
		now := time.Now().UTC().Truncate(time.Second)
		p := &flatpay.FlatPayment{RequestID: "r1", AccountID: "a", IntentID: "i", ChainID: 31337, Token: "0xt", PayerContract: "0xc", PartnerAddress: "0xp",
			AmountAtomic: 10_000, PartnerAtomic: 9_000, PlatformAtomic: 1_000, Nonce: "0x01", ValidBefore: now.Unix() + 600, State: flatpay.Quoted, CreatedAt: now, UpdatedAt: now}
		inTx := func(f func(ctx context.Context, q *store.Q) error) error { return st.InTx(ctx, f) }
		if err := inTx(func(ctx context.Context, q *store.Q) error { return flatpay.Insert(ctx, q, p) }); err != nil {
			t.Fatal(err)
		}
		move := func(to string, from ...string) bool {
			t.Helper()
			row, err := rows.Get(ctx, "r1")
			if err != nil {
				t.Fatal(err)
			}
			row.State, row.PayTx, row.UpdatedAt = to, "0xtx", now
			var moved bool
			if err := inTx(func(ctx context.Context, q *store.Q) (err error) {
				moved, err = flatpay.Move(ctx, q, row, from...)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			return moved
		}
		if !move(flatpay.Held, flatpay.Quoted, flatpay.Submitted) {
			t.Fatal("quoted -> held did not move")
		}
		if move(flatpay.Settled, flatpay.Quoted) {
			t.Fatal("moved from a state it is not in")
		}
		if got, err := rows.Get(ctx, "r1"); err != nil || got.State != flatpay.Held || got.PayTx != "0xtx" {
			t.Fatalf("held: %+v %v", got, err)
		}
		if _, err := rows.Get(ctx, "r2"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("an unknown payment: %v", err)
		}
		if in, err := rows.In(ctx, flatpay.Held, now.Add(time.Second), 10); err != nil || len(in) != 1 || in[0].RequestID != "r1" {
			t.Fatalf("held before now: %v %v", in, err)
		}
		if in, err := rows.In(ctx, flatpay.Held, now, 10); err != nil || len(in) != 0 {
			t.Fatalf("held before its change: %v %v", in, err)
		}
	})
}

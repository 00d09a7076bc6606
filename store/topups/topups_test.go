package topups_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/store/topups"
)

// A top-up is quoted once per request id, found by its id and by the authorization it
// claimed, moved only from the states named (a second claim of one authorization refused),
// and listed by state and age; on both databases.
func TestTopupsLife(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		storetest.Account(t, st, "a")
		rows := topups.New(st)
		now := time.Now().UTC().Truncate(time.Second)
		quote := func(id string) *topups.CreditTopup {
			return &topups.CreditTopup{RequestID: id, AccountID: "a", KeyID: "k", ChainID: 8453, Token: "0xt", PayTo: "0xp", AmountAtomic: 5_000_000,
				ValidBefore: now.Unix() + 600, State: topups.Quoted, CreatedAt: now, UpdatedAt: now}
		}
		if err := rows.Insert(ctx, quote("r1")); err != nil {
			t.Fatal(err)
		}
		if err := rows.Insert(ctx, quote("r1")); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("a second quote of r1: %v", err)
		}
		if err := rows.Insert(ctx, quote("r2")); err != nil {
			t.Fatal(err)
		}
		claim := func(id string, from ...string) (bool, error) {
			row, err := rows.Get(ctx, id)
			if err != nil {
				return false, err
			}
			row.State, row.PayerAddress, row.Nonce, row.PayTx, row.UpdatedAt = topups.Submitted, "0xfrom", "0x01", "0xtx", now
			var moved bool
			err = st.InTx(ctx, func(ctx context.Context, q *store.Q) (err error) {
				moved, err = topups.Move(ctx, q, row, from...)
				return err
			})
			return moved, err
		}
		if moved, err := claim("r1", topups.Quoted); !moved || err != nil {
			t.Fatalf("claim r1: %v %v", moved, err)
		}
		if moved, err := claim("r1", topups.Quoted); moved || err != nil {
			t.Fatalf("claim r1 again from quoted: %v %v", moved, err)
		}
		if _, err := claim("r2", topups.Quoted); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("r2 claiming r1's authorization: %v", err)
		}
		got, err := rows.ByAuthorization(ctx, 8453, "0xfrom", "0x01")
		if err != nil || got.RequestID != "r1" || got.State != topups.Submitted || got.PayTx != "0xtx" {
			t.Fatalf("by authorization: %+v %v", got, err)
		}
		if _, err := rows.Get(ctx, "r3"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("an unknown top-up: %v", err)
		}
		if in, err := rows.In(ctx, topups.Submitted, now.Add(time.Second), 10); err != nil || len(in) != 1 || in[0].RequestID != "r1" {
			t.Fatalf("submitted before now: %v %v", in, err)
		}
		if in, err := rows.In(ctx, topups.Submitted, now, 10); err != nil || len(in) != 0 {
			t.Fatalf("submitted before its change: %v %v", in, err)
		}
	})
}

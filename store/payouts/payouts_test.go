package payouts_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/payouts"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

// A payout is written in its run's transaction, its tx recorded outside one, moved only from
// the state named, and listed by state, oldest first; on both databases.
func TestPayoutLife(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		rows := payouts.New(st)
		now := time.Now().UTC().Truncate(time.Second)
		payout := func(id string, created time.Time) *payouts.Payout {
			return &payouts.Payout{ID: id, Book: "partner:p1:evm:0xa", ChainID: 31337, Address: "0xa", AmountAtomic: 3_000,
				State: payouts.Pending, CreatedAt: created, UpdatedAt: created}
		}
		inTx := func(f func(ctx context.Context, q *store.Q) error) error { return st.InTx(ctx, f) }
		for _, p := range []*payouts.Payout{payout("po_2", now), payout("po_1", now.Add(-time.Minute))} {
			if err := inTx(func(ctx context.Context, q *store.Q) error { return payouts.Insert(ctx, q, p) }); err != nil {
				t.Fatal(err)
			}
		}
		if err := inTx(func(ctx context.Context, q *store.Q) error { return payouts.Insert(ctx, q, payout("po_1", now)) }); err == nil {
			t.Fatal("a second payout po_1 was written")
		}
		pending, err := rows.In(ctx, payouts.Pending)
		if err != nil || len(pending) != 2 || pending[0].ID != "po_1" || pending[1].ID != "po_2" {
			t.Fatalf("pending, oldest first: %v %v", pending, err)
		}
		p := pending[0]
		p.Tx, p.UpdatedAt = "0xtx", now
		if err := rows.Update(ctx, p); err != nil {
			t.Fatal(err)
		}
		move := func(p *payouts.Payout, to, from string) bool {
			t.Helper()
			p.State, p.Reason = to, "why"
			var moved bool
			if err := inTx(func(ctx context.Context, q *store.Q) (err error) {
				moved, err = payouts.Move(ctx, q, p, from)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			return moved
		}
		if !move(p, payouts.Done, payouts.Pending) {
			t.Fatal("pending -> done did not move")
		}
		if move(p, payouts.Failed, payouts.Pending) {
			t.Fatal("moved from a state it is not in")
		}
		if done, err := rows.In(ctx, payouts.Done); err != nil || len(done) != 1 || done[0].ID != "po_1" || done[0].Tx != "0xtx" || done[0].Reason != "why" {
			t.Fatalf("done: %v %v", done, err)
		}
		if failed, err := rows.In(ctx, payouts.Failed); err != nil || len(failed) != 0 {
			t.Fatalf("failed: %v %v", failed, err)
		}
		if pending, err := rows.In(ctx, payouts.Pending); err != nil || len(pending) != 1 || pending[0].ID != "po_2" || pending[0].Tx != "" {
			t.Fatalf("still pending: %v %v", pending, err)
		}
	})
}

// Move sends what the caller's transaction queued before it (q.Tx), so a payout inserted by a
// queued write in the same transaction is found and moved.
func TestPayoutMoveAfterQueuedWrites(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Second)
		p := &payouts.Payout{ID: "po_q", Book: "partner:p1:evm:0xa", ChainID: 31337, Address: "0xa", AmountAtomic: 1, State: payouts.Pending, CreatedAt: now, UpdatedAt: now}
		var moved bool
		if err := st.InTx(ctx, func(ctx context.Context, q *store.Q) (err error) {
			if err := q.Insert(ctx, p); err != nil { // queued on PostgreSQL
				return err
			}
			done := *p
			done.State = payouts.Done
			moved, err = payouts.Move(ctx, q, &done, payouts.Pending)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if !moved {
			t.Fatal("a payout queued in the same transaction was not moved")
		}
		if done, err := payouts.New(st).In(ctx, payouts.Done); err != nil || len(done) != 1 {
			t.Fatalf("done: %v %v", done, err)
		}
	})
}

package commit_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/commit"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

// BenchmarkBatchWriter is the batch writer's cost per call recorded on a budget lease, the
// database's whole share of an invoke under load (docs/performance.md): batches of 1 (a lone
// caller) and of 16 calls from 16 accounts, each drawing on its own lease: the lease's check
// and its record, one row (its money is posted when its lease is settled). ns/op is per call.
func BenchmarkBatchWriter(b *testing.B) {
	for _, d := range storetest.Dialects() {
		for _, per := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/batch-%d", d, per), func(b *testing.B) {
				s := storetest.Open(b, d)
				ctx := context.Background()
				now := time.Now().UTC()
				accounts := make([]string, per)
				for i := range accounts {
					a := fmt.Sprintf("w%d", i)
					accounts[i] = a
					billingAccount(b, s, a)
					err := s.InTx(ctx, func(ctx context.Context, q *store.Q) error {
						if _, err := q.LockCredit(ctx, a, now); err != nil {
							return err
						}
						if err := q.AdjustCredit(ctx, a, store.CreditDelta{Available: 1 << 50, Held: 1 << 40}, now); err != nil {
							return err
						}
						if _, err := q.LockKeySpend(ctx, "key-"+a); err != nil {
							return err
						}
						if err := q.AdjustKeySpend(ctx, "key-"+a, 0, 1<<40); err != nil {
							return err
						}
						return q.InsertReservation(ctx, &store.Reservation{RequestID: "lease:" + a, AccountID: a, KeyID: "key-" + a,
							WorstMicro: 1 << 40, ExpiresAt: now.Add(time.Hour), CreatedAt: now})
					})
					if err != nil {
						b.Fatal(err)
					}
				}
				// Batches of exactly per calls (at their maximum, SQLite's writer does not wait
				// for more), the write-ahead log checkpointed every second as serve does.
				batcher := commit.NewBatcher(s, per, slog.New(slog.NewTextHandler(io.Discard, nil)))
				bctx, stop := context.WithCancel(ctx)
				defer stop()
				go batcher.Run(bctx)
				go func() {
					for t := time.NewTicker(time.Second); bctx.Err() == nil; <-t.C {
						if err := s.Checkpoint(bctx); err != nil && bctx.Err() == nil {
							b.Error(err)
						}
					}
				}()
				failed := make(chan error, per)
				b.ResetTimer()
				for n := 0; n < b.N; n += per {
					for _, a := range accounts {
						id := signing.NewRequestID()
						batcher.AddWrites(a, leaseCall(a, id, now), func(err error) {
							if err != nil {
								failed <- err
							}
						})
					}
					if err := batcher.Idle(ctx); err != nil {
						b.Fatal(err)
					}
					select {
					case err := <-failed:
						b.Fatal(err)
					default:
					}
				}
			})
		}
	}
}

// leaseCall is the whole record of a settled call drawn on account's lease, as dispatch
// writes it: the check that the lease is open (a zero draw) and the call's row, naming the
// lease's ledger transaction (posted when the lease is settled, not per call).
func leaseCall(account, id string, now time.Time) func(context.Context, *store.Q) error {
	return func(ctx context.Context, q *store.Q) error {
		if _, err := q.DrawReservation(ctx, "lease:"+account, 0); err != nil {
			return err
		}
		txn := account
		trail := store.Trail(store.Event{State: store.InvDispatching, Detail: "drawn", At: now}, store.Event{State: "attempt", Detail: "HTTP 200 in 0 ms", At: now},
			store.Event{State: store.InvSucceeded, Detail: "done", At: now})
		inv := &store.Invocation{RequestID: id, AccountID: account, KeyID: "key-" + account, IntentID: "i", Handle: "@bench", Category: "DATA",
			Args: `{"query":"hello"}`, CreatedAt: now, DispatchedAt: &now, Trail: &trail, Price: store.Price{ReserveMicro: 3000}, Outcome: store.Outcome{State: store.InvSucceeded, PlatformFeeMicro: 1000, FinishedAt: &now}, LedgerTxn: &txn}
		return q.InsertInvocation(ctx, inv)
	}
}

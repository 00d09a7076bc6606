package commit_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/commit"
	"github.com/switchboard-hq/switchboard/store/invocations"
	"github.com/switchboard-hq/switchboard/store/ledger"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

// A batch commits its jobs together; a job that fails (its own error, or a statement the
// database refuses) rolls back alone and the others land; each job hears its own outcome, and
// Wait and Idle return only once what was queued before them has committed.
func TestBatcherCommitsJobsTogetherAndFailuresAlone(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		b := commit.NewBatcher(s, 16, slog.New(slog.NewTextHandler(io.Discard, nil)))
		now := time.Now().UTC()
		post := func(id string) func(context.Context, *store.Q) error {
			return func(ctx context.Context, q *store.Q) error {
				return ledger.Post(ctx, q, id, "", now, ledger.Posting{Book: "x", Micro: 1, Kind: "t"}, ledger.Posting{Book: "y", Micro: -1, Kind: "t"})
			}
		}
		refuse := errors.New("the job's own refusal")
		var mu sync.Mutex
		outcome := map[string]error{}
		var done sync.WaitGroup
		add := func(key, id string, fn func(context.Context, *store.Q) error) {
			done.Add(1)
			b.Add(key, fn, func(err error) {
				mu.Lock()
				outcome[id] = err
				mu.Unlock()
				done.Done()
			})
		}
		// Queued before the writer runs: one batch.
		add("acct-1", "a", post("a"))
		add("acct-2", "b", func(ctx context.Context, q *store.Q) error {
			if err := post("b")(ctx, q); err != nil {
				return err
			}
			return refuse
		})
		add("acct-2", "c", func(ctx context.Context, q *store.Q) error {
			if err := post("c")(ctx, q); err != nil {
				return err
			}
			_, err := q.MoveInvocation(ctx, "no-such-request", "x", "y", now) // fine: moves nothing
			if err != nil {
				return err
			}
			return q.AddEvent(ctx, "no-such-request", "x", "events need their invocation", now) // the database refuses it
		})
		add("acct-3", "d", post("d"))
		go b.Run(ctx)
		if err := b.Wait(ctx, "acct-2"); err != nil {
			t.Fatal(err)
		}
		if err := b.Idle(ctx); err != nil {
			t.Fatal(err)
		}
		done.Wait()
		if outcome["a"] != nil || outcome["d"] != nil || !errors.Is(outcome["b"], refuse) || outcome["c"] == nil {
			t.Fatalf("outcomes: %v", outcome)
		}
		for id, want := range map[string]int{"a": 2, "b": 0, "c": 0, "d": 2} {
			rows, err := ledger.Entries(ctx, s, id)
			if err != nil || len(rows) != want {
				t.Fatalf("%s: %d ledger rows (%v), want %d", id, len(rows), err, want)
			}
		}
	})
}

// A full queue holds the adding caller back until the batch writer catches up, so callers go
// at the database's pace instead of queueing without bound.
func TestBatcherHoldsCallersBackWhenFull(t *testing.T) {
	st := storetest.Open(t, "sqlite")
	b := commit.NewBatcher(st, 256, slog.New(slog.NewTextHandler(io.Discard, nil)))
	var ran sync.WaitGroup
	noop := func(context.Context, *store.Q) error { return nil }
	for range 4096 {
		ran.Add(1)
		b.Add("k", noop, func(error) { ran.Done() })
	}
	added := make(chan struct{})
	ran.Add(1)
	go func() {
		b.Add("k", noop, func(error) { ran.Done() })
		close(added)
	}()
	select {
	case <-added:
		t.Fatal("a job was queued beyond the bound while nothing committed")
	case <-time.After(100 * time.Millisecond):
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go b.Run(ctx)
	<-added
	ran.Wait()
}

// Write-only jobs (AddWrites) are merged with the others of their batch: their rows, deltas
// and draws all land, as they would one by one. A job that reaches for a read runs alone in
// its place; a job's own failure fails it alone; and a merged draw that misses its lease
// undoes the merge, so each job runs alone and takes its own way around.
func TestBatcherMergesWriteOnlyJobs(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		billingAccount(t, s, "m1")
		billingAccount(t, s, "m2")
		now := time.Now().UTC()
		lease := func(id string, worst int64) {
			t.Helper()
			err := s.InTx(ctx, func(ctx context.Context, q *store.Q) error {
				if _, err := q.LockCredit(ctx, "m1", now); err != nil {
					return err
				}
				if err := q.AdjustCredit(ctx, "m1", store.CreditDelta{Available: 1000, Held: worst}, now); err != nil {
					return err
				}
				if _, err := q.LockKeySpend(ctx, "key-m1"); err != nil {
					return err
				}
				if err := q.AdjustKeySpend(ctx, "key-m1", 0, worst); err != nil {
					return err
				}
				return q.InsertReservation(ctx, &store.Reservation{RequestID: id, AccountID: "m1", KeyID: "key-m1", WorstMicro: worst,
					ExpiresAt: now.Add(time.Hour), CreatedAt: now})
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		// A call drawn from lease: the hold drawn from the lease, the reserved part posted, its
		// invocation with its history as a trail.
		call := func(lease, id string, worst int64) func(context.Context, *store.Q) error {
			return func(ctx context.Context, q *store.Q) error {
				ok, err := q.DrawReservation(ctx, lease, worst)
				if err != nil {
					return err
				}
				if !ok {
					return errors.New("lease missed")
				}
				if err := q.AdjustCredit(ctx, "m1", store.CreditDelta{Available: -1, Reserved: 1}, now); err != nil {
					return err
				}
				if err := ledger.Post(ctx, q, id, "", now, ledger.Posting{Book: ledger.UserAvailable("m1"), Micro: -1, Kind: "reserve"},
					ledger.Posting{Book: ledger.UserReserved("m1"), Micro: 1, Kind: "reserve"}); err != nil {
					return err
				}
				trail := store.Trail(store.Event{State: store.InvDispatching, Detail: "drawn", At: now})
				inv := &store.Invocation{RequestID: id, AccountID: "m1", KeyID: "key-m1", IntentID: "i", Handle: "@h", Category: "DATA",
					Args: "{}", CreatedAt: now, Trail: &trail, Outcome: store.Outcome{State: store.InvDispatching}}
				if err := q.InsertInvocation(ctx, inv); err != nil {
					return err
				}
				return q.InsertWebhookEvent(ctx, &store.WebhookEvent{ID: "msg_" + id, AccountID: "m1", Type: "call.succeeded", Body: "{}", CreatedAt: now})
			}
		}
		run := func(jobs map[string]func(context.Context, *store.Q) error, order ...string) map[string]error {
			t.Helper()
			b := commit.NewBatcher(s, 64, slog.New(slog.NewTextHandler(io.Discard, nil)))
			var mu sync.Mutex
			outcome := map[string]error{}
			for _, id := range order { // queued before the writer runs: one batch
				b.AddWrites("m1", jobs[id], func(err error) {
					mu.Lock()
					outcome[id] = err
					mu.Unlock()
				})
			}
			bctx, stop := context.WithCancel(ctx)
			go b.Run(bctx)
			if err := b.Idle(ctx); err != nil {
				t.Fatal(err)
			}
			stop()
			return outcome
		}
		lease("lease:a", 100)
		refuse := errors.New("the job's own refusal")
		out := run(map[string]func(context.Context, *store.Q) error{
			"c1": call("lease:a", "c1", 30),
			"c2": call("lease:a", "c2", 30),
			"read": func(ctx context.Context, q *store.Q) error { // not write-only: runs alone
				if _, err := q.LockCredit(ctx, "m2", now); err != nil {
					return err
				}
				return ledger.Post(ctx, q, "read", "", now, ledger.Posting{Book: "x", Micro: 1, Kind: "t"}, ledger.Posting{Book: "y", Micro: -1, Kind: "t"})
			},
			"refused": func(ctx context.Context, q *store.Q) error { return refuse },
			"c3":      call("lease:a", "c3", 30),
		}, "c1", "c2", "read", "refused", "c3")
		if out["c1"] != nil || out["c2"] != nil || out["c3"] != nil || out["read"] != nil || !errors.Is(out["refused"], refuse) {
			t.Fatalf("outcomes: %v", out)
		}
		// The lease is missed by the merged draws of d1 and d2 (60 > 50): each then runs
		// alone, d1 draws, d2 finds the lease short; e1, drawing nothing, lands either way.
		lease("lease:b", 50)
		out = run(map[string]func(context.Context, *store.Q) error{
			"d1": call("lease:b", "d1", 30),
			"d2": call("lease:b", "d2", 30),
			"e1": func(ctx context.Context, q *store.Q) error {
				return ledger.Post(ctx, q, "e1", "", now, ledger.Posting{Book: "x", Micro: 2, Kind: "t"}, ledger.Posting{Book: "y", Micro: -2, Kind: "t"})
			},
		}, "d1", "d2", "e1")
		if out["d1"] != nil || out["d2"] == nil || out["e1"] != nil {
			t.Fatalf("outcomes with a missed draw: %v", out)
		}
		for id, want := range map[string]int{"c1": 2, "c2": 2, "c3": 2, "read": 2, "refused": 0, "d1": 2, "d2": 0, "e1": 2} {
			rows, err := ledger.Entries(ctx, s, id)
			if err != nil || len(rows) != want {
				t.Fatalf("%s: %d ledger rows (%v), want %d", id, len(rows), err, want)
			}
		}
		for id, want := range map[string]int64{"lease:a": 10, "lease:b": 20} {
			var worst int64
			if err := s.DB().NewSelect().Model((*store.Reservation)(nil)).Column("worst_micro").Where("request_id = ?", id).Scan(ctx, &worst); err != nil || worst != want {
				t.Fatalf("reservation %s holds %d (%v), want %d", id, worst, err, want)
			}
		}
		ca, err := s.Credit(ctx, "m1")
		if err != nil || ca.AvailableMicro != 2000-4 || ca.ReservedMicro != 4 {
			t.Fatalf("balance after four draws: %+v (%v)", ca, err)
		}
		for _, id := range []string{"c1", "c2", "c3", "d1"} {
			evs, err := invocations.New(s).Events(ctx, id)
			if err != nil || len(evs) != 1 || evs[0].Seq != 1 {
				t.Fatalf("%s events: %+v (%v)", id, evs, err)
			}
		}
		// Each call's webhook event landed with its record, and only with it (d2's did not).
		var hooks []string
		if err := s.DB().NewSelect().Model((*store.WebhookEvent)(nil)).Column("id").Order("id").Scan(ctx, &hooks); err != nil ||
			!slices.Equal(hooks, []string{"msg_c1", "msg_c2", "msg_c3", "msg_d1"}) {
			t.Fatalf("webhook events %v (%v), want those of c1, c2, c3 and d1", hooks, err)
		}
	})
}

// On SQLite a batch begun is finished even when the writer's context ends inside its
// transaction (its statements run in the process, under a busy timeout, and are not given a
// context that can end): the job hears success and its rows are there. On PostgreSQL the
// context still reaches the statements (a network can hang), so this is SQLite's alone.
func TestBatcherFinishesASQLiteBatchBegun(t *testing.T) {
	s := storetest.Open(t, "sqlite")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := commit.NewBatcher(s, 16, slog.New(slog.NewTextHandler(io.Discard, nil)))
	b.BeforeCommit(cancel) // the writer is told to stop while the batch is in its transaction
	now := time.Now().UTC()
	outcome := make(chan error, 1)
	b.Add("acct-1", func(ctx context.Context, q *store.Q) error {
		return ledger.Post(ctx, q, "begun", "", now, ledger.Posting{Book: "x", Micro: 1, Kind: "t"}, ledger.Posting{Book: "y", Micro: -1, Kind: "t"})
	}, func(err error) { outcome <- err })
	b.Run(ctx) // returns once ctx has ended and what was queued is committed
	if err := <-outcome; err != nil {
		t.Fatalf("the batch begun was not finished: %v", err)
	}
	rows, err := ledger.Entries(context.Background(), s, "begun")
	if err != nil || len(rows) != 2 {
		t.Fatalf("%d ledger rows (%v), want 2", len(rows), err)
	}
}

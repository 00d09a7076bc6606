package store_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

// A batch commits its jobs together; a job that fails (its own error, or a statement the
// database refuses) rolls back alone and the others land; each job hears its own outcome, and
// Wait and Idle return only once what was queued before them has committed.
func TestBatcherCommitsJobsTogetherAndFailuresAlone(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		b := s.NewBatcher(16, slog.New(slog.NewTextHandler(io.Discard, nil)))
		now := time.Now().UTC()
		post := func(id string) func(context.Context, *store.Q) error {
			return func(ctx context.Context, q *store.Q) error {
				return q.Post(ctx, id, "", now, store.Posting{Book: "x", Micro: 1, Kind: "t"}, store.Posting{Book: "y", Micro: -1, Kind: "t"})
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
			rows, err := s.LedgerEntries(ctx, id)
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
	b := st.NewBatcher(256, slog.New(slog.NewTextHandler(io.Discard, nil)))
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

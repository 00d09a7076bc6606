package partners_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/partners"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/store/watch"
)

// changes records what a watcher of st was told of intents, from when it is live until the
// test ends.
type changes struct {
	mu   sync.Mutex
	live bool
	seen map[string]bool
}

func watchIntents(t *testing.T, st *store.Store) *changes {
	t.Helper()
	c := &changes{seen: map[string]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		st.Changes().Watch(ctx, func(ch watch.Change) {
			c.mu.Lock()
			defer c.mu.Unlock()
			if ch.Kind == watch.IntentChange {
				c.seen[ch.ID] = true
			}
		}, func(live bool) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.live = live
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	c.wait(t, "live", func() bool { return c.live })
	return c
}

func (c *changes) has(handle string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen[handle]
}

func (c *changes) wait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		c.mu.Lock()
		ok := cond()
		c.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5 s", what)
		}
	}
}

// What runs in a caller's transaction: the Partner is created once and locked, the rows
// published in the transaction are counted by PublishedSince, AccountOf reads a partner's
// account ("" for none), and the handles inserted reach the watch only if the transaction
// commits (on SQLite the fan-out after commit is the only way they do).
func TestInCallersTransaction(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		storetest.Account(t, st, "acct1")
		w := watchIntents(t, st)
		now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

		boom := errors.New("the caller gives up")
		err := st.InTx(ctx, func(ctx context.Context, q *store.Q) error {
			p, err := partners.Lock(ctx, q, "acct1", now)
			if err != nil {
				return err
			}
			if err := partners.InsertIntents(ctx, q, p, []*partners.Intent{storetest.IntentRow("g1", "@gone", now)}); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("rolled back: %v", err)
		}
		ps := partners.New(st)
		if _, err := ps.IntentByHandle(ctx, "@gone"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a row of a rolled-back transaction: %v", err)
		}

		var first, again *partners.Partner
		var before, after []time.Time
		var account, nobody string
		err = st.InTx(ctx, func(ctx context.Context, q *store.Q) (err error) {
			if first, err = partners.Lock(ctx, q, "acct1", now); err != nil {
				return err
			}
			if before, err = partners.PublishedSince(ctx, q, first.ID, now.Add(-time.Hour)); err != nil {
				return err
			}
			rows := []*partners.Intent{storetest.IntentRow("k1", "@kept-one", now), storetest.IntentRow("k2", "@kept-two", now.Add(time.Second))}
			if err := partners.InsertIntents(ctx, q, first, rows); err != nil {
				return err
			}
			if after, err = partners.PublishedSince(ctx, q, first.ID, now.Add(-time.Hour)); err != nil {
				return err
			}
			if again, err = partners.Lock(ctx, q, "acct1", now); err != nil {
				return err
			}
			if account, err = partners.AccountOf(ctx, q, first.ID); err != nil {
				return err
			}
			nobody, err = partners.AccountOf(ctx, q, "no-such-partner")
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(before) != 0 || len(after) != 2 || !after[0].Equal(now) || !after[1].Equal(now.Add(time.Second)) {
			t.Fatalf("published since: before %v, after %v", before, after)
		}
		if again.ID != first.ID || first.AccountID != "acct1" || account != "acct1" || nobody != "" {
			t.Fatalf("partner %+v, again %+v, account %q, nobody %q", first, again, account, nobody)
		}
		if got, err := ps.ByAccount(ctx, "acct1"); err != nil || got.ID != first.ID {
			t.Fatalf("by account: %+v %v", got, err)
		}
		w.wait(t, "the committed handles", func() bool { return w.seen["@kept-one"] && w.seen["@kept-two"] })
		if w.has("@gone") {
			t.Fatal("a handle of a rolled-back transaction was announced")
		}
	})
}

// A due probe is claimed by one caller only, its outcome recorded without a new revision.
func TestProbes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		ps := partners.New(st)
		storetest.Account(t, st, "acct1")
		now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
		if _, err := ps.Publish(ctx, "acct1", []*partners.Intent{storetest.IntentRow("i1", "@probed", now)}, now); err != nil {
			t.Fatal(err)
		}
		row, err := ps.Intent(ctx, "i1")
		if err != nil {
			t.Fatal(err)
		}
		if due, err := ps.DueProbes(ctx, now, 10); err != nil || len(due) != 0 {
			t.Fatalf("an inactive intent is due: %v %v", due, err)
		}
		row.IsActive = true
		if err := ps.UpdateIntent(ctx, row); err != nil {
			t.Fatal(err)
		}
		if due, err := ps.DueProbes(ctx, now, 10); err != nil || len(due) != 1 || due[0].ID != "i1" {
			t.Fatalf("due: %v %v", due, err)
		}
		next := now.Add(time.Hour)
		if won, err := ps.ClaimProbe(ctx, "i1", now, next); err != nil || !won {
			t.Fatalf("first claim: %v %v", won, err)
		}
		if won, err := ps.ClaimProbe(ctx, "i1", now, next); err != nil || won {
			t.Fatalf("second claim: %v %v", won, err)
		}
		if due, err := ps.DueProbes(ctx, now, 10); err != nil || len(due) != 0 {
			t.Fatalf("due after the claim: %v %v", due, err)
		}
		if err := ps.RecordProbe(ctx, "i1", "probe FAIL", 2, now); err != nil {
			t.Fatal(err)
		}
		got, err := ps.Intent(ctx, "i1")
		if err != nil {
			t.Fatal(err)
		}
		if got.LastProbeResult != "probe FAIL" || got.ProbeFailures != 2 || got.LastProbeAt == nil || !got.LastProbeAt.Equal(now) ||
			got.NextProbeAt == nil || !got.NextProbeAt.Equal(next) || got.Revision != row.Revision {
			t.Fatalf("after the probe: %+v", got)
		}
	})
}

// The core intents are owned by the system account, active, refreshed in place, and their
// handles reserved.
func TestCoreIntents(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		ps := partners.New(st)
		storetest.Account(t, st, "acct1")
		now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
		core := storetest.IntentRow("core-x", "@core-x", now)
		if err := ps.EnsureCoreIntents(ctx, []*partners.Intent{core}, now); err != nil {
			t.Fatal(err)
		}
		refreshed := storetest.IntentRow("core-x", "@core-x", now)
		refreshed.Name = "Renamed"
		if err := ps.EnsureCoreIntents(ctx, []*partners.Intent{refreshed}, now.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		c, err := ps.IntentByHandle(ctx, "@core-x")
		if err != nil {
			t.Fatal(err)
		}
		sys, err := ps.ByAccount(ctx, partners.SystemAccountID)
		if err != nil {
			t.Fatal(err)
		}
		if c.Name != "Renamed" || !c.IsActive || !c.IsCoreIntent || c.OwnerID != partners.SystemAccountID || c.PartnerID != sys.ID ||
			!c.UpdatedAt.Equal(now.Add(time.Minute)) {
			t.Fatalf("core intent: %+v", c)
		}
		_, err = ps.Publish(ctx, "acct1", []*partners.Intent{storetest.IntentRow("i2", "@core-x", now)}, now)
		var taken *partners.HandlesTakenError
		if !errors.As(err, &taken) || !errors.Is(err, store.ErrConflict) {
			t.Fatalf("a core handle published: %v", err)
		}
	})
}

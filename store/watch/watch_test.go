package watch_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/partners"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/store/watch"
)

// seen records what one watcher of a store was told.
type seen struct {
	mu      sync.Mutex
	live    bool
	changes []watch.Change
}

func (s *seen) has(c watch.Change) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, got := range s.changes {
		if got == c {
			return true
		}
	}
	return false
}

func (s *seen) isLive() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.live
}

// watchOn runs a watcher of st until stop, once it is live.
func watchOn(t *testing.T, st *store.Store) (*seen, func()) {
	t.Helper()
	s := &seen{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		st.Changes().Watch(ctx, func(c watch.Change) {
			s.mu.Lock()
			s.changes = append(s.changes, c)
			s.mu.Unlock()
		}, func(live bool) {
			s.mu.Lock()
			s.live = live
			s.mu.Unlock()
		})
	}()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	eventually(t, "live", s.isLive)
	return s, stop
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5 s", what)
		}
	}
}

// Every watcher of a store hears every kind of change committed through another store on the
// same database (the same store on SQLite); the watchers of one store share its listener,
// which outlives a watcher that stops and ends with the last.
func TestWatchFansOutEveryKind(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			dsn := storetest.DSN(t, dialect)
			a := storetest.OpenURL(t, dsn)
			b := a
			if dialect == "postgres" {
				b = storetest.OpenURL(t, dsn)
			}
			first, stopFirst := watchOn(t, b)
			second, stopSecond := watchOn(t, b)

			storetest.Account(t, a, "acct-watch")
			ps := partners.New(a)
			now := time.Now().UTC()
			row := storetest.IntentRow("i-watch", "@watched", now)
			if _, err := ps.Publish(ctx, "acct-watch", []*partners.Intent{row}, time.Now()); err != nil {
				t.Fatal(err)
			}
			if err := accounts.New(a).SetTier(ctx, "acct-watch", "pro"); err != nil {
				t.Fatal(err)
			}
			if _, err := accounts.New(a).RevokeKey(ctx, "acct-watch", "k-acct-watch", now, nil); err != nil {
				t.Fatal(err)
			}
			want := []watch.Change{{Kind: watch.IntentChange, ID: "@watched"}, {Kind: watch.TierChange, ID: "acct-watch"}, {Kind: watch.KeyChange, ID: "k-acct-watch"}}
			for _, c := range want {
				eventually(t, "first: "+c.ID, func() bool { return first.has(c) })
				eventually(t, "second: "+c.ID, func() bool { return second.has(c) })
			}

			stopFirst()
			if first.isLive() || !second.isLive() {
				t.Fatalf("after the first stopped: first live %v, second live %v", first.isLive(), second.isLive())
			}
			won, err := ps.ClaimProbe(ctx, "i-watch", now, now.Add(time.Hour))
			if err != nil || won {
				t.Fatalf("claim of an inactive intent's probe: %v %v", won, err)
			}
			row.IsActive = true
			if err := ps.UpdateIntent(ctx, row); err != nil {
				t.Fatal(err)
			}
			if won, err := ps.ClaimProbe(ctx, "i-watch", now, now.Add(time.Hour)); err != nil || !won {
				t.Fatalf("claim: %v %v", won, err)
			}
			second.mu.Lock()
			second.changes = nil
			second.mu.Unlock()
			if err := ps.RecordProbe(ctx, "i-watch", "probe PASS", 0, now); err != nil {
				t.Fatal(err)
			}
			eventually(t, "second, after the first stopped", func() bool { return second.has(watch.Change{Kind: watch.IntentChange, ID: "@watched"}) })
			stopSecond()
			if second.isLive() {
				t.Fatal("live after the last watcher stopped")
			}
		})
	}
}

package rowcache_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/partners"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools/rowcache"
	"github.com/switchboard-hq/switchboard/tools/service"
)

// clock stands still unless moved: entries never expire by themselves, so what a test sees
// after a change came from the push, not from the TTL.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// replicas opens two stores on one database: on PostgreSQL with separate pools, as separate
// processes have; SQLite is served by one process, so both are the same store.
func replicas(t *testing.T, dialect string) (a, b *store.Store) {
	dsn := storetest.DSN(t, dialect)
	a = storetest.OpenURL(t, dsn)
	b = a
	if dialect == "postgres" {
		b = storetest.OpenURL(t, dsn)
	}
	return a, b
}

// watching runs c's watch until the test ends (or stop) and returns once it is live.
func watching(t *testing.T, c *rowcache.Cache) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Watch(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	for deadline := time.Now().Add(10 * time.Second); !c.Live(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the watch never went live")
		}
	}
	return stop
}

// within polls cond for up to a second: a change on one replica reaches the others by then.
func within(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not seen a second later", what)
		}
	}
}

// unique returns a handle no other test uses: notifications are database-wide, and tests in
// other schemas of the same database publish handles too.
func unique(prefix string) string {
	b := make([]byte, 4)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

func account(t testing.TB, st *store.Store) string {
	t.Helper()
	id := unique("acct-")
	if err := accounts.New(st).Create(context.Background(), &accounts.Account{ID: id, Email: id + "@example.com", CreatedAt: time.Now().UTC()}, nil, nil); err != nil {
		t.Fatal(err)
	}
	return id
}

func publish(t testing.TB, st *store.Store, owner, handle string) {
	t.Helper()
	now := time.Now().UTC()
	row := &partners.Intent{
		ID: unique("intent-"), PublicIdentifier: handle, Name: "first", Description: "D", Category: "QUERY",
		Capabilities: []string{}, BindingType: "REST", ToolEndpoint: "https://partner.example/x", TimeoutMs: 1000,
		ParametersSchema: `{"type":"object"}`, FeeRate: "0", FeeRateUnit: "usd_per_call", Tier: "one_shot",
		SampleQueries: []string{}, VerificationStatus: "UNVERIFIED", Revision: 1, CreatedAt: now, UpdatedAt: now,
	}
	if _, err := partners.New(st).Publish(context.Background(), owner, []*partners.Intent{row}, time.Now()); err != nil {
		t.Fatal(err)
	}
}

// edit changes an intent through st as the partner tools do (read, change, UpdateIntent).
func edit(t *testing.T, st *store.Store, handle string, change func(*partners.Intent)) {
	t.Helper()
	row, err := partners.New(st).IntentByHandle(context.Background(), handle)
	if err != nil {
		t.Fatal(err)
	}
	change(row)
	if err := partners.New(st).UpdateIntent(context.Background(), row); err != nil {
		t.Fatal(err)
	}
}

// behind changes a row the way no store method does, announcing nothing: a cache that
// serves from memory does not see it.
func behind(t *testing.T, st *store.Store, query string, args ...any) {
	t.Helper()
	if _, err := st.DB().ExecContext(context.Background(), query, args...); err != nil {
		t.Fatal(err)
	}
}

func (c *clock) cacheOn(st *store.Store) *rowcache.Cache {
	return rowcache.New(service.Deps{Store: st, Now: c.Now})
}

// An intent cached by one replica, published, activated, edited, re-probed and deactivated
// through another, reads as the other left it within a second: the cache on b holds the row
// (a change nobody announces stays unseen) until a's announcement drops it.
func TestIntentChangeReachesEveryReplica(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			a, b := replicas(t, dialect)
			clk := &clock{now: time.Now()}
			cache := clk.cacheOn(b)
			watching(t, cache)
			handle := unique("@cache")
			read := func() *partners.Intent {
				row, err := cache.Intent(ctx, handle)
				if err != nil && !errors.Is(err, store.ErrNotFound) {
					t.Fatal(err)
				}
				return row
			}

			if _, err := cache.Intent(ctx, handle); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("before publishing: %v", err)
			}
			publish(t, a, account(t, a), handle) // b cached "no such handle"
			within(t, "publish", func() bool { return read() != nil })

			edit(t, a, handle, func(r *partners.Intent) { r.IsActive = true })
			within(t, "activation", func() bool { r := read(); return r.IsActive && r.Revision == 2 })

			behind(t, b, "UPDATE partner_intents SET description = 'unannounced' WHERE public_identifier = ?", handle)
			if r := read(); r.Description != "D" {
				t.Fatalf("the row was not served from the cache: %+v", r)
			}
			edit(t, a, handle, func(r *partners.Intent) { r.Name = "second" })
			within(t, "new revision", func() bool { r := read(); return r.Name == "second" && r.Revision == 3 })

			if err := partners.New(a).RecordProbe(ctx, read().ID, "probe FAIL", 3, time.Now()); err != nil {
				t.Fatal(err)
			}
			within(t, "probe outcome", func() bool { return read().ProbeFailures == 3 })

			edit(t, a, handle, func(r *partners.Intent) { r.IsActive = false })
			within(t, "deactivation", func() bool { r := read(); return !r.IsActive && r.Revision == 4 })
		})
	}
}

// A tier set through one replica is the tier another replica's cache answers within a second.
func TestTierChangeReachesEveryReplica(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			a, b := replicas(t, dialect)
			clk := &clock{now: time.Now()}
			cache := clk.cacheOn(b)
			watching(t, cache)
			acct := account(t, a)
			tier := func() string {
				tier, err := cache.Tier(ctx, acct)
				if err != nil {
					t.Fatal(err)
				}
				return tier
			}
			if got := tier(); got != accounts.DefaultTier {
				t.Fatalf("a new account's tier = %q", got)
			}
			behind(t, b, "UPDATE accounts SET tier = 'unannounced' WHERE id = ?", acct)
			if got := tier(); got != accounts.DefaultTier {
				t.Fatalf("the tier was not served from the cache: %q", got)
			}
			if err := accounts.New(a).SetTier(ctx, acct, "pro"); err != nil {
				t.Fatal(err)
			}
			within(t, "tier change", func() bool { return tier() == "pro" })
			if _, err := cache.Tier(ctx, "no-such-account"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("unknown account: %v", err)
			}
		})
	}
}

// Without a live watch every lookup reads the database; with one, entries live at most the
// TTL (a few seconds); a caller's changes to a returned row stay its own.
func TestServedOnlyWhileLive(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		clk := &clock{now: time.Now()}
		cache := clk.cacheOn(st)
		acct := account(t, st)
		handle := unique("@live")
		publish(t, st, acct, handle)
		name := func() string {
			row, err := cache.Intent(ctx, handle)
			if err != nil {
				t.Fatal(err)
			}
			return row.Name
		}
		tier := func() string {
			tier, err := cache.Tier(ctx, acct)
			if err != nil {
				t.Fatal(err)
			}
			return tier
		}
		set := func(v string) {
			behind(t, st, "UPDATE partner_intents SET name = ? WHERE public_identifier = ?", v, handle)
			behind(t, st, "UPDATE accounts SET tier = ? WHERE id = ?", v, acct)
		}

		// No watch: nothing is kept.
		name()
		tier()
		set("not watched")
		if name() != "not watched" || tier() != "not watched" {
			t.Fatalf("without a watch: %q %q", name(), tier())
		}

		stop := watching(t, cache)
		name()
		tier()
		set("watched")
		if name() != "not watched" || tier() != "not watched" {
			t.Fatalf("live: not served from the cache: %q %q", name(), tier())
		}
		row, _ := cache.Intent(ctx, handle)
		row.Name = "the caller's"
		if name() != "not watched" {
			t.Fatalf("a caller's change reached the cache: %q", name())
		}
		clk.Advance(10 * time.Second)
		if name() != "watched" || tier() != "watched" {
			t.Fatalf("past the TTL: %q %q", name(), tier())
		}

		stop()
		if cache.Live() {
			t.Fatal("live after the watch ended")
		}
		set("stopped")
		if name() != "stopped" || tier() != "stopped" {
			t.Fatalf("after the watch: %q %q", name(), tier())
		}
	})
}

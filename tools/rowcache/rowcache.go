// Package rowcache serves the rows every invocation reads before anything else (the intent
// named by its @handle, the caller's fee tier) from memory, kept in step with every replica's
// writes by the store's change watch.
package rowcache

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/partners"
	"github.com/switchboard-hq/switchboard/store/watch"
	"github.com/switchboard-hq/switchboard/tools/service"
)

const (
	// ttl bounds how long an entry is served: a missed notification (which the watch does not
	// expect) is stale for at most this long.
	ttl = 5 * time.Second
	// maxEntries bounds each map; past it, it starts again empty.
	maxEntries = 50_000
)

// Cache holds intents by handle (and handles that do not exist) and tiers by account, but
// serves them only while Watch runs and the store's watch is live; otherwise every lookup
// reads the store.
type Cache struct {
	store    *store.Store
	partners partners.Partners
	accounts accounts.Accounts
	now      func() time.Time

	mu      sync.Mutex
	live    bool
	gen     uint64                             // counts changes, so a lookup racing one is not cached
	intents map[string]entry[*partners.Intent] // nil: no such handle
	tiers   map[string]entry[string]
}

type entry[V any] struct {
	v       V
	expires time.Time
}

// New builds a Cache on d's store; d's clock times the entries' lifetime.
func New(d service.Deps) *Cache {
	d = d.WithDefaults()
	return &Cache{store: d.Store, accounts: accounts.New(d.Store), partners: partners.New(d.Store), now: d.Now, intents: map[string]entry[*partners.Intent]{}, tiers: map[string]entry[string]{}}
}

// Watch keeps the cache in step with changes on every replica until ctx ends.
func (c *Cache) Watch(ctx context.Context) {
	c.store.Changes().Watch(ctx, c.forget, func(live bool) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.live = live
		c.gen++
		clear(c.intents)
		clear(c.tiers)
	})
}

// Live reports whether rows are being cached (the watch delivers changes).
func (c *Cache) Live() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.live
}

// forget drops what a change makes stale.
func (c *Cache) forget(ch watch.Change) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case ch.Kind == "":
		clear(c.intents)
		clear(c.tiers)
	case ch.Kind == watch.IntentChange && ch.ID == "":
		clear(c.intents)
	case ch.Kind == watch.IntentChange:
		delete(c.intents, ch.ID)
	case ch.Kind == watch.TierChange && ch.ID == "":
		clear(c.tiers)
	case ch.Kind == watch.TierChange:
		delete(c.tiers, ch.ID)
	default:
		return // not ours: nothing raced
	}
	c.gen++
}

// Intent returns the intent with the @handle, archived or not (partners.IntentByHandle), as a
// copy the caller may change.
func (c *Cache) Intent(ctx context.Context, handle string) (*partners.Intent, error) {
	row, err := lookup(c, c.intents, handle, func() (*partners.Intent, error) {
		row, err := c.partners.IntentByHandle(ctx, handle)
		if errors.Is(err, store.ErrNotFound) {
			return nil, nil // cached too: a publish of the handle announces itself
		}
		return row, err
	})
	if err != nil {
		return nil, err
	}
	if row == nil {
		return nil, store.ErrNotFound
	}
	cp := *row
	return &cp, nil
}

// Tier returns the account's fee tier.
func (c *Cache) Tier(ctx context.Context, accountID string) (string, error) {
	return lookup(c, c.tiers, accountID, func() (string, error) { return c.accounts.TierOf(ctx, accountID) })
}

// lookup serves key from m while the watch is live and the entry fresh; otherwise it loads
// it, and caches it unless the watch is down or a change came in meanwhile.
func lookup[V any](c *Cache, m map[string]entry[V], key string, load func() (V, error)) (V, error) {
	now := c.now()
	c.mu.Lock()
	e, ok := m[key]
	live, gen := c.live, c.gen
	c.mu.Unlock()
	if ok && live && now.Before(e.expires) {
		return e.v, nil
	}
	v, err := load()
	if err != nil || !live {
		return v, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.live && c.gen == gen {
		if len(m) >= maxEntries {
			clear(m)
		}
		m[key] = entry[V]{v: v, expires: now.Add(ttl)}
	}
	return v, nil
}

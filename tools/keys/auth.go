package keys

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/watch"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/service"
)

// Authenticator resolves a presented API key secret to the Principal it stands for (the
// kernel's tools.Authenticator). Live
// keys are kept for a few seconds in memory, keyed by the secret's hash, while the store's
// key watch runs (Watch): a revocation on any replica reaches this cache within
// milliseconds, and without the watch nothing is cached.
type Authenticator struct {
	store    *store.Store
	accounts accounts.Accounts
	now      func() time.Time
	log      *slog.Logger
	// tokens resolves an OAuth access token (sbat_...) of an MCP host; nil: none are accepted.
	tokens Tokens

	mu      sync.Mutex
	live    bool                 // the key watch delivers changes: entries may be served
	gen     uint64               // counts changes, so a lookup racing one is not cached
	cache   map[string]cachedKey // by the secret's hash
	touched map[string]time.Time // lastUsedAt to write, by key id
}

type cachedKey struct {
	key     *accounts.APIKey
	up      []*accounts.APIKey // its ancestors, nearest first
	expires time.Time
}

// Tokens resolves an OAuth access token of an MCP host to its Principal (oauth.Service's
// Authenticate).
type Tokens func(ctx context.Context, token string) (*tools.Principal, error)

// NewAuthenticator builds an Authenticator on d's store; tokens resolves OAuth access tokens,
// nil where nobody can sign in to get one (none are accepted then).
func NewAuthenticator(d service.Deps, tokens Tokens) *Authenticator {
	d = d.WithDefaults()
	return &Authenticator{store: d.Store, accounts: accounts.New(d.Store), now: d.Now, log: d.Log, tokens: tokens, cache: map[string]cachedKey{}, touched: map[string]time.Time{}}
}

const (
	// cacheFor bounds how long a cached key is served: a missed notification (which the watch
	// does not expect) is stale for at most this long.
	cacheFor = 10 * time.Second
	// touchEvery bounds lastUsedAt to one recorded use per key per minute.
	touchEvery = time.Minute
	// cacheMax bounds the cache; past it, it starts again empty.
	cacheMax = 100_000
)

// Watch keeps the cache in step with key changes on every replica until ctx ends, writing
// recorded key uses every flushEvery. Without it keys are looked up on every call and uses
// are written as they happen.
func (a *Authenticator) Watch(ctx context.Context, flushEvery time.Duration) {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		t := time.NewTicker(flushEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				a.FlushUses(context.WithoutCancel(ctx))
				return
			case <-t.C:
				a.FlushUses(ctx)
			}
		}
	})
	a.store.Changes().WatchKeys(ctx, a.forget, func(live bool) {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.live = live
		a.gen++
		clear(a.cache)
	})
}

// Live reports whether keys are being cached (the key watch delivers changes).
func (a *Authenticator) Live() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.live
}

// forget drops a changed key (AllKeys: every key) from the cache.
func (a *Authenticator) forget(keyID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.gen++
	if keyID == watch.AllKeys {
		clear(a.cache)
		return
	}
	for h, c := range a.cache {
		if c.key.ID == keyID || slices.ContainsFunc(c.up, func(k *accounts.APIKey) bool { return k.ID == keyID }) {
			delete(a.cache, h)
		}
	}
}

// Authenticate returns the live key for secret, or UNAUTHENTICATED saying what to do.
func (a *Authenticator) Authenticate(ctx context.Context, secret string) (*tools.Principal, error) {
	if strings.HasPrefix(secret, tools.AccessTokenPrefix) && a.tokens != nil {
		p, err := a.tokens(ctx, secret)
		if err != nil && !store.IsUnavailable(err) {
			return nil, tools.Errorf(tools.CodeUnauthenticated, "the access token is not valid (%v); refresh it, or connect again", err)
		}
		return p, err
	}
	if !strings.HasPrefix(secret, "sb_") {
		return nil, tools.Errorf(tools.CodeUnauthenticated, "that is not a Switchboard API key (keys start with sb_test_ or sb_live_); send it as x-api-key or Authorization: Bearer")
	}
	hash := tools.HashKey(secret)
	now := a.now()
	key, up, err := a.lookup(ctx, hash, now)
	if errors.Is(err, store.ErrNotFound) {
		return nil, tools.Errorf(tools.CodeUnauthenticated, "unknown API key; check it was copied whole, or get a new one with agent_signup and agent_verify")
	}
	if err != nil {
		return nil, err
	}
	if key.RevokedAt != nil {
		return nil, tools.Errorf(tools.CodeUnauthenticated, "this API key was revoked at %s; use another key of the account, or verify your e-mail again (agent_signup, agent_verify) for a new one", key.RevokedAt.UTC().Format(time.RFC3339))
	}
	if err := ancestorsLive(up); err != nil { // never cached: only a race with a revocation gets here
		return nil, err
	}
	a.used(ctx, key, now)
	return KeyPrincipal(key, up...), nil
}

// lookup finds a key by hash with its ancestors (store.KeyAncestors: a second query only for a
// key minted from another), from the cache while the watch is live.
func (a *Authenticator) lookup(ctx context.Context, hash string, now time.Time) (*accounts.APIKey, []*accounts.APIKey, error) {
	a.mu.Lock()
	c, ok := a.cache[hash]
	live, gen := a.live, a.gen
	a.mu.Unlock()
	if ok && live && now.Before(c.expires) {
		return c.key, c.up, nil
	}
	key, err := a.accounts.KeyByHash(ctx, hash)
	if err != nil || key.RevokedAt != nil {
		return key, nil, err
	}
	up, err := a.accounts.KeyAncestors(ctx, key)
	if err != nil || !live || slices.ContainsFunc(up, func(k *accounts.APIKey) bool { return k.RevokedAt != nil }) {
		return key, up, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.live && a.gen == gen { // no change arrived during the lookup
		if len(a.cache) >= cacheMax {
			clear(a.cache)
		}
		a.cache[hash] = cachedKey{key: key, up: up, expires: now.Add(cacheFor)}
	}
	return key, up, nil
}

// used records a key's use at most once a minute: in the next batch while the watch runs,
// at once otherwise. A failed bookkeeping write never fails the caller's request.
func (a *Authenticator) used(ctx context.Context, key *accounts.APIKey, now time.Time) {
	a.mu.Lock()
	if key.LastUsedAt != nil && now.Sub(*key.LastUsedAt) <= touchEvery {
		a.mu.Unlock()
		return
	}
	t := now
	key.LastUsedAt = &t // the cached copy: the next minute's calls record nothing
	live := a.live
	if live {
		a.touched[key.ID] = now
	}
	a.mu.Unlock()
	if !live {
		if err := a.accounts.TouchKeys(ctx, map[string]time.Time{key.ID: now}); err != nil {
			a.log.WarnContext(ctx, "record key use", "key_id", key.ID, "err", err)
		}
	}
}

// FlushUses writes the recorded key uses in one statement per batch.
func (a *Authenticator) FlushUses(ctx context.Context) {
	a.mu.Lock()
	batch := a.touched
	a.touched = map[string]time.Time{}
	a.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	if err := a.accounts.TouchKeys(ctx, batch); err != nil {
		a.log.WarnContext(ctx, "record key uses", "keys", len(batch), "err", err)
	}
}

// KeyPrincipal is the principal an API key stands for, under its ancestors (nearest first;
// store.KeyAncestors).
func KeyPrincipal(k *accounts.APIKey, ancestors ...*accounts.APIKey) *tools.Principal {
	p := &tools.Principal{
		AccountID: k.AccountID, Method: tools.AuthAPIKey, KeyID: k.ID, Scopes: k.Scopes,
		SpendLimitMicro: k.SpendLimitMicro, RateLimitPerMinute: k.RateLimitPerMinute,
	}
	for _, a := range ancestors {
		p.Ancestors = append(p.Ancestors, tools.Ancestor{KeyID: a.ID, SpendLimitMicro: a.SpendLimitMicro, RateLimitPerMinute: a.RateLimitPerMinute})
	}
	return p
}

// ResolveKey returns the principal of a live key with its ancestors, or UNAUTHENTICATED when
// one of them is revoked (revoking a key revokes the keys under it; this holds even for a
// key minted while its parent was being revoked).
func ResolveKey(ctx context.Context, st *store.Store, k *accounts.APIKey) (*tools.Principal, error) {
	up, err := accounts.New(st).KeyAncestors(ctx, k)
	if err != nil {
		return nil, err
	}
	if err := ancestorsLive(up); err != nil {
		return nil, err
	}
	return KeyPrincipal(k, up...), nil
}

func ancestorsLive(up []*accounts.APIKey) error {
	for _, a := range up {
		if a.RevokedAt != nil {
			return tools.Errorf(tools.CodeUnauthenticated, "the key this key was minted from (%s, %s) was revoked at %s, and with it every key minted under it; use another key of the account",
				a.Name, a.Prefix, a.RevokedAt.UTC().Format(time.RFC3339))
		}
	}
	return nil
}

// Package prices quotes USD prices from market-data providers with failover: CoinGecko then
// DefiLlama for EVM tokens and majors, Jupiter then CoinGecko then DefiLlama for Solana tokens.
// A price is never stale and never invented: each provider's answer is checked (positive,
// recent enough, confident enough), a short cache serves a price only while its provider
// timestamp is within the maximum age, and when every provider fails the caller gets each
// provider's reason and no number.
package prices

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/shopspring/decimal"
	"github.com/switchboard-hq/switchboard/chain/httpx"
)

// Asset is what a provider needs to find a token.
type Asset struct {
	Chain        string // Switchboard chain name
	Solana       bool
	Platform     string // CoinGecko asset platform id
	Llama        string // DefiLlama chain prefix
	Address      string // contract or mint; "" for an EVM native coin
	MarketDataID string // CoinGecko id, "" when unknown
}

// Key identifies an asset in answers and the cache.
func (a Asset) Key() string {
	if a.Address != "" {
		return a.Chain + ":" + a.Address
	}
	return a.Chain + ":id:" + a.MarketDataID
}

// Observation is one provider's raw answer for one asset.
type Observation struct {
	Price  decimal.Decimal
	At     time.Time // the provider's timestamp of the price; zero for live quotes without one
	Reject string    // why the provider's own data makes the entry unusable (e.g. low confidence)
}

// Provider is a price source.
type Provider interface {
	Name() string
	// Observe returns what the provider says about assets, keyed by Asset.Key. An asset
	// missing from the map is not listed there. A non-nil error explains every missing asset
	// (the call, or part of it, failed); a *httpx.StatusError 429 rests the provider.
	Observe(ctx context.Context, assets []Asset) (map[string]Observation, error)
}

// Quote is a checked price.
type Quote struct {
	Price     decimal.Decimal
	Source    string
	At        time.Time // provider timestamp (fetch time for live quotes)
	FetchedAt time.Time
}

// Failure is why one provider did not quote an asset.
type Failure struct {
	Source string `json:"source" jsonschema_description:"price provider"`
	Reason string `json:"reason"`
}

// Config tunes the quoter.
type Config struct {
	MaxAge        time.Duration // oldest acceptable provider timestamp (default 10 minutes)
	CacheTTL      time.Duration // how long a checked price may be served again (at most 30 s)
	DefaultRest   time.Duration // rest after a 429 without Retry-After (default 60 s)
	MaxRest       time.Duration // cap on Retry-After (default 15 minutes)
	MinConfidence decimal.Decimal
}

// Quoter runs the provider chains.
type Quoter struct {
	cfg      Config
	evm, svm []Provider
	now      func() time.Time

	mu    sync.Mutex
	cache map[string]cached
	rest  map[string]time.Time
}

type cached struct {
	q        Quote
	cachedAt time.Time
}

// MaxCacheTTL is the longest a price is served from the cache.
const MaxCacheTTL = 30 * time.Second

const maxCacheEntries = 20000

// NewQuoter builds a quoter. evm is the chain for EVM tokens and majors, svm for Solana tokens.
func NewQuoter(cfg Config, evm, svm []Provider, now func() time.Time) *Quoter {
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = 10 * time.Minute
	}
	if cfg.CacheTTL <= 0 || cfg.CacheTTL > MaxCacheTTL {
		cfg.CacheTTL = MaxCacheTTL
	}
	if cfg.DefaultRest <= 0 {
		cfg.DefaultRest = time.Minute
	}
	if cfg.MaxRest <= 0 {
		cfg.MaxRest = 15 * time.Minute
	}
	return &Quoter{cfg: cfg, evm: evm, svm: svm, now: now, cache: map[string]cached{}, rest: map[string]time.Time{}}
}

// Quote prices assets. Every asset ends up in exactly one of the maps: quotes, or failures
// listing each provider's reason in the order tried.
func (q *Quoter) Quote(ctx context.Context, assets []Asset) (map[string]Quote, map[string][]Failure) {
	quotes := map[string]Quote{}
	failures := map[string][]Failure{}
	var evm, svm []Asset
	seen := map[string]bool{}
	now := q.now()
	q.mu.Lock()
	for _, a := range assets {
		k := a.Key()
		if seen[k] {
			continue
		}
		seen[k] = true
		if c, ok := q.cache[k]; ok && now.Sub(c.cachedAt) <= q.cfg.CacheTTL && now.Sub(c.q.At) <= q.cfg.MaxAge {
			quotes[k] = c.q
			continue
		}
		if a.Solana {
			svm = append(svm, a)
		} else {
			evm = append(evm, a)
		}
	}
	q.mu.Unlock()

	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, group := range []struct {
		assets    []Asset
		providers []Provider
	}{{evm, q.evm}, {svm, q.svm}} {
		if len(group.assets) == 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			qs, fs := q.chain(ctx, group.assets, group.providers)
			mu.Lock()
			defer mu.Unlock()
			for k, v := range qs {
				quotes[k] = v
			}
			for k, v := range fs {
				failures[k] = v
			}
		}()
	}
	wg.Wait()
	return quotes, failures
}

// chain walks the providers in order; each gets the assets the previous ones could not quote.
func (q *Quoter) chain(ctx context.Context, assets []Asset, providers []Provider) (map[string]Quote, map[string][]Failure) {
	quotes := map[string]Quote{}
	failures := map[string][]Failure{}
	pending := assets
	for _, p := range providers {
		if len(pending) == 0 {
			break
		}
		name := p.Name()
		fail := func(a Asset, reason string) {
			failures[a.Key()] = append(failures[a.Key()], Failure{Source: name, Reason: reason})
		}
		if until, resting := q.resting(name); resting {
			for _, a := range pending {
				fail(a, fmt.Sprintf("resting after HTTP 429 until %s", until.UTC().Format(time.RFC3339)))
			}
			continue
		}
		obs, err := p.Observe(ctx, pending)
		fetched := q.now()
		callReason := "not listed"
		if err != nil {
			callReason = httpx.Reason(err)
			var se *httpx.StatusError
			if errors.As(err, &se) && se.Status == 429 {
				wait := se.RetryAfter
				if wait <= 0 {
					wait = q.cfg.DefaultRest
				}
				wait = min(wait, q.cfg.MaxRest)
				q.restFor(name, fetched.Add(wait))
				callReason = fmt.Sprintf("rate limited (HTTP 429); resting %s", wait.Round(time.Second))
			}
		}
		var next []Asset
		for _, a := range pending {
			o, ok := obs[a.Key()]
			if !ok {
				fail(a, callReason)
				next = append(next, a)
				continue
			}
			at := o.At
			if at.IsZero() {
				at = fetched // a live quote without a timestamp (Jupiter) is as of now
			}
			switch age := fetched.Sub(at); {
			case o.Reject != "":
				fail(a, o.Reject)
			case !o.Price.IsPositive():
				fail(a, fmt.Sprintf("price %s is not positive", o.Price))
			case age > q.cfg.MaxAge:
				fail(a, fmt.Sprintf("stale: last updated %s ago, older than the %s maximum", age.Round(time.Second), q.cfg.MaxAge))
			default:
				quote := Quote{Price: o.Price, Source: name, At: at.UTC(), FetchedAt: fetched.UTC()}
				quotes[a.Key()] = quote
				delete(failures, a.Key())
				q.store(a.Key(), quote, fetched)
				continue
			}
			next = append(next, a)
		}
		pending = next
	}
	return quotes, failures
}

func (q *Quoter) resting(name string) (time.Time, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	until, ok := q.rest[name]
	return until, ok && q.now().Before(until)
}

func (q *Quoter) restFor(name string, until time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if until.After(q.rest[name]) {
		q.rest[name] = until
	}
}

func (q *Quoter) store(key string, quote Quote, now time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.cache) >= maxCacheEntries {
		for k, c := range q.cache {
			if now.Sub(c.cachedAt) > q.cfg.CacheTTL {
				delete(q.cache, k)
			}
		}
		if len(q.cache) >= maxCacheEntries {
			q.cache = map[string]cached{}
		}
	}
	q.cache[key] = cached{q: quote, cachedAt: now}
}

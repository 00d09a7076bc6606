package tools

import (
	"context"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limiter decides whether a principal may make one more call: at most perMinute a minute,
// with a burst of the same size. A limiter whose counters live elsewhere (Redis) can fail; the
// kernel then refuses calls that cost money rather than let them through unlimited.
type Limiter interface {
	Allow(ctx context.Context, id string, perMinute int) (ok bool, retryAfter time.Duration, err error)
	// AllowAll takes one token from every bucket, or none: refused is the index of the first
	// bucket that had none (-1: allowed) and retryAfter how long until every refusing bucket
	// has one. A key's call takes from its own bucket and each ancestor's, all or nothing, so
	// a refused call costs no bucket anything.
	AllowAll(ctx context.Context, buckets []Bucket) (refused int, retryAfter time.Duration, err error)
}

// Bucket is one rate limit a call counts against: an id's perMinute.
type Bucket struct {
	ID        string
	PerMinute int
}

// RateLimiter enforces each key's rateLimitPerMinute as a token bucket that refills
// rateLimitPerMinute tokens a minute with a burst of the same size. Counters live in this
// process: the embedded default, right for one replica (several share a Redis limiter).
type RateLimiter struct {
	mu      sync.Mutex
	buckets map[string]*bucket
	now     func() time.Time
	sweep   time.Time
}

type bucket struct {
	perMinute int
	lim       *rate.Limiter
	seen      time.Time
}

// NewRateLimiter builds a limiter on the clock now.
func NewRateLimiter(now func() time.Time) *RateLimiter {
	return &RateLimiter{buckets: make(map[string]*bucket), now: now}
}

// Allow takes one token from the key's bucket. When none is left it reports how long until
// one is. It never fails.
func (r *RateLimiter) Allow(_ context.Context, keyID string, perMinute int) (ok bool, retryAfter time.Duration, _ error) {
	ok, retryAfter = r.take(keyID, perMinute)
	return ok, retryAfter, nil
}

func (r *RateLimiter) take(keyID string, perMinute int) (ok bool, retryAfter time.Duration) {
	refused, wait, _ := r.AllowAll(context.Background(), []Bucket{{ID: keyID, PerMinute: perMinute}})
	return refused < 0, wait
}

// AllowAll takes one token from every bucket or from none. It never fails.
func (r *RateLimiter) AllowAll(_ context.Context, buckets []Bucket) (refused int, retryAfter time.Duration, _ error) {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	refused = -1
	var wait time.Duration
	bs := make([]*bucket, len(buckets))
	for i, want := range buckets {
		if want.PerMinute <= 0 {
			return i, time.Minute, nil
		}
		b := r.buckets[want.ID]
		if b == nil || b.perMinute != want.PerMinute {
			b = &bucket{perMinute: want.PerMinute, lim: rate.NewLimiter(rate.Limit(float64(want.PerMinute)/60), want.PerMinute)}
			r.buckets[want.ID] = b
		}
		b.seen, bs[i] = now, b
		if b.lim.TokensAt(now) < 1 {
			res := b.lim.ReserveN(now, 1)
			wait = max(wait, res.DelayFrom(now))
			res.CancelAt(now)
			if refused < 0 {
				refused = i
			}
		}
	}
	r.evictIdle(now)
	if refused >= 0 {
		return refused, time.Duration(math.Ceil(wait.Seconds())) * time.Second, nil
	}
	for _, b := range bs {
		b.lim.AllowN(now, 1)
	}
	return -1, 0, nil
}

// evictIdle drops buckets idle for over a minute (they are full again by then), at most once
// a minute, so memory follows the active keys.
func (r *RateLimiter) evictIdle(now time.Time) {
	if now.Sub(r.sweep) < time.Minute {
		return
	}
	r.sweep = now
	for id, b := range r.buckets {
		if now.Sub(b.seen) > time.Minute {
			delete(r.buckets, id)
		}
	}
}

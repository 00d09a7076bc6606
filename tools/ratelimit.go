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
	if perMinute <= 0 {
		return false, time.Minute
	}
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.buckets[keyID]
	if b == nil || b.perMinute != perMinute {
		b = &bucket{perMinute: perMinute, lim: rate.NewLimiter(rate.Limit(float64(perMinute)/60), perMinute)}
		r.buckets[keyID] = b
	}
	b.seen = now
	r.evictIdle(now)
	if b.lim.AllowN(now, 1) {
		return true, 0
	}
	res := b.lim.ReserveN(now, 1)
	wait := res.DelayFrom(now)
	res.CancelAt(now)
	return false, time.Duration(math.Ceil(wait.Seconds())) * time.Second
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

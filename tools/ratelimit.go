package tools

import (
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// RateLimiter enforces each key's rateLimitPerMinute as a token bucket that refills
// rateLimitPerMinute tokens a minute with a burst of the same size. Counters live in this
// process (see the README's Decisions for replicas).
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
// one is.
func (r *RateLimiter) Allow(keyID string, perMinute int) (ok bool, retryAfter time.Duration) {
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

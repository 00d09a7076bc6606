// Package ratelimit holds the rate limiter replicas share: GCRA (the generic cell rate
// algorithm, a token bucket kept as one timestamp) in Redis, decided by one Lua script so
// concurrent calls on any replica are counted exactly once. The in-process limiter
// (tools.RateLimiter) stays the embedded default.
package ratelimit

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/redis/go-redis/v9"
)

// gcra allows one call of a bucket refilling one token every ARGV[1] microseconds with a burst
// of ARGV[2]; KEYS[1] holds the theoretical arrival time (TAT) in microseconds of Redis's own
// clock, so replicas with skewed clocks agree. Returns {1, 0} or {0, retry-after µs}.
var gcra = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local new = tat + interval
local allow_at = new - burst * interval
if now < allow_at then
  return {0, allow_at - now}
end
redis.call('SET', KEYS[1], new, 'PX', math.ceil((new - now) / 1000) + 1000)
return {1, 0}
`)

// Redis is a tools.Limiter over Redis.
type Redis struct {
	rdb    redis.UniversalClient
	prefix string
}

// NewRedis returns a limiter keeping its buckets under prefix in rdb.
func NewRedis(rdb redis.UniversalClient, prefix string) *Redis {
	return &Redis{rdb: rdb, prefix: prefix}
}

// Allow takes one token from id's bucket, or reports how long until one is. It fails when
// Redis cannot answer within the caller's deadline (the client's timeouts bound it too).
func (r *Redis) Allow(ctx context.Context, id string, perMinute int) (bool, time.Duration, error) {
	if perMinute <= 0 {
		return false, time.Minute, nil
	}
	interval := int64(time.Minute/time.Microsecond) / int64(perMinute)
	res, err := gcra.Run(ctx, r.rdb, []string{r.prefix + id}, interval, perMinute).Int64Slice()
	if err != nil {
		return false, 0, fmt.Errorf("rate limiter: %w", err)
	}
	if len(res) != 2 {
		return false, 0, fmt.Errorf("rate limiter: unexpected answer %v", res)
	}
	if res[0] == 1 {
		return true, 0, nil
	}
	return false, time.Duration(math.Ceil(float64(res[1])/1e6)) * time.Second, nil
}

// Open connects to the Redis at url (redis://[user:pass@]host:port/db or rediss://) with short
// timeouts: a limiter that waits long is worse than one that fails fast.
func Open(ctx context.Context, url string) (*redis.Client, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("SWITCHBOARD_REDIS_URL: %w", err)
	}
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = 2*time.Second, time.Second, time.Second
	opt.MaxRetries = 1
	rdb := redis.NewClient(opt)
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		return nil, fmt.Errorf("SWITCHBOARD_REDIS_URL: cannot reach Redis: %w", err)
	}
	return rdb, nil
}

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
	"github.com/switchboard-hq/switchboard/tools"
)

// gcraAll allows one call of each bucket KEYS[i], refilling one token every ARGV[2i-1]
// microseconds with a burst of ARGV[2i]; each key holds the bucket's theoretical arrival time
// (TAT) in microseconds of Redis's own clock, so replicas with skewed clocks agree. All or
// nothing: it returns {-1, 0} having taken a token from each, or {i, retry-after µs}
// having taken none, i the 0-based index of the first bucket that had no token and the wait
// the longest of the refusing buckets'.
var gcraAll = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local refused, wait, news = -1, 0, {}
for i = 1, #KEYS do
  local interval = tonumber(ARGV[2 * i - 1])
  local burst = tonumber(ARGV[2 * i])
  local tat = tonumber(redis.call('GET', KEYS[i]) or now)
  if tat < now then tat = now end
  local new = tat + interval
  local allow_at = new - burst * interval
  if now < allow_at then
    if refused < 0 then refused = i - 1 end
    if allow_at - now > wait then wait = allow_at - now end
  end
  news[i] = new
end
if refused >= 0 then return {refused, wait} end
for i = 1, #KEYS do
  redis.call('SET', KEYS[i], news[i], 'PX', math.ceil((news[i] - now) / 1000) + 1000)
end
return {-1, 0}
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
	refused, wait, err := r.AllowAll(ctx, []tools.Bucket{{ID: id, PerMinute: perMinute}})
	return err == nil && refused < 0, wait, err
}

// AllowAll takes one token from every bucket or from none, in one round trip.
func (r *Redis) AllowAll(ctx context.Context, buckets []tools.Bucket) (int, time.Duration, error) {
	keys, args := make([]string, len(buckets)), make([]any, 0, 2*len(buckets))
	for i, b := range buckets {
		if b.PerMinute <= 0 {
			return i, time.Minute, nil
		}
		keys[i] = r.prefix + b.ID
		args = append(args, int64(time.Minute/time.Microsecond)/int64(b.PerMinute), b.PerMinute)
	}
	res, err := gcraAll.Run(ctx, r.rdb, keys, args...).Int64Slice()
	if err != nil {
		return 0, 0, fmt.Errorf("rate limiter: %w", err)
	}
	if len(res) != 2 || res[0] < -1 || res[0] >= int64(len(buckets)) {
		return 0, 0, fmt.Errorf("rate limiter: unexpected answer %v", res)
	}
	return int(res[0]), time.Duration(math.Ceil(float64(res[1])/1e6)) * time.Second, nil
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

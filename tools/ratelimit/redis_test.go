package ratelimit_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/ratelimit"
	"github.com/switchboard-hq/switchboard/tools/ratelimit/redistest"
)

// Two replicas, each with its own connection, share one bucket per key: 5 a minute in
// total, however the calls are spread and however concurrent.
func TestRedisLimitHoldsAcrossReplicas(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	var replicas []*ratelimit.Redis
	for range 2 {
		rdb, err := ratelimit.Open(ctx, srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rdb.Close() })
		replicas = append(replicas, ratelimit.NewRedis(rdb, "test:"))
	}
	var allowed atomic.Int32
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, _, err := replicas[i%2].Allow(ctx, "key-1", 5)
			if err != nil {
				t.Error(err)
			}
			if ok {
				allowed.Add(1)
			}
		}()
	}
	wg.Wait()
	if got := allowed.Load(); got != 5 {
		t.Fatalf("%d of 20 calls allowed at 5 a minute across two replicas, want 5", got)
	}
	ok, wait, err := replicas[0].Allow(ctx, "key-1", 5)
	if ok || err != nil || wait < 11*time.Second || wait > 12*time.Second {
		t.Fatalf("6th call: ok=%v wait=%v err=%v, want refused for about 12 s (one token per 12 s)", ok, wait, err)
	}
	if ok, _, _ := replicas[1].Allow(ctx, "key-2", 5); !ok {
		t.Fatal("keys share a bucket")
	}
	if ok, _, _ := replicas[1].Allow(ctx, "key-3", 0); ok {
		t.Fatal("a zero limit allowed a call")
	}
}

// The bucket refills at its rate: after one interval, one more call.
func TestRedisLimitRefills(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	rdb, err := ratelimit.Open(ctx, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	l := ratelimit.NewRedis(rdb, "test:")
	// 60 a minute: one token a second, so the burst (60 round trips) ends long before a
	// token comes back even on a loaded machine (at 600 a minute it did not always).
	for range 60 {
		if ok, _, _ := l.Allow(ctx, "k", 60); !ok {
			t.Fatal("a burst within the limit was refused")
		}
	}
	if ok, _, _ := l.Allow(ctx, "k", 60); ok {
		t.Fatal("the burst went past the limit")
	}
	time.Sleep(1100 * time.Millisecond)
	if ok, _, _ := l.Allow(ctx, "k", 60); !ok {
		t.Fatal("no token after one interval")
	}
}

// Redis unreachable: Allow fails (it never answers "allowed"), and recovers with Redis.
func TestRedisDownFails(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	rdb, err := ratelimit.Open(ctx, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	l := ratelimit.NewRedis(rdb, "test:")
	srv.Stop()
	if ok, _, err := l.Allow(ctx, "k", 100); ok || err == nil {
		t.Fatalf("with Redis down: ok=%v err=%v, want an error", ok, err)
	}
	srv.Restart()
	var ok bool
	for range 50 {
		if ok, _, err = l.Allow(ctx, "k", 100); ok {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !ok {
		t.Fatalf("after Redis came back: %v", err)
	}
	if _, err := ratelimit.Open(ctx, "redis://127.0.0.1:1/0"); err == nil {
		t.Fatal("Open reached a closed port")
	}
}

// A key's call takes from its own bucket and every ancestor's, all or nothing (issue 35): a
// parent of 3 a minute with two children of 10 allows 3 calls of the tree in all, and a
// refused call takes nothing from the buckets that had a token. The same for the limiter
// replicas share and the in-process one.
func TestAllowAllIsAllOrNothing(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	rdb, err := ratelimit.Open(ctx, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	start := time.Now()
	for name, lim := range map[string]tools.Limiter{
		"redis":      ratelimit.NewRedis(rdb, "tree:"),
		"in-process": tools.NewRateLimiter(func() time.Time { return start }),
	} {
		t.Run(name, func(t *testing.T) {
			parent := tools.Bucket{ID: "parent", PerMinute: 3}
			c1, c2 := tools.Bucket{ID: "c1", PerMinute: 10}, tools.Bucket{ID: "c2", PerMinute: 10}
			for i, b := range []tools.Bucket{c1, c1, c2} {
				if refused, _, err := lim.AllowAll(ctx, []tools.Bucket{b, parent}); refused != -1 || err != nil {
					t.Fatalf("call %d of the tree: refused %d, %v", i+1, refused, err)
				}
			}
			refused, wait, err := lim.AllowAll(ctx, []tools.Bucket{c2, parent})
			if refused != 1 || err != nil || wait < 19*time.Second || wait > 20*time.Second {
				t.Fatalf("the 4th call of the tree: refused %d after %v (%v), want the parent's bucket (index 1), about 20 s", refused, wait, err)
			}
			// c2 kept the token the refused call did not take: 9 left of its 10.
			for i := range 9 {
				if ok, _, err := lim.Allow(ctx, c2.ID, c2.PerMinute); !ok || err != nil {
					t.Fatalf("c2's own call %d: %v %v (a refused call took its token)", i+1, ok, err)
				}
			}
			if ok, _, _ := lim.Allow(ctx, c2.ID, c2.PerMinute); ok {
				t.Fatal("c2 allowed an 11th call in a minute")
			}
			if refused, _, _ := lim.AllowAll(ctx, []tools.Bucket{{ID: "z", PerMinute: 0}}); refused != 0 {
				t.Fatal("a zero limit allowed a call")
			}
		})
	}
}

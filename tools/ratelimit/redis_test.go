package ratelimit_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

package signing_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/signing"
)

func TestDedupeSharesConcurrentAndRecentResults(t *testing.T) {
	clk := newClock()
	d := signing.NewDedupe[int](time.Minute, 100)
	d.Now = clk.Now
	var runs atomic.Int32
	release := make(chan struct{})
	started := make(chan struct{})
	fn := func() (int, bool) {
		if runs.Add(1) == 1 {
			close(started)
		}
		<-release
		return 42, true
	}
	var wg sync.WaitGroup
	results := make(chan int, 10)
	replays := atomic.Int32{}
	wg.Go(func() {
		v, replayed, err := d.Do(context.Background(), "k", fn)
		if err != nil || replayed {
			t.Errorf("leader: %v %v", replayed, err)
		}
		results <- v
	})
	<-started
	for range 9 {
		wg.Go(func() {
			v, replayed, err := d.Do(context.Background(), "k", fn)
			if err != nil {
				t.Error(err)
			}
			if replayed {
				replays.Add(1)
			}
			results <- v
		})
	}
	time.Sleep(20 * time.Millisecond) // let the duplicates queue up
	close(release)
	wg.Wait()
	close(results)
	for v := range results {
		if v != 42 {
			t.Errorf("got %d", v)
		}
	}
	if runs.Load() != 1 || replays.Load() != 9 {
		t.Errorf("runs %d replays %d", runs.Load(), replays.Load())
	}

	// Within the TTL: replayed. After it: run again.
	clk.Advance(59 * time.Second)
	if _, replayed, _ := d.Do(context.Background(), "k", func() (int, bool) { return 1, true }); !replayed {
		t.Error("not replayed within TTL")
	}
	clk.Advance(2 * time.Second)
	if v, replayed, _ := d.Do(context.Background(), "k", func() (int, bool) { return 7, true }); replayed || v != 7 {
		t.Error("replayed after TTL")
	}
}

func TestDedupeNotKept(t *testing.T) {
	d := signing.NewDedupe[string](time.Minute, 100)
	d.Do(context.Background(), "k", func() (string, bool) { return "503", false })
	if v, replayed, _ := d.Do(context.Background(), "k", func() (string, bool) { return "200", true }); replayed || v != "200" {
		t.Errorf("transient failure was kept: %q", v)
	}
}

func TestDedupeBounded(t *testing.T) {
	d := signing.NewDedupe[[]byte](time.Hour, 50)
	d.MaxBytes = 1000
	d.SizeOf = func(b []byte) int64 { return int64(len(b)) }
	for i := range 200 {
		d.Do(context.Background(), fmt.Sprint(i), func() ([]byte, bool) { return make([]byte, 10), true })
	}
	if n := d.Len(); n != 50 {
		t.Errorf("%d entries, want 50", n)
	}
	for i := range 20 {
		d.Do(context.Background(), fmt.Sprint("big", i), func() ([]byte, bool) { return make([]byte, 300), true })
	}
	if n := d.Len(); n > 3 {
		t.Errorf("%d entries of 300 bytes kept under a 1000 byte budget", n)
	}
	// The newest is kept, the oldest went first.
	if _, replayed, _ := d.Do(context.Background(), "big19", func() ([]byte, bool) { return nil, true }); !replayed {
		t.Error("newest entry evicted")
	}
	if _, replayed, _ := d.Do(context.Background(), "0", func() ([]byte, bool) { return nil, true }); replayed {
		t.Error("oldest entry kept")
	}
}

func TestDedupeWaiterContext(t *testing.T) {
	d := signing.NewDedupe[int](time.Minute, 10)
	release := make(chan struct{})
	started := make(chan struct{})
	go d.Do(context.Background(), "k", func() (int, bool) { close(started); <-release; return 1, true })
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, _, err := d.Do(ctx, "k", func() (int, bool) { return 2, true }); err == nil {
		t.Error("waiter ignored its context")
	}
	close(release)
}

func TestDedupePanicLetsWaitersRun(t *testing.T) {
	d := signing.NewDedupe[int](time.Minute, 10)
	started := make(chan struct{})
	release := make(chan struct{})
	panicked := make(chan any, 1)
	go func() {
		defer func() { panicked <- recover() }()
		d.Do(context.Background(), "k", func() (int, bool) { close(started); <-release; panic("boom") })
	}()
	<-started
	done := make(chan int)
	go func() {
		v, _, _ := d.Do(context.Background(), "k", func() (int, bool) { return 5, true })
		done <- v
	}()
	time.Sleep(10 * time.Millisecond)
	close(release)
	if p := <-panicked; p != "boom" {
		t.Errorf("panic not propagated: %v", p)
	}
	if v := <-done; v != 5 {
		t.Errorf("waiter got %d, want its own run", v)
	}
}

func TestDedupeMiddleware(t *testing.T) {
	var runs atomic.Int32
	status := http.StatusOK
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := runs.Add(1)
		w.Header().Set("X-Run", fmt.Sprint(n))
		w.WriteHeader(status)
		fmt.Fprintf(w, "run %d", n)
	})
	h := signing.DedupeMiddleware(signing.NewResponseDedupe(), inner)
	call := func(id string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/", nil)
		if id != "" {
			req = req.WithContext(signing.NewContextWithEnvelope(req.Context(), &signing.Envelope{RequestID: id}))
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	first := call("a")
	second := call("a")
	if second.Body.String() != "run 1" || second.Header().Get("X-Run") != "1" || second.Header().Get(signing.HeaderReplayed) != "true" {
		t.Errorf("second: %s %v", second.Body, second.Header())
	}
	if first.Header().Get(signing.HeaderReplayed) != "" {
		t.Error("first response marked replayed")
	}
	if call("b").Body.String() != "run 2" {
		t.Error("different requestId replayed")
	}
	if call("").Body.String() != "run 3" || call("").Body.String() != "run 4" {
		t.Error("requests without envelope deduped")
	}
	status = http.StatusServiceUnavailable
	call("c")
	if rec := call("c"); rec.Body.String() != "run 6" || rec.Code != 503 {
		t.Errorf("5xx replayed: %s", rec.Body)
	}
}

func TestDedupeMiddlewareLargeBody(t *testing.T) {
	var runs atomic.Int32
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		io.WriteString(w, strings.Repeat("x", 2<<20))
	})
	h := signing.DedupeMiddleware(signing.NewResponseDedupe(), inner)
	for range 2 {
		req := httptest.NewRequest("POST", "/", nil)
		req = req.WithContext(signing.NewContextWithEnvelope(req.Context(), &signing.Envelope{RequestID: "big"}))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Body.Len() != 2<<20 {
			t.Errorf("body %d bytes", rec.Body.Len())
		}
	}
	if runs.Load() != 2 {
		t.Errorf("oversized response replayed (runs %d)", runs.Load())
	}
}

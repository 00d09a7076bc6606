package idempotency

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	idem "github.com/switchboard-hq/switchboard/store/idempotency"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/service"
	"github.com/switchboard-hq/switchboard/tools/wallets"
)

// clock is a settable clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// oneKey authenticates the one key "k" as an account's key.
type oneKey struct{}

func (oneKey) Authenticate(_ context.Context, secret string) (*tools.Principal, error) {
	if secret != "k" {
		return nil, tools.Errorf(tools.CodeUnauthenticated, "unknown key")
	}
	return &tools.Principal{AccountID: "acct", Method: tools.AuthAPIKey, KeyID: "key1", RateLimitPerMinute: 100000}, nil
}

type mintIn struct {
	Name string `json:"name" jsonschema:"minLength=1"`
}

type mintOut struct {
	Secret string `json:"secret"`
	CallID string `json:"callId"`
	Run    int64  `json:"run"`
}

// rig is a kernel with one wrapped tool, mint, that answers a fresh secret per run (so a
// replay is told from a second run), and what the test makes it do.
type rig struct {
	kernel *tools.Kernel
	svc    *Service
	keys   idem.Keys
	clock  *clock
	runs   atomic.Int64
	// fail, when set, is the error a run answers; block, when set, holds a run until closed.
	fail  atomic.Pointer[tools.Error]
	block atomic.Pointer[chan struct{}]
	began chan struct{}
}

// masterKeys seal the rigs' answers: the current one first (wallets.NewSealer).
var (
	masterA   = bytes.Repeat([]byte{7}, 32)
	masterB   = bytes.Repeat([]byte{9}, 32)
	legacyKey = bytes.Repeat([]byte{5}, 32) // what earlier releases derived from the server secret
)

func newRig(t *testing.T, st *store.Store) *rig {
	t.Helper()
	return newRigWith(t, st, nil, masterA)
}

// newRigWith is newRig with its own master keys (current first) and legacy key (nil: none).
func newRigWith(t *testing.T, st *store.Store, legacy []byte, masters ...[]byte) *rig {
	t.Helper()
	r := &rig{clock: &clock{now: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}, began: make(chan struct{}, 8)}
	d := service.Deps{Store: st, Now: r.clock.Now}
	sealer, err := wallets.NewSealer(masters...)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := NewService(Config{Sealer: sealer, LegacyKey: legacy}, d)
	if err != nil {
		t.Fatal(err)
	}
	mint := tools.New(tools.Def{Name: "mint", Title: "Mint", Description: "mints", Access: tools.AnyKey, TakesIdempotencyKey: true,
		Annotations: tools.Annotations{ReadOnly: tools.Bool(false), Destructive: tools.Bool(false), OpenWorld: tools.Bool(false)}},
		func(ctx context.Context, c *tools.Caller, in mintIn) (mintOut, error) {
			n := r.runs.Add(1)
			r.began <- struct{}{}
			if b := r.block.Load(); b != nil {
				<-*b
			}
			if e := r.fail.Load(); e != nil {
				return mintOut{}, e
			}
			return mintOut{Secret: tools.HashKey(c.NewCallID() + in.Name)[:16] + "-" + strings.Repeat("s", int(n)), CallID: c.CallID, Run: n}, nil
		})
	wrapped, err := svc.Wrap([]*tools.Tool{mint})
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	k, err := tools.NewKernel(oneKey{}, tools.NewRateLimiter(r.clock.Now), nil, quiet, r.clock.Now, wrapped...)
	if err != nil {
		t.Fatal(err)
	}
	r.kernel, r.svc, r.keys = k, svc, idem.New(st)
	return r
}

func (r *rig) call(t *testing.T, args string) (mintOut, *tools.Error) {
	t.Helper()
	out, e := r.kernel.Call(context.Background(), tools.Request{Tool: "mint", Args: json.RawMessage(args), APIKey: "k"})
	if e != nil {
		return mintOut{}, e
	}
	return out.(mintOut), nil
}

// TestSameKeyAnswersTheFirstCall: the same key and input answer the first run's answer
// without running again (a secret shown once included, stored sealed); another input is
// CONFLICT; no key runs every time.
func TestSameKeyAnswersTheFirstCall(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		r := newRig(t, st)
		first, e := r.call(t, `{"name":"a","idempotencyKey":"k-1"}`)
		if e != nil {
			t.Fatal(e)
		}
		again, e := r.call(t, `{"idempotencyKey":"k-1", "name":"a"}`) // the same input in another order
		if e != nil || again != first || r.runs.Load() != 1 {
			t.Fatalf("retry: %+v %v, first %+v, runs %d; want the first answer, one run", again, e, first, r.runs.Load())
		}
		if first.CallID == "" {
			t.Fatal("the run had no CallID chosen before it")
		}
		var raw []byte
		if err := st.DB().NewRaw("SELECT answer FROM idempotency_keys WHERE idem_key = ?", "k-1").Scan(context.Background(), &raw); err != nil {
			t.Fatal(err)
		}
		if len(raw) == 0 || bytes.Contains(raw, []byte(first.Secret)) {
			t.Fatalf("stored answer %q: want it sealed, without the secret %s", raw, first.Secret)
		}
		_, e = r.call(t, `{"name":"b","idempotencyKey":"k-1"}`)
		if e == nil || e.Code != tools.CodeConflict || !strings.Contains(e.Message, `"k-1"`) || r.runs.Load() != 1 {
			t.Fatalf("same key, another input: %v, runs %d; want CONFLICT naming the key, no run", e, r.runs.Load())
		}
		// The key is the caller's and the tool's: no key runs each time.
		r.call(t, `{"name":"a"}`)
		r.call(t, `{"name":"a"}`)
		if r.runs.Load() != 3 {
			t.Fatalf("calls without a key ran %d times in all, want 3", r.runs.Load())
		}
		// A key whose name is written with escapes is the same property.
		esc1, e1 := r.call(t, `{"name":"a","idempotency\u004bey":"esc"}`)
		esc2, e2 := r.call(t, `{"name":"a","idempotencyKey":"esc"}`)
		if e1 != nil || e2 != nil || esc1 != esc2 || r.runs.Load() != 4 {
			t.Fatalf("escaped key: %+v %v, then %+v %v, runs %d; want one run", esc1, e1, esc2, e2, r.runs.Load())
		}
	})
}

// TestAnErrorIsAnsweredAgain: an answer that is an error (here NOT_FOUND) is replayed like a
// result; one that says nothing is known (UNAVAILABLE) is not kept, and the key runs again.
func TestAnErrorIsAnsweredAgain(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		r := newRig(t, st)
		r.fail.Store(tools.Errorf(tools.CodeNotFound, "no such thing").WithDetails(map[string]any{"what": "thing"}))
		_, e1 := r.call(t, `{"name":"a","idempotencyKey":"e"}`)
		r.fail.Store(nil)
		_, e2 := r.call(t, `{"name":"a","idempotencyKey":"e"}`)
		if e1 == nil || e2 == nil || e2.Code != tools.CodeNotFound || e2.Message != e1.Message || e2.Details["what"] != "thing" || r.runs.Load() != 1 {
			t.Fatalf("first %v, retry %v, runs %d: want the same NOT_FOUND, one run", e1, e2, r.runs.Load())
		}
		r.fail.Store(tools.Errorf(tools.CodeUnavailable, "database down"))
		if _, e := r.call(t, `{"name":"a","idempotencyKey":"u"}`); e == nil || e.Code != tools.CodeUnavailable {
			t.Fatalf("first: %v", e)
		}
		r.fail.Store(nil)
		if out, e := r.call(t, `{"name":"a","idempotencyKey":"u"}`); e != nil || out.Run != 3 {
			t.Fatalf("after UNAVAILABLE the key runs again: %+v %v", out, e)
		}
	})
}

// TestInFlight: a retry while the first call runs is CONFLICT with Retry-After, and gets the
// first call's answer once it has one.
func TestInFlight(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		r := newRig(t, st)
		hold := make(chan struct{})
		r.block.Store(&hold)
		type result struct {
			out mintOut
			e   *tools.Error
		}
		done := make(chan result)
		go func() {
			out, e := r.call(t, `{"name":"a","idempotencyKey":"f"}`)
			done <- result{out, e}
		}()
		<-r.began
		_, e := r.call(t, `{"name":"a","idempotencyKey":"f"}`)
		if e == nil || e.Code != tools.CodeConflict || e.RetryAfter != RetryAfter || !strings.Contains(e.Message, "in flight") || e.Details["retryAfterSeconds"] != 2 {
			t.Fatalf("retry in flight: %+v; want CONFLICT with Retry-After 2 s", e)
		}
		r.block.Store(nil)
		close(hold)
		first := <-done
		if first.e != nil {
			t.Fatal(first.e)
		}
		again, e := r.call(t, `{"name":"a","idempotencyKey":"f"}`)
		if e != nil || again != first.out || r.runs.Load() != 1 {
			t.Fatalf("after: %+v %v, first %+v, runs %d", again, e, first.out, r.runs.Load())
		}
	})
}

// TestExpiry: after 24 hours the key is forgotten (lazily, and by Sweep) and runs again.
func TestExpiry(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		r := newRig(t, st)
		first, _ := r.call(t, `{"name":"a","idempotencyKey":"x"}`)
		r.clock.advance(Window - time.Second)
		if again, e := r.call(t, `{"name":"a","idempotencyKey":"x"}`); e != nil || again != first {
			t.Fatalf("within 24 h: %+v %v", again, e)
		}
		r.clock.advance(2 * time.Second)
		later, e := r.call(t, `{"name":"b","idempotencyKey":"x"}`) // another input is no conflict any more
		if e != nil || later.Run != 2 {
			t.Fatalf("after 24 h: %+v %v; want a second run", later, e)
		}
		r.call(t, `{"name":"a","idempotencyKey":"y"}`)
		r.clock.advance(Window)
		if err := r.svc.Sweep(context.Background()); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := st.DB().NewRaw("SELECT COUNT(*) FROM idempotency_keys").Scan(context.Background(), &n); err != nil || n != 0 {
			t.Fatalf("after the sweep %d rows (%v), want 0", n, err)
		}
	})
}

// TestAbandonedInFlight: a call left in flight by a process that died with nothing recorded
// is CONFLICT until Abandoned has passed, then runs again under the same CallID (the
// requestId an invocation would have been recorded under).
func TestAbandonedInFlight(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		r := newRig(t, st)
		ctx := context.Background()
		_, _, hash, err := split("mint", []byte(`{"name":"a","idempotencyKey":"d"}`))
		if err != nil {
			t.Fatal(err)
		}
		now := r.clock.Now()
		dead := &idem.Key{Scope: "acct/key1", Tool: "mint", IdemKey: "d", RequestHash: hash, CallID: "0195f0a0-0000-7000-8000-000000000001",
			RunID: "dead", State: idem.InFlight, CreatedAt: now, StartedAt: now, ExpiresAt: now.Add(Window)}
		if _, inserted, err := r.keys.Begin(ctx, dead); err != nil || !inserted {
			t.Fatalf("begin: %v %v", inserted, err)
		}
		r.clock.advance(Abandoned)
		if _, e := r.call(t, `{"name":"a","idempotencyKey":"d"}`); e == nil || e.Code != tools.CodeConflict || e.RetryAfter == 0 {
			t.Fatalf("within %s: %v; want CONFLICT with Retry-After", Abandoned, e)
		}
		r.clock.advance(time.Second)
		out, e := r.call(t, `{"name":"a","idempotencyKey":"d"}`)
		if e != nil || out.CallID != dead.CallID || r.runs.Load() != 1 {
			t.Fatalf("after %s: %+v %v; want one run as call %s", Abandoned, out, e, dead.CallID)
		}
		if again, e := r.call(t, `{"name":"a","idempotencyKey":"d"}`); e != nil || again != out {
			t.Fatalf("then: %+v %v", again, e)
		}
	})
}

// TestBadKeys: an empty or over-long key is BAD_INPUT saying the limits; nothing runs.
func TestBadKeys(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		r := newRig(t, st)
		for _, key := range []string{"", strings.Repeat("k", MaxKey+1)} {
			_, e := r.call(t, `{"name":"a","idempotencyKey":"`+key+`"}`)
			if e == nil || e.Code != tools.CodeBadInput || !strings.Contains(e.Message, "idempotencyKey") {
				t.Fatalf("key of %d characters: %v; want BAD_INPUT about idempotencyKey", len(key), e)
			}
		}
		if _, e := r.call(t, `{"name":"a","idempotencyKey":"`+strings.Repeat("é", MaxKey)+`"}`); e != nil {
			t.Fatalf("a key of %d characters: %v", MaxKey, e)
		}
		if r.runs.Load() != 1 {
			t.Fatalf("runs %d, want 1", r.runs.Load())
		}
	})
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/switchboard-hq/switchboard/signing"
)

// callTimeout bounds every call a caller makes.
const callTimeout = 30 * time.Second

// side is one thing measured: a call by caller i, and the counts of what it answered.
type side struct {
	name   string
	call   func(ctx context.Context, i int) error
	ok     atomic.Int64 // answered as a success, over the whole run
	failed atomic.Int64
	first  atomic.Pointer[error] // the run's first failure, warming included
}

func (s *side) do(ctx context.Context, i int) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	err := s.call(ctx, i)
	if err != nil {
		s.failed.Add(1)
		err = fmt.Errorf("%s: %w", s.name, err)
		s.first.CompareAndSwap(nil, &err)
		return err
	}
	s.ok.Add(1)
	return nil
}

// door is how the invoke side calls Switchboard.
type door struct {
	base   string   // Switchboard's URL
	keys   []string // the callers' accounts' keys; caller i uses keys[i%len(keys)]
	mcp    bool     // POST /mcp tools/call invoke_partner_message, not POST /v1/invoke
	idem   bool     // a fresh Idempotency-Key (MCP: idempotencyKey) on every call
	client *http.Client
}

// invoke is one call of the intent by caller i.
func (d *door) invoke(ctx context.Context, i int) error {
	key := d.keys[i%len(d.keys)]
	if d.mcp {
		return d.invokeMCP(ctx, key)
	}
	req, _ := http.NewRequestWithContext(ctx, "POST", d.base+"/v1/invoke", bytes.NewReader(invokeBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", key)
	if d.idem {
		req.Header.Set("Idempotency-Key", uuid.NewString())
	}
	return drain(d.client.Do(req))
}

var invokeBody = []byte(`{"message":"` + handle + ` hello"}`)

// invokeMCP calls invoke_partner_message with one stateless Streamable HTTP request (the
// 2026-07-28 revision: no session, no initialize), as a host of that revision does.
func (d *door) invokeMCP(ctx context.Context, key string) error {
	args := map[string]any{"message": handle + " hello"}
	if d.idem {
		args["idempotencyKey"] = uuid.NewString()
	}
	raw, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": "invoke_partner_message", "arguments": args, "_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
			"io.modelcontextprotocol/clientInfo":         map[string]string{"name": "load", "version": "1"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{}}}})
	req, _ := http.NewRequestWithContext(ctx, "POST", d.base+"/mcp", bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "invoke_partner_message")
	req.Header.Set("x-api-key", key)
	resp, err := d.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var out struct {
		Result *struct {
			IsError bool `json:"isError"`
		} `json:"result"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(body, &out) != nil || out.Result == nil || out.Result.IsError {
		return fmt.Errorf("status %d: %.300s", resp.StatusCode, body)
	}
	return nil
}

// post posts body to url and wants a 200.
func post(ctx context.Context, client *http.Client, url string, body []byte) error {
	req, _ := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	return drain(client.Do(req))
}

// directCall posts a signed envelope to the partner through the proxy, as Switchboard does,
// with nothing in between: the p50 every side's added p50 is measured from.
func directCall(ctx context.Context, signer *signing.Signer, tr http.RoundTripper, url string) error {
	rt := signing.NewRESTRoundTripper(signer, signing.CallFields{RequestID: signing.NewRequestID(), IntentDefinitionID: "i", UserID: "u",
		Args: json.RawMessage(`{"query":"hello"}`)}, tr)
	req, _ := http.NewRequestWithContext(ctx, "POST", url, http.NoBody)
	return drain(rt.RoundTrip(req))
}

// drain reads a response to its end (so its connection is reused) and wants a 200.
func drain(resp *http.Response, err error) error {
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		return fmt.Errorf("status %d: %s", resp.StatusCode, body)
	}
	io.Copy(io.Discard, resp.Body)
	return nil
}

// callerClient is the callers' client of one side: keep-alive with an idle connection kept
// per caller, or (keepAlive false) a new connection for every call.
func callerClient(callers int, keepAlive bool) *http.Client {
	tr := &http.Transport{MaxIdleConns: 2 * callers, MaxIdleConnsPerHost: 2 * callers, DisableKeepAlives: !keepAlive,
		IdleConnTimeout: 90 * time.Second}
	return &http.Client{Transport: tr, Timeout: callTimeout}
}

// window is what one load window measured.
type window struct {
	calls, failed int64
	perSec        float64
	p99           time.Duration
	elapsed       time.Duration
	cpu           map[string]time.Duration // by process, over the window
	first         error
}

// meters reads the CPU each process has used so far, by name.
type meters func() map[string]time.Duration

// load runs s from callers goroutines until every caller has finished a call (its connection
// is open), then counts for d the calls finished: calls/s, the p99 of every call finished
// in the window (failures included), and the CPU each process used in it.
func load(ctx context.Context, s *side, callers int, d time.Duration, cpu meters) window {
	var stopped atomic.Bool    // in-flight calls finish: every call made is answered and counted
	var from, end atomic.Int64 // unix ns, 0 until set
	var finished, failed atomic.Int64
	var firstErr atomic.Pointer[error]
	var started, wg sync.WaitGroup
	took := make([][]time.Duration, callers)
	started.Add(callers)
	for i := range callers {
		wg.Go(func() {
			once := sync.OnceFunc(started.Done)
			defer once()
			for !stopped.Load() && ctx.Err() == nil {
				t0 := time.Now()
				err := s.do(ctx, i)
				once()
				t1 := time.Now()
				if err != nil && ctx.Err() == nil {
					firstErr.CompareAndSwap(nil, &err)
				}
				if f := from.Load(); f != 0 && t1.UnixNano() >= f && (end.Load() == 0 || t1.UnixNano() < end.Load()) {
					took[i] = append(took[i], t1.Sub(t0))
					if err != nil {
						failed.Add(1)
					} else {
						finished.Add(1)
					}
				}
			}
		})
	}
	waitOrDone(ctx, &started, callTimeout)
	before := cpu()
	from.Store(time.Now().UnixNano())
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
	end.Store(time.Now().UnixNano())
	after := cpu()
	stopped.Store(true)
	wg.Wait()
	var all []time.Duration
	for _, t := range took {
		all = append(all, t...)
	}
	slices.Sort(all)
	w := window{calls: finished.Load(), failed: failed.Load(), elapsed: time.Duration(end.Load() - from.Load()), cpu: map[string]time.Duration{}}
	w.perSec = float64(w.calls) / w.elapsed.Seconds()
	if len(all) > 0 {
		w.p99 = all[len(all)*99/100]
	}
	for k, v := range after {
		w.cpu[k] = v - before[k]
	}
	if e := firstErr.Load(); e != nil {
		w.first = *e
	}
	return w
}

// waitOrDone waits for wg, at most timeout or until ctx ends.
func waitOrDone(ctx context.Context, wg *sync.WaitGroup, timeout time.Duration) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	case <-time.After(timeout):
	}
}

// alone has the sides take turns call by call, one caller, n calls each, each turn starting
// with the next side (so drift and the work one side leaves behind fall on every side
// alike), and returns every side's sorted latencies.
func alone(ctx context.Context, sides []*side, n int) ([][]time.Duration, error) {
	took := make([][]time.Duration, len(sides))
	for j := range n {
		for t := range sides {
			k := (j + t) % len(sides)
			t0 := time.Now()
			if err := sides[k].do(ctx, 0); err != nil {
				return nil, err
			}
			took[k] = append(took[k], time.Since(t0))
		}
	}
	for k := range took {
		slices.Sort(took[k])
	}
	return took, nil
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

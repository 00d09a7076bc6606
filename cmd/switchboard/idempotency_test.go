package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/invocations"
	"github.com/switchboard-hq/switchboard/store/ledger"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

// TestIdempotencyKeyAcrossKill9: a caller whose call dies with serve (kill -9 after the
// partner answered, before the caller was) retries with the same Idempotency-Key and body
// against a restarted serve. Until the sweeper has concluded the call the retry is 409 with
// Retry-After; then it answers the call's recorded outcome, and nothing is dispatched again:
// a read (its start recorded before dispatch) answers its success, charged once; a write's
// confirmation answers its outcome unknown (a write is never sent twice), charged nothing;
// the partner saw each call's requestId from no other call, and ledger-check is clean.
func TestIdempotencyKeyAcrossKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts serve")
	}
	bin := buildBinary(t)
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newCrashWorld(t, bin, dialect)
			// Without budget leases a read's start commits before its dispatch, so the call a
			// crash abandons is on record for the sweeper and the retry.
			w.env = append(w.env, "SWITCHBOARD_BUDGET_LEASES=false")
			for _, write := range []bool{false, true} {
				name := "read"
				if write {
					name = "write"
				}
				t.Run(name, func(t *testing.T) { w.t = t; w.idempotentRetry(t, write) })
			}
		})
	}
}

func (w *crashWorld) idempotentRetry(t *testing.T, write bool) {
	ctx := context.Background()
	handle, key := "@crashread", fmt.Sprintf("kill9-read-%d", time.Now().UnixNano())
	if write {
		handle, key = "@crashwrite", fmt.Sprintf("kill9-write-%d", time.Now().UnixNano())
	}
	body := map[string]any{"message": handle + " go"}
	ids := func() int {
		n := 0
		w.received.Range(func(any, any) bool { n++; return true })
		return n
	}

	s := w.start("answered")
	if write {
		st, out := s.do("POST", "/v1/invoke", w.key, body)
		if st != 409 {
			t.Fatalf("write quote: %d %v", st, out)
		}
		body["confirmRequestId"] = out["error"].(map[string]any)["details"].(map[string]any)["requestId"].(string)
	}
	idsBefore := ids()
	w.cellReq.Store("")
	status, out := s.doWith("POST", "/v1/invoke", w.key, body, map[string]string{"Idempotency-Key": key})
	s.kill9()
	if status != 0 {
		t.Fatalf("serve answered %d %v before its failpoint killed it", status, out)
	}
	requestID, _ := w.cellReq.Load().(string)
	if requestID == "" {
		t.Fatal("the call never reached the partner")
	}

	s = w.start("")
	defer s.kill9()
	var answer map[string]any
	conflicts := 0
	for deadline := time.Now().Add(30 * time.Second); ; {
		status, h, got := s.doWithHeaders("POST", "/v1/invoke", w.key, body, map[string]string{"Idempotency-Key": key})
		if status != 409 {
			answer = got
			status0 := status
			if write && (status0 != 502 || got["error"].(map[string]any)["details"].(map[string]any)["requestId"] != requestID) {
				t.Fatalf("the write's retry after the sweep: %d %v; want 502 outcome unknown of %s", status0, got, requestID)
			}
			if !write && (status0 != 200 || got["requestId"] != requestID || got["success"] != true) {
				t.Fatalf("the read's retry after the sweep: %d %v; want the success of %s", status0, got, requestID)
			}
			break
		}
		if e, _ := got["error"].(map[string]any); e["code"] != "CONFLICT" || h.Get("Retry-After") == "" {
			t.Fatalf("retry before the sweep: 409 %v, Retry-After %q; want CONFLICT with Retry-After", got, h.Get("Retry-After"))
		}
		conflicts++
		if time.Now().After(deadline) {
			t.Fatalf("still 409 after 30 s: %v", got)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Once answered, the key answers the same again (now from its own row).
	status, again := s.doWith("POST", "/v1/invoke", w.key, body, map[string]string{"Idempotency-Key": key})
	if !reflect.DeepEqual(again, answer) {
		t.Fatalf("answered again: %d %v, first %v", status, again, answer)
	}

	// Nothing was dispatched again: the partner saw no other requestId, and the write's once.
	if n := ids() - idsBefore; n != 1 {
		t.Fatalf("%d requestIds reached the partner, want 1", n)
	}
	seen := int32(0)
	if v, ok := w.received.Load(requestID); ok {
		seen = v.(*atomic.Int32).Load()
	}
	st := w.store()
	defer st.Close()
	inv, err := invocations.New(st).ByID(ctx, requestID)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case write && (seen != 1 || inv.State != store.InvOutcomeUnknown):
		t.Fatalf("write: the partner saw it %d times, recorded %s; want once, outcome_unknown", seen, inv.State)
	case !write && (inv.State != store.InvSucceeded || partnerFees(t, st, requestID) != 1):
		t.Fatalf("read: recorded %s with %d partner fees; want succeeded, charged once", inv.State, partnerFees(t, st, requestID))
	}
	if err := ledger.Check(ctx, st); err != nil {
		t.Fatalf("ledger-check: %v", err)
	}
	why := "the sweeper re-sends a read under the same requestId, deduplicated by the partner"
	if write {
		why = "a write is never sent again"
	}
	t.Logf("%s: killed after the partner answered; %d retries answered 409 + Retry-After, then %s; the partner saw %s %d time(s) (%s)",
		handle, conflicts, brief(answer), requestID, seen, why)
}

// doWithHeaders is doWith that also returns the answer's headers.
func (s *server) doWithHeaders(method, path, key string, body any, headers map[string]string) (int, http.Header, map[string]any) {
	s.t.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, s.url+path, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", key)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, map[string]any{"transport": err.Error()}
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, resp.Header, out
}

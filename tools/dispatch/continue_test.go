package dispatch_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
)

// callKernel calls invoke_partner_message on the app's kernel, as a door does, with the
// caller's key and a decision (nil: none).
func (w *world) callKernel(t *testing.T, args map[string]any, d *tools.Decision) (map[string]any, *tools.Error) {
	t.Helper()
	raw, _ := json.Marshal(args)
	out, e := w.env.App.Parts().Kernel.Call(context.Background(), tools.Request{Tool: "invoke_partner_message", Args: raw, APIKey: w.caller, Decision: d})
	if e != nil {
		return nil, e
	}
	b, _ := json.Marshal(out)
	var m map[string]any
	json.Unmarshal(b, &m)
	return m, nil
}

// continuationOf checks that e asks as its code says and that its continuation names what
// its details do (the request, the expiry), and returns it.
func continuationOf(t *testing.T, e *tools.Error, code tools.Code, kind tools.ContinueKind) *tools.Continuation {
	t.Helper()
	if e == nil || e.Code != code || e.Continue == nil {
		t.Fatalf("want %s with a continuation, got %v", code, e)
	}
	c := e.Continue
	expires, _ := e.Details["expiresAt"].(time.Time)
	if c.Kind != kind || c.RequestID == "" || c.RequestID != e.Details["requestId"] || !c.ExpiresAt.Equal(expires) || len(c.Summary) == 0 {
		t.Fatalf("%s's continuation %+v does not match its details %v", code, c, e.Details)
	}
	return c
}

// TestInvokeAnswersWithContinuations: every answer of invoke that asks someone first carries
// its continuation: a write's quote (confirm), a call sent to the owner and the same call
// still pending (approve), each with a summary that shows the handle and the most it costs.
// The decision given beside the arguments (never in them) confirms or declines the quote and
// checks the approval.
func TestInvokeAnswersWithContinuations(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newWorld(t, dialect, nil)
			w.publish(t, "@writer", "/write", map[string]any{"category": "EXECUTE"})
			w.publish(t, "@costly", "/cost", nil)

			_, e := w.callKernel(t, map[string]any{"message": "@writer do it"}, nil)
			c := continuationOf(t, e, tools.CodeConfirmationRequired, tools.ContinueConfirm)
			summary := strings.Join(c.Summary, "\n")
			for _, want := range []string{"@writer wants to run a EXECUTE call", `{"query":"do it"}`, "partner fee: up to 0.001 USD", "At most 0.003 USD (maxChargeUsd)"} {
				if !strings.Contains(summary, want) {
					t.Errorf("the quote's summary does not show %q:\n%s", want, summary)
				}
			}
			out, e := w.callKernel(t, map[string]any{"message": "@writer do it"}, &tools.Decision{RequestID: c.RequestID})
			if e != nil || out["success"] != true || out["requestId"] != c.RequestID || w.hits("/write") != 1 {
				t.Fatalf("the quote confirmed by a decision: %v %v, partner %d calls", out, e, w.hits("/write"))
			}
			_, e = w.callKernel(t, map[string]any{"message": "@writer do it"}, nil)
			c = continuationOf(t, e, tools.CodeConfirmationRequired, tools.ContinueConfirm)
			if _, e := w.callKernel(t, map[string]any{"message": "@writer do it"}, &tools.Decision{RequestID: c.RequestID, Decline: true}); e == nil ||
				e.Code != tools.CodeConflict || e.Details["declined"] != true || w.hits("/write") != 1 {
				t.Fatalf("the quote declined by a decision: %v, partner %d calls", e, w.hits("/write"))
			}

			if status, out := w.env.REST(t, "PUT", "/v1/policy", w.caller, map[string]any{"policy": map[string]any{"approval": map[string]any{"aboveUsd": "0.002"}}}); status != 200 {
				t.Fatalf("set the policy: %d %v", status, out)
			}
			_, e = w.callKernel(t, map[string]any{"message": "@costly what is it"}, nil)
			asked := continuationOf(t, e, tools.CodeApprovalRequired, tools.ContinueApprove)
			_, e = w.callKernel(t, map[string]any{"message": "@costly what is it"}, &tools.Decision{RequestID: asked.RequestID})
			pending := continuationOf(t, e, tools.CodeApprovalPending, tools.ContinueApprove)
			for _, c := range []*tools.Continuation{asked, pending} {
				summary := strings.Join(c.Summary, "\n")
				if c.RequestID != asked.RequestID || !strings.Contains(summary, "@costly") || !strings.Contains(summary, "approval.aboveUsd") || !strings.Contains(summary, "It may cost up to 0.003 USD") {
					t.Errorf("the approval's continuation %+v", c)
				}
			}
			if w.hits("/cost") != 0 {
				t.Fatalf("a call waiting for its owner reached the partner %d times", w.hits("/cost"))
			}
		})
	}
}

package dispatch_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/dispatch"
)

// kernelInvoke calls invoke_partner_message through the kernel with the caller's key.
func (w *world) kernelInvoke(t *testing.T, body map[string]any) (dispatch.InvokeOutput, *tools.Error) {
	t.Helper()
	args, _ := json.Marshal(body)
	out, e := w.env.App.Parts().Kernel.Call(context.Background(), tools.Request{Tool: "invoke_partner_message", Args: args, APIKey: w.caller})
	if e != nil {
		return dispatch.InvokeOutput{}, e
	}
	return out.(dispatch.InvokeOutput), nil
}

// Issue 46 item 6: a confirmRequestId sent with another message or other args than its request
// was quoted (or sent for approval) with is CONFLICT, saying what to do, and nothing is sent or
// charged; the same message (its handle anywhere, its spaces as they come) and the same args
// as canonical JSON (keys in another order, or omitted) confirm it; once it ran, another input
// still answers CONFLICT, not the first input's outcome.
func TestAConfirmationSaysWhatWasQuoted(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newWorld(t, dialect, nil)
			conflict := func(t *testing.T, what string, body map[string]any, path string, hits int, credit int64) {
				t.Helper()
				_, e := w.kernelInvoke(t, body)
				if e == nil || e.Code != tools.CodeConflict || !strings.Contains(e.Message, "nothing was sent or charged") ||
					!strings.Contains(e.Message, "same message and") || !strings.Contains(e.Message, "without confirmRequestId") {
					t.Fatalf("%s: %v; want CONFLICT saying what to do", what, e)
				}
				if w.hits(path) != hits || w.credit(t) != credit {
					t.Fatalf("%s: the partner got %d calls (want %d), credit %d (want %d)", what, w.hits(path), hits, w.credit(t), credit)
				}
			}

			// A {query} write: the message is its args.
			w.publish(t, "@writer", "/write", map[string]any{"category": "EXECUTE"})
			credit := w.credit(t)
			_, e := w.kernelInvoke(t, map[string]any{"message": "@writer send 5 to Bob"})
			if e == nil || e.Code != tools.CodeConfirmationRequired {
				t.Fatalf("quote: %v", e)
			}
			rid := e.Details["requestId"].(string)
			conflict(t, "another message", map[string]any{"message": "@writer send 500 to Mallory", "confirmRequestId": rid}, "/write", 0, credit)
			conflict(t, "other args", map[string]any{"message": "@writer send 5 to Bob", "args": map[string]any{"query": "send 500 to Mallory"}, "confirmRequestId": rid}, "/write", 0, credit)
			out, e := w.kernelInvoke(t, map[string]any{"message": "send  5 to Bob @WRITER", "args": map[string]any{"query": "send 5 to Bob"}, "confirmRequestId": rid})
			if e != nil || !out.Success || out.RequestID != rid || w.hits("/write") != 1 || string(w.seen["/write"][0].Args) != `{"query":"send 5 to Bob"}` {
				t.Fatalf("the same message and args: %+v %v, hits %d", out, e, w.hits("/write"))
			}
			spent := credit - w.credit(t)
			conflict(t, "another message once it ran", map[string]any{"message": "@writer send 500 to Mallory", "confirmRequestId": rid}, "/write", 1, credit-spent)
			if again, e := w.kernelInvoke(t, map[string]any{"message": "@writer send 5 to Bob", "confirmRequestId": rid}); e != nil || again.RequestID != rid || w.hits("/write") != 1 {
				t.Fatalf("the same message once it ran: %+v %v; want its outcome again", again, e)
			}

			// A write with structured args: the message is not its args, and is checked all the same.
			w.publish(t, "@mover", "/write", map[string]any{"category": "EXECUTE", "parametersSchema": map[string]any{
				"type": "object", "required": []string{"to", "amount"},
				"properties": map[string]any{"to": map[string]any{"type": "string"}, "amount": map[string]any{"type": "number"}}}})
			credit = w.credit(t)
			_, e = w.kernelInvoke(t, map[string]any{"message": "@mover pay Bob", "args": map[string]any{"to": "Bob", "amount": 5}})
			if e == nil || e.Code != tools.CodeConfirmationRequired {
				t.Fatalf("quote: %v", e)
			}
			rid = e.Details["requestId"].(string)
			args := map[string]any{"amount": 5, "to": "Bob"} // another order: the same args
			conflict(t, "another message, the same args", map[string]any{"message": "@mover pay Mallory", "args": args, "confirmRequestId": rid}, "/write", 1, credit)
			conflict(t, "other args", map[string]any{"message": "@mover pay Bob", "args": map[string]any{"to": "Mallory", "amount": 5}, "confirmRequestId": rid}, "/write", 1, credit)
			if out, e := w.kernelInvoke(t, map[string]any{"message": "@mover pay Bob", "args": args, "confirmRequestId": rid}); e != nil || !out.Success || w.hits("/write") != 2 {
				t.Fatalf("the same args in another order: %+v %v", out, e)
			}

			// A call sent to the owner and approved: the same rule.
			w.publish(t, "@costly", "/cost", nil)
			if status, out := w.env.REST(t, "PUT", "/v1/policy", w.caller, map[string]any{"policy": map[string]any{"approval": map[string]any{"aboveUsd": "0.002"}}}); status != 200 {
				t.Fatalf("set the policy: %d %v", status, out)
			}
			credit = w.credit(t)
			_, e = w.kernelInvoke(t, map[string]any{"message": "@costly what is the answer"})
			if e == nil || e.Code != tools.CodeApprovalRequired {
				t.Fatalf("a call above the approval amount: %v", e)
			}
			rid = e.Details["requestId"].(string)
			owner := &tools.Principal{AccountID: w.callerID, Method: tools.AuthSession, SessionID: "the owner's", RateLimitPerMinute: 600, SpendLimitMicro: 1 << 40}
			decide, _ := json.Marshal(map[string]any{"requestId": rid, "approve": true})
			if _, e := w.env.App.Parts().Kernel.Call(context.Background(), tools.Request{Tool: "approval_decide", Args: decide, Principal: owner}); e != nil {
				t.Fatalf("the owner approves: %v", e)
			}
			conflict(t, "another message, approved", map[string]any{"message": "@costly what is the question", "confirmRequestId": rid}, "/cost", 0, credit)
			conflict(t, "other args, approved", map[string]any{"message": "@costly what is the answer", "args": map[string]any{"query": "what is the question"}, "confirmRequestId": rid}, "/cost", 0, credit)
			if out, e := w.kernelInvoke(t, map[string]any{"message": "@costly what is the answer", "confirmRequestId": rid}); e != nil || !out.Success || w.hits("/cost") != 1 {
				t.Fatalf("the approved call with its message: %+v %v", out, e)
			}

			// Over REST: the same CONFLICT, 409.
			_, e = w.kernelInvoke(t, map[string]any{"message": "@writer send 6 to Bob"})
			rid = e.Details["requestId"].(string)
			if status, out := w.invoke(t, w.caller, map[string]any{"message": "@writer send 600 to Mallory", "confirmRequestId": rid}); status != 409 || errCode(out) != "CONFLICT" || w.hits("/write") != 2 {
				t.Fatalf("another message over REST: %d %v", status, out)
			}
			w.ledgerOK(t)
		})
	}
}

package dispatch_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-hq/switchboard/mcpserver"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/invocations"
	"github.com/switchboard-hq/switchboard/tools"
)

type keyHeader struct{ key string }

func (k keyHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("x-api-key", k.key)
	return http.DefaultTransport.RoundTrip(r)
}

// connect opens a go-sdk client session on protocol revision version; answer, when set, is
// its elicitation handler (declaring the elicitation capability) and records what it was shown.
func connect(t *testing.T, w *world, version string, answer func(*mcp.ElicitParams) *mcp.ElicitResult) (*mcp.ClientSession, *[]*mcp.ElicitParams) {
	t.Helper()
	var mu sync.Mutex
	var asked []*mcp.ElicitParams
	opts := &mcp.ClientOptions{}
	if answer != nil {
		opts.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			asked = append(asked, req.Params)
			mu.Unlock()
			return answer(req.Params), nil
		}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, opts).Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: w.env.URL + "/mcp", HTTPClient: &http.Client{Transport: keyHeader{w.caller}}, DisableStandaloneSSE: true,
	}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect on %s: %v", version, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, &asked
}

func callInvoke(t *testing.T, cs *mcp.ClientSession, args map[string]any) (map[string]any, *tools.Error) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "invoke_partner_message", Arguments: args})
	if err != nil {
		t.Fatalf("invoke_partner_message: %v", err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if res.IsError {
		var body tools.Body
		if json.Unmarshal([]byte(text), &body) != nil || body.Error == nil {
			t.Fatalf("error result outside the error model: %s", text)
		}
		return nil, body.Error
	}
	var out map[string]any
	json.Unmarshal([]byte(text), &out)
	return out, nil
}

func decide(decision string) func(*mcp.ElicitParams) *mcp.ElicitResult {
	return func(*mcp.ElicitParams) *mcp.ElicitResult {
		if decision == "" {
			return &mcp.ElicitResult{Action: "decline"}
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": decision}}
	}
}

// On MCP 2026-07-28 a write's confirmation is a form elicitation inside an input_required
// result: approve dispatches once and charges the quote; decline (the form's own choice or
// the host's decline button) sends nothing, charges nothing, and closes the quote.
func TestWriteConfirmationByElicitation(t *testing.T) {
	w := newWorld(t, "sqlite", nil)
	w.publish(t, "@writer", "/write", map[string]any{"category": "EXECUTE"})

	approving, asked := connect(t, w, "2026-07-28", decide("approve"))
	if v := approving.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %s, want 2026-07-28", v)
	}
	before := w.credit(t)
	out, e := callInvoke(t, approving, map[string]any{"message": "@writer do it"})
	if e != nil || out["success"] != true || w.hits("/write") != 1 || len(*asked) != 1 {
		t.Fatalf("approved: %v %v, hits %d, asked %d", out, e, w.hits("/write"), len(*asked))
	}
	p := (*asked)[0]
	for _, want := range []string{"@writer wants to run a EXECUTE call", `{"query":"do it"}`, "partner fee: up to 0.001 USD", "platform fee: 0.001 USD",
		"infrastructure: 0.001 USD", "Total: 0.003 USD", "At most 0.003 USD (maxChargeUsd)"} {
		if !strings.Contains(p.Message, want) {
			t.Errorf("the elicitation does not show %q:\n%s", want, p.Message)
		}
	}
	schema, _ := json.Marshal(p.RequestedSchema)
	if p.Mode != "form" || !strings.Contains(string(schema), `"const":"approve"`) || !strings.Contains(string(schema), `"const":"decline"`) {
		t.Fatalf("form: %s %s", p.Mode, schema)
	}
	if got := before - w.credit(t); got != 1000+700+1000 {
		t.Fatalf("approved write charged %d, want 2700", got)
	}
	rid := out["requestId"].(string)
	if inv, err := invocations.New(w.settledStore(t)).Get(context.Background(), w.callerID, rid); err != nil || inv.State != store.InvSucceeded {
		t.Fatalf("approved invocation: %+v %v", inv, err)
	}

	for _, c := range []struct{ name, decision string }{{"the form's decline", "decline"}, {"the host's decline button", ""}} {
		t.Run(c.name, func(t *testing.T) {
			declining, asked := connect(t, w, "2026-07-28", decide(c.decision))
			before, hits := w.credit(t), w.hits("/write")
			spent := func() int64 {
				n, err := invocations.New(w.settledStore(t)).SpentSince(context.Background(), w.callerID, time.Time{})
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
			spentBefore := spent()
			_, e := callInvoke(t, declining, map[string]any{"message": "@writer do it"})
			if e == nil || e.Code != tools.CodeConflict || !strings.Contains(e.Message, "declined") || len(*asked) != 1 {
				t.Fatalf("declined: %v, asked %d", e, len(*asked))
			}
			if w.hits("/write") != hits || w.credit(t) != before {
				t.Fatalf("a declined write was sent or charged: hits %d -> %d, credit %d -> %d", hits, w.hits("/write"), before, w.credit(t))
			}
			rid := e.Details["requestId"].(string)
			inv, err := invocations.New(w.settledStore(t)).Get(context.Background(), w.callerID, rid)
			if err != nil || inv.State != store.InvDeclined || inv.DispatchedAt != nil {
				t.Fatalf("declined invocation: %+v %v", inv, err)
			}
			ca, err := w.settledStore(t).Credit(context.Background(), w.callerID)
			if err != nil || ca.ReservedMicro != 0 {
				t.Fatalf("something stays reserved after a decline: %+v %v", ca, err)
			}
			if got := spent(); got != spentBefore {
				t.Fatalf("a declined quote counts as spent: %d -> %d", spentBefore, got)
			}
			// The declined quote stays declined: confirming it by hand sends nothing.
			if status, out := w.invoke(t, w.caller, map[string]any{"message": "@writer do it", "confirmRequestId": rid}); status != 409 || w.hits("/write") != hits ||
				!strings.Contains(out["error"].(map[string]any)["message"].(string), "declined") {
				t.Fatalf("confirming a declined quote: %d %v", status, out)
			}
		})
	}

	// Without the elicitation capability the confirmation stays the confirmRequestId round trip.
	for _, version := range []string{"2026-07-28", "2025-11-25", "2025-06-18"} {
		cs, asked := connect(t, w, version, nil)
		_, e := callInvoke(t, cs, map[string]any{"message": "@writer do it"})
		if e == nil || e.Code != tools.CodeConfirmationRequired || e.Details["requestId"] == nil || len(*asked) != 0 {
			t.Fatalf("%s without elicitation: %v, asked %d", version, e, len(*asked))
		}
	}

	// Earlier revisions over HTTP that declare elicitation get a session (mcpserver/sessions.go)
	// and the same form as an elicitation/create request: approved, sent once; declined, nothing.
	for _, version := range []string{"2025-11-25", "2025-06-18"} {
		cs, asked := connect(t, w, version, decide("approve"))
		hits := w.hits("/write")
		if out, e := callInvoke(t, cs, map[string]any{"message": "@writer on " + version}); cs.ID() == "" || e != nil || out["success"] != true ||
			w.hits("/write") != hits+1 || len(*asked) != 1 || !strings.Contains((*asked)[0].Message, "maxChargeUsd") {
			t.Fatalf("%s approved over HTTP: session %q, %v %v, hits %d, asked %d", version, cs.ID(), out, e, w.hits("/write")-hits, len(*asked))
		}
		cs, asked = connect(t, w, version, decide("decline"))
		before := w.credit(t)
		if _, e := callInvoke(t, cs, map[string]any{"message": "@writer on " + version}); e == nil || e.Code != tools.CodeConflict ||
			w.hits("/write") != hits+1 || w.credit(t) != before || len(*asked) != 1 {
			t.Fatalf("%s declined over HTTP: %v, hits %d, credit %d -> %d, asked %d", version, e, w.hits("/write")-hits, before, w.credit(t), len(*asked))
		}
	}

	// Earlier revisions on a session that carries server requests (stdio): the same form,
	// sent by the go-sdk as an elicitation/create request.
	ct, st := mcp.NewInMemoryTransports()
	ss, err := mcpserver.New(w.env.App.Kernel, mcpserver.Options{Name: "switchboard", Version: "test", Stdio: true, APIKey: w.caller}).Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	var stdioAsked []string
	stdio, err := mcp.NewClient(&mcp.Implementation{Name: "desktop", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			stdioAsked = append(stdioAsked, req.Params.Message)
			return decide("approve")(req.Params), nil
		}}).Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
	if err != nil {
		t.Fatal(err)
	}
	defer stdio.Close()
	hits := w.hits("/write")
	if out, e := callInvoke(t, stdio, map[string]any{"message": "@writer over stdio"}); e != nil || out["success"] != true || w.hits("/write") != hits+1 ||
		len(stdioAsked) != 1 || !strings.Contains(stdioAsked[0], "maxChargeUsd") {
		t.Fatalf("stdio on 2025-06-18: %v %v, asked %q", out, e, stdioAsked)
	}
	w.ledgerOK(t)
}

// A decline over REST: the quote is closed, nothing is sent, and a second decline or a late
// confirmation answers the same CONFLICT.
func TestDeclineOverREST(t *testing.T) {
	w := newWorld(t, "sqlite", nil)
	w.publish(t, "@writer", "/write", map[string]any{"category": "EXECUTE"})
	_, out := w.invoke(t, w.caller, map[string]any{"message": "@writer do it"})
	rid := out["error"].(map[string]any)["details"].(map[string]any)["requestId"].(string)
	if status, out := w.invoke(t, w.caller, map[string]any{"message": "@writer do it", "decline": true}); status != 400 {
		t.Fatalf("decline without confirmRequestId: %d %v", status, out)
	}
	other := w.env.Onboard(t, "other@example.com")["apiKey"].(string)
	if status, out := w.invoke(t, other, map[string]any{"message": "@writer do it", "confirmRequestId": rid, "decline": true}); status != 404 {
		t.Fatalf("declining another account's quote: %d %v", status, out)
	}
	for _, body := range []map[string]any{
		{"message": "@writer do it", "confirmRequestId": rid, "decline": true},
		{"message": "@writer do it", "confirmRequestId": rid, "decline": true},
		{"message": "@writer do it", "confirmRequestId": rid},
	} {
		status, out := w.invoke(t, w.caller, body)
		if status != 409 || errCode(out) != "CONFLICT" || !strings.Contains(out["error"].(map[string]any)["message"].(string), "declined") || w.hits("/write") != 0 {
			t.Fatalf("%v: %d %v, hits %d", body, status, out, w.hits("/write"))
		}
	}
	// A confirmed quote cannot be declined afterwards.
	_, out = w.invoke(t, w.caller, map[string]any{"message": "@writer again"})
	rid = out["error"].(map[string]any)["details"].(map[string]any)["requestId"].(string)
	if status, out := w.invoke(t, w.caller, map[string]any{"message": "@writer again", "confirmRequestId": rid}); status != 200 {
		t.Fatalf("confirm: %d %v", status, out)
	}
	if status, out := w.invoke(t, w.caller, map[string]any{"message": "@writer again", "confirmRequestId": rid, "decline": true}); status != 409 || w.hits("/write") != 1 {
		t.Fatalf("declining a dispatched call: %d %v", status, out)
	}
	w.ledgerOK(t)
}

// A call the owner's policy sends for approval is shown to the host's user as an elicitation
// on 2026-07-28 (input_required) and on 2025-11-25's and 2025-06-18's HTTP sessions: the owner decides
// in the portal (here: the kernel with a portal session), the user checks again, and the call
// is dispatched once. Stopping leaves it waiting, with nothing sent.
func TestApprovalStatusByElicitation(t *testing.T) {
	for _, version := range []string{"2026-07-28", "2025-11-25", "2025-06-18"} {
		t.Run(version, func(t *testing.T) {
			w := newWorld(t, "sqlite", nil)
			w.publish(t, "@costly", "/cost", nil)
			if status, out := w.env.REST(t, "PUT", "/v1/policy", w.caller, map[string]any{"policy": map[string]any{"approval": map[string]any{"aboveUsd": "0.002"}}}); status != 200 {
				t.Fatalf("set the policy: %d %v", status, out)
			}
			owner := &tools.Principal{AccountID: w.callerID, Method: tools.AuthSession, SessionID: "the owner's"}
			approve := func(requestID string) {
				args, _ := json.Marshal(map[string]any{"requestId": requestID, "approve": true})
				if _, err := w.env.App.Parts().Kernel.Call(context.Background(), tools.Request{Tool: "approval_decide", Args: args, Principal: owner}); err != nil {
					t.Errorf("the owner approves: %v", err)
				}
			}
			pendingID := func() string {
				status, list := w.env.REST(t, "GET", "/v1/approvals?pending=true", w.caller, nil)
				items, _ := list["approvals"].([]any)
				if status != 200 || len(items) != 1 {
					t.Fatalf("pending approvals: %d %v", status, list)
				}
				return items[0].(map[string]any)["requestId"].(string)
			}
			var shown []string
			cs, _ := connect(t, w, version, func(p *mcp.ElicitParams) *mcp.ElicitResult {
				shown = append(shown, p.Message)
				if len(shown) == 1 { // still pending: check once without a decision
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"next": "check"}}
				}
				approve(pendingID())
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"next": "check"}}
			})
			out, e := callInvoke(t, cs, map[string]any{"message": "@costly what is the answer"})
			if e != nil || out["success"] != true {
				t.Fatalf("the approved call: %v %v", out, e)
			}
			if len(shown) != 2 || !strings.Contains(shown[0], "approval.aboveUsd") || !strings.Contains(shown[1], "Still waiting") || !strings.Contains(shown[1], "@costly") {
				t.Fatalf("the forms shown: %q", shown)
			}
			if w.hits("/cost") != 1 {
				t.Fatalf("the partner was called %d times", w.hits("/cost"))
			}

			stopping, _ := connect(t, w, version, func(*mcp.ElicitParams) *mcp.ElicitResult {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"next": "stop"}}
			})
			_, e = callInvoke(t, stopping, map[string]any{"message": "@costly what is the answer"})
			if e == nil || (e.Code != tools.CodeApprovalRequired && e.Code != tools.CodeApprovalPending) || w.hits("/cost") != 1 {
				t.Fatalf("stopped waiting: %v, partner called %d times", e, w.hits("/cost"))
			}
		})
	}
}

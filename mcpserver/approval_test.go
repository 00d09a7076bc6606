package mcpserver_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-hq/switchboard/mcpserver"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/keys"
	"github.com/switchboard-hq/switchboard/tools/service"
)

// approvalWorld is a kernel whose one tool, approved_write, behaves as invoke does under an
// approval rule: APPROVAL_REQUIRED first; asked again with confirmRequestId, APPROVAL_PENDING
// until the owner approved (owner), then it is sent (sent) — and charged, in the real one.
type approvalWorld struct {
	url   string
	owner atomic.Bool // the owner approved, in the portal
	calls atomic.Int64
	sent  atomic.Int64
}

func newApprovalWorld(t *testing.T, pending func(details map[string]any) (summary []string)) *approvalWorld {
	t.Helper()
	st := storetest.Open(t, "sqlite")
	ctx, now := context.Background(), time.Now
	if err := accounts.New(st).Create(ctx, &accounts.Account{ID: "acct", Email: "m@example.com", CreatedAt: now()}, nil,
		&accounts.APIKey{ID: "k-read", AccountID: "acct", Name: "r", Prefix: "r", Hash: tools.HashKey(secret), Scopes: []string{"read"},
			SpendLimitMicro: 1, RateLimitPerMinute: 1000, CreatedAt: now()}); err != nil {
		t.Fatal(err)
	}
	w := &approvalWorld{}
	expires := now().Add(time.Hour)
	write := tools.New(tools.Def{Name: "approved_write", Title: "Write", Description: "a write its owner approves first", Access: tools.Public, TakesDecision: true,
		Annotations: tools.Annotations{ReadOnly: tools.Bool(false), Destructive: tools.Bool(true), OpenWorld: tools.Bool(true)}},
		func(_ context.Context, c *tools.Caller, in confirmIn) (confirmOut, error) {
			w.calls.Add(1)
			in = decided(c, in)
			if in.ConfirmRequestID == "" {
				return confirmOut{}, tools.Errorf(tools.CodeApprovalRequired, "approve first").WithDetails(map[string]any{
					"requestId": "req-a", "handle": "@costly", "rule": "approval.aboveUsd", "expiresAt": expires,
					"charge": map[string]any{"totalUsd": "0.03", "maxChargeUsd": "0.05"},
				}).WithContinue(&tools.Continuation{Kind: tools.ContinueApprove, RequestID: "req-a", ExpiresAt: expires,
					Summary: []string{"The account's spend policy sends this call of @costly to its owner for approval (approval.aboveUsd). Nothing was sent or charged.", "It may cost up to 0.05 USD."}})
			}
			if !w.owner.Load() {
				d := map[string]any{"requestId": "req-a", "rule": "approval.aboveUsd", "expiresAt": expires}
				summary := []string{"The account's spend policy sends this call to its owner for approval (approval.aboveUsd)."}
				if pending != nil {
					summary = pending(d)
				}
				return confirmOut{}, tools.Errorf(tools.CodeApprovalPending, "still pending").WithDetails(d).
					WithContinue(&tools.Continuation{Kind: tools.ContinueApprove, RequestID: "req-a", ExpiresAt: expires, Summary: summary})
			}
			w.sent.Add(1)
			return confirmOut{Sent: true, Request: in.ConfirmRequestID}, nil
		})
	auth := keys.NewAuthenticator(service.Deps{Store: st, Now: now, Log: quiet}, nil)
	k, err := tools.NewKernel(auth, tools.NewRateLimiter(now), nil, quiet, now, write)
	if err != nil {
		t.Fatal(err)
	}
	srv := mcpserver.New(k, mcpserver.Options{Name: "switchboard", Version: "test", Log: quiet})
	door := mcpserver.HTTPHandler(srv, mcpserver.HTTPOptions{Log: quiet, Auth: auth, Sessions: sessionLimits})
	hs := httptest.NewServer(door)
	t.Cleanup(func() { hs.Close(); door.Close() })
	w.url = hs.URL
	return w
}

// hostAnswering connects a 2026-07-28 host with the key whose elicitation handler is answer.
func hostAnswering(t *testing.T, url string, answer func(*mcp.ElicitParams) *mcp.ElicitResult) *mcp.ClientSession {
	t.Helper()
	opts := &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return answer(req.Params), nil
	}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, opts).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: headers{"x-api-key": secret}}, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// On 2026-07-28 the approval's status form is answered in the call's retry. Only "check"
// calls the tool again: a user who stops waiting (or declines or cancels the form) gets
// APPROVAL_PENDING without the call being asked again, so a call the owner approved
// meanwhile is neither sent nor charged against the user's answer.
func TestStoppingAnApprovalNeverSendsIt(t *testing.T) {
	stops := map[string]*mcp.ElicitResult{
		"stop":    {Action: "accept", Content: map[string]any{"next": "stop"}},
		"decline": {Action: "decline"},
		"cancel":  {Action: "cancel"},
	}
	for name, stop := range stops {
		t.Run(name, func(t *testing.T) {
			w := newApprovalWorld(t, func(d map[string]any) []string {
				d["handle"], d["charge"] = "@costly", map[string]any{"maxChargeUsd": "0.05"}
				return []string{"The account's spend policy sends this call of @costly to its owner for approval (approval.aboveUsd).", "It may cost up to 0.05 USD."}
			})
			var shown []string
			cs := hostAnswering(t, w.url, func(p *mcp.ElicitParams) *mcp.ElicitResult {
				shown = append(shown, p.Message)
				if len(shown) == 1 {
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"next": "check"}}
				}
				w.owner.Store(true) // the owner approves while the user looks at "Still waiting"
				return stop
			})
			_, e := call(t, cs, "approved_write", map[string]any{})
			if e == nil || e.Code != tools.CodeApprovalPending || e.Details["requestId"] != "req-a" {
				t.Fatalf("stopped: %v", e)
			}
			if w.sent.Load() != 0 || w.calls.Load() != 2 {
				t.Fatalf("after the user stopped: sent %d, the tool ran %d times (want 0, 2: the call and one check)", w.sent.Load(), w.calls.Load())
			}
			if len(shown) != 2 || !strings.Contains(shown[1], "Still waiting") || !strings.Contains(shown[1], "@costly") || !strings.Contains(shown[1], "0.05 USD") {
				t.Fatalf("the forms shown: %q", shown)
			}
		})
	}

	// Checking again once the owner approved sends it, once.
	w := newApprovalWorld(t, nil)
	var shown []string
	cs := hostAnswering(t, w.url, func(p *mcp.ElicitParams) *mcp.ElicitResult {
		shown = append(shown, p.Message)
		if len(shown) == 2 {
			w.owner.Store(true)
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"next": "check"}}
	})
	out, e := call(t, cs, "approved_write", map[string]any{})
	if e != nil || out["sent"] != true || w.sent.Load() != 1 {
		t.Fatalf("checked after approval: %v %v, sent %d", out, e, w.sent.Load())
	}
	// The pending answer's own summary is shown, with the door's how-to-answer after it.
	if len(shown) != 2 || !strings.Contains(shown[1], "sends this call to its owner") || !strings.Contains(shown[1], "under Approvals") {
		t.Fatalf("the forms shown: %q", shown)
	}
}

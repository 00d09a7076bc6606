package mcpserver_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-hq/switchboard/mcpserver"
	"github.com/switchboard-hq/switchboard/tools"
)

// renamedWorld is a kernel with two writes that ask first: renamed_write answers a quote whose
// details name nothing as the door once read them (no requestId, no maxChargeUsd), with its
// continuation; shaped_write answers details of exactly the old shape, but no continuation.
// Each records the decisions it was given.
type renamedWorld struct {
	mu        sync.Mutex
	decisions []tools.Decision
}

func (w *renamedWorld) kernel(t *testing.T) *tools.Kernel {
	t.Helper()
	expires := time.Now().Add(time.Hour)
	asks := func(name string, answer func() *tools.Error) *tools.Tool {
		return tools.New(tools.Def{Name: name, Title: name, Description: "a write confirmed first", Access: tools.Public, TakesDecision: true,
			Annotations: tools.Annotations{ReadOnly: tools.Bool(false), Destructive: tools.Bool(true), OpenWorld: tools.Bool(true)}},
			func(_ context.Context, c *tools.Caller, _ struct{}) (confirmOut, error) {
				d := c.Decision
				if d == nil {
					return confirmOut{}, answer()
				}
				w.mu.Lock()
				w.decisions = append(w.decisions, *d)
				w.mu.Unlock()
				return confirmOut{Sent: !d.Decline, Declined: d.Decline, Request: d.RequestID}, nil
			})
	}
	renamed := asks("renamed_write", func() *tools.Error {
		return tools.Errorf(tools.CodeConfirmationRequired, "confirm quote q-7 first").
			WithDetails(map[string]any{"quoteId": "q-7", "costCeilingUsd": "0.02", "validUntil": expires}).
			WithContinue(&tools.Continuation{Kind: tools.ContinueConfirm, RequestID: "q-7", ExpiresAt: expires,
				Summary: []string{"@renamed wants to run a SWAP call.", "At most 0.02 USD is charged."}})
	})
	shaped := asks("shaped_write", func() *tools.Error {
		return tools.Errorf(tools.CodeConfirmationRequired, "confirm first").WithDetails(map[string]any{
			"requestId": "req-1", "handle": "@swapper", "category": "SWAP", "args": map[string]any{"amount": "1"},
			"partnerFeeUsd": "0.01", "platformFeeUsd": "0.001", "infrastructureUsd": "0.001", "gasEstimateUsd": "0",
			"totalUsd": "0.012", "maxChargeUsd": "0.02", "expiresAt": expires,
		})
	})
	k, err := tools.NewKernel(nil, tools.NewRateLimiter(time.Now), nil, quiet, time.Now, renamed, shaped)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestElicitationReadsTheContinuationNotTheDetails: the door asks from the error's
// continuation alone. A quote whose details are renamed (no requestId, no maxChargeUsd) is
// still shown as a form, from its summary, and the user's answer reaches the tool as a
// decision on the continuation's request; details of the very shape the door once read, but
// no continuation, ask nobody and answer CONFIRMATION_REQUIRED as they are. On a session
// (stdio) and in input_required results (2026-07-28) alike.
func TestElicitationReadsTheContinuationNotTheDetails(t *testing.T) {
	hosts := map[string]func(t *testing.T, srv *mcp.Server, answer func(*mcp.ElicitParams) *mcp.ElicitResult) *mcp.ClientSession{
		"stdio session": func(t *testing.T, srv *mcp.Server, answer func(*mcp.ElicitParams) *mcp.ElicitResult) *mcp.ClientSession {
			return inMemory(t, srv, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return answer(req.Params), nil
			}})
		},
		"2026-07-28": func(t *testing.T, srv *mcp.Server, answer func(*mcp.ElicitParams) *mcp.ElicitResult) *mcp.ClientSession {
			hs := httptest.NewServer(mcpserver.HTTPHandler(srv, mcpserver.HTTPOptions{Log: quiet}))
			t.Cleanup(hs.Close)
			return hostAnswering(t, hs.URL, answer)
		},
	}
	for name, connect := range hosts {
		t.Run(name, func(t *testing.T) {
			w := &renamedWorld{}
			srv := mcpserver.New(w.kernel(t), mcpserver.Options{Name: "switchboard", Version: "test", Stdio: name == "stdio session"})
			for _, c := range []struct {
				decision string
				decline  bool
			}{{"approve", false}, {"decline", true}} {
				var shown []string
				cs := connect(t, srv, func(p *mcp.ElicitParams) *mcp.ElicitResult {
					shown = append(shown, p.Message)
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": c.decision}}
				})
				out, e := call(t, cs, "renamed_write", map[string]any{})
				if e != nil || out["request"] != "q-7" || out["declined"] != c.decline {
					t.Fatalf("%s a renamed quote: %v %v", c.decision, out, e)
				}
				if len(shown) != 1 || !strings.Contains(shown[0], "@renamed wants to run a SWAP call.\nAt most 0.02 USD is charged.") {
					t.Fatalf("%s: the form showed %q, want the continuation's summary", c.decision, shown)
				}

				shown = nil
				_, e = call(t, cs, "shaped_write", map[string]any{})
				if e == nil || e.Code != tools.CodeConfirmationRequired || e.Details["requestId"] != "req-1" || len(shown) != 0 {
					t.Fatalf("old-shaped details without a continuation: %v, asked %d times; want CONFIRMATION_REQUIRED, nobody asked", e, len(shown))
				}
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			if want := []tools.Decision{{RequestID: "q-7"}, {RequestID: "q-7", Decline: true}}; len(w.decisions) != 2 || w.decisions[0] != want[0] || w.decisions[1] != want[1] {
				t.Fatalf("the decisions the tools were given: %+v, want %+v", w.decisions, want)
			}
		})
	}
}

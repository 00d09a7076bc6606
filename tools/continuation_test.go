package tools_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/tools"
)

type seenOut struct {
	RequestID string `json:"requestId"`
	Decline   bool   `json:"decline"`
	Decided   bool   `json:"decided"`
}

// TestDecisionGoesOnlyToToolsThatTakeIt: the request's decision reaches the caller of a tool
// that declares TakesDecision, as it was given; a tool that does not is refused one before
// its handler runs (it would run as if nobody had answered); and a decision must name its
// request.
func TestDecisionGoesOnlyToToolsThatTakeIt(t *testing.T) {
	runs := map[string]int{}
	tool := func(name string, takes bool) *tools.Tool {
		return tools.New(tools.Def{Name: name, Title: name, Description: "test tool", Access: tools.Public, TakesDecision: takes,
			Annotations: tools.Annotations{ReadOnly: tools.Bool(false), Destructive: tools.Bool(false), OpenWorld: tools.Bool(false)}},
			func(_ context.Context, c *tools.Caller, _ struct{}) (seenOut, error) {
				runs[name]++
				if d := c.Decision; d != nil {
					return seenOut{RequestID: d.RequestID, Decline: d.Decline, Decided: true}, nil
				}
				return seenOut{}, nil
			})
	}
	now := time.Now
	k, err := tools.NewKernel(nil, tools.NewRateLimiter(now), nil, quiet, now, tool("asks_first", true), tool("plain_write", false))
	if err != nil {
		t.Fatal(err)
	}
	call := func(name string, d *tools.Decision) (seenOut, *tools.Error) {
		out, e := k.Call(context.Background(), tools.Request{Tool: name, Args: json.RawMessage(`{}`), Decision: d})
		if e != nil {
			return seenOut{}, e
		}
		return out.(seenOut), nil
	}

	for _, d := range []tools.Decision{{RequestID: "req-1"}, {RequestID: "req-2", Decline: true}} {
		out, e := call("asks_first", &d)
		if e != nil || !out.Decided || out.RequestID != d.RequestID || out.Decline != d.Decline {
			t.Errorf("decision %+v: the tool saw %+v %v", d, out, e)
		}
	}
	if out, e := call("asks_first", nil); e != nil || out.Decided {
		t.Errorf("no decision: the tool saw %+v %v", out, e)
	}
	_, e := call("plain_write", &tools.Decision{RequestID: "req-1"})
	if e == nil || e.Code != tools.CodeBadInput || !strings.Contains(e.Message, "plain_write") || runs["plain_write"] != 0 {
		t.Errorf("a decision for a tool that takes none: %v, ran %d times", e, runs["plain_write"])
	}
	if _, e := call("asks_first", &tools.Decision{Decline: true}); e == nil || e.Code != tools.CodeBadInput || runs["asks_first"] != 3 {
		t.Errorf("a decision naming no request: %v, ran %d times", e, runs["asks_first"])
	}
}

// TestContinuationIsNotOnTheWire: the continuation rides beside the error model, so an
// error's JSON (every door's body, REST's and MCP's) is what it was without one.
func TestContinuationIsNotOnTheWire(t *testing.T) {
	plain := tools.Errorf(tools.CodeConfirmationRequired, "confirm first").WithDetails(map[string]any{"requestId": "req-1"})
	want, _ := json.Marshal(tools.Body{Error: plain})
	asked := tools.Errorf(tools.CodeConfirmationRequired, "confirm first").WithDetails(map[string]any{"requestId": "req-1"}).
		WithContinue(&tools.Continuation{Kind: tools.ContinueConfirm, RequestID: "req-1", ExpiresAt: time.Now(), Summary: []string{"a line"}})
	got, _ := json.Marshal(tools.Body{Error: asked})
	if string(got) != string(want) {
		t.Fatalf("with a continuation the body is %s, want %s", got, want)
	}
}

package mcpserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-hq/switchboard/mcpserver"
	"github.com/switchboard-hq/switchboard/tools"
)

// metaStamp is a wrap as cmd's x402 one is shaped: In reads _meta["stamp"] into the input
// (refusing "bad"), Out puts the tool's name in the result's _meta, and on an error a
// structuredContent of its own, and adds to the error's message.
type metaStamp struct{}

func (metaStamp) In(x *tools.Exchange, req *tools.Request) *tools.Error {
	v, _ := x.Meta["stamp"].(string)
	if v == "" {
		return nil
	}
	if v == "bad" {
		return tools.Errorf(tools.CodeBadInput, "bad stamp")
	}
	var m map[string]any
	json.Unmarshal(req.Args, &m)
	m["stamp"] = v
	req.Args, _ = json.Marshal(m)
	return nil
}

func (metaStamp) Out(x *tools.Exchange, _ any, e *tools.Error) *tools.Error {
	x.Reply.Meta = map[string]any{"stamped": x.Tool.Name + " " + string(x.Door)}
	if e == nil {
		return nil
	}
	x.Reply.Structured = json.RawMessage(`{"first":true}`)
	shown := *e
	shown.Message += " (stamped)"
	return &shown
}

type stampIn struct {
	Text  string `json:"text"`
	Stamp string `json:"stamp,omitempty"`
}

func stampKernel(t *testing.T, calls *atomic.Int32) *tools.Kernel {
	t.Helper()
	k, err := tools.NewKernel(nil, nil, nil, quiet, time.Now, tools.New(tools.Def{Name: "stamp_echo", Title: "Echo", Description: "echoes; fails on fail",
		Access: tools.Public, Annotations: tools.Annotations{ReadOnly: tools.Bool(false), Destructive: tools.Bool(false), OpenWorld: tools.Bool(false)}},
		func(_ context.Context, _ *tools.Caller, in stampIn) (stampIn, error) {
			calls.Add(1)
			if in.Text == "fail" {
				return stampIn{}, tools.Errorf(tools.CodeConflict, "failed")
			}
			return in, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func texts(res *mcp.CallToolResult) []string {
	var out []string
	for _, c := range res.Content {
		out = append(out, c.(*mcp.TextContent).Text)
	}
	return out
}

// A wrap in Options reads the call's _meta into its input, adds _meta to the result, and on
// an error its structuredContent, shown first as text before the error model's body; its
// refusal is answered without calling the tool.
func TestWrapRunsAroundEveryCall(t *testing.T) {
	var calls atomic.Int32
	cs := inMemory(t, mcpserver.New(stampKernel(t, &calls), mcpserver.Options{Name: "switchboard", Version: "test", Wraps: []tools.Wrap{metaStamp{}}}), nil)
	ctx := context.Background()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "stamp_echo", Arguments: map[string]any{"text": "hi"}, Meta: mcp.Meta{"stamp": "s1"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(res.StructuredContent); res.IsError || string(got) != `{"stamp":"s1","text":"hi"}` || res.Meta["stamped"] != "stamp_echo mcp" {
		t.Fatalf("answer %s, _meta %v", got, res.Meta)
	}

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "stamp_echo", Arguments: map[string]any{"text": "fail"}})
	if err != nil {
		t.Fatal(err)
	}
	ts := texts(res)
	if got, _ := json.Marshal(res.StructuredContent); !res.IsError || string(got) != `{"first":true}` || len(ts) != 2 || ts[0] != `{"first":true}` ||
		!strings.Contains(ts[1], `"message":"failed (stamped)"`) || res.Meta["stamped"] == nil {
		t.Fatalf("error: structuredContent %s, texts %v, _meta %v", got, ts, res.Meta)
	}

	before := calls.Load()
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "stamp_echo", Arguments: map[string]any{"text": "hi"}, Meta: mcp.Meta{"stamp": "bad"}})
	if err != nil {
		t.Fatal(err)
	}
	if ts := texts(res); !res.IsError || len(ts) != 1 || !strings.Contains(ts[0], "bad stamp") || calls.Load() != before || res.Meta["stamped"] != nil {
		t.Fatalf("refused by the wrap: %v, %d calls reached the tool", ts, calls.Load()-before)
	}
}

// Without a wrap the door reads nothing from _meta: the transport's extras are the wraps'.
func TestNoWrapReadsNoMeta(t *testing.T) {
	var calls atomic.Int32
	cs := inMemory(t, mcpserver.New(stampKernel(t, &calls), mcpserver.Options{Name: "switchboard", Version: "test"}), nil)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "stamp_echo", Arguments: map[string]any{"text": "hi"},
		Meta: mcp.Meta{"stamp": "s1", "x402/payment": map[string]any{"payload": map[string]any{"signature": "0x"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(res.StructuredContent); res.IsError || string(got) != `{"text":"hi"}` || res.Meta["stamped"] != nil || res.Meta["x402/payment-response"] != nil {
		t.Fatalf("answer %s (%v), _meta %v", got, texts(res), res.Meta)
	}
}

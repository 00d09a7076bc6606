package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-hq/switchboard/mcpserver"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/keys"
	"github.com/switchboard-hq/switchboard/tools/service"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

const secret = "sb_test_reader"

type textIn struct {
	Text string `json:"text" jsonschema:"minLength=1"`
}

type whoOut struct {
	Account string `json:"account"`
	Client  string `json:"client"`
}

type confirmIn struct {
	ConfirmRequestID string `json:"confirmRequestId,omitempty"`
	Decline          bool   `json:"decline,omitempty"`
}

type confirmOut struct {
	Sent     bool   `json:"sent"`
	Declined bool   `json:"declined"`
	Request  string `json:"request"`
}

// decided is in with the door's decision on it, as invoke reads one.
func decided(c *tools.Caller, in confirmIn) confirmIn {
	if d := c.Decision; d != nil {
		in.ConfirmRequestID, in.Decline = d.RequestID, d.Decline
	}
	return in
}

// newKernel is a real kernel on a real store with three tools: a public echo, a reader that
// needs scope read, and a write that asks for confirmation first (as invoke does), and one
// account with a read key.
func newKernel(t *testing.T) *tools.Kernel {
	t.Helper()
	k, _ := newKernelWith(t)
	return k
}

// world is the kernel's parts a test of the HTTP door reaches: its authenticator, its store,
// and how many writes were sent (confirmed and not declined).
type world struct {
	auth  tools.Authenticator
	store *store.Store
	sent  *atomic.Int64
}

func newKernelWith(t *testing.T) (*tools.Kernel, world) {
	t.Helper()
	st := storetest.Open(t, "sqlite")
	sent := new(atomic.Int64)
	now := time.Now
	ctx := context.Background()
	if err := accounts.New(st).Create(ctx, &accounts.Account{ID: "acct", Email: "m@example.com", CreatedAt: now()}, nil,
		&accounts.APIKey{ID: "k-read", AccountID: "acct", Name: "r", Prefix: "r", Hash: tools.HashKey(secret), Scopes: []string{"read"},
			SpendLimitMicro: 1, RateLimitPerMinute: 100, CreatedAt: now()}); err != nil {
		t.Fatal(err)
	}
	echo := tools.New(tools.Def{Name: "echo_text", Title: "Echo", Description: "echoes text", Access: tools.Public,
		Annotations: tools.Annotations{ReadOnly: tools.Bool(true), Idempotent: true, OpenWorld: tools.Bool(false)}},
		func(_ context.Context, _ *tools.Caller, in textIn) (textIn, error) { return in, nil })
	who := tools.New(tools.Def{Name: "whoami", Title: "Who am I", Description: "the caller", Access: tools.RequireScope(tools.ScopeRead),
		Annotations: tools.Annotations{ReadOnly: tools.Bool(true), OpenWorld: tools.Bool(false)}},
		func(_ context.Context, c *tools.Caller, _ struct{}) (whoOut, error) {
			return whoOut{Account: c.AccountID(), Client: c.ClientAddr}, nil
		})
	write := tools.New(tools.Def{Name: "confirm_write", Title: "Write", Description: "a write confirmed first", Access: tools.Public, TakesDecision: true,
		Annotations: tools.Annotations{ReadOnly: tools.Bool(false), Destructive: tools.Bool(true), OpenWorld: tools.Bool(true)}},
		func(_ context.Context, c *tools.Caller, in confirmIn) (confirmOut, error) {
			in = decided(c, in)
			if in.ConfirmRequestID == "" {
				return confirmOut{}, tools.Errorf(tools.CodeConfirmationRequired, "confirm first").WithDetails(map[string]any{
					"requestId": "req-1", "handle": "@swapper", "category": "SWAP", "args": map[string]any{"amount": "1"},
					"partnerFeeUsd": "0.01", "platformFeeUsd": "0.001", "infrastructureUsd": "0.001", "gasEstimateUsd": "0",
					"totalUsd": "0.012", "maxChargeUsd": "0.02", "expiresAt": now().Add(time.Minute),
				}).WithContinue(&tools.Continuation{Kind: tools.ContinueConfirm, RequestID: "req-1", ExpiresAt: now().Add(time.Minute),
					Summary: []string{`@swapper wants to run a SWAP call with these arguments:`, `{"amount":"1"}`, "", "Total: 0.012 USD. At most 0.02 USD (maxChargeUsd) is reserved when you approve."}})
			}
			if !in.Decline {
				sent.Add(1)
			}
			return confirmOut{Sent: !in.Decline, Declined: in.Decline, Request: in.ConfirmRequestID}, nil
		})
	auth := keys.NewAuthenticator(service.Deps{Store: st, Now: now, Log: quiet}, nil)
	k, err := tools.NewKernel(auth, tools.NewRateLimiter(now), nil, quiet, now, echo, who, write)
	if err != nil {
		t.Fatal(err)
	}
	return k, world{auth: auth, store: st, sent: sent}
}

// inMemory connects a go-sdk client to srv over the in-memory transport (a stdio-like
// session: it carries server requests such as elicitation).
func inMemory(t *testing.T, srv *mcp.Server, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

type headers map[string]string

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// overHTTP connects a go-sdk client to srv served by HTTPHandler on a loopback server,
// sending h on every request.
func overHTTP(t *testing.T, srv *mcp.Server, h headers) *mcp.ClientSession {
	t.Helper()
	hs := httptest.NewServer(mcpserver.HTTPHandler(srv, mcpserver.HTTPOptions{Log: quiet}))
	t.Cleanup(hs.Close)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: hs.URL, HTTPClient: &http.Client{Transport: h}, DisableStandaloneSSE: true,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call runs a tool and returns its structured result, or its error in the error model.
func call(t *testing.T, cs *mcp.ClientSession, name string, args any) (map[string]any, *tools.Error) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if res.IsError {
		var body tools.Body
		if json.Unmarshal([]byte(text), &body) != nil || body.Error == nil {
			t.Fatalf("%s: error result outside the error model: %s", name, text)
		}
		return nil, body.Error
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		t.Fatalf("%s: text content is not the JSON result: %s", name, text)
	}
	structured, _ := json.Marshal(res.StructuredContent)
	if !jsonEqual(t, structured, []byte(text)) {
		t.Errorf("%s: structuredContent %s and text %s differ", name, structured, text)
	}
	return out, nil
}

// Every kernel tool is listed as declared: title, hints, icons and the kernel's own schemas.
func TestToolsAreListedFromTheKernel(t *testing.T) {
	k := newKernel(t)
	cs := inMemory(t, mcpserver.New(k, mcpserver.Options{Name: "switchboard", Version: "test"}), nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != len(k.Tools()) {
		t.Fatalf("listed %d tools, the kernel has %d", len(res.Tools), len(k.Tools()))
	}
	for _, lt := range res.Tools {
		kt := k.Tool(lt.Name)
		if kt == nil {
			t.Fatalf("listed %s, which the kernel does not have", lt.Name)
		}
		in, _ := json.Marshal(lt.InputSchema)
		out, _ := json.Marshal(lt.OutputSchema)
		a := lt.Annotations
		switch {
		case lt.Title != kt.Title || a == nil || a.Title != kt.Title:
			t.Errorf("%s: title %q, annotations %+v", lt.Name, lt.Title, a)
		case a.ReadOnlyHint != *kt.Annotations.ReadOnly || a.DestructiveHint == nil || *a.DestructiveHint != *kt.Annotations.Destructive ||
			a.IdempotentHint != kt.Annotations.Idempotent || a.OpenWorldHint == nil || *a.OpenWorldHint != *kt.Annotations.OpenWorld:
			t.Errorf("%s: hints %+v, kernel %+v", lt.Name, a, kt.Annotations)
		case !jsonEqual(t, in, kt.InputSchema) || !jsonEqual(t, out, kt.OutputSchema):
			t.Errorf("%s: schemas differ from the kernel's:\n%s\n%s", lt.Name, in, out)
		case len(lt.Icons) == 0:
			t.Errorf("%s: no icon", lt.Name)
		}
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ra, _ := json.Marshal(x)
	rb, _ := json.Marshal(y)
	return string(ra) == string(rb)
}

// A call's answer is the result as structuredContent and as text; a refusal is isError with
// the error model as text, and the handler never ran.
func TestCallResultsAndErrors(t *testing.T) {
	cs := inMemory(t, mcpserver.New(newKernel(t), mcpserver.Options{Name: "switchboard", Version: "test"}), nil)
	out, e := call(t, cs, "echo_text", map[string]any{"text": "hello"})
	if e != nil || out["text"] != "hello" {
		t.Fatalf("echo: %v %v", out, e)
	}
	if _, e := call(t, cs, "echo_text", map[string]any{"text": ""}); e == nil || e.Code != tools.CodeBadInput || !strings.Contains(e.Message, "/text") {
		t.Errorf("empty text: %v", e)
	}
	if _, e := call(t, cs, "echo_text", map[string]any{"text": "x", "extra": 1}); e == nil || e.Code != tools.CodeBadInput {
		t.Errorf("unknown field: %v", e)
	}
}

// The key comes from the door: over stdio from the configured SWITCHBOARD_API_KEY, over HTTP
// only from the request's headers (never the operator's key), and a missing key is explained
// in the door's own terms.
func TestKeyPerDoor(t *testing.T) {
	k := newKernel(t)
	stdioNoKey := inMemory(t, mcpserver.New(k, mcpserver.Options{Name: "switchboard", Version: "test", Stdio: true}), nil)
	if _, e := call(t, stdioNoKey, "whoami", nil); e == nil || e.Code != tools.CodeUnauthenticated || !strings.Contains(e.Message, "SWITCHBOARD_API_KEY") {
		t.Errorf("stdio without a key: %v", e)
	}
	stdio := inMemory(t, mcpserver.New(k, mcpserver.Options{Name: "switchboard", Version: "test", Stdio: true, APIKey: secret}), nil)
	if out, e := call(t, stdio, "whoami", nil); e != nil || out["account"] != "acct" || out["client"] != "stdio" {
		t.Errorf("stdio with the configured key: %v %v", out, e)
	}

	withOperatorKey := mcpserver.New(k, mcpserver.Options{Name: "switchboard", Version: "test", APIKey: secret})
	if _, e := call(t, overHTTP(t, withOperatorKey, nil), "whoami", nil); e == nil || e.Code != tools.CodeUnauthenticated || !strings.Contains(e.Message, "x-api-key") {
		t.Errorf("keyless HTTP call acted with the operator's key, or was not told about the header: %v", e)
	}
	cs := overHTTP(t, withOperatorKey, headers{"x-api-key": secret, tools.HeaderClientAddr: "203.0.113.9"})
	if out, e := call(t, cs, "whoami", nil); e != nil || out["account"] != "acct" || out["client"] != "203.0.113.9" {
		t.Errorf("HTTP with x-api-key: %v %v", out, e)
	}
	bearer := overHTTP(t, withOperatorKey, headers{"Authorization": "Bearer " + secret})
	if out, e := call(t, bearer, "whoami", nil); e != nil || out["account"] != "acct" {
		t.Errorf("HTTP with a bearer key: %v %v", out, e)
	}
	if _, e := call(t, overHTTP(t, withOperatorKey, headers{"x-api-key": "sb_test_unknown"}), "whoami", nil); e == nil || e.Code != tools.CodeUnauthenticated {
		t.Errorf("HTTP with an unknown key: %v", e)
	}
}

// A client that takes elicitation is shown the quote as a form, and its answer becomes the
// same call again with a decision on the quote (declined unless it approved); a client
// without it gets CONFIRMATION_REQUIRED to confirm itself.
func TestConfirmationByElicitation(t *testing.T) {
	k := newKernel(t)
	srv := mcpserver.New(k, mcpserver.Options{Name: "switchboard", Version: "test", Stdio: true})
	for _, c := range []struct {
		decision     string
		sent, declin bool
	}{{"approve", true, false}, {"decline", false, true}} {
		var shown []string
		cs := inMemory(t, srv, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			shown = append(shown, req.Params.Message)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": c.decision}}, nil
		}})
		out, e := call(t, cs, "confirm_write", map[string]any{})
		if e != nil || out["sent"] != c.sent || out["declined"] != c.declin || out["request"] != "req-1" {
			t.Errorf("%s: %v %v", c.decision, out, e)
		}
		if len(shown) != 1 || !strings.Contains(shown[0], "@swapper") || !strings.Contains(shown[0], "0.02 USD") {
			t.Errorf("%s: the form showed %q", c.decision, shown)
		}
	}
	_, e := call(t, inMemory(t, srv, nil), "confirm_write", map[string]any{})
	if e == nil || e.Code != tools.CodeConfirmationRequired || e.Details["requestId"] != "req-1" {
		t.Errorf("without elicitation: %v", e)
	}
}

// A host that pipes its requests and closes stdin gets every answer before ServeStdio
// returns: the end of input waits for the calls already read.
func TestStdioAnswersEverythingReadBeforeEOF(t *testing.T) {
	srv := mcpserver.New(newKernel(t), mcpserver.Options{Name: "switchboard", Version: "test", Stdio: true})
	lines := []string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo_text","arguments":{"text":"one"}}}`,
		`not json`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo_text","arguments":{"text":"two"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"whoami"}}`,
	}
	var out strings.Builder
	if err := mcpserver.ServeStdio(context.Background(), srv, strings.NewReader(strings.Join(lines, "\n")+"\n"), &out); err != nil {
		t.Fatal(err)
	}
	answers := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var resp struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &resp); err != nil {
			t.Fatalf("stdout line is not JSON-RPC: %q", line)
		}
		switch {
		case resp.Error != nil && resp.Error.Code == -32700:
			answers["parse error"] = line
		default:
			answers[string(resp.ID)] = string(resp.Result)
		}
	}
	if len(answers) != 5 || !strings.Contains(answers["1"], `\"one\"`) || !strings.Contains(answers["2"], `\"two\"`) ||
		!strings.Contains(answers["3"], "SWITCHBOARD_API_KEY") || answers["parse error"] == "" {
		t.Errorf("answers %v, want initialize, both echoes, whoami's UNAUTHENTICATED and one parse error", answers)
	}
}

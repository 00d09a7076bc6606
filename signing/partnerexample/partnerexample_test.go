package partnerexample_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/signing/partnerexample"
)

// start runs the example partner on an httptest TLS server, as the service's tests do.
func start(t *testing.T) (*httptest.Server, *signing.Signer) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer := signing.NewSigner(priv)
	v := signing.NewVerifierFromKey(signer.PublicKey())
	srv := httptest.NewUnstartedServer(partnerexample.NewMux(v, partnerexample.DefaultHandle))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, signer
}

func TestREST(t *testing.T) {
	srv, signer := start(t)
	call := func(s *signing.Signer, args string) (int, map[string]any) {
		t.Helper()
		fields := signing.CallFields{RequestID: signing.NewRequestID(), IntentDefinitionID: "int_q", UserID: "u_q", Args: json.RawMessage(args)}
		client := &http.Client{Transport: signing.NewRESTRoundTripper(s, fields, srv.Client().Transport)}
		resp, err := client.Post(srv.URL+partnerexample.RESTPath, "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, out
	}
	status, out := call(signer, `{"query":"gm <3"}`)
	if status != 200 || out["success"] != true || out["result"].(map[string]any)["answer"] != "You asked: gm <3" {
		t.Errorf("%d %v", status, out)
	}
	for _, args := range []string{`{}`, `{"query":1}`, `{"q":"x"}`} {
		if status, out := call(signer, args); status != 400 || out["success"] != false || out["error"].(map[string]any)["code"] != "BAD_INPUT" {
			t.Errorf("%s: %d %v", args, status, out)
		}
	}
	_, otherKey, _ := ed25519.GenerateKey(rand.Reader)
	if status, _ := call(signing.NewSigner(otherKey), `{"query":"x"}`); status != 401 {
		t.Errorf("forged: %d", status)
	}
	resp, err := srv.Client().Post(srv.URL+partnerexample.RESTPath, "application/json",
		strings.NewReader(`{"requestId":"r","intentDefinitionId":"i","userId":"u","args":{"query":"x"},"timestamp":1}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("unsigned: %d", resp.StatusCode)
	}
}

func TestMCP(t *testing.T) {
	srv, signer := start(t)
	connect := func(rt http.RoundTripper) *mcp.ClientSession {
		client := mcp.NewClient(&mcp.Implementation{Name: "switchboard", Version: "test"}, nil)
		cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{
			Endpoint: srv.URL + partnerexample.MCPPath, HTTPClient: &http.Client{Transport: rt},
			DisableStandaloneSSE: true, MaxRetries: -1,
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	cs := connect(signing.NewMCPRoundTripper(signer, srv.Client().Transport))
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != "@example-echo" {
		t.Fatalf("tools %v %v", tools, err)
	}
	call := func(args map[string]any) *mcp.CallToolResult {
		t.Helper()
		fields := signing.CallFields{RequestID: signing.NewRequestID(), IntentDefinitionID: "int_chart", UserID: "u_c"}
		res, err := cs.CallTool(signing.WithCall(t.Context(), fields), &mcp.CallToolParams{Name: "@example-echo", Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	text := func(r *mcp.CallToolResult) string { return r.Content[0].(*mcp.TextContent).Text }

	for _, tt := range []struct {
		args    map[string]any
		isError bool
		want    string
	}{
		{map[string]any{"ticker": "sol", "days": 30}, false, `"days":30`},
		{map[string]any{"ticker": "sol", "days": 30.0}, false, `"days":30`},
		{map[string]any{"ticker": "eth"}, false, `"days":7`},
		{map[string]any{"ticker": "eth", "days": 365}, false, `"ticker":"ETH"`},
		{map[string]any{}, true, "BAD_INPUT"},
		{map[string]any{"ticker": 5}, true, "BAD_INPUT"},
		{map[string]any{"ticker": "eth", "days": 0}, true, "between 1 and 365"},
		{map[string]any{"ticker": "eth", "days": 366}, true, "between 1 and 365"},
		{map[string]any{"ticker": "eth", "days": 1.5}, true, "integer"},
		{map[string]any{"ticker": "eth", "days": "30"}, true, "integer"},
	} {
		res := call(tt.args)
		if res.IsError != tt.isError || !strings.Contains(text(res), tt.want) {
			t.Errorf("%v: isError %v %s", tt.args, res.IsError, text(res))
		}
	}

	// Unsigned: HTTP 401 from the middleware, seen by the MCP client as an error.
	plain := connect(srv.Client().Transport)
	if _, err := plain.CallTool(t.Context(), &mcp.CallToolParams{Name: "@example-echo", Arguments: map[string]any{"ticker": "x"}}); err == nil {
		t.Error("unsigned call accepted")
	}
	// The negative-auth probe shape: a bare POST.
	req, _ := http.NewRequest("POST", srv.URL+partnerexample.MCPPath, bytes.NewReader([]byte(
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"@example-echo","arguments":{"ticker":"x"}}}`)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("probe: %d", resp.StatusCode)
	}
}

func TestSchemas(t *testing.T) {
	for _, s := range []string{partnerexample.RESTParametersSchema, partnerexample.MCPParametersSchema} {
		if !json.Valid([]byte(s)) {
			t.Errorf("invalid schema %s", s)
		}
	}
}

// Over MCP_HTTP too, a success reports the configured cost as providerCostMicro (what
// Switchboard pays the partner), and each call is logged on one line: verified with its
// requestId, or refused.
func TestMCPChargesAndLogsEachCall(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	signer := signing.NewSigner(priv)
	logs := &lockedBuffer{}
	h := partnerexample.New(signing.NewVerifierFromKey(signer.PublicKey()),
		partnerexample.Config{CostMicro: 50_000, Log: slog.New(slog.NewTextHandler(logs, nil))})
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)

	client := mcp.NewClient(&mcp.Implementation{Name: "switchboard", Version: "test"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srv.URL + partnerexample.MCPPath,
		HTTPClient: &http.Client{Transport: signing.NewMCPRoundTripper(signer, srv.Client().Transport)}, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	fields := signing.CallFields{RequestID: signing.NewRequestID(), IntentDefinitionID: "int_chart", UserID: "u_c"}
	res, err := cs.CallTool(signing.WithCall(t.Context(), fields), &mcp.CallToolParams{Name: partnerexample.DefaultHandle, Arguments: map[string]any{"ticker": "sol"}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, `"providerCostMicro":50000`) {
		t.Fatalf("a signed call: %v %+v", err, res)
	}
	req, _ := http.NewRequest("POST", srv.URL+partnerexample.MCPPath, strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"@example-echo","arguments":{"ticker":"x"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(signing.HeaderRequestID, "forged-2")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	out := logs.String()
	for i := 0; i < 100 && !strings.Contains(out, "forged-2"); i++ { // logged after the answer is written
		time.Sleep(10 * time.Millisecond)
		out = logs.String()
	}
	if strings.Count(out, "signed call verified") != 1 || !strings.Contains(out, "requestId="+fields.RequestID) ||
		strings.Count(out, "signed call refused") != 1 || !strings.Contains(out, "requestId=forged-2") {
		t.Fatalf("the log, want one verified and one refused line:\n%s", out)
	}
}

// lockedBuffer is a log the server writes while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

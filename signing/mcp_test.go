package signing_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-hq/switchboard/signing"
)

// recorded is one HTTP request seen by the MCP partner.
type recorded struct {
	method string // JSON-RPC method, or the HTTP method when there is no body
	header http.Header
	body   []byte
}

// mcpPartner starts a go-sdk Streamable HTTP server with one tool, named like a handle,
// registered with the low-level AddTool and {"type":"object"} so args are not coerced. The
// tool verifies its call with VerifyHeaders. Every HTTP request is recorded.
func mcpPartner(t *testing.T, v *signing.Verifier, protect bool) (*httptest.Server, func() []recorded) {
	t.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "partner", Version: "test"}, nil)
	server.AddTool(&mcp.Tool{Name: "@example-echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			env, err := v.VerifyHeaders(ctx, req.Extra.Header, req.Params.Arguments)
			if err != nil {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
			}
			out, _ := json.Marshal(map[string]any{"success": true, "result": map[string]any{
				"requestId": env.RequestID, "userId": env.UserID, "args": env.Args}})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(out)}}}, nil
		})
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true})
	if protect {
		h = signing.MCPMiddleware(v, h)
	}
	var mu sync.Mutex
	var seen []recorded
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := recorded{method: r.Method, header: r.Header.Clone(), body: body}
		var m struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(body, &m) == nil && m.Method != "" {
			rec.method = m.Method
		}
		mu.Lock()
		seen = append(seen, rec)
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // TLS handshake noise at shutdown
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, func() []recorded {
		mu.Lock()
		defer mu.Unlock()
		return append([]recorded(nil), seen...)
	}
}

func mcpClient(t *testing.T, ctx context.Context, srv *httptest.Server, rt http.RoundTripper) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "switchboard", Version: "test"}, nil)
	session, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:             srv.URL,
		HTTPClient:           &http.Client{Transport: rt},
		DisableStandaloneSSE: true,
		MaxRetries:           -1,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { session.Close() })
	return session
}

// TestMCPCallContextReachesHTTP proves that the ctx given to ClientSession.CallTool is the
// context of the HTTP request of the tools/call, so the RoundTripper can sign it, and that
// the headers arrive with a signature that verifies.
func TestMCPCallContextReachesHTTP(t *testing.T) {
	priv := newKey(t)
	pub := priv.Public().(ed25519.PublicKey)
	v := signing.NewVerifierFromKey(pub)
	srv, seen := mcpPartner(t, v, true)
	signer := signing.NewSigner(priv)
	session := mcpClient(t, t.Context(), srv, signing.NewMCPRoundTripper(signer, srv.Client().Transport))

	fields := signing.CallFields{
		RequestID: signing.NewRequestID(), IntentDefinitionID: "int_echo", UserID: "u_pairwise",
		Args: json.RawMessage(`{"query":"hello <world> & co","n":1.0}`),
	}
	res, err := session.CallTool(signing.WithCall(t.Context(), fields), &mcp.CallToolParams{
		Name:      "@example-echo",
		Arguments: map[string]any{"query": "hello <world> & co", "n": 1.0},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("tool error: %v", res.Content[0].(*mcp.TextContent).Text)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if !strings.Contains(text, fields.RequestID) || !strings.Contains(text, `"args":{"n":1,"query":"hello \u003cworld\u003e \u0026 co"}`) {
		t.Errorf("result %s", text)
	}

	var calls int
	for _, r := range seen() {
		switch r.method {
		case "tools/call":
			calls++
			for _, name := range []string{signing.HeaderSignature, signing.HeaderTimestamp, signing.HeaderRequestID,
				signing.HeaderIntentID, signing.HeaderUserID, signing.HeaderIdempotencyKey} {
				if r.header.Get(name) == "" {
					t.Errorf("tools/call without %s", name)
				}
			}
			if r.header.Get(signing.HeaderRequestID) != fields.RequestID || r.header.Get(signing.HeaderUserID) != "u_pairwise" {
				t.Errorf("headers %v", r.header)
			}
			// Independently of the partner: the headers verify against the wire arguments.
			var msg struct {
				Params struct {
					Arguments json.RawMessage `json:"arguments"`
				} `json:"params"`
			}
			if err := json.Unmarshal(r.body, &msg); err != nil {
				t.Fatal(err)
			}
			if _, err := v.VerifyHeaders(t.Context(), r.header, msg.Params.Arguments); err != nil {
				t.Errorf("tools/call headers do not verify: %v", err)
			}
		case "initialize", "notifications/initialized":
			if r.header.Get(signing.HeaderSignature) != "" {
				t.Errorf("%s signed although Connect had no CallFields", r.method)
			}
		}
	}
	if calls != 1 {
		t.Errorf("%d tools/call requests", calls)
	}
}

// TestMCPUnsignedAndForgedRejected checks the negative-auth probe for MCP_HTTP: an unsigned
// or forged tools/call gets HTTP 401 from MCPMiddleware.
func TestMCPUnsignedAndForgedRejected(t *testing.T) {
	priv := newKey(t)
	v := signing.NewVerifierFromKey(priv.Public().(ed25519.PublicKey))
	srv, _ := mcpPartner(t, v, true)

	// Unsigned: a plain client.
	session := mcpClient(t, t.Context(), srv, srv.Client().Transport)
	_, err := session.CallTool(t.Context(), &mcp.CallToolParams{Name: "@example-echo", Arguments: map[string]any{"query": "x"}})
	if err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Errorf("unsigned call: %v", err)
	}

	// Forged: signed by another key.
	forger := signing.NewSigner(newKey(t))
	session = mcpClient(t, t.Context(), srv, signing.NewMCPRoundTripper(forger, srv.Client().Transport))
	ctx := signing.WithCall(t.Context(), signing.CallFields{RequestID: signing.NewRequestID(), IntentDefinitionID: "i", UserID: "u"})
	_, err = session.CallTool(ctx, &mcp.CallToolParams{Name: "@example-echo", Arguments: map[string]any{"query": "x"}})
	if err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Errorf("forged call: %v", err)
	}

	// A raw probe request gets a failure envelope.
	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"@example-echo","arguments":{}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 401 || !strings.Contains(string(body), `"success":false`) {
		t.Errorf("probe: %d %s", resp.StatusCode, body)
	}
}

// TestMCPToolVerifiesWithoutMiddleware shows the tool-level check alone: without
// MCPMiddleware an unsigned call reaches the tool, which answers an error result.
func TestMCPToolVerifiesWithoutMiddleware(t *testing.T) {
	priv := newKey(t)
	v := signing.NewVerifierFromKey(priv.Public().(ed25519.PublicKey))
	srv, _ := mcpPartner(t, v, false)
	session := mcpClient(t, t.Context(), srv, srv.Client().Transport)
	res, err := session.CallTool(t.Context(), &mcp.CallToolParams{Name: "@example-echo", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "missing service signature") {
		t.Errorf("unsigned call accepted by the tool: %+v", res)
	}
	// Signed with Connect's context too: every request carries headers.
	signer := signing.NewSigner(priv)
	fields := signing.CallFields{RequestID: signing.NewRequestID(), IntentDefinitionID: "i", UserID: "u"}
	ctx := signing.WithCall(t.Context(), fields)
	session = mcpClient(t, ctx, srv, signing.NewMCPRoundTripper(signer, srv.Client().Transport))
	res, err = session.CallTool(ctx, &mcp.CallToolParams{Name: "@example-echo"}) // no arguments: {}
	if err != nil || res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
}

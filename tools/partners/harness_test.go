package partners_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-hq/switchboard/mcpserver"
	"github.com/switchboard-hq/switchboard/rest"
	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/keys"
	"github.com/switchboard-hq/switchboard/tools/partners"
	"github.com/switchboard-hq/switchboard/tools/partners/outbound"
	"github.com/switchboard-hq/switchboard/tools/partners/partnertest"
	"github.com/switchboard-hq/switchboard/tools/service"
)

// env is the partner tools behind the real kernel and both doors (REST and MCP over
// Streamable HTTP) on a loopback server, on a fresh store.
type env struct {
	st     *store.Store
	svc    *partners.Service
	kernel *tools.Kernel
	url    string
	clock  *apptest.Clock
	priv   ed25519.PrivateKey
	pub    ed25519.PublicKey
}

type envOptions struct {
	dialect    string
	production bool
	strict     bool              // development setting off (the SSRF guard on)
	resolver   outbound.Resolver // with strict
	probe      time.Duration     // probe timeout
	notify     func(ctx context.Context, accountID, subject, text string) error
}

func newEnv(t *testing.T, o envOptions) *env {
	t.Helper()
	if o.dialect == "" {
		o.dialect = "sqlite"
	}
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	st := storetest.Open(t, o.dialect)
	clk := apptest.NewClock(time.Now().UTC().Truncate(time.Second))
	ca := partnertest.Start(t, http.NotFoundHandler())
	signer := signing.NewSigner(priv)
	out, err := outbound.New(outbound.Options{Signer: signer, AllowLocal: !o.strict, Resolver: o.resolver, ExtraCAPEM: partnertest.CAPEM(ca.Server)})
	if err != nil {
		t.Fatal(err)
	}
	cfg := partners.Config{Env: "test", PseudonymSecret: []byte("pseudonym secret for tests"), ProbeTimeout: o.probe, Notify: o.notify}
	if o.production {
		cfg.Env = "production"
	}
	if cfg.ProbeTimeout == 0 {
		cfg.ProbeTimeout = 5 * time.Second
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	d := service.Deps{Store: st, Now: clk.Now, Log: log}
	svc, err := partners.NewService(cfg, d, out)
	if err != nil {
		t.Fatal(err)
	}
	k, err := tools.NewKernel(keys.NewAuthenticator(d, nil), tools.NewRateLimiter(clk.Now), nil, log, clk.Now, svc.Tools()...)
	if err != nil {
		t.Fatal(err)
	}
	h := http.NewServeMux()
	h.Handle("/mcp", mcpserver.HTTPHandler(mcpserver.New(k, mcpserver.Options{Name: "t", Version: "1", Log: log}), mcpserver.HTTPOptions{Log: log}))
	h.Handle("/v1/", rest.Handler(k))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &env{st: st, svc: svc, kernel: k, url: srv.URL, clock: clk, priv: priv, pub: priv.Public().(ed25519.PublicKey)}
}

// account creates an account with a key carrying scopes (publish by default) and returns
// the account id and the key.
func (e *env) account(t *testing.T, scopes ...string) (string, string) {
	t.Helper()
	if len(scopes) == 0 {
		scopes = []string{"read", "publish"}
	}
	id := "acct_" + signing.NewRequestID()[24:] // the random tail (the head is the time)
	secret, prefix := tools.NewKeySecret("test")
	now := e.clock.Now()
	key := &accounts.APIKey{ID: "key_" + id, AccountID: id, Name: "k", Prefix: prefix, Hash: tools.HashKey(secret), Scopes: scopes,
		SpendLimitMicro: 50_000_000, RateLimitPerMinute: 1000, CreatedAt: now}
	if err := accounts.New(e.st).Create(context.Background(), &accounts.Account{ID: id, Email: id + "@example.com", CreatedAt: now}, nil, key); err != nil {
		t.Fatal(err)
	}
	return id, secret
}

type door string

const (
	viaMCP  door = "MCP"
	viaREST door = "REST"
)

var doors = []door{viaMCP, viaREST}

// call runs a tool through a door and returns its result object or its error. For REST it
// also checks the HTTP status matches the error code.
func (e *env) call(t *testing.T, d door, key, tool string, args map[string]any) (map[string]any, *tools.Error) {
	t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	var raw []byte
	var apiErr *tools.Error
	if d == viaMCP {
		raw, apiErr = e.callMCP(t, key, tool, args)
	} else {
		raw, apiErr = e.callREST(t, key, tool, args)
	}
	if apiErr != nil {
		return nil, apiErr
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s %s: result %s: %v", d, tool, raw, err)
	}
	// The published output schema must describe what came back.
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	dec.Decode(&v)
	if err := e.kernel.Tool(tool).ValidateOutput(v); err != nil {
		t.Fatalf("%s %s: output does not match its schema: %v\n%s", d, tool, err, raw)
	}
	return out, nil
}

type keyTransport struct{ key string }

func (k keyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("x-api-key", k.key)
	return http.DefaultTransport.RoundTrip(r)
}

func (e *env) callMCP(t *testing.T, key, tool string, args map[string]any) ([]byte, *tools.Error) {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: e.url + "/mcp", HTTPClient: &http.Client{Transport: keyTransport{key}}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("MCP %s: %v", tool, err)
	}
	text := []byte(res.Content[0].(*mcp.TextContent).Text)
	if res.IsError {
		var body tools.Body
		if err := json.Unmarshal(text, &body); err != nil || body.Error == nil {
			t.Fatalf("MCP %s: error is not the error model: %s", tool, text)
		}
		return nil, body.Error
	}
	return text, nil
}

func (e *env) callREST(t *testing.T, key, tool string, args map[string]any) ([]byte, *tools.Error) {
	t.Helper()
	var route *rest.Route
	routes := rest.Routes()
	for i := range routes {
		if routes[i].Tool == tool {
			route = &routes[i]
		}
	}
	if route == nil {
		t.Fatalf("no REST route for %s", tool)
	}
	path := route.Path
	args = clone(args)
	for param, field := range route.Params {
		path = strings.ReplaceAll(path, "{"+param+"}", url.PathEscape(fmt.Sprint(args[field])))
		delete(args, field)
	}
	var body io.Reader
	if route.Method == http.MethodGet || route.Method == http.MethodDelete {
		q := url.Values{}
		for k, v := range args {
			q.Set(k, fmt.Sprint(v))
		}
		if len(q) > 0 {
			path += "?" + q.Encode()
		}
	} else {
		b, _ := json.Marshal(args)
		body = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(route.Method, e.url+path, body)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 400 {
		var b tools.Body
		if err := json.Unmarshal(raw, &b); err != nil || b.Error == nil {
			t.Fatalf("REST %s: %d %s", tool, resp.StatusCode, raw)
		}
		if want := rest.Status(b.Error.Code); resp.StatusCode != want {
			t.Fatalf("REST %s: status %d for %s, want %d", tool, resp.StatusCode, b.Error.Code, want)
		}
		if b.Error.Code == tools.CodeRateLimited && resp.Header.Get("Retry-After") == "" {
			t.Fatalf("REST %s: 429 without Retry-After", tool)
		}
		if b.Error.Code == tools.CodeRateLimited {
			b.Error.Details["retryAfterHeader"] = resp.Header.Get("Retry-After")
		}
		return nil, b.Error
	}
	want := http.StatusOK
	if route.Created {
		want = http.StatusCreated
	}
	if resp.StatusCode != want {
		t.Fatalf("REST %s: status %d, want %d", tool, resp.StatusCode, want)
	}
	return raw, nil
}

func clone(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// intent returns valid publish arguments for a handle and endpoint.
func intent(handle, endpoint string) map[string]any {
	return map[string]any{
		"publicIdentifier": handle,
		"name":             "Price oracle",
		"description":      "Answers price questions about tokens.",
		"category":         "PRICE",
		"toolEndpoint":     endpoint,
		"feeRate":          0,
		"sampleQueries":    []string{"price of ETH"},
	}
}

func mustOK(t *testing.T, out map[string]any, err *tools.Error) map[string]any {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %s: %s (%v)", err.Code, err.Message, err.Details)
	}
	return out
}

func mustErr(t *testing.T, out map[string]any, err *tools.Error, code tools.Code, contains ...string) *tools.Error {
	t.Helper()
	if err == nil {
		t.Fatalf("got %v, want %s", out, code)
	}
	if err.Code != code {
		t.Fatalf("got %s (%s), want %s", err.Code, err.Message, code)
	}
	for _, c := range contains {
		if !strings.Contains(err.Message, c) {
			t.Fatalf("message %q does not mention %q", err.Message, c)
		}
	}
	return err
}

func rawJSON(s string) json.RawMessage { return json.RawMessage(s) }

// input is a valid IntentInput for the service's own entry points.
func input(handle, endpoint string) partners.IntentInput {
	return partners.IntentInput{PublicIdentifier: handle, Name: "Price oracle", Description: "Answers price questions.",
		Category: "PRICE", ToolEndpoint: endpoint}
}

// ok calls a tool and fails the test on an error.
func (e *env) ok(t *testing.T, d door, key, tool string, args map[string]any) map[string]any {
	t.Helper()
	out, err := e.call(t, d, key, tool, args)
	return mustOK(t, out, err)
}

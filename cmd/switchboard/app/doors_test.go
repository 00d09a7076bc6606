package app_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
)

// An operator who sets SWITCHBOARD_API_KEY on a serving process (for stdio) must not hand
// that key to every keyless HTTP caller: only the stdio server acts with it.
func TestHTTPNeverActsWithTheStdioKey(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	key := env.Onboard(t, "op@example.com")["apiKey"].(string)

	cfg := env.App.Config
	cfg.APIKey = key
	a, err := app.BuildOn(context.Background(), cfg, app.Deps{Now: env.Clock.Now, Log: env.App.Log}, env.App.Store)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Stop()
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	httpDoor := &apptest.Env{App: &apptest.App{App: a}, URL: srv.URL}
	if status, hdr, body := apptest.KeylessMCPCall(t, srv.URL, "account_get"); status != 401 || !strings.Contains(hdr.Get("WWW-Authenticate"), "resource_metadata") ||
		!strings.Contains(fmt.Sprint(body), "x-api-key") {
		t.Fatalf("keyless HTTP MCP call: %d %v %v, want a 401 challenge naming the header", status, hdr, body)
	}
	if status, body := httpDoor.REST(t, "GET", "/v1/account", "", nil); status != 401 {
		t.Fatalf("keyless REST call: %d %v", status, body)
	}

	// The stdio server, over an in-memory transport, acts with the key.
	ct, st := mcp.NewInMemoryTransports()
	ss, err := a.StdioServer().Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "desktop", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if out, e := apptest.CallTool(t, cs, "account_get", nil); e != nil || out["email"] != "op@example.com" {
		t.Fatalf("stdio with SWITCHBOARD_API_KEY: %v %v", out, e)
	}
}

// Every URL llms.txt gives an agent answers: GET documents with 200, the POST routes it names
// with an error about the body (not 404), and /mcp as an MCP endpoint.
func TestLLMsTxtLinksAnswer(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	resp, err := http.Get(env.URL + "/llms.txt")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	urls := regexp.MustCompile(regexp.QuoteMeta(env.URL)+`[^\s`+"`"+`)]*`).FindAllString(string(body), -1)
	if len(urls) < 5 {
		t.Fatalf("llms.txt names too few URLs: %v\n%s", urls, body)
	}
	for _, u := range urls {
		if strings.HasSuffix(u, "/v1/...") {
			continue // the REST prefix, spelled out in openapi.json
		}
		u = strings.TrimRight(u, ".,")
		switch {
		case strings.HasSuffix(u, "/mcp"):
			if status, _, body := apptest.KeylessMCPCall(t, env.URL, "resolve_token"); status != 401 || !strings.Contains(fmt.Sprint(body), "agent_signup") {
				t.Errorf("%s: %d %v", u, status, body)
			}
		case strings.Contains(u, "/v1/agents/"):
			if status, _, _ := apptest.Do(t, "POST", u, "", map[string]any{}); status != 400 {
				t.Errorf("POST %s: %d, want 400 for an empty body", u, status)
			}
		default:
			r, err := http.Get(u)
			if err != nil || r.StatusCode != 200 {
				t.Errorf("GET %s: %v %v", u, r.StatusCode, err)
			}
			r.Body.Close()
		}
	}
}

// In production serve refuses to start without a public https base URL and says which
// variable to set; in test it is the listen address.
func TestBaseURL(t *testing.T) {
	for _, tc := range []struct{ env, base, addr, want, err string }{
		{env: "test", addr: ":8080", want: "http://localhost:8080"},
		{env: "test", addr: "127.0.0.1:9000", want: "http://127.0.0.1:9000"},
		{env: "test", addr: "[::]:9000", want: "http://localhost:9000"},
		{env: "test", base: "https://sb.example.com", addr: ":1", want: "https://sb.example.com"},
		{env: "production", addr: ":8080", err: "SWITCHBOARD_BASE_URL"},
		{env: "production", base: "http://sb.example.com", addr: ":8080", err: "https"},
		{env: "production", base: "https://sb.example.com", addr: ":8080", want: "https://sb.example.com"},
	} {
		cfg := app.Defaults()
		cfg.Env, cfg.BaseURL, cfg.Addr = tc.env, tc.base, tc.addr
		if tc.env == "production" { // supplied, as production needs them (TestProductionBuildNeedsItsSecrets)
			apptest.SupplySecrets(t, &cfg)
		}
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		err := cfg.CheckServe()
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%+v: CheckServe %v, want an error naming %s", tc, err, tc.err)
			}
			continue
		}
		if err != nil || cfg.PublicBaseURL() != tc.want {
			t.Errorf("%+v: %q %v, want %q", tc, cfg.PublicBaseURL(), err, tc.want)
		}
	}
}

// On MCP 2026-07-28, server/discover and tools/list say how long a host may cache them (the
// keyless list is the same for every caller: public), and every tool carries the Switchboard
// icon.
func TestListsCarryCachingAndIcons(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	meta := map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
		"io.modelcontextprotocol/clientInfo": map[string]any{"name": "raw", "version": "1"}, "io.modelcontextprotocol/clientCapabilities": map[string]any{}}
	for i, method := range []string{"server/discover", "tools/list"} {
		headers := map[string]string{"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
		status, _, body := apptest.DoWith(t, "POST", env.URL+"/mcp", "", map[string]any{"jsonrpc": "2.0", "id": i + 1, "method": method,
			"params": map[string]any{"_meta": meta}}, headers)
		res, _ := body["result"].(map[string]any)
		if status != 200 || res == nil || res["ttlMs"] != float64(300000) || res["cacheScope"] != "public" || res["resultType"] != "complete" {
			t.Fatalf("%s: %d %v", method, status, body)
		}
		if method != "tools/list" {
			continue
		}
		list, _ := res["tools"].([]any)
		if len(list) < 10 {
			t.Fatalf("tools/list: %v", res)
		}
		for _, raw := range list {
			tool := raw.(map[string]any)
			icons, _ := tool["icons"].([]any)
			if len(icons) != 1 || !strings.HasPrefix(icons[0].(map[string]any)["src"].(string), "data:image/svg+xml;base64,") {
				t.Fatalf("%s has no icon: %v", tool["name"], tool["icons"])
			}
		}
	}
}

// A browser opening the service's address lands on the documentation; an API client still
// gets the JSON answer that names the routes.
func TestTheRootSendsBrowsersToTheDocs(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(accept string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, env.URL+"/", nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	// Chromium's Accept for a page.
	resp := get("text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8")
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/docs" {
		t.Fatalf("a browser at /: %d to %q, want 303 to /docs", resp.StatusCode, resp.Header.Get("Location"))
	}
	for _, accept := range []string{"", "application/json", "*/*"} {
		resp := get(accept)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(resp.Header.Get("Content-Type"), "json") || !strings.Contains(string(body), "/llms.txt") {
			t.Fatalf("an API client (Accept %q) at /: %d %s", accept, resp.StatusCode, body)
		}
	}
	if resp, err := http.Get(env.URL + "/docs"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("/docs: %v %v", resp.StatusCode, err)
	}
}

// llms.txt points an agent to the API reference in Markdown, which fits its context, before
// the OpenAPI document many times its size; the reference is served.
func TestLLMsTxtPointsToTheSmallAPIReference(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	size := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(env.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
		return len(body), string(body)
	}
	_, llms := size("/llms.txt")
	api, doc := strings.Index(llms, env.URL+"/docs/api.md"), strings.Index(llms, env.URL+"/openapi.json")
	if api < 0 || doc >= 0 && doc < api {
		t.Fatalf("llms.txt does not point to /docs/api.md first:\n%s", llms)
	}
	apiBytes, apiText := size("/docs/api.md")
	openapiBytes, _ := size("/openapi.json")
	t.Logf("/docs/api.md %d bytes, /openapi.json %d bytes", apiBytes, openapiBytes)
	if apiBytes > 64<<10 || apiBytes*4 > openapiBytes || !strings.Contains(apiText, "/v1/invoke") {
		t.Fatalf("/docs/api.md is %d bytes against /openapi.json's %d, or does not name /v1/invoke", apiBytes, openapiBytes)
	}
}

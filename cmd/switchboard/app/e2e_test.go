package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/sdk/go/switchboard"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
)

func connect(t testing.TB, url, key string) *mcp.ClientSession {
	t.Helper()
	return (&apptest.Env{URL: url}).MCP(t, key)
}

func callTool(t testing.TB, cs *mcp.ClientSession, name string, args any) (map[string]any, *tools.Error) {
	t.Helper()
	return apptest.CallTool(t, cs, name, args)
}

func jsonEqual(t testing.TB, a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return bytes.Equal(ja, jb)
}

// doREST sends a REST request and decodes the JSON answer.
func doREST(t testing.TB, method, url, key string, body any) (int, http.Header, map[string]any) {
	t.Helper()
	return apptest.Do(t, method, url, key, body)
}

func keysOf(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// checkOutput validates a result against the tool's published output schema.
func checkOutput(t testing.TB, env *apptest.Env, tool string, out map[string]any) {
	t.Helper()
	if err := env.App.Kernel.Tool(tool).ValidateOutput(out); err != nil {
		t.Fatalf("%s result breaks its output schema: %v", tool, err)
	}
}

// TestOnboardingEndToEnd drives every spine tool through MCP (Streamable HTTP, go-sdk client)
// and REST, with the code read from a real SMTP delivery.
func TestOnboardingEndToEnd(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			env := apptest.Start(t, apptest.Options{Dialect: dialect})
			anon := connect(t, env.URL, "")

			lt, err := anon.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range lt.Tools {
				names = append(names, tool.Name)
			}
			for _, want := range []string{"agent_signup", "agent_verify", "api_key_create", "api_key_list", "api_key_revoke", "account_get"} {
				if !slices.Contains(names, want) {
					t.Fatalf("tools/list lacks %s: %v", want, names)
				}
			}

			// A keyed tool without a key is challenged (MCP authorization) and says how to get one.
			if status, hdr, body := apptest.KeylessMCPCall(t, env.URL, "account_get"); status != 401 || !strings.Contains(fmt.Sprint(body), "agent_signup") ||
				!strings.Contains(hdr.Get("WWW-Authenticate"), `resource_metadata="`+env.URL+`/.well-known/oauth-protected-resource/mcp"`) {
				t.Fatalf("account_get without key: %d %v %v", status, hdr, body)
			}

			const email = "Agent.One@Example.com"
			out, e := callTool(t, anon, "agent_signup", map[string]any{"email": email})
			if e != nil || out["ok"] != true {
				t.Fatalf("agent_signup: %v %+v", out, e)
			}
			msgs := env.Inbox.Messages()
			if len(msgs) != 1 || !strings.Contains(msgs[0].Text, "expires in 10 minutes") || !strings.Contains(msgs[0].Subject, "code") {
				t.Fatalf("code e-mail: %+v", msgs)
			}
			code := env.Inbox.Code(t, "agent.one@example.com", 1)
			acct, e := callTool(t, anon, "agent_verify", map[string]any{"email": email, "code": code})
			if e != nil {
				t.Fatalf("agent_verify: %+v", e)
			}
			checkOutput(t, env, "agent_verify", acct)
			if got, want := keysOf(acct), []string{"apiKey", "rateLimitPerMinute", "scopes", "spendLimitUsd", "userId", "wallets"}; !slices.Equal(got, want) {
				t.Fatalf("Account fields %v, want exactly %v", got, want)
			}
			wallets := acct["wallets"].(map[string]any)
			if evm := wallets["evm"].(string); len(evm) != 42 || !strings.HasPrefix(evm, "0x") {
				t.Fatalf("evm wallet %q", evm)
			}
			if svm := wallets["svm"].(string); len(svm) < 32 {
				t.Fatalf("svm wallet %q", svm)
			}
			if acct["spendLimitUsd"] != float64(50) || acct["rateLimitPerMinute"] != float64(30) || len(acct["scopes"].([]any)) != 8 {
				t.Fatalf("first key limits/scopes: %v", acct)
			}
			key := acct["apiKey"].(string)
			if !strings.HasPrefix(key, "sb_test_") {
				t.Fatalf("key %q lacks the test prefix", key)
			}

			// The same key works through MCP as a header ...
			keyed := connect(t, env.URL, key)
			got, e := callTool(t, keyed, "account_get", nil)
			if e != nil {
				t.Fatalf("account_get: %+v", e)
			}
			checkOutput(t, env, "account_get", got)
			if got["userId"] != acct["userId"] || got["email"] != "agent.one@example.com" || got["signingEnabled"] != false {
				t.Fatalf("account_get: %v", got)
			}
			minted, e := callTool(t, keyed, "api_key_create", map[string]any{"name": "reader", "scopes": []string{"read"}, "spendLimitUsd": 2.5, "rateLimitPerMinute": 10})
			if e != nil {
				t.Fatalf("api_key_create: %+v", e)
			}
			checkOutput(t, env, "api_key_create", minted)
			if minted["spendLimitUsd"] != 2.5 || minted["secret"] == "" {
				t.Fatalf("minted: %v", minted)
			}
			listed, e := callTool(t, keyed, "api_key_list", nil)
			if e != nil {
				t.Fatalf("api_key_list: %+v", e)
			}
			checkOutput(t, env, "api_key_list", listed)
			raw, _ := json.Marshal(listed)
			if strings.Contains(string(raw), minted["secret"].(string)) || strings.Contains(string(raw), key) || strings.Contains(string(raw), "hash") {
				t.Fatalf("key list leaks a secret or hash: %s", raw)
			}
			if n := len(listed["keys"].([]any)); n != 2 {
				t.Fatalf("listed %d keys, want 2", n)
			}

			// ... and through REST, with the Go client (it sends the key as x-api-key); the
			// transport records each answer's status.
			statuses := &statusRecorder{base: http.DefaultTransport}
			rc := switchboard.New(env.URL, key, switchboard.WithHTTPClient(&http.Client{Transport: statuses}))
			ctx := context.Background()
			restAcct, err := rc.Account(ctx)
			if err != nil || restAcct.UserID != acct["userId"] || statuses.last() != 200 {
				t.Fatalf("GET /v1/account: %d %+v %v", statuses.last(), restAcct, err)
			}
			restKey, err := rc.CreateKey(ctx, switchboard.CreateKeyInput{Name: "rest", Scopes: []string{"read", "publish"}})
			if err != nil || statuses.last() != 201 || restKey.Secret == "" {
				t.Fatalf("POST /v1/keys: %d %+v %v", statuses.last(), restKey, err)
			}
			restList, err := rc.ListKeys(ctx)
			if err != nil || statuses.last() != 200 || len(restList) != 3 {
				t.Fatalf("GET /v1/keys: %d %+v %v", statuses.last(), restList, err)
			}
			// Revoke the MCP-minted key over REST; it stops working at once, on both doors.
			revoked, err := rc.RevokeKey(ctx, minted["id"].(string))
			if err != nil || statuses.last() != 200 || revoked.RevokedAt == nil {
				t.Fatalf("DELETE /v1/keys: %d %+v %v", statuses.last(), revoked, err)
			}
			_, err = rc.WithAPIKey(minted["secret"].(string)).Account(ctx)
			var restErr *switchboard.Error
			if !errors.As(err, &restErr) || restErr.Status != 401 || restErr.Code != switchboard.CodeUnauthenticated || !strings.Contains(restErr.Message, "revoked") {
				t.Fatalf("revoked key over REST: %v", err)
			}
			// The Bearer form of the key works too.
			status, _, bearerAcct := doREST(t, "GET", env.URL+"/v1/account", key, nil)
			if status != 200 || bearerAcct["userId"] != acct["userId"] {
				t.Fatalf("GET /v1/account with Authorization: Bearer: %d %v", status, bearerAcct)
			}
			if _, e := callTool(t, connect(t, env.URL, minted["secret"].(string)), "api_key_list", nil); e == nil || e.Code != tools.CodeUnauthenticated {
				t.Fatalf("revoked key over MCP: %+v", e)
			}
			// Revoke over MCP too.
			if out, e := callTool(t, keyed, "api_key_revoke", map[string]any{"keyId": restKey.ID}); e != nil || out["revokedAt"] == nil {
				t.Fatalf("api_key_revoke: %v %+v", out, e)
			}

			// A read-only lookup through MCP: a registry hit needs no upstream.
			res, e := callTool(t, keyed, "resolve_token", map[string]any{"query": "usdc on base"})
			if e != nil || res["status"] != "OK" || len(res["tokens"].([]any)) == 0 ||
				res["tokens"].([]any)[0].(map[string]any)["chain"] != "base" {
				t.Fatalf("resolve_token over MCP: %v %+v", res, e)
			}

			// Recovery: verifying the same e-mail again keeps the account and wallets, new key.
			anonREST := switchboard.New(env.URL, "", switchboard.WithHTTPClient(&http.Client{Transport: statuses}))
			if err := anonREST.Signup(ctx, "agent.one@example.com"); err != nil || statuses.last() != 200 {
				t.Fatalf("signup again: %d %v", statuses.last(), err)
			}
			code2 := env.Inbox.Code(t, "agent.one@example.com", 2)
			again, err := anonREST.Verify(ctx, "agent.one@example.com", code2)
			if err != nil || statuses.last() != 200 || again.UserID != acct["userId"] || again.APIKey == key {
				t.Fatalf("recovery: %d %+v %v", statuses.last(), again, err)
			}
			if w := again.Wallets; w.EVM != wallets["evm"] || w.SVM != wallets["svm"] {
				t.Fatalf("recovery changed wallets: %v vs %v", w, wallets)
			}
			// The used code is gone.
			if _, err := anonREST.Verify(ctx, "agent.one@example.com", code2); !switchboard.IsCode(err, switchboard.CodeUnauthenticated) || statuses.last() != 401 {
				t.Fatalf("reusing a code: %d %v", statuses.last(), err)
			}
		})
	}
}

// statusRecorder is an http.RoundTripper that remembers the status of the last answer.
type statusRecorder struct {
	base   http.RoundTripper
	mu     sync.Mutex
	status int
}

func (s *statusRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := s.base.RoundTrip(r)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status = 0
	if err == nil {
		s.status = resp.StatusCode
	}
	return resp, err
}

func (s *statusRecorder) last() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

func TestPublicDocuments(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	get := func(path string) (*http.Response, string) {
		resp, err := http.Get(env.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	resp, body := get("/.well-known/service-public-key")
	if resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != "public, max-age=3600" || !strings.HasPrefix(body, "-----BEGIN PUBLIC KEY-----") {
		t.Fatalf("public key: %d %q %q", resp.StatusCode, resp.Header.Get("Cache-Control"), body)
	}
	resp, body = get("/llms.txt")
	if resp.StatusCode != 200 || !strings.Contains(body, "Paste a key") || !strings.Contains(body, env.URL+"/developer/api-keys") || !strings.Contains(body, "agent_signup") || !strings.Contains(body, env.URL+"/mcp") {
		t.Fatalf("llms.txt: %d %q", resp.StatusCode, body)
	}
	resp, body = get("/healthz")
	if resp.StatusCode != 200 || !strings.Contains(body, "ok") {
		t.Fatalf("healthz: %d %q", resp.StatusCode, body)
	}
	resp, body = get("/openapi.json")
	var doc struct {
		OpenAPI string                               `json:"openapi"`
		Paths   map[string]map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil || resp.StatusCode != 200 || doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi: %d %v %q", resp.StatusCode, err, body[:min(200, len(body))])
	}
	// Every registered tool with a route appears, with the tool's own input schema.
	verify := doc.Paths["/v1/agents/verify"]["post"]
	schema := verify["requestBody"].(map[string]any)["content"].(map[string]any)["application/json"].(map[string]any)["schema"]
	got, _ := json.Marshal(schema)
	if !jsonEqual(t, got, env.App.Kernel.Tool("agent_verify").InputSchema) {
		t.Fatalf("openapi verify schema %s differs from the tool's %s", got, env.App.Kernel.Tool("agent_verify").InputSchema)
	}
	revoke := doc.Paths["/v1/keys/{key_id}"]["delete"]
	if revoke["operationId"] != "api_key_revoke" {
		t.Fatalf("openapi revoke: %v", revoke)
	}
}

// Production without SMTP turns e-mail onboarding off, and llms.txt says so (and offers no
// paste-a-key until there is an issuance page).
func TestProductionWithoutMailer(t *testing.T) {
	env := apptest.Start(t, apptest.Options{Config: func(c *apptest.Config) { c.Env = "production"; c.SMTPURL = "" }})
	resp, err := http.Get(env.URL + "/llms.txt")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(b), "agent_signup") || strings.Contains(string(b), "Paste a key") || !strings.Contains(string(b), "ask a human") {
		t.Fatalf("llms.txt in production without mailer: %q", b)
	}
	err = switchboard.New(env.URL, "").Signup(context.Background(), "a@example.com")
	var e *switchboard.Error
	if !errors.As(err, &e) || e.Status != 404 || e.Code != switchboard.CodeNotFound {
		t.Fatalf("signup with e-mail onboarding off: %v", err)
	}
}

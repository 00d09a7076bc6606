package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
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

// scopedKernel has a tool per toolset (onboarding, agent with scope read, partner with scope
// publish) and one account with a read key.
func scopedKernel(t *testing.T) *tools.Kernel {
	t.Helper()
	st := storetest.Open(t, "sqlite")
	now := time.Now
	if err := accounts.New(st).Create(context.Background(), &accounts.Account{ID: "acct", Email: "m@example.com", CreatedAt: now()}, nil,
		&accounts.APIKey{ID: "k-read", AccountID: "acct", Name: "r", Prefix: "r", Hash: tools.HashKey(secret), Scopes: []string{"read"},
			SpendLimitMicro: 1, RateLimitPerMinute: 100, CreatedAt: now()}); err != nil {
		t.Fatal(err)
	}
	ro := tools.Annotations{ReadOnly: tools.Bool(true), Idempotent: true, OpenWorld: tools.Bool(false)}
	run := func(_ context.Context, c *tools.Caller, _ struct{}) (whoOut, error) {
		return whoOut{Account: c.AccountID()}, nil
	}
	var all []*tools.Tool
	for name, access := range map[string]tools.Access{"sign_up": tools.Public, "look_up": tools.RequireScope(tools.ScopeRead), "publish_it": tools.RequireScope(tools.ScopePublish)} {
		all = append(all, tools.New(tools.Def{Name: name, Title: name, Description: name, Access: access, Annotations: ro}, run))
	}
	k, err := tools.NewKernel(keys.NewAuthenticator(service.Deps{Store: st, Now: now, Log: quiet}, nil), tools.NewRateLimiter(now), nil, quiet, now, all...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func names(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tl := range res.Tools {
		out = append(out, tl.Name)
	}
	slices.Sort(out)
	return out
}

// tools/list shows what the caller may call, of the toolsets it chose (X-MCP-Toolsets or
// ?toolsets= over HTTP, Options.Toolsets over stdio); a tool left out is still answered
// with the kernel's error, never "unknown tool".
func TestListShowsWhatTheCallerMayCall(t *testing.T) {
	k := scopedKernel(t)
	srv := mcpserver.New(k, mcpserver.Options{Name: "switchboard", Version: "test"})
	hs := httptest.NewServer(mcpserver.HTTPHandler(srv, mcpserver.HTTPOptions{Log: quiet}))
	t.Cleanup(hs.Close)
	connect := func(query string, h headers) *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{
			Endpoint: hs.URL + query, HTTPClient: &http.Client{Transport: h}, DisableStandaloneSSE: true,
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	for _, tc := range []struct {
		name  string
		query string
		h     headers
		want  []string
	}{
		{"keyless: onboarding and agent", "", headers{}, []string{"look_up", "sign_up"}},
		{"read key: what read allows, no onboarding", "", headers{"x-api-key": secret}, []string{"look_up"}},
		{"read key as a bearer", "", headers{"Authorization": "Bearer " + secret}, []string{"look_up"}},
		{"read key choosing onboarding", "", headers{"x-api-key": secret, "X-MCP-Toolsets": "onboarding"}, []string{"sign_up"}},
		{"read key choosing partner: nothing it may call", "?toolsets=partner", headers{"x-api-key": secret}, nil},
		{"keyless choosing partner in the URL", "?toolsets=Partner", headers{}, []string{"publish_it"}},
		{"keyless choosing every toolset", "?toolsets=onboarding,%20agent,partner", headers{}, []string{"look_up", "publish_it", "sign_up"}},
		{"the header wins over the URL", "?toolsets=partner", headers{"X-MCP-Toolsets": "agent"}, []string{"look_up"}},
	} {
		if got := names(t, connect(tc.query, tc.h)); !slices.Equal(got, tc.want) {
			t.Errorf("%s: listed %v, want %v", tc.name, got, tc.want)
		}
	}

	// Hidden tools still answer as the kernel does.
	if _, e := call(t, connect("", headers{"x-api-key": secret}), "publish_it", nil); e == nil || e.Code != tools.CodeForbidden || !strings.Contains(e.Message, `scope "publish"`) {
		t.Errorf("publish_it with a read key: %+v, want FORBIDDEN naming the scope", e)
	}
	if _, e := call(t, connect("?toolsets=agent", headers{}), "publish_it", nil); e == nil || e.Code != tools.CodeUnauthenticated {
		t.Errorf("publish_it without a key: %+v, want UNAUTHENTICATED", e)
	}

	// A key that does not authenticate is refused on the list as on a call.
	cs := connect("", headers{"x-api-key": "sb_test_nobody"})
	if _, err := cs.ListTools(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "unknown API key") {
		t.Errorf("tools/list with an unknown key: %v", err)
	}

	// An unknown toolset fails the connection with the names that exist.
	req, _ := http.NewRequest("POST", hs.URL+"?toolsets=agnet", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body tools.Body
	json.NewDecoder(resp.Body).Decode(&body)
	if resp.StatusCode != 400 || body.Error == nil || !strings.Contains(body.Error.Message, "onboarding, agent, partner") {
		t.Errorf("unknown toolset: %d %+v", resp.StatusCode, body.Error)
	}

	// stdio: the key and the toolsets come from the environment.
	stdio := func(key string, sets ...tools.Toolset) []string {
		return names(t, inMemory(t, mcpserver.New(k, mcpserver.Options{Name: "switchboard", Version: "test", Stdio: true, APIKey: key, Toolsets: sets}), nil))
	}
	if got := stdio(secret); !slices.Equal(got, []string{"look_up"}) {
		t.Errorf("stdio with a read key: %v", got)
	}
	if got := stdio("", tools.ToolsetOnboarding); !slices.Equal(got, []string{"sign_up"}) {
		t.Errorf("stdio keyless choosing onboarding: %v", got)
	}
}

// A list that depends on the caller is the caller's own to cache (MCP 2026-07-28
// cacheScope private); the keyless default list stays public.
func TestKeyedListsAreCachedPrivately(t *testing.T) {
	srv := mcpserver.New(scopedKernel(t), mcpserver.Options{Name: "switchboard", Version: "test"})
	hs := httptest.NewServer(mcpserver.HTTPHandler(srv, mcpserver.HTTPOptions{Log: quiet}))
	t.Cleanup(hs.Close)
	meta := map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
		"io.modelcontextprotocol/clientInfo": map[string]any{"name": "raw", "version": "1"}, "io.modelcontextprotocol/clientCapabilities": map[string]any{}}
	for _, tc := range []struct {
		query, key, want string
	}{{"", "", "public"}, {"", secret, "private"}, {"?toolsets=agent", "", "private"}} {
		raw, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": map[string]any{"_meta": meta}})
		req, _ := http.NewRequest("POST", hs.URL+tc.query, strings.NewReader(string(raw)))
		for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
			"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"} {
			req.Header.Set(k, v)
		}
		if tc.key != "" {
			req.Header.Set("x-api-key", tc.key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			Result struct {
				CacheScope string `json:"cacheScope"`
				TTLMs      int    `json:"ttlMs"`
			} `json:"result"`
		}
		json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if out.Result.CacheScope != tc.want || out.Result.TTLMs != 300000 {
			t.Errorf("%q key %q: %+v, want cacheScope %s", tc.query, tc.key, out.Result, tc.want)
		}
	}
}

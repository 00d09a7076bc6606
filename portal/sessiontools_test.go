package portal_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/portal"
	"github.com/switchboard-hq/switchboard/rest"
	sessionstore "github.com/switchboard-hq/switchboard/store/sessions"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/keys"
	"github.com/switchboard-hq/switchboard/tools/onboarding"
	"github.com/switchboard-hq/switchboard/tools/service"
	"github.com/switchboard-hq/switchboard/tools/sessions"
	"github.com/switchboard-hq/switchboard/tools/wallets"
)

// sessionOf is the Principal of h's portal session, as the portal's authentication resolves
// its cookie.
func sessionOf(t *testing.T, env *apptest.Env, h *human) *tools.Principal {
	t.Helper()
	u, _ := url.Parse(env.URL)
	var token string
	for _, c := range h.c.Jar.Cookies(u) {
		if c.Name == portal.CookieName {
			token = c.Value
		}
	}
	idle, _ := time.ParseDuration(env.App.Config.SessionIdle)
	maxAge, _ := time.ParseDuration(env.App.Config.SessionMaxAge)
	svc := sessions.NewService(sessions.Config{Idle: idle, Absolute: maxAge, Ceiling: keys.Limits{SpendMicro: 1, RatePerMinute: 1000}},
		service.Deps{Store: env.App.Store, Now: env.Clock.Now})
	pr, err := svc.Authenticate(context.Background(), token)
	if err != nil {
		t.Fatal(err)
	}
	return pr
}

// What only the portal does is a kernel tool that only a portal session may call: MCP's
// tools/list (every toolset, keyless or with a key of every scope) and the REST route table
// never show one, and an API key of every scope is refused FORBIDDEN, naming the portal; the
// signed-in human's session runs each.
func TestSessionOnlyToolsAreThePortals(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	ctx := context.Background()
	const email = "human@example.com"
	h := newHuman(t, env)
	h.signIn(email)
	pr := sessionOf(t, env, h)
	root := env.Onboard(t, email)["apiKey"].(string)

	want := []string{"task_list", "approval_decide", "session_list", "session_revoke", "signing_set", "usage_spend", "usage_intent", "usage_calls", "usage_call",
		"integration_list", "integration_create", "connection_list", "connection_revoke", "wallet_export"}
	var got []string
	for _, tool := range env.App.Kernel.SessionTools() {
		got = append(got, tool.Name)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("session-only tools %v, want %v", got, want)
	}
	var listed []string
	for _, key := range []string{"", root} {
		cs := apptest.ConnectMCP(t, env.URL+"/mcp?toolsets=onboarding,agent,partner", key, http.DefaultTransport)
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, lt := range res.Tools {
			listed = append(listed, lt.Name)
		}
	}
	if len(listed) < 20 {
		t.Fatalf("tools/list showed only %d tools: %v", len(listed), listed)
	}
	runs := map[string]any{"task_list": nil, "session_list": nil, "usage_spend": nil, "usage_calls": map[string]any{"side": "caller"},
		"integration_list": nil, "connection_list": nil, "signing_set": map[string]any{"on": false}}
	for _, name := range want {
		if slices.Contains(listed, name) {
			t.Errorf("tools/list over MCP shows %s", name)
		}
		for _, rt := range rest.Routes() {
			if rt.Tool == name {
				t.Errorf("REST routes %s %s to %s", rt.Method, rt.Path, name)
			}
		}
		if _, e := env.App.Kernel.Call(ctx, tools.Request{Tool: name, APIKey: root}); e == nil || e.Code != tools.CodeForbidden || !strings.Contains(e.Message, "portal") {
			t.Errorf("%s with an API key of every scope: %v, want FORBIDDEN naming the portal", name, e)
		}
		if args, ok := runs[name]; ok {
			raw, _ := json.Marshal(args)
			if _, e := env.App.Kernel.Call(ctx, tools.Request{Tool: name, Args: raw, Principal: pr}); e != nil {
				t.Errorf("%s as the portal session: %v", name, e)
			}
		}
	}
	if res, err := env.MCP(t, root).CallTool(ctx, &mcp.CallToolParams{Name: "session_list"}); err == nil || !strings.Contains(err.Error(), `unknown tool "session_list"`) {
		t.Errorf("session_list over MCP: %v %v, want an unknown tool", res, err)
	}
	if st, body := env.REST(t, "GET", "/v1/sessions", root, nil); st != 404 {
		t.Errorf("GET /v1/sessions: %d %v", st, body)
	}
}

// wallet_export writes its account event exactly once per export, in the export's
// transaction: none for a wrong code, one for each code that reveals the keys.
func TestWalletExportRecordsEachExportOnce(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	ctx := context.Background()
	const email = "exporter@example.com"
	h := newHuman(t, env)
	h.signIn(email)
	pr := sessionOf(t, env, h)
	events := func() int {
		evs, err := sessionstore.New(env.App.Store).AccountEvents(ctx, pr.AccountID)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if ev.Kind != sessionstore.EventWalletExported || ev.SessionID != pr.SessionID {
				t.Fatalf("event %+v", ev)
			}
		}
		return len(evs)
	}
	export := func(code string) (wallets.ExportOutput, *tools.Error) {
		raw, _ := json.Marshal(map[string]string{"code": code})
		out, e := env.App.Kernel.Call(ctx, tools.Request{Tool: "wallet_export", Args: raw, Principal: pr, ClientAddr: "192.0.2.7"})
		if e != nil {
			return wallets.ExportOutput{}, e
		}
		return out.(wallets.ExportOutput), nil
	}
	sent := 1 // the sign-in's
	code := func() string {
		if _, e := env.App.Kernel.Call(onboarding.ForWalletExport(ctx), tools.Request{Tool: "agent_signup", Args: json.RawMessage(`{"email":"` + email + `"}`)}); e != nil {
			t.Fatal(e)
		}
		sent++
		return env.Inbox.Code(t, email, sent)
	}

	if _, e := export("00000000"); e == nil || events() != 0 {
		t.Fatalf("a wrong code: %v, %d events", e, events())
	}
	for i := 1; i <= 2; i++ {
		c := code()
		out, e := export(c)
		if e != nil || len(out.Keys) != 2 {
			t.Fatalf("export %d: %v %+v", i, e, out)
		}
		if n := events(); n != i {
			t.Fatalf("after export %d: %d events", i, n)
		}
		if _, e := export(c); e == nil || events() != i { // the code is used
			t.Fatalf("the used code again: %v, %d events", e, events())
		}
		env.Clock.Advance(11 * time.Minute) // the next code is a new one
	}
}

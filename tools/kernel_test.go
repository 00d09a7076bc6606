package tools_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/keys"
	"github.com/switchboard-hq/switchboard/tools/service"
)

type echoIn struct {
	Email string `json:"email" jsonschema:"format=email"`
	N     int    `json:"n,omitempty" jsonschema:"minimum=1,maximum=3"`
}

type echoOut struct {
	Email   string `json:"email"`
	Account string `json:"account"`
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// newKernel registers a publish-scoped echo tool on a real store with one key per scope set.
func newKernel(t *testing.T, s *store.Store) (*tools.Kernel, map[string]string, *int) {
	t.Helper()
	calls := new(int)
	echo := tools.New(tools.Def{
		Name: "echo_publish", Title: "Echo", Description: "test tool", Access: tools.RequireScope(tools.ScopePublish),
		Annotations: tools.Annotations{ReadOnly: tools.Bool(true), OpenWorld: tools.Bool(false)},
	}, func(ctx context.Context, c *tools.Caller, in echoIn) (echoOut, error) {
		*calls++
		return echoOut{Email: in.Email, Account: c.AccountID()}, nil
	})
	now := time.Now
	k, err := tools.NewKernel(keys.NewAuthenticator(service.Deps{Store: s, Now: now, Log: quiet}, nil), tools.NewRateLimiter(now), nil, quiet, now, echo)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := accounts.New(s).Create(ctx, &accounts.Account{ID: "acct", Email: "k@example.com", CreatedAt: now()}, nil,
		&accounts.APIKey{ID: "k-pub", AccountID: "acct", Name: "p", Prefix: "p", Hash: tools.HashKey("sb_test_pub"), Scopes: []string{"publish"}, SpendLimitMicro: 1, RateLimitPerMinute: 100, CreatedAt: now()}); err != nil {
		t.Fatal(err)
	}
	if err := accounts.New(s).CreateKey(ctx, &accounts.APIKey{ID: "k-read", AccountID: "acct", Name: "r", Prefix: "r", Hash: tools.HashKey("sb_test_read"), Scopes: []string{"read"}, SpendLimitMicro: 1, RateLimitPerMinute: 100, CreatedAt: now()}); err != nil {
		t.Fatal(err)
	}
	return k, map[string]string{"publish": "sb_test_pub", "read": "sb_test_read"}, calls
}

func TestKernelChecksBeforeTheHandler(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		k, secrets, calls := newKernel(t, s)
		ctx := context.Background()
		cases := []struct {
			name, key, args string
			want            tools.Code
			msg             string
		}{
			{"no key", "", `{"email":"a@example.com"}`, tools.CodeUnauthenticated, "agent_signup"},
			{"missing scope", secrets["read"], `{"email":"a@example.com"}`, tools.CodeForbidden, `scope "publish"`},
			{"bad format", secrets["publish"], `{"email":"nope"}`, tools.CodeBadInput, "/email"},
			{"out of range", secrets["publish"], `{"email":"a@example.com","n":4}`, tools.CodeBadInput, "/n"},
			{"unknown field", secrets["publish"], `{"email":"a@example.com","x":1}`, tools.CodeBadInput, "x"},
			{"not JSON", secrets["publish"], `{"email":`, tools.CodeBadInput, "not valid JSON"},
			{"trailing data", secrets["publish"], `{"email":"a@example.com"} {}`, tools.CodeBadInput, "after"},
			{"missing field", secrets["publish"], `{}`, tools.CodeBadInput, "email"},
		}
		for _, c := range cases {
			_, e := k.Call(ctx, tools.Request{Tool: "echo_publish", APIKey: c.key, Args: json.RawMessage(c.args)})
			if e == nil || e.Code != c.want || !strings.Contains(e.Message, c.msg) {
				t.Errorf("%s: got %+v, want %s containing %q", c.name, e, c.want, c.msg)
			}
		}
		if *calls != 0 {
			t.Fatalf("the handler ran %d times for refused calls", *calls)
		}
		out, e := k.Call(ctx, tools.Request{Tool: "echo_publish", APIKey: secrets["publish"], Args: json.RawMessage(`{"email":"a@example.com","n":3}`)})
		if e != nil || out.(echoOut).Account != "acct" || *calls != 1 {
			t.Fatalf("valid call: %+v %+v", out, e)
		}
		if _, e := k.Call(ctx, tools.Request{Tool: "nope"}); e == nil || e.Code != tools.CodeNotFound {
			t.Fatalf("unknown tool: %+v", e)
		}
	})
}

func TestNewKernelRefusesUndecidedHints(t *testing.T) {
	build := func(name, title string, a tools.Annotations) *tools.Tool {
		return tools.New(tools.Def{Name: name, Title: title, Description: "x", Annotations: a}, func(context.Context, *tools.Caller, struct{}) (struct{}, error) {
			return struct{}{}, nil
		})
	}
	no, yes := tools.Bool(false), tools.Bool(true)
	for want, tool := range map[string]*tools.Tool{
		"ReadOnly":    build("no_read_only", "T", tools.Annotations{OpenWorld: no}),
		"OpenWorld":   build("no_open_world", "T", tools.Annotations{ReadOnly: yes}),
		"Destructive": build("writer", "T", tools.Annotations{ReadOnly: no, OpenWorld: no}),
		"Title":       build("untitled", "", tools.Annotations{ReadOnly: yes, OpenWorld: no}),
	} {
		if _, err := tools.NewKernel(nil, nil, nil, quiet, time.Now, tool); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("NewKernel accepted a tool without %s: %v", want, err)
		}
	}
	reader := build("reader", "Reader", tools.Annotations{ReadOnly: yes, OpenWorld: no})
	if _, err := tools.NewKernel(nil, nil, nil, quiet, time.Now, reader); err != nil {
		t.Fatal(err)
	}
	if d := reader.Annotations.Destructive; d == nil || *d {
		t.Errorf("a read-only tool's destructiveHint should be stated false, got %v", d)
	}
	if _, err := tools.NewKernel(nil, nil, nil, quiet, time.Now, reader, reader); err == nil {
		t.Fatal("NewKernel accepted a duplicate name")
	}
}

// A scope outside the closed set compiles (Scope is a string type) but is refused at
// registration, so a typo cannot leave a tool that no key can call.
func TestNewKernelRefusesUnknownScopes(t *testing.T) {
	build := func(s tools.Scope) *tools.Tool {
		return tools.New(tools.Def{Name: "scoped", Title: "Scoped", Description: "x", Access: tools.RequireScope(s),
			Annotations: tools.Annotations{ReadOnly: tools.Bool(true), OpenWorld: tools.Bool(false)}},
			func(context.Context, *tools.Caller, struct{}) (struct{}, error) { return struct{}{}, nil })
	}
	_, err := tools.NewKernel(nil, nil, nil, quiet, time.Now, build("raed"))
	if err == nil || !strings.Contains(err.Error(), `unknown scope "raed"`) {
		t.Fatalf("NewKernel accepted a typo'd scope: %v", err)
	}
	for _, s := range tools.Scopes() {
		if _, err := tools.NewKernel(nil, nil, nil, quiet, time.Now, build(s)); err != nil {
			t.Errorf("scope %s refused: %v", s, err)
		}
	}
	if got := strings.Join(tools.ScopeNames(), " "); got != "read quote swap bridge send wallet publish partner" {
		t.Errorf("the spec's scopes, in its order: got %s", got)
	}
}

func TestUSDIsExact(t *testing.T) {
	for in, want := range map[string]int64{"50": 50_000_000, "0.000001": 1, "2.5": 2_500_000, "1e2": 100_000_000} {
		var u tools.USD
		if err := json.Unmarshal([]byte(in), &u); err != nil || u.Micro() != want {
			t.Errorf("%s: got %d %v, want %d", in, u.Micro(), err, want)
		}
		out, _ := json.Marshal(u)
		var back tools.USD
		if json.Unmarshal(out, &back); back != u {
			t.Errorf("%s: round trip via %s gave %d", in, out, back)
		}
	}
	for _, bad := range []string{"0.0000001", `"5"`, "1e30"} {
		var u tools.USD
		if err := json.Unmarshal([]byte(bad), &u); err == nil {
			t.Errorf("%s accepted as %d", bad, u)
		}
	}
}

func TestRateLimiterRefills(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	r := tools.NewRateLimiter(func() time.Time { return now })
	for i := 0; i < 60; i++ {
		if ok, _, _ := r.Allow(context.Background(), "k", 60); !ok {
			t.Fatalf("call %d of a 60/min burst refused", i)
		}
	}
	ok, wait, _ := r.Allow(context.Background(), "k", 60)
	if ok || wait != time.Second {
		t.Fatalf("61st call: ok=%v wait=%v, want refused with 1s", ok, wait)
	}
	now = now.Add(time.Second)
	if ok, _, _ := r.Allow(context.Background(), "k", 60); !ok {
		t.Fatal("no token after a second at 60/min")
	}
	if ok, _, _ := r.Allow(context.Background(), "other", 60); !ok {
		t.Fatal("keys share a bucket")
	}
}

// A schema naming an external $ref must not make the server read files or fetch URLs.
func TestCompileSchemaRefusesExternalRefs(t *testing.T) {
	for _, ref := range []string{"file:///etc/passwd", "http://127.0.0.1:1/schema.json"} {
		_, err := tools.CompileSchema([]byte(`{"type":"object","properties":{"a":{"$ref":"` + ref + `"}}}`))
		if err == nil || !strings.Contains(err.Error(), "not allowed") {
			t.Errorf("%s: %v", ref, err)
		}
	}
}

// A door that authenticated the caller itself (a portal session) hands the kernel a
// Principal: the same scope check, rate limit and handler apply, and no key is needed.
func TestKernelTakesAPrincipalFromTheDoor(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		k, _, calls := newKernel(t, s)
		ctx := context.Background()
		session := &tools.Principal{AccountID: "acct", Method: tools.AuthSession, SessionID: "s1", Scopes: []string{"publish"}, RateLimitPerMinute: 2}
		out, e := k.Call(ctx, tools.Request{Tool: "echo_publish", Args: json.RawMessage(`{"email":"a@example.com"}`), Principal: session})
		if e != nil || out.(echoOut).Account != "acct" || *calls != 1 {
			t.Fatalf("session call: %v %v calls=%d", out, e, *calls)
		}
		reader := &tools.Principal{AccountID: "acct", Method: tools.AuthSession, SessionID: "s2", Scopes: []string{"read"}, RateLimitPerMinute: 10}
		if _, e := k.Call(ctx, tools.Request{Tool: "echo_publish", Args: json.RawMessage(`{"email":"a@example.com"}`), Principal: reader}); e == nil || e.Code != tools.CodeForbidden {
			t.Fatalf("a session without the scope: %v", e)
		}
		k.Call(ctx, tools.Request{Tool: "echo_publish", Args: json.RawMessage(`{"email":"a@example.com"}`), Principal: session})
		if _, e := k.Call(ctx, tools.Request{Tool: "echo_publish", Args: json.RawMessage(`{"email":"a@example.com"}`), Principal: session}); e == nil || e.Code != tools.CodeRateLimited {
			t.Fatalf("the session's rate limit: %v", e)
		}
	})
}

// A SessionOnly tool runs for a portal session only, outside its rate limit: an API key of
// every scope, an OAuth principal and a keyless call are FORBIDDEN, naming the portal, before
// the handler runs; the doors' list (Tools, Listed) never shows it.
func TestSessionOnlyTools(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		calls := 0
		mine := tools.New(tools.Def{Name: "portal_only", Title: "Portal only", Description: "test tool", Access: tools.SessionOnly,
			Annotations: tools.Annotations{ReadOnly: tools.Bool(true), OpenWorld: tools.Bool(false)},
		}, func(ctx context.Context, c *tools.Caller, _ struct{}) (echoOut, error) {
			calls++
			return echoOut{Account: c.AccountID()}, nil
		})
		now := time.Now
		k, err := tools.NewKernel(keys.NewAuthenticator(service.Deps{Store: s, Now: now, Log: quiet}, nil), tools.NewRateLimiter(now), nil, quiet, now, mine)
		if err != nil {
			t.Fatal(err)
		}
		if err := accounts.New(s).Create(ctx, &accounts.Account{ID: "acct", Email: "k@example.com", CreatedAt: now()}, nil,
			&accounts.APIKey{ID: "k-all", AccountID: "acct", Name: "all", Prefix: "a", Hash: tools.HashKey("sb_test_all"), Scopes: tools.ScopeNames(), SpendLimitMicro: 1, RateLimitPerMinute: 100, CreatedAt: now()}); err != nil {
			t.Fatal(err)
		}
		every := tools.ScopeNames()
		for name, req := range map[string]tools.Request{
			"an API key of every scope": {APIKey: "sb_test_all"},
			"an API key principal":      {Principal: &tools.Principal{AccountID: "acct", Method: tools.AuthAPIKey, KeyID: "k-all", Scopes: every, RateLimitPerMinute: 100}},
			"an OAuth token":            {Principal: &tools.Principal{AccountID: "acct", Method: tools.AuthOAuth, KeyID: "k-all", Scopes: every, RateLimitPerMinute: 100}},
			"no credentials":            {},
		} {
			req.Tool = "portal_only"
			if _, e := k.Call(ctx, req); e == nil || e.Code != tools.CodeForbidden || !strings.Contains(e.Message, "portal") {
				t.Errorf("%s: %v, want FORBIDDEN saying to use the portal", name, e)
			}
		}
		if calls != 0 {
			t.Fatalf("the handler ran %d times for refused callers", calls)
		}
		// The portal's own pages do not count against the human's rate limit (1 a minute here).
		session := &tools.Principal{AccountID: "acct", Method: tools.AuthSession, SessionID: "s1", Scopes: every, RateLimitPerMinute: 1}
		for i := 1; i <= 3; i++ {
			out, e := k.Call(ctx, tools.Request{Tool: "portal_only", Principal: session})
			if e != nil || out.(echoOut).Account != "acct" || calls != i {
				t.Fatalf("a portal session, call %d: %v %v (calls %d)", i, out, e, calls)
			}
		}
		if len(k.Tools()) != 0 || len(k.SessionTools()) != 1 || k.Tool("portal_only") == nil {
			t.Errorf("Tools %d, SessionTools %d: a session-only tool is the portal's alone", len(k.Tools()), len(k.SessionTools()))
		}
		for _, key := range []string{"", "sb_test_all"} {
			listed, err := k.Listed(ctx, key, tools.Toolsets())
			if err != nil || len(listed) != 0 {
				t.Errorf("listed to key %q: %d tools %v", key, len(listed), err)
			}
		}
	})
}

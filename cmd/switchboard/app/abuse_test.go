package app_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/tools"
)

func onboard(t *testing.T, env *apptest.Env, email string) map[string]any {
	t.Helper()
	return env.Onboard(t, email)
}

func errOf(t *testing.T, body map[string]any) (tools.Code, string) {
	t.Helper()
	e, ok := body["error"].(map[string]any)
	if !ok {
		t.Fatalf("not an error body: %v", body)
	}
	return tools.Code(e["code"].(string)), e["message"].(string)
}

func wrongCode(code string) string {
	n, _ := strconv.Atoi(code)
	return fmt.Sprintf("%06d", (n+1)%1_000_000)
}

func TestWrongCodesVoidTheCode(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	const email = "guess@example.com"
	doREST(t, "POST", env.URL+"/v1/agents/signup", "", map[string]any{"email": email})
	code := env.Inbox.Code(t, email, 1)
	for i := 1; i <= 5; i++ {
		status, _, body := doREST(t, "POST", env.URL+"/v1/agents/verify", "", map[string]any{"email": email, "code": wrongCode(code)})
		c, msg := errOf(t, body)
		if status != 401 || c != tools.CodeUnauthenticated {
			t.Fatalf("wrong code %d: %d %v", i, status, body)
		}
		if i < 5 && !strings.Contains(msg, fmt.Sprintf("%d attempts left", 5-i)) {
			t.Fatalf("wrong code %d: message %q does not count down", i, msg)
		}
		if i == 5 && !strings.Contains(msg, "last of 5") {
			t.Fatalf("fifth wrong code: %q", msg)
		}
	}
	// The sixth try from the same client, even with the right code, is refused.
	status, _, body := doREST(t, "POST", env.URL+"/v1/agents/verify", "", map[string]any{"email": email, "code": code})
	if _, msg := errOf(t, body); status != 401 || !strings.Contains(msg, "agent_signup") {
		t.Fatalf("right code after 5 wrong: %d %v", status, body)
	}
}

func TestExpiredCode(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	const email = "late@example.com"
	doREST(t, "POST", env.URL+"/v1/agents/signup", "", map[string]any{"email": email})
	code := env.Inbox.Code(t, email, 1)
	env.Clock.Advance(10*time.Minute + time.Second)
	status, _, body := doREST(t, "POST", env.URL+"/v1/agents/verify", "", map[string]any{"email": email, "code": code})
	if _, msg := errOf(t, body); status != 401 || !strings.Contains(msg, "expired") {
		t.Fatalf("expired code: %d %v", status, body)
	}
	// Just inside the lifetime works.
	doREST(t, "POST", env.URL+"/v1/agents/signup", "", map[string]any{"email": email})
	code = env.Inbox.Code(t, email, 2)
	env.Clock.Advance(9*time.Minute + 59*time.Second)
	if status, _, body := doREST(t, "POST", env.URL+"/v1/agents/verify", "", map[string]any{"email": email, "code": code}); status != 200 {
		t.Fatalf("code at 9m59s: %d %v", status, body)
	}
}

func TestSignupFlood(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	// Per e-mail: 5 codes an hour.
	for i := 1; i <= 5; i++ {
		if status, _, body := doREST(t, "POST", env.URL+"/v1/agents/signup", "", map[string]any{"email": "flood@example.com"}); status != 200 {
			t.Fatalf("signup %d: %d %v", i, status, body)
		}
		env.Clock.Advance(time.Minute)
	}
	status, hdr, body := doREST(t, "POST", env.URL+"/v1/agents/signup", "", map[string]any{"email": "flood@example.com"})
	if c, _ := errOf(t, body); status != 429 || c != tools.CodeRateLimited {
		t.Fatalf("6th signup: %d %v", status, body)
	}
	// The oldest send was 5 minutes ago: the next slot opens in 55 minutes.
	if ra, _ := strconv.Atoi(hdr.Get("Retry-After")); ra < 54*60 || ra > 55*60 {
		t.Fatalf("Retry-After %q, want about 3300 s", hdr.Get("Retry-After"))
	}
	if n := len(env.Inbox.Messages()); n != 5 {
		t.Fatalf("%d e-mails sent, want 5", n)
	}
	env.Clock.Advance(56 * time.Minute)
	if status, _, _ := doREST(t, "POST", env.URL+"/v1/agents/signup", "", map[string]any{"email": "flood@example.com"}); status != 200 {
		t.Fatalf("signup after the window: %d", status)
	}
	// Per client address: 20 codes an hour across e-mails.
	env.Clock.Advance(2 * time.Hour)
	for i := 0; i < 20; i++ {
		if status, _, body := doREST(t, "POST", env.URL+"/v1/agents/signup", "", map[string]any{"email": fmt.Sprintf("spray%d@example.com", i)}); status != 200 {
			t.Fatalf("spray %d: %d %v", i, status, body)
		}
	}
	if status, _, _ := doREST(t, "POST", env.URL+"/v1/agents/signup", "", map[string]any{"email": "one-more@example.com"}); status != 429 {
		t.Fatalf("21st signup from one client: %d, want 429", status)
	}
}

func TestKeyEscalationAndIsolation(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	a := onboard(t, env, "alice@example.com")
	b := onboard(t, env, "bob@example.com")
	aKey, bKey := a["apiKey"].(string), b["apiKey"].(string)

	status, _, small := doREST(t, "POST", env.URL+"/v1/keys", aKey, map[string]any{"name": "small", "scopes": []string{"read"}, "spendLimitUsd": 5, "rateLimitPerMinute": 10})
	if status != 201 {
		t.Fatalf("mint small: %d %v", status, small)
	}
	smallKey := small["secret"].(string)
	for name, req := range map[string]map[string]any{
		"scope": {"name": "x", "scopes": []string{"read", "publish"}},
		"spend": {"name": "x", "scopes": []string{"read"}, "spendLimitUsd": 5.000001},
		"rate":  {"name": "x", "scopes": []string{"read"}, "rateLimitPerMinute": 11},
	} {
		status, _, body := doREST(t, "POST", env.URL+"/v1/keys", smallKey, req)
		if c, _ := errOf(t, body); status != 403 || c != tools.CodeForbidden {
			t.Fatalf("escalation by %s: %d %v", name, status, body)
		}
	}
	// Omitted limits take the defaults, capped at the minting key's.
	status, _, child := doREST(t, "POST", env.URL+"/v1/keys", smallKey, map[string]any{"name": "child", "scopes": []string{"read"}})
	if status != 201 || child["spendLimitUsd"] != float64(5) || child["rateLimitPerMinute"] != float64(10) {
		t.Fatalf("defaults capped at the minting key: %d %v", status, child)
	}
	// Another account's key id is NOT_FOUND, and stays unrevoked.
	status, _, body := doREST(t, "DELETE", env.URL+"/v1/keys/"+small["id"].(string), bKey, nil)
	if c, _ := errOf(t, body); status != 404 || c != tools.CodeNotFound {
		t.Fatalf("revoking another account's key: %d %v", status, body)
	}
	if status, _, _ := doREST(t, "GET", env.URL+"/v1/account", smallKey, nil); status != 200 {
		t.Fatalf("key revoked by another account: %d", status)
	}
	_, _, bList := doREST(t, "GET", env.URL+"/v1/keys", bKey, nil)
	if n := len(bList["keys"].([]any)); n != 1 {
		t.Fatalf("bob sees %d keys, want only his 1", n)
	}
}

func TestRateLimit(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	a := onboard(t, env, "busy@example.com")
	_, _, k := doREST(t, "POST", env.URL+"/v1/keys", a["apiKey"].(string), map[string]any{"name": "slow", "scopes": []string{"read"}, "rateLimitPerMinute": 3})
	slow := k["secret"].(string)
	for i := 0; i < 3; i++ {
		if status, _, body := doREST(t, "GET", env.URL+"/v1/keys", slow, nil); status != 200 {
			t.Fatalf("call %d: %d %v", i, status, body)
		}
	}
	status, hdr, body := doREST(t, "GET", env.URL+"/v1/keys", slow, nil)
	if c, _ := errOf(t, body); status != 429 || c != tools.CodeRateLimited || hdr.Get("Retry-After") != "20" {
		t.Fatalf("4th call: %d Retry-After=%q %v", status, hdr.Get("Retry-After"), body)
	}
	// The same bucket covers MCP.
	if _, e := callTool(t, connect(t, env.URL, slow), "api_key_list", nil); e == nil || e.Code != tools.CodeRateLimited || e.Message == "" {
		t.Fatalf("MCP call over the limit: %+v", e)
	}
	env.Clock.Advance(20 * time.Second)
	if status, _, _ := doREST(t, "GET", env.URL+"/v1/keys", slow, nil); status != 200 {
		t.Fatalf("after refill: %d", status)
	}
}

func TestBadInput(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	a := onboard(t, env, "careful@example.com")
	key := a["apiKey"].(string)
	cases := []struct {
		name, method, path, key string
		body                    any
		want                    int
		msg                     string
	}{
		{"malformed JSON", "POST", "/v1/agents/signup", "", `{"email":`, 400, "not valid JSON"},
		{"not an object", "POST", "/v1/agents/signup", "", `["a@example.com"]`, 400, "JSON object"},
		{"bad e-mail", "POST", "/v1/agents/signup", "", map[string]any{"email": "not-an-email"}, 400, "email"},
		{"wrong type", "POST", "/v1/keys", key, map[string]any{"name": 7, "scopes": []string{"read"}}, 400, "/name"},
		{"unknown scope", "POST", "/v1/keys", key, map[string]any{"name": "x", "scopes": []string{"root"}}, 400, "/scopes/0"},
		{"unknown field", "POST", "/v1/keys", key, map[string]any{"name": "x", "scopes": []string{"read"}, "admin": true}, 400, "admin"},
		{"code not digits", "POST", "/v1/agents/verify", "", map[string]any{"email": "careful@example.com", "code": "12345a"}, 400, "/code"},
		{"too big", "POST", "/v1/agents/signup", "", `{"email":"` + strings.Repeat("a", 1<<20) + `@example.com"}`, 413, "1 MiB"},
		{"no key", "GET", "/v1/account", "", nil, 401, "agent_signup"},
		{"garbage key", "GET", "/v1/account", "hello", nil, 401, "sb_test_"},
		{"unknown key", "GET", "/v1/account", "sb_test_nope", nil, 401, "unknown API key"},
		{"no route", "GET", "/v1/nothing", key, nil, 404, "openapi.json"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, _, body := doREST(t, c.method, env.URL+c.path, c.key, c.body)
			_, msg := errOf(t, body)
			if status != c.want || !strings.Contains(msg, c.msg) {
				t.Fatalf("%d %q, want %d containing %q", status, msg, c.want, c.msg)
			}
		})
	}
}

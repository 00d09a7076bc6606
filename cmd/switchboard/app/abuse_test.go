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
	return fmt.Sprintf("%08d", (n+1)%100_000_000)
}

// Wrong guesses count for the guessing address only and never void the code: the address's
// sixth guess, even the right code, is 429 with Retry-After until the code expires; the code
// still works from another address.
func TestWrongCodesUseUpOnlyTheirAddress(t *testing.T) {
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
		if i < 5 && !strings.Contains(msg, fmt.Sprintf("%d guesses left", 5-i)) {
			t.Fatalf("wrong code %d: message %q does not count down", i, msg)
		}
		if i == 5 && !strings.Contains(msg, "last of 5") {
			t.Fatalf("fifth wrong code: %q", msg)
		}
	}
	env.Clock.Advance(time.Minute)
	status, hdr, body := doREST(t, "POST", env.URL+"/v1/agents/verify", "", map[string]any{"email": email, "code": code})
	if c, msg := errOf(t, body); status != 429 || c != tools.CodeRateLimited || hdr.Get("Retry-After") != "540" || !strings.Contains(msg, "agent_signup") {
		t.Fatalf("right code after 5 wrong: %d %v %v", status, hdr, body)
	}
	// A repeat signup does not give this address new guesses (the code is the same).
	doREST(t, "POST", env.URL+"/v1/agents/signup", "", map[string]any{"email": email})
	if status, _, body := doREST(t, "POST", env.URL+"/v1/agents/verify", "", map[string]any{"email": email, "code": code}); status != 429 {
		t.Fatalf("right code after a repeat signup: %d %v", status, body)
	}
	if status, _, body := post(t, from("127.0.0.9"), env.URL+"/v1/agents/verify", map[string]any{"email": email, "code": code}); status != 200 {
		t.Fatalf("the code from another address: %d %v", status, body)
	}
}

// Spec: signup is idempotent per e-mail. While a code is live a repeat signup answers
// {ok:true} and re-sends that same code, spaced out (3 at once, then 30 s doubling); only a
// client's own send limit refuses it. The next code, after expiry, is a new one.
func TestRepeatSignupResendsTheLiveCode(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	const email = "again@example.com"
	for i := 1; i <= 6; i++ {
		status, _, body := doREST(t, "POST", env.URL+"/v1/agents/signup", "", map[string]any{"email": email})
		if status != 200 || body["ok"] != true {
			t.Fatalf("signup %d: %d %v", i, status, body)
		}
	}
	codes := codesTo(t, env, email)
	code := sameCode(t, codes)
	if len(codes) != 3 {
		t.Fatalf("6 signups at once sent %d e-mails, want 3 (then spaced)", len(codes))
	}
	env.Clock.Advance(30 * time.Second)
	doREST(t, "POST", env.URL+"/v1/agents/signup", "", map[string]any{"email": email})
	if codes = codesTo(t, env, email); len(codes) != 4 || sameCode(t, codes) != code {
		t.Fatalf("after 30 s: %v, want a 4th e-mail with the same code", codes)
	}
	if m := env.Inbox.Messages(); !strings.Contains(m[3].Text, "expires in 10 minutes") {
		t.Fatalf("re-sent code e-mail: %q", m[3].Text)
	}
	// A code from another client is the same one too.
	if status, _, body := post(t, from("127.0.0.7"), env.URL+"/v1/agents/signup", map[string]any{"email": email}); status != 200 {
		t.Fatalf("signup from another client: %d %v", status, body)
	}
	env.Clock.Advance(10 * time.Minute)
	if status, _, body := doREST(t, "POST", env.URL+"/v1/agents/verify", "", map[string]any{"email": email, "code": code}); status != 401 {
		t.Fatalf("the code after expiry: %d %v", status, body)
	}
	doREST(t, "POST", env.URL+"/v1/agents/signup", "", map[string]any{"email": email})
	codes = codesTo(t, env, email)
	fresh := codes[len(codes)-1]
	if fresh == code {
		t.Fatal("the code after expiry is the expired one")
	}
	if status, _, body := doREST(t, "POST", env.URL+"/v1/agents/verify", "", map[string]any{"email": email, "code": fresh}); status != 200 {
		t.Fatalf("the new code: %d %v", status, body)
	}
}

// One address guessing at many e-mails (with or without a live code) is held to 20 guesses
// per 10 minutes; other addresses are not.
func TestGuessesPerAddressAcrossEmails(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	sprayer := from("127.0.0.5")
	for i := 1; i <= 20; i++ {
		if status, _, body := post(t, sprayer, env.URL+"/v1/agents/verify", map[string]any{"email": fmt.Sprintf("s%d@example.com", i), "code": "12345678"}); status != 401 {
			t.Fatalf("guess %d: %d %v", i, status, body)
		}
	}
	status, hdr, body := post(t, sprayer, env.URL+"/v1/agents/verify", map[string]any{"email": "s21@example.com", "code": "12345678"})
	if ra, _ := strconv.Atoi(hdr.Get("Retry-After")); status != 429 || ra < 590 || ra > 600 {
		t.Fatalf("21st guess: %d %v %v", status, hdr, body)
	}
	if status, _, body := post(t, from("127.0.0.6"), env.URL+"/v1/agents/verify", map[string]any{"email": "s21@example.com", "code": "12345678"}); status != 401 {
		t.Fatalf("another address: %d %v", status, body)
	}
	env.Clock.Advance(10 * time.Minute)
	if status, _, body := post(t, sprayer, env.URL+"/v1/agents/verify", map[string]any{"email": "s21@example.com", "code": "12345678"}); status != 401 {
		t.Fatalf("after the window: %d %v", status, body)
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

package portal_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/signing/partnerexample"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/partners/partnertest"
)

// human is a browser without JavaScript: a cookie jar and form posts, no redirects followed
// unless asked.
type human struct {
	t    *testing.T
	env  *apptest.Env
	c    *http.Client
	last string // the last page's HTML
}

func newHuman(t *testing.T, env *apptest.Env) *human {
	jar, _ := cookiejar.New(nil)
	return &human{t: t, env: env, c: &http.Client{Jar: jar}}
}

func (h *human) get(path string) (int, string) {
	h.t.Helper()
	resp, err := h.c.Get(h.env.URL + path)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	h.last = string(b)
	h.checkPage()
	return resp.StatusCode, h.last
}

// checkPage fails on a template that rendered a missing value.
func (h *human) checkPage() {
	h.t.Helper()
	if strings.Contains(h.last, "no value&gt;") || strings.Contains(h.last, "<no value>") || strings.Contains(h.last, "%!") {
		h.t.Fatalf("the page shows a missing value:\n%s", h.last)
	}
}

// post submits a form as the portal's own page would (same origin), or from another site.
func (h *human) post(path string, form url.Values, crossSite bool) (int, string) {
	h.t.Helper()
	req, _ := http.NewRequest("POST", h.env.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if crossSite {
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		req.Header.Set("Origin", "https://evil.example")
	} else {
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	resp, err := h.c.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	h.last = string(b)
	h.checkPage()
	return resp.StatusCode, h.last
}

var csrfRe = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

func (h *human) csrf() string {
	h.t.Helper()
	m := csrfRe.FindStringSubmatch(h.last)
	if m == nil {
		h.t.Fatalf("no form token on the page:\n%s", h.last)
	}
	return m[1]
}

func (h *human) signIn(email string) {
	h.t.Helper()
	if st, body := h.post("/developer/sign-in", url.Values{"email": {email}}, false); st != 200 || !strings.Contains(body, "We e-mailed an 8-digit code") {
		h.t.Fatalf("send code: %d %s", st, body)
	}
	n := 0
	for _, m := range h.env.Inbox.Messages() {
		if m.To[0] == email {
			n++
		}
	}
	code := h.env.Inbox.Code(h.t, email, n)
	if st, body := h.post("/developer/sign-in/code", url.Values{"email": {email}, "code": {code}}, false); st != 200 || !strings.Contains(body, "<h1>Account</h1>") {
		h.t.Fatalf("sign in: %d %s", st, body)
	}
}

// withPartner starts the service with a known signing key and a real TLS partner (the
// example partner) it trusts, so intents can be tested, activated and invoked.
func withPartner(t *testing.T, more func(c *apptest.Config)) (*apptest.Env, *partnertest.Partner) {
	t.Helper()
	return withPartnerOn(t, apptest.Options{Config: more})
}

// withPartnerOn is withPartner with the rest of the options (dialect, logs) given.
func withPartnerOn(t *testing.T, o apptest.Options) (*apptest.Env, *partnertest.Partner) {
	t.Helper()
	more := o.Config
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "signing-key.pem")
	key, _, err := signing.LoadOrCreatePrivateKey(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	partner := partnertest.Example(t, key.Public().(ed25519.PublicKey), partnerexample.DefaultHandle)
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, partnertest.CAPEM(partner.Server), 0o600); err != nil {
		t.Fatal(err)
	}
	o.Config = func(c *apptest.Config) {
		c.AllowLocalEndpoints, c.PartnerCAFile, c.SigningKeyFile = true, caFile, keyFile
		if more != nil {
			more(c)
		}
	}
	env := apptest.Start(t, o)
	return env, partner
}

var secretRe = regexp.MustCompile(`<pre id="secret">(sb_test_[1-9A-HJ-NP-Za-km-z]+)</pre>`)

// A human signs in with the e-mail code, issues a key, pastes it into an MCP client that uses
// it, revokes it, and the MCP client is refused; an agent that verified the same e-mail reaches
// the same account. Everything the portal does went through the kernel tools.
func TestPasteAKey(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			env := apptest.Start(t, apptest.Options{Dialect: dialect})
			agent := env.Onboard(t, "ada@example.com") // the agent came first, by e-mail
			h := newHuman(t, env)

			if st, body := h.get("/developer/api-keys"); st != 200 || !strings.Contains(body, "<h1>Sign in</h1>") {
				t.Fatalf("signed out: %d, want the sign-in page", st)
			}
			h.signIn("ada@example.com")
			if !strings.Contains(h.last, agent["userId"].(string)) {
				t.Fatalf("the human reached another account than the agent: %s", h.last)
			}

			h.get("/developer/api-keys")
			st, body := h.post("/developer/api-keys", url.Values{"csrf": {h.csrf()}, "name": {"my agent"}, "scopes": {"read", "publish"}, "spendLimitUsd": {"5"}}, false)
			m := secretRe.FindStringSubmatch(body)
			if st != 200 || m == nil || !strings.Contains(body, "claude mcp add --transport http switchboard "+env.URL+"/mcp") {
				t.Fatalf("issue key: %d %s", st, body)
			}
			secret := m[1]
			cs := env.MCP(t, secret)
			out, e := apptest.CallTool(t, cs, "account_get", nil)
			if e != nil || out["userId"] != agent["userId"] || len(out["scopes"].([]any)) != 2 {
				t.Fatalf("the pasted key over MCP: %v %v", out, e)
			}
			if st, body := h.get("/developer/api-keys"); st != 200 || strings.Contains(body, secret) || !strings.Contains(body, secret[:12]) {
				t.Fatalf("the key list must show the prefix and never the secret again: %d", st)
			}

			keyID := out["keyId"].(string)
			if st, _ := h.post("/developer/api-keys/"+keyID+"/revoke", url.Values{"csrf": {h.csrf()}}, false); st != 200 || !strings.Contains(h.last, "was revoked") {
				t.Fatalf("revoke: %d %s", st, h.last)
			}
			if _, e := apptest.CallTool(t, env.MCP(t, secret), "account_get", nil); e == nil || e.Code != tools.CodeUnauthenticated {
				t.Fatalf("a revoked key over MCP: %v", e)
			}
		})
	}
}

// Bad input in the key form shows the error next to its field, keeps what was typed, and
// writes nothing; a limit above the account's ceiling is refused the same way.
func TestKeyFormErrors(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	h := newHuman(t, env)
	h.signIn("form@example.com")
	h.get("/developer/api-keys")
	token := h.csrf()
	cases := []struct {
		form  url.Values
		field string
	}{
		{url.Values{"name": {""}, "scopes": {"read"}}, "name-error"},
		{url.Values{"name": {"n"}}, "scopes-error"},
		{url.Values{"name": {"n"}, "scopes": {"root"}}, "scopes"},
		{url.Values{"name": {"typed name"}, "scopes": {"read"}, "spendLimitUsd": {"5000"}}, "spend-error"},
		{url.Values{"name": {"typed name"}, "scopes": {"read"}, "rateLimitPerMinute": {"100000"}}, "rate-error"},
		{url.Values{"name": {"typed name"}, "scopes": {"read"}, "spendLimitUsd": {"lots"}}, "spend-error"},
	}
	for _, c := range cases {
		c.form.Set("csrf", token)
		st, body := h.post("/developer/api-keys", c.form, false)
		if st != 422 || !strings.Contains(body, c.field) {
			t.Errorf("%v: %d, want 422 with the error at %s:\n%s", c.form, st, c.field, body)
		}
		if name := c.form.Get("name"); name != "" && !strings.Contains(body, `value="`+name+`"`) {
			t.Errorf("%v: what was typed is lost", c.form)
		}
	}
	if _, body := h.get("/developer/api-keys"); !strings.Contains(body, "No keys yet") {
		t.Fatalf("a refused form wrote a key")
	}
}

// A cross-site POST is refused (the browser says where it came from), and so is a form
// without the session's token; an expired session is sent back to sign in; sign-out
// everywhere ends every session of the account.
func TestSessionsAndForgery(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	h := newHuman(t, env)
	h.signIn("safe@example.com")
	h.get("/developer/api-keys")
	token := h.csrf()

	if st, _ := h.post("/developer/api-keys", url.Values{"csrf": {token}, "name": {"evil"}, "scopes": {"read"}}, true); st != http.StatusForbidden {
		t.Fatalf("cross-site POST: %d, want 403", st)
	}
	if st, _ := h.post("/developer/api-keys", url.Values{"csrf": {"0000"}, "name": {"evil"}, "scopes": {"read"}}, false); st != http.StatusForbidden {
		t.Fatalf("POST without the form token: %d, want 403", st)
	}
	if _, body := h.get("/developer/api-keys"); !strings.Contains(body, "No keys yet") {
		t.Fatal("a forged POST issued a key")
	}

	// A second browser signs in too; the settings list both.
	h2 := newHuman(t, env)
	h2.signIn("safe@example.com")
	if _, body := h2.get("/developer/settings"); strings.Count(body, "with e-mail code") != 2 {
		t.Fatalf("settings should list two sessions:\n%s", body)
	}
	// Idle past 12 hours: back to sign-in.
	env.Clock.Advance(13 * time.Hour)
	if _, body := h.get("/developer"); !strings.Contains(body, "<h1>Sign in</h1>") {
		t.Fatalf("an idle session still works")
	}
	h.signIn("safe@example.com")
	h.get("/developer/settings")
	if st, body := h.post("/developer/sign-out-everywhere", url.Values{"csrf": {h.csrf()}}, false); st != 200 || !strings.Contains(body, "<h1>Sign in</h1>") {
		t.Fatalf("sign out everywhere: %d", st)
	}
	for _, who := range []*human{h, h2} {
		if _, body := who.get("/developer"); !strings.Contains(body, "<h1>Sign in</h1>") {
			t.Fatalf("a session survived sign-out everywhere")
		}
	}
}

// A wrong code shows the error next to the code field and keeps the e-mail.
func TestSignInErrors(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	h := newHuman(t, env)
	if st, body := h.post("/developer/sign-in", url.Values{"email": {"not an e-mail"}}, false); st != 422 || !strings.Contains(body, "email-error") {
		t.Fatalf("bad e-mail: %d %s", st, body)
	}
	h.post("/developer/sign-in", url.Values{"email": {"who@example.com"}}, false)
	st, body := h.post("/developer/sign-in/code", url.Values{"email": {"who@example.com"}, "code": {"000000"}}, false)
	if st != 422 || !strings.Contains(body, "code-error") || !strings.Contains(body, "wrong code") || !strings.Contains(body, `value="who@example.com"`) {
		t.Fatalf("wrong code: %d %s", st, body)
	}
}

// A partner publishes through the web form: Test endpoint shows the signed round trip and both
// probe answers, Publish creates the inactive row, Activate (probe-gated) makes it live, and
// the Partner profile appears; bad input shows the error next to its field and writes nothing.
// All through the partner_* tools.
func TestPublishThroughTheForm(t *testing.T) {
	env, partner := withPartner(t, nil)
	h := newHuman(t, env)
	h.signIn("partner@example.com")
	h.get("/developer/intents/new")
	token := h.csrf()
	form := url.Values{"csrf": {token}, "publicIdentifier": {"@webform"}, "name": {"Web form"}, "description": {"published in the portal"},
		"category": {"QUERY"}, "bindingType": {"REST"}, "toolEndpoint": {partner.URL + partnerexample.RESTPath}, "feeRate": {"0"}, "feeRateUnit": {"usd_per_call"}}

	form.Set("action", "test")
	if st, body := h.post("/developer/intents/new", form, false); st != 200 || !strings.Contains(body, "Endpoint test: ready to activate") || strings.Contains(body, "✗ Fail") ||
		!strings.Contains(body, "✓ Pass</span> <strong>Signed round trip</strong>") || !strings.Contains(body, "✓ Pass</span> <strong>Refuses an unsigned request</strong>") ||
		!strings.Contains(body, "✓ Pass</span> <strong>Refuses a request signed by another key</strong>") {
		t.Fatalf("test endpoint: %d %s", st, body)
	}
	// Bad input: next to its field, nothing written.
	bad := map[string][2]string{
		"parametersSchema": {"{not json", "parametersSchema-error"},
		"toolEndpoint":     {"ftp://example.com/x", "toolEndpoint-error"},
		"feeRate":          {"-1", "feeRate-error"},
		"publicIdentifier": {"@X!", "publicIdentifier-error"},
	}
	for k, c := range bad {
		f := url.Values{}
		for kk, vv := range form {
			f[kk] = vv
		}
		f.Set("action", "publish")
		f.Set(k, c[0])
		if st, body := h.post("/developer/intents/new", f, false); st != 422 || !strings.Contains(body, c[1]) {
			t.Errorf("%s=%q: %d, want the error at %s", k, c[0], st, c[1])
		}
	}
	if _, body := h.get("/developer/intents"); !strings.Contains(body, "No intents yet") {
		t.Fatalf("a refused form published something")
	}

	form.Set("action", "publish")
	st, body := h.post("/developer/intents/new", form, false)
	if st != 200 || !strings.Contains(body, "Published") || !strings.Contains(body, "inactive") {
		t.Fatalf("publish: %d %s", st, body)
	}
	// The handle is taken now: a second publish says so next to the handle.
	h.get("/developer/intents/new")
	if st, body := h.post("/developer/intents/new", form, false); st != 422 || !strings.Contains(body, "publicIdentifier-error") {
		t.Fatalf("taken handle: %d %s", st, body)
	}
	_, body = h.get("/developer/intents")
	m := regexp.MustCompile(`href="/developer/intents/([0-9a-f-]{36})">@webform`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("intent list: %s", body)
	}
	h.get("/developer/intents/" + m[1])
	if st, body := h.post("/developer/intents/"+m[1], url.Values{"csrf": {h.csrf()}, "action": {"activate"}}, false); st != 200 || !strings.Contains(body, "Activated") || !strings.Contains(body, "<small class=\"hint\">Active") {
		t.Fatalf("activate: %d %s", st, body)
	}
	if _, body := h.get("/developer/partner/settings"); !strings.Contains(body, "Partner id") {
		t.Fatalf("partner profile: %s", body)
	}
	// The intent is live: an agent invokes it over REST.
	key2 := env.Onboard(t, "caller@example.com")["apiKey"].(string)
	if st, out := env.REST(t, "POST", "/v1/invoke", key2, map[string]any{"message": "@webform hello"}); st != 200 || out["success"] != true {
		t.Fatalf("invoke the form-published intent: %d %v", st, out)
	}
}

// Without the development setting, a private-network endpoint is refused next to its field.
func TestPrivateEndpointRefusedInTheForm(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	h := newHuman(t, env)
	h.signIn("private@example.com")
	h.get("/developer/intents/new")
	f := url.Values{"csrf": {h.csrf()}, "action": {"publish"}, "publicIdentifier": {"@private"}, "name": {"P"}, "description": {"d"},
		"category": {"QUERY"}, "bindingType": {"REST"}, "toolEndpoint": {"https://10.0.0.7/tool"}, "feeRate": {"0"}}
	if st, body := h.post("/developer/intents/new", f, false); st != 422 || !strings.Contains(body, "toolEndpoint-error") || !strings.Contains(body, "private") {
		t.Fatalf("private endpoint: %d %s", st, body)
	}
}

// Every documentation page is served as HTML and, at its URL + .md, as Markdown, with the
// deployment's base URL filled in; the API reference names every tool.
func TestDocsHaveMarkdownTwins(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	h := newHuman(t, env)
	for _, page := range []string{"", "/agents", "/mcp-hosts", "/partners", "/errors", "/limits", "/api"} {
		st, body := h.get("/docs" + page)
		if st != 200 || !strings.Contains(body, "<h1") || strings.Contains(body, "{base}") {
			t.Errorf("/docs%s: %d", page, st)
		}
		resp, err := http.Get(env.URL + "/docs" + page + ".md")
		if err != nil {
			t.Fatal(err)
		}
		md, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/markdown") || !strings.HasPrefix(string(md), "# ") || strings.Contains(string(md), "{base}") {
			t.Errorf("/docs%s.md: %d %q %.80q", page, resp.StatusCode, resp.Header.Get("Content-Type"), md)
		}
	}
	_, api := h.get("/docs/api")
	if !strings.Contains(api, "GET /v1/keys") || !strings.Contains(api, "<td>429</td>") || !strings.Contains(api, "scope <code>publish</code>") {
		t.Errorf("the API reference is not the OpenAPI document's operations:\n%s", api)
	}
	for _, tool := range env.App.Kernel.Tools() {
		if !strings.Contains(api, tool.Name) {
			t.Errorf("the API reference misses %s", tool.Name)
		}
	}
	if _, body := h.get("/docs/agents"); !strings.Contains(body, env.URL+"/developer/api-keys") || !strings.Contains(body, `href="/docs/errors"`) {
		t.Errorf("agents page: base URL or links wrong")
	}
	if st, _ := h.get("/docs/nothing"); st != 404 {
		t.Errorf("unknown page: %d", st)
	}
}

// A partner creates an integration; its manifest.json lists the onboarding methods with the
// URLs an agent needs; a user sent to /connect/<slug> signs in, comes back, issues a key that
// carries exactly the integration's scopes and records it, and uses it over MCP.
func TestConnectAnIntegration(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	partner := newHuman(t, env)
	partner.signIn("acme-dev@example.com")
	partner.get("/developer/integrations")
	token := partner.csrf()
	if st, body := partner.post("/developer/integrations", url.Values{"csrf": {token}, "slug": {"-Bad slug"}, "name": {"Acme"}, "scopes": {"read"}, "methods": {"paste_key"}}, false); st != 422 || !strings.Contains(body, "slug-error") {
		t.Fatalf("bad slug: %d", st)
	}
	form := url.Values{"csrf": {token}, "slug": {"acme"}, "name": {"Acme"}, "scopes": {"read", "partner"}, "methods": {"paste_key", "email_code"}}
	if st, body := partner.post("/developer/integrations", form, false); st != 200 || !strings.Contains(body, "/connect/acme") {
		t.Fatalf("create integration: %d %s", st, body)
	}
	if st, body := partner.post("/developer/integrations", form, false); st != 422 || !strings.Contains(body, "slug-error") || !strings.Contains(body, "taken") {
		t.Fatalf("taken slug: %d", st)
	}

	resp, err := http.Get(env.URL + "/connect/acme/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Name              string
		Scopes            []string
		OnboardingMethods []map[string]string
		MCP               string `json:"mcp"`
	}
	json.NewDecoder(resp.Body).Decode(&m)
	resp.Body.Close()
	if m.Name != "Acme" || len(m.OnboardingMethods) != 2 || m.OnboardingMethods[0]["url"] != env.URL+"/connect/acme" ||
		m.OnboardingMethods[1]["signup"] != env.URL+"/v1/agents/signup" || m.MCP != env.URL+"/mcp" {
		t.Fatalf("manifest: %+v", m)
	}

	user := newHuman(t, env)
	// Signed out: who asks (the integration, its publisher's verified domain) and for what,
	// then a sign-in that comes back here.
	if _, body := user.get("/connect/acme"); !strings.Contains(body, "<h1>Connect to Acme</h1>") || !strings.Contains(body, "published by an account of <strong>example.com</strong>") ||
		!strings.Contains(body, "<strong>read, partner</strong>") || !strings.Contains(body, `href="/developer/sign-in">Sign in to continue`) || strings.Contains(body, "Issue key</button>") {
		t.Fatalf("signed out connect page:\n%s", body)
	}
	if st, body := user.post("/developer/sign-in", url.Values{"email": {"user@example.com"}}, false); st != 200 {
		t.Fatalf("send code: %d %s", st, body)
	}
	st, body := user.post("/developer/sign-in/code", url.Values{"email": {"user@example.com"}, "code": {env.Inbox.Code(t, "user@example.com", 1)}}, false)
	if st != 200 || !strings.Contains(body, "Connect to Acme") || !strings.Contains(body, "read, partner") {
		t.Fatalf("back on the connect page after sign-in: %d %s", st, body)
	}
	st, body = user.post("/connect/acme", url.Values{"csrf": {user.csrf()}}, false)
	sm := secretRe.FindStringSubmatch(body)
	if st != 200 || sm == nil {
		t.Fatalf("issue key: %d %s", st, body)
	}
	out, e := apptest.CallTool(t, env.MCP(t, sm[1]), "account_get", nil)
	if e != nil || strings.Join(strs(out["scopes"]), ",") != "read,partner" {
		t.Fatalf("the connect key over MCP: %v %v", out, e)
	}
	list, _ := apptest.CallTool(t, env.MCP(t, sm[1]), "api_key_list", nil)
	if k := list["keys"].([]any)[0].(map[string]any); k["integrationId"] == nil || k["integrationId"] == "" {
		t.Fatalf("the key does not record its integration: %v", k)
	}
}

func strs(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// Turning signing on needs a fresh sign-in; turning it off never does.
func TestSigningToggleNeedsAFreshSignIn(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	h := newHuman(t, env)
	h.signIn("sign@example.com")
	env.Clock.Advance(11 * time.Minute)
	h.get("/developer/settings")
	if _, body := h.post("/developer/settings/signing", url.Values{"csrf": {h.csrf()}, "signing": {"on"}}, false); !strings.Contains(body, "needs a fresh sign-in") || !strings.Contains(body, "<strong>off</strong>") {
		t.Fatalf("stale session turned signing on:\n%s", body)
	}
	h.signIn("sign@example.com")
	h.get("/developer/settings")
	if _, body := h.post("/developer/settings/signing", url.Values{"csrf": {h.csrf()}, "signing": {"on"}}, false); !strings.Contains(body, "<strong>on</strong>") {
		t.Fatalf("fresh session could not turn signing on:\n%s", body)
	}
	acct, _ := accounts.New(env.App.Store).ByEmail(context.Background(), "sign@example.com")
	if !acct.SigningEnabled {
		t.Fatal("the flag did not change")
	}
	env.Clock.Advance(time.Hour)
	h.get("/developer/settings")
	if _, body := h.post("/developer/settings/signing", url.Values{"csrf": {h.csrf()}, "signing": {"off"}}, false); !strings.Contains(body, "<strong>off</strong>") {
		t.Fatalf("turning signing off:\n%s", body)
	}
}

// The intent page shows the intent's recent calls and what it earned.
func TestIntentPageShowsCalls(t *testing.T) {
	env, partner := withPartner(t, nil)
	pub := env.Onboard(t, "pub@example.com")["apiKey"].(string)
	st, out := env.REST(t, "POST", "/v1/partner/intents", pub, map[string]any{"publicIdentifier": "@calls", "name": "Calls", "description": "d",
		"category": "QUERY", "toolEndpoint": partner.URL + partnerexample.RESTPath, "feeRate": 0})
	if st != 201 {
		t.Fatalf("publish: %d %v", st, out)
	}
	id := out["id"].(string)
	for range 2 {
		if st, out := env.REST(t, "POST", "/v1/invoke", pub, map[string]any{"message": "@calls hi"}); st != 200 {
			t.Fatalf("invoke: %d %v", st, out)
		}
	}
	h := newHuman(t, env)
	h.signIn("pub@example.com")
	if _, body := h.get("/developer/intents/" + id); !strings.Contains(body, "2 calls, 2 succeeded") || strings.Count(body, `data-label="Outcome">Succeeded`) != 2 || !strings.Contains(body, "HTTP 200") {
		t.Fatalf("intent page:\n%s", body)
	}
	// The caller's side: the account page shows the month's spend (2 x infrastructure 0.001 + platform floor 0.001) and the recent calls.
	if _, body := h.get("/developer"); !strings.Contains(body, "Spent this month</th><td>0.004 USD") || strings.Count(body, `data-label="Partner">@calls</td>`) != 2 {
		t.Fatalf("account page:\n%s", body)
	}
}

// Sign-in requests are rate limited per client address.
func TestSignInIsRateLimited(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	h := newHuman(t, env)
	limited := 0
	for i := range 25 {
		st, _ := h.post("/developer/sign-in/code", url.Values{"email": {fmt.Sprintf("n%d@example.com", i)}, "code": {"123456"}}, false)
		if st == http.StatusTooManyRequests {
			limited++
		}
	}
	if limited != 5 {
		t.Fatalf("%d of 25 sign-in attempts refused, want 5 (20 a minute)", limited)
	}
	env.Clock.Advance(time.Minute)
	if st, _ := h.post("/developer/sign-in/code", url.Values{"email": {"later@example.com"}, "code": {"123456"}}, false); st == http.StatusTooManyRequests {
		t.Fatal("still limited a minute later")
	}
}

package portal_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
)

// oauthClient is an MCP host's side of the flow: registration, PKCE, the token endpoint.
type oauthClient struct {
	t        *testing.T
	env      *apptest.Env
	id       string
	redirect string
}

func register(t *testing.T, env *apptest.Env, body map[string]any) (int, map[string]any) {
	t.Helper()
	status, _, out := apptest.Do(t, "POST", env.URL+"/oauth/register", "", body)
	return status, out
}

func pkce(seed string) (verifier, challenge string) {
	verifier = strings.Repeat(seed, 64)[:64]
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

func (c *oauthClient) authorizeURL(challenge string, extra url.Values) string {
	q := url.Values{"response_type": {"code"}, "client_id": {c.id}, "redirect_uri": {c.redirect}, "state": {"st-1"},
		"code_challenge": {challenge}, "code_challenge_method": {"S256"}, "resource": {c.env.URL + "/mcp"}, "scope": {"read"}}
	for k, v := range extra {
		q[k] = v
	}
	return "/oauth/authorize?" + q.Encode()
}

func (c *oauthClient) token(form url.Values) (int, map[string]any) {
	c.t.Helper()
	resp, err := http.PostForm(c.env.URL+"/oauth/token", form)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	b, _ := io.ReadAll(resp.Body)
	json.Unmarshal(b, &out)
	return resp.StatusCode, out
}

// noFollow stops at a redirect that leaves the service (to the MCP host's redirect URI).
func noFollow(h *human) {
	h.c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if !strings.HasPrefix(req.URL.String(), h.env.URL) {
			return http.ErrUseLastResponse
		}
		return nil
	}
}

// consent signs in (if needed), opens the consent page, allows it with form, and returns
// where the browser is sent back to.
func (h *human) consent(authorize string, form url.Values) *url.URL {
	h.t.Helper()
	if st, body := h.get(authorize); st != 200 || !strings.Contains(body, "Connect ") {
		h.t.Fatalf("consent page: %d %s", st, body)
	}
	form.Set("csrf", h.csrf())
	for _, k := range []string{"response_type", "client_id", "redirect_uri", "state", "code_challenge", "code_challenge_method", "resource", "scope"} {
		if m := hiddenValue(h.last, k); m != "" && form.Get(k) == "" {
			form.Set(k, m)
		}
	}
	req, _ := http.NewRequest("POST", h.env.URL+"/oauth/authorize", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := h.c.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		b, _ := io.ReadAll(resp.Body)
		h.t.Fatalf("consent: %d %s", resp.StatusCode, b)
	}
	u, _ := url.Parse(resp.Header.Get("Location"))
	return u
}

// mcpStatus is the HTTP status of a tools/list at /mcp with token.
func mcpStatus(t *testing.T, env *apptest.Env, token string) int {
	t.Helper()
	st, _, _ := apptest.DoWith(t, "POST", env.URL+"/mcp", token, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
		map[string]string{"Accept": "application/json, text/event-stream"})
	return st
}

func hiddenValue(page, name string) string {
	marker := `name="` + name + `" value="`
	i := strings.Index(page, marker)
	if i < 0 {
		return ""
	}
	rest := page[i+len(marker):]
	v := rest[:strings.Index(rest, `"`)]
	v = strings.NewReplacer("&amp;", "&", "&#43;", "+", "&#34;", `"`, "&#39;", "'", "&lt;", "<", "&gt;", ">").Replace(v)
	return v
}

// TestMCPAuthorization walks the MCP authorization flow with every bad input the endpoints
// must refuse: registration limits, the authorize request, consent, the code exchange, token
// use at /mcp and /v1, refresh rotation and reuse, revocation by the client and by the human.
func TestMCPAuthorization(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			env := apptest.Start(t, apptest.Options{Dialect: dialect})

			// Discovery (RFC 9728, RFC 8414).
			_, _, prm := apptest.Do(t, "GET", env.URL+"/.well-known/oauth-protected-resource/mcp", "", nil)
			_, _, asm := apptest.Do(t, "GET", env.URL+"/.well-known/oauth-authorization-server", "", nil)
			if prm["resource"] != env.URL+"/mcp" || fmt.Sprint(prm["authorization_servers"]) != "["+env.URL+"]" ||
				asm["token_endpoint"] != env.URL+"/oauth/token" || fmt.Sprint(asm["code_challenge_methods_supported"]) != "[S256]" {
				t.Fatalf("metadata: %v %v", prm, asm)
			}

			// Registration refuses what a client may not claim.
			for _, tc := range []struct {
				body map[string]any
				want string
			}{
				{map[string]any{"redirect_uris": []string{"http://evil.example/cb"}}, "invalid_redirect_uri"},
				{map[string]any{"redirect_uris": []string{"javascript:alert(1)"}}, "invalid_redirect_uri"},
				// Issue 35: user info, and any scheme but https and loopback http (the MCP
				// authorization spec: "All redirect URIs MUST be either localhost or use HTTPS").
				{map[string]any{"redirect_uris": []string{"https://user:password@app.example/cb"}}, "invalid_redirect_uri"},
				{map[string]any{"redirect_uris": []string{"http://user@127.0.0.1:7777/cb"}}, "invalid_redirect_uri"},
				{map[string]any{"redirect_uris": []string{"com.example.app:/oauth/cb"}}, "invalid_redirect_uri"},
				{map[string]any{"redirect_uris": []string{"myapp://callback"}}, "invalid_redirect_uri"},
				{map[string]any{"redirect_uris": []string{"https://app.example/cb#frag"}}, "invalid_redirect_uri"},
				{map[string]any{"redirect_uris": []string{}}, "invalid_redirect_uri"},
				{map[string]any{"redirect_uris": []string{"https://a.example/1", "https://a.example/2", "https://a.example/3", "https://a.example/4", "https://a.example/5", "https://a.example/6"}}, "invalid_redirect_uri"},
				{map[string]any{"redirect_uris": []string{"https://a.example/cb"}, "grant_types": []string{"client_credentials"}}, "invalid_client_metadata"},
				{map[string]any{"redirect_uris": []string{"https://a.example/cb"}, "client_name": strings.Repeat("n", 101)}, "invalid_client_metadata"},
			} {
				if st, out := register(t, env, tc.body); st != 400 || out["error"] != tc.want {
					t.Errorf("register %v: %d %v", tc.body, st, out)
				}
			}
			st, reg := register(t, env, map[string]any{"client_name": "Test Host", "redirect_uris": []string{"http://127.0.0.1:5555/callback"},
				"token_endpoint_auth_method": "client_secret_basic"})
			if st != 201 || reg["token_endpoint_auth_method"] != "none" || !strings.HasPrefix(reg["client_id"].(string), "mcp_") {
				t.Fatalf("register: %d %v", st, reg)
			}
			c := &oauthClient{t: t, env: env, id: reg["client_id"].(string), redirect: "http://127.0.0.1:6666/callback"} // loopback: any port

			// Not signed in: the sign-in comes first, then the consent page.
			h := newHuman(t, env)
			noFollow(h)
			verifier, challenge := pkce("v")
			if st, body := h.get(c.authorizeURL(challenge, nil)); st != 200 || !strings.Contains(body, "Sign in") {
				t.Fatalf("authorize before sign-in: %d %s", st, body)
			}
			h.post("/developer/sign-in", url.Values{"email": {"human@example.com"}}, false)
			code1 := env.Inbox.Code(t, "human@example.com", 1)
			if st, body := h.post("/developer/sign-in/code", url.Values{"email": {"human@example.com"}, "code": {code1}}, false); st != 200 || !strings.Contains(body, "<strong>Test Host</strong>") || !strings.Contains(body, "http://127.0.0.1:6666") {
				t.Fatalf("after sign-in, the consent page: %d %s", st, body)
			}

			// Bad authorization requests: shown to the human when the redirect cannot be trusted,
			// sent back to the client otherwise.
			for _, tc := range []struct {
				extra url.Values
				shown bool
				want  string
			}{
				{url.Values{"client_id": {"mcp_unknown"}}, true, "unknown client_id"},
				{url.Values{"redirect_uri": {"http://127.0.0.1:5555/other"}}, true, "not one this client registered"},
				{url.Values{"redirect_uri": {"https://evil.example/callback"}}, true, "not one this client registered"},
				{url.Values{"code_challenge_method": {"plain"}}, false, "S256"},
				{url.Values{"code_challenge": {""}}, false, "PKCE is required"},
				{url.Values{"resource": {"https://other.example/mcp"}}, false, "invalid_target"},
			} {
				resp, err := h.c.Get(env.URL + c.authorizeURL(challenge, tc.extra))
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				loc := resp.Header.Get("Location")
				if tc.shown && (resp.StatusCode != 400 || !strings.Contains(string(b), tc.want) || loc != "") {
					t.Errorf("%v: %d %s %s, want the error shown", tc.extra, resp.StatusCode, b, loc)
				}
				if !tc.shown {
					lu, _ := url.Parse(loc)
					q := lu.Query()
					if resp.StatusCode != 302 || lu.Host != "127.0.0.1:6666" || q.Get("state") != "st-1" || !strings.Contains(q.Get("error")+" "+q.Get("error_description"), tc.want) {
						t.Errorf("%v: %d %s, want a redirect with the error", tc.extra, resp.StatusCode, loc)
					}
				}
			}

			// A consent posted without the form's token, and a denial.
			h.get(c.authorizeURL(challenge, nil))
			if st, _ := h.post("/oauth/authorize", url.Values{"decision": {"allow"}, "client_id": {c.id}}, false); st != 403 {
				t.Fatalf("consent without its token: %d", st)
			}
			denied := h.consent(c.authorizeURL(challenge, nil), url.Values{"decision": {"deny"}})
			if denied.Query().Get("error") != "access_denied" || denied.Query().Get("state") != "st-1" {
				t.Fatalf("deny: %s", denied)
			}

			// Allowed with scope read, 1 USD, 10 a minute.
			back := h.consent(c.authorizeURL(challenge, nil), url.Values{"decision": {"allow"}, "scopes": {"read"}, "spendLimitUsd": {"1"}, "rateLimitPerMinute": {"10"}})
			code := back.Query().Get("code")
			if code == "" || back.Query().Get("state") != "st-1" || back.Query().Get("iss") != env.URL || back.Host != "127.0.0.1:6666" {
				t.Fatalf("allow: %s", back)
			}
			good := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "client_id": {c.id}, "redirect_uri": {c.redirect},
				"code_verifier": {verifier}, "resource": {env.URL + "/mcp"}}
			for name, bad := range map[string]url.Values{
				"wrong verifier":      {"code_verifier": {strings.Repeat("Z", 64)}},
				"other redirect_uri":  {"redirect_uri": {"http://127.0.0.1:6666/elsewhere"}},
				"other client":        {"client_id": {"mcp_other"}},
				"another audience":    {"resource": {"https://other.example/mcp"}},
				"unsupported grant":   {"grant_type": {"password"}},
				"unknown code":        {"code": {"nope"}},
				"short code_verifier": {"code_verifier": {"abc"}},
			} {
				// Each bad attempt gets its own code (a failed exchange uses the code up).
				vb, cb := pkce(name[:1])
				u := h.consent(c.authorizeURL(cb, nil), url.Values{"decision": {"allow"}, "scopes": {"read"}})
				f := url.Values{}
				for k, v := range good {
					f[k] = v
				}
				f.Set("code", u.Query().Get("code"))
				f.Set("code_verifier", vb)
				for k, v := range bad {
					f[k] = v
				}
				if st, out := c.token(f); st != 400 || out["access_token"] != nil {
					t.Errorf("%s: %d %v", name, st, out)
				}
			}
			st, tok := c.token(good)
			if st != 200 || tok["token_type"] != "Bearer" || !strings.HasPrefix(tok["access_token"].(string), "sbat_") || tok["refresh_token"] == nil {
				t.Fatalf("exchange: %d %v", st, tok)
			}
			// An expired code.
			ve, ce := pkce("e")
			u := h.consent(c.authorizeURL(ce, nil), url.Values{"decision": {"allow"}, "scopes": {"read"}})
			env.Clock.Advance(6 * time.Minute)
			if st, out := c.token(url.Values{"grant_type": {"authorization_code"}, "code": {u.Query().Get("code")}, "client_id": {c.id},
				"redirect_uri": {c.redirect}, "code_verifier": {ve}}); st != 400 || !strings.Contains(fmt.Sprint(out), "expired") {
				t.Errorf("expired code: %d %v", st, out)
			}
			access := tok["access_token"].(string)

			// The token acts at /mcp with the chosen scope, and nowhere else.
			cs := env.MCP(t, access)
			if out, e := apptest.CallTool(t, cs, "account_get", nil); e != nil || fmt.Sprint(out["scopes"]) != "[read]" {
				t.Fatalf("account_get with the token: %v %v", out, e)
			}
			if _, e := apptest.CallTool(t, cs, "partner_list_intents", nil); e == nil || e.Code != "FORBIDDEN" {
				t.Fatalf("a scope the human did not grant: %v", e)
			}
			// The portal's own tools are the signed-in human's, never a token's.
			for _, st := range env.App.Kernel.SessionTools() {
				if _, e := env.App.Kernel.Call(t.Context(), tools.Request{Tool: st.Name, APIKey: access}); e == nil || e.Code != tools.CodeForbidden {
					t.Errorf("%s with an OAuth token: %v, want FORBIDDEN", st.Name, e)
				}
			}
			if st, body := env.REST(t, "GET", "/v1/account", access, nil); st != 401 || !strings.Contains(fmt.Sprint(body), "/mcp") {
				t.Fatalf("the token on /v1: %d %v", st, body)
			}

			// The code again: refused, and the grant it made is revoked (its token stops working).
			if st, out := c.token(good); st != 400 || !strings.Contains(fmt.Sprint(out), "used already") {
				t.Fatalf("reused code: %d %v", st, out)
			}
			if st, hdr, _ := apptest.DoWith(t, "POST", env.URL+"/mcp", access, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
				map[string]string{"Accept": "application/json, text/event-stream"}); st != 401 || !strings.Contains(hdr.Get("WWW-Authenticate"), `error="invalid_token"`) {
				t.Fatalf("a token of a revoked grant: %d %v", st, hdr)
			}

			// A fresh grant: refresh rotates; reusing the old refresh token revokes the grant.
			v2, c2 := pkce("2")
			u = h.consent(c.authorizeURL(c2, nil), url.Values{"decision": {"allow"}, "scopes": {"read"}})
			_, tok = c.token(url.Values{"grant_type": {"authorization_code"}, "code": {u.Query().Get("code")}, "client_id": {c.id}, "redirect_uri": {c.redirect}, "code_verifier": {v2}})
			refresh1 := tok["refresh_token"].(string)
			st, tok2 := c.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh1}, "client_id": {c.id}})
			if st != 200 || tok2["refresh_token"] == refresh1 {
				t.Fatalf("refresh: %d %v", st, tok2)
			}
			if _, e := apptest.CallTool(t, env.MCP(t, tok2["access_token"].(string)), "account_get", nil); e != nil {
				t.Fatalf("the refreshed token: %v", e)
			}
			if st, out := c.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh1}, "client_id": {c.id}}); st != 400 || !strings.Contains(fmt.Sprint(out), "used already") {
				t.Fatalf("refresh reuse: %d %v", st, out)
			}
			if st, _ := c.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok2["refresh_token"].(string)}, "client_id": {c.id}}); st != 400 {
				t.Fatalf("the rotated refresh token after reuse detection: %d", st)
			}

			// A third grant: expiry, revocation by the client (RFC 7009), then by the human.
			v3, c3 := pkce("3")
			u = h.consent(c.authorizeURL(c3, nil), url.Values{"decision": {"allow"}, "scopes": {"read"}})
			_, tok = c.token(url.Values{"grant_type": {"authorization_code"}, "code": {u.Query().Get("code")}, "client_id": {c.id}, "redirect_uri": {c.redirect}, "code_verifier": {v3}})
			env.Clock.Advance(61 * time.Minute)
			if st, hdr, _ := apptest.DoWith(t, "POST", env.URL+"/mcp", tok["access_token"].(string), map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
				map[string]string{"Accept": "application/json, text/event-stream"}); st != 401 || !strings.Contains(hdr.Get("WWW-Authenticate"), "expired") {
				t.Fatalf("an expired access token: %d %v", st, hdr)
			}
			_, tok = c.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok["refresh_token"].(string)}, "client_id": {c.id}})
			if resp, err := http.PostForm(env.URL+"/oauth/revoke", url.Values{"token": {tok["refresh_token"].(string)}}); err != nil || resp.StatusCode != 200 {
				t.Fatalf("revoke: %v %v", resp, err)
			}
			if st := mcpStatus(t, env, tok["access_token"].(string)); st != 401 {
				t.Fatalf("an access token survived its grant's revocation: %d", st)
			}

			v4, c4 := pkce("4")
			u = h.consent(c.authorizeURL(c4, nil), url.Values{"decision": {"allow"}, "scopes": {"read"}})
			_, tok = c.token(url.Values{"grant_type": {"authorization_code"}, "code": {u.Query().Get("code")}, "client_id": {c.id}, "redirect_uri": {c.redirect}, "code_verifier": {v4}})
			if _, e := apptest.CallTool(t, env.MCP(t, tok["access_token"].(string)), "account_get", nil); e != nil {
				t.Fatal(e)
			}
			st, page := h.get("/developer/connections")
			if st != 200 || strings.Count(page, `data-label="Host">Test Host<`) != 1 || strings.Contains(page, `data-label="Last used">never<`) || !strings.Contains(page, `data-label="Last used"><time datetime=`) {
				t.Fatalf("connections page (one live connection, used): %d %s", st, page)
			}
			id := page[strings.Index(page, "/developer/connections/")+len("/developer/connections/"):]
			id = id[:strings.Index(id, "/")]
			if st, _ := h.post("/developer/connections/"+id+"/revoke", url.Values{"csrf": {h.csrf()}}, false); st != 200 {
				t.Fatalf("revoke from the portal: %d", st)
			}
			if st := mcpStatus(t, env, tok["access_token"].(string)); st != 401 {
				t.Fatalf("a connection revoked on the portal still acts: %d", st)
			}
			if _, body := h.get("/developer/connections"); strings.Contains(body, "Test Host") {
				t.Fatal("a revoked connection is still listed")
			}
		})
	}
}

// tickedScopes returns the scopes the consent form ticks, and those it marks "(asked for)".
func tickedScopes(page string) (ticked, askedFor []string) {
	for _, s := range tools.ScopeNames() {
		i := strings.Index(page, `name="scopes" value="`+s+`"`)
		if i < 0 {
			continue
		}
		label := page[i:]
		label = label[:strings.Index(label, "</label>")]
		if strings.Contains(label, `" checked>`) {
			ticked = append(ticked, s)
		}
		if strings.Contains(label, "(asked for)") {
			askedFor = append(askedFor, s)
		}
	}
	return ticked, askedFor
}

// Issue 46 item 7: a self-registered client's consent opens at least privilege. Whatever it
// asks for, only read and partner are ticked (of those it asked for); every write scope it
// asked for is shown unticked, marked "(asked for)", for the human to tick by choice; and
// allowing the form as it opens grants read and partner only.
func TestConsentTicksLeastPrivilege(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	_, reg := register(t, env, map[string]any{"client_name": "Greedy Host", "redirect_uris": []string{"http://127.0.0.1:5555/callback"}})
	c := &oauthClient{t: t, env: env, id: reg["client_id"].(string), redirect: "http://127.0.0.1:5555/callback"}
	h := newHuman(t, env)
	noFollow(h)
	h.signIn("least@example.com")
	verifier, challenge := pkce("l")
	every := strings.Join(tools.ScopeNames(), " ")
	for _, tc := range []struct {
		scope            string
		ticked, askedFor string
	}{
		{every, "[read partner]", "[quote swap bridge send wallet publish]"},
		{"", "[read partner]", "[]"},
		{"read swap", "[read]", "[swap]"},
		{"publish", "[read partner]", "[publish]"},
		{"partner send", "[partner]", "[send]"},
	} {
		st, page := h.get(c.authorizeURL(challenge, url.Values{"scope": {tc.scope}}))
		ticked, askedFor := tickedScopes(page)
		if st != 200 || fmt.Sprint(ticked) != tc.ticked || fmt.Sprint(askedFor) != tc.askedFor {
			t.Errorf("scope %q: %d ticked %v, asked for %v; want ticked %s, asked for %s", tc.scope, st, ticked, askedFor, tc.ticked, tc.askedFor)
		}
	}

	// Allowed as it opens (the ticked boxes are what the browser sends): read and partner.
	h.get(c.authorizeURL(challenge, url.Values{"scope": {every}}))
	ticked, _ := tickedScopes(h.last)
	back := h.consent(c.authorizeURL(challenge, url.Values{"scope": {every}}), url.Values{"decision": {"allow"}, "scopes": ticked})
	st, tok := c.token(url.Values{"grant_type": {"authorization_code"}, "code": {back.Query().Get("code")}, "client_id": {c.id}, "redirect_uri": {c.redirect},
		"code_verifier": {verifier}, "resource": {env.URL + "/mcp"}})
	if st != 200 || tok["access_token"] == nil {
		t.Fatalf("exchange: %d %v", st, tok)
	}
	if out, e := apptest.CallTool(t, env.MCP(t, tok["access_token"].(string)), "account_get", nil); e != nil || fmt.Sprint(out["scopes"]) != "[read partner]" {
		t.Fatalf("the grant's scopes: %v %v", out, e)
	}
	// A write scope the human ticks is granted.
	v2, c2 := pkce("w")
	back = h.consent(c.authorizeURL(c2, url.Values{"scope": {every}}), url.Values{"decision": {"allow"}, "scopes": {"read", "partner", "swap"}})
	_, tok = c.token(url.Values{"grant_type": {"authorization_code"}, "code": {back.Query().Get("code")}, "client_id": {c.id}, "redirect_uri": {c.redirect},
		"code_verifier": {v2}, "resource": {env.URL + "/mcp"}})
	if out, e := apptest.CallTool(t, env.MCP(t, tok["access_token"].(string)), "account_get", nil); e != nil || fmt.Sprint(out["scopes"]) != "[read partner swap]" {
		t.Fatalf("the grant's scopes, swap ticked: %v %v", out, e)
	}
}

package portal_test

import (
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
)

// Every response carries nosniff and a Referrer-Policy; the portal's pages carry a CSP
// without 'unsafe-inline' and no inline script, and the copy buttons' script is served as
// JavaScript.
func TestSecurityHeaders(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	h := newHuman(t, env)
	h.signIn("headers@example.com")
	for _, path := range []string{"/developer", "/developer/api-keys", "/developer/settings", "/docs", "/developer/sign-in", "/developer/nothing", "/healthz", "/v1/account", "/developer/static/copy.js"} {
		resp, err := h.c.Get(env.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		hd := resp.Header
		if hd.Get("X-Content-Type-Options") != "nosniff" || hd.Get("Referrer-Policy") != "same-origin" || hd.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s: nosniff %q, referrer %q, frame %q", path, hd.Get("X-Content-Type-Options"), hd.Get("Referrer-Policy"), hd.Get("X-Frame-Options"))
		}
		csp := hd.Get("Content-Security-Policy")
		if !strings.Contains(csp, "frame-ancestors 'none'") || strings.Contains(csp, "unsafe-inline") {
			t.Errorf("%s: CSP %q", path, csp)
		}
		if strings.HasPrefix(hd.Get("Content-Type"), "text/html") {
			if !strings.Contains(csp, "script-src 'self'") || strings.Contains(string(body), "<script>") || strings.Contains(string(body), " style=") ||
				!strings.Contains(string(body), `<script src="/developer/static/copy.js" defer></script>`) {
				t.Errorf("%s: CSP %q or an inline script/style in the page", path, csp)
			}
		}
	}
	resp, err := http.Get(env.URL + "/developer/static/copy.js")
	if err != nil {
		t.Fatal(err)
	}
	js, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") || !strings.Contains(string(js), "navigator.clipboard.writeText") {
		t.Errorf("copy.js: %q %s", resp.Header.Get("Content-Type"), js)
	}
}

var hrefRe = regexp.MustCompile(`href="([^"#]*)`)

// Every link on the documentation pages (HTML and Markdown) reaches a page: the HTML pages
// link /docs/<name>, the Markdown ones <name>.md next to them, the index /docs/<name>.md.
func TestDocsLinksResolve(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	base, _ := url.Parse(env.URL)
	seen := map[string]bool{}
	queue := []string{"/docs", "/docs.md"}
	mdLinkRe := regexp.MustCompile(`\]\(([^)#\s]+)`)
	for len(queue) > 0 {
		page := queue[0]
		queue = queue[1:]
		if seen[page] {
			continue
		}
		seen[page] = true
		st, body, _ := getPage(t, env.URL+page)
		if st != 200 {
			t.Errorf("%s: %d", page, st)
			continue
		}
		var links [][]string
		if strings.HasSuffix(page, ".md") {
			links = mdLinkRe.FindAllStringSubmatch(body, -1)
		} else {
			links = hrefRe.FindAllStringSubmatch(body, -1)
		}
		from, _ := url.Parse(env.URL + page)
		for _, l := range links {
			if l[1] == "" {
				continue
			}
			u := from.ResolveReference(&url.URL{Path: l[1]})
			if ref, err := url.Parse(l[1]); err == nil && ref.IsAbs() {
				u = ref
			}
			if u.Host != base.Host || !(strings.HasPrefix(u.Path, "/docs") || strings.HasPrefix(u.Path, "/developer") || u.Path == "/llms.txt" || u.Path == "/openapi.json") {
				continue
			}
			if strings.HasPrefix(u.Path, "/docs") && !seen[u.Path] {
				queue = append(queue, u.Path)
			} else if st, _, _ := getPage(t, u.String()); st != 200 {
				t.Errorf("%s links %s: %d", page, l[1], st)
			}
		}
	}
	if len(seen) < 15 {
		t.Errorf("crawled only %v", seen)
	}
	_, idx, _ := getPage(t, env.URL+"/docs")
	if !strings.Contains(idx, `href="/docs.md">This page as Markdown`) || !strings.Contains(idx, `href="/docs/agents"`) || !strings.Contains(idx, `aria-current="page">Docs`) {
		t.Errorf("docs index: Markdown twin, page links or the marked Docs entry missing:\n%s", idx)
	}
}

func getPage(t *testing.T, u string) (int, string, http.Header) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// Error pages are the styled layout with navigation; the favicon is served; the current page
// is marked; the docs carry the portal's navigation for a signed-in human.
func TestErrorPagesNavigationAndFavicon(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	for path, want := range map[string]int{"/developer/nothing": 404, "/docs/nothing": 404, "/connect/nobody": 404, "/oauth/authorize?client_id=nobody": 400} {
		st, body, _ := getPage(t, env.URL+path)
		if st != want || !strings.Contains(body, `<link rel="stylesheet" href="/developer/static/style.css">`) || !strings.Contains(body, "Where to next") ||
			!strings.Contains(body, `<a href="/docs"`) || !strings.Contains(body, `href="/developer/sign-in"`) || !strings.Contains(body, `class="error" role="alert"`) {
			t.Errorf("%s: %d, want %d and a styled page with navigation:\n%s", path, st, want, body)
		}
	}
	st, svg, hd := getPage(t, env.URL+"/favicon.ico")
	if st != 200 || hd.Get("Content-Type") != "image/svg+xml" || !strings.HasPrefix(svg, "<svg") {
		t.Errorf("/favicon.ico: %d %q", st, hd.Get("Content-Type"))
	}
	h := newHuman(t, env)
	h.signIn("nav@example.com")
	_, page := h.get("/developer/api-keys")
	if !strings.Contains(page, `href="/developer/api-keys" aria-current="page">API keys`) || strings.Count(page, `aria-current="page"`) != 1 ||
		!strings.Contains(page, `<a href="/docs" >Docs</a>`) || !strings.Contains(page, `<img src="/developer/static/logo.svg"`) {
		t.Errorf("keys page navigation:\n%s", page)
	}
	_, doc := h.get("/docs/agents")
	if !strings.Contains(doc, `href="/developer/api-keys"`) || !strings.Contains(doc, `href="/docs" aria-current="page">Docs`) || !strings.Contains(doc, "Sign out") {
		t.Errorf("docs page for a signed-in human: no portal navigation")
	}
	if st, body := h.get("/developer/intents/00000000-0000-0000-0000-000000000000"); st != 404 || !strings.Contains(body, "Your account") || !strings.Contains(body, "Sign out") {
		t.Errorf("signed-in 404: %d", st)
	}
}

// Forms show every problem at once, each next to its field, in words that say what to do;
// what was typed stays.
func TestFormsShowEveryError(t *testing.T) {
	env, _ := withPartner(t, nil)
	h := newHuman(t, env)
	h.signIn("forms@example.com")
	h.get("/developer/api-keys")
	token := h.csrf()
	st, body := h.post("/developer/api-keys", url.Values{"csrf": {token}, "name": {""}, "spendLimitUsd": {"lots"}, "rateLimitPerMinute": {"fast"}}, false)
	for _, id := range []string{"name-error", "scopes-error", "spend-error", "rate-error"} {
		if st != 422 || !strings.Contains(body, `id="`+id+`"`) {
			t.Errorf("key form: %d, no %s", st, id)
		}
	}
	if !strings.Contains(body, `value="lots"`) || !strings.Contains(body, `value="fast"`) {
		t.Errorf("key form lost what was typed")
	}

	h.get("/developer/intents/new")
	st, body = h.post("/developer/intents/new", url.Values{"csrf": {token}, "action": {"publish"}, "publicIdentifier": {"no handle"}, "name": {""},
		"description": {"d"}, "category": {"QUERY"}, "bindingType": {"REST"}, "toolEndpoint": {"https://example.com/x"},
		"parametersSchema": {"{not json"}, "feeRate": {"cheap"}, "feeRateUnit": {"usd_per_call"}}, false)
	for _, id := range []string{"publicIdentifier-error", "name-error", "parametersSchema-error", "feeRate-error"} {
		if st != 422 || !strings.Contains(body, `id="`+id+`"`) {
			t.Errorf("intent form: %d, no %s:\n%s", st, id, body)
		}
	}
	if strings.Contains(body, "pattern") || strings.Contains(body, "^@") || !strings.Contains(body, "start with @, then 3-32 of a-z") || !strings.Contains(body, `value="no handle"`) {
		t.Errorf("intent form: a validator message or lost input:\n%s", body)
	}

	h.get("/developer/integrations")
	st, body = h.post("/developer/integrations", url.Values{"csrf": {token}, "slug": {""}, "name": {""}}, false)
	for _, id := range []string{"slug-error", "name-error", "scopes-error"} {
		if st != 422 || !strings.Contains(body, `id="`+id+`"`) {
			t.Errorf("integration form: %d, no %s", st, id)
		}
	}
}

// The consent form keeps every typed value after an error and shows it at its field.
func TestConsentKeepsTypedValues(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	_, reg := register(t, env, map[string]any{"client_name": "Keep Host", "redirect_uris": []string{"http://127.0.0.1:5555/callback"}})
	c := &oauthClient{t: t, env: env, id: reg["client_id"].(string), redirect: "http://127.0.0.1:5555/callback"}
	h := newHuman(t, env)
	noFollow(h)
	h.signIn("keep@example.com")
	_, challenge := pkce("k")
	h.get(c.authorizeURL(challenge, nil))
	form := url.Values{"csrf": {h.csrf()}, "decision": {"allow"}, "scopes": {"read", "quote"}, "spendLimitUsd": {"999999"}, "rateLimitPerMinute": {"7"}}
	for _, k := range []string{"response_type", "client_id", "redirect_uri", "state", "code_challenge", "code_challenge_method", "resource", "scope"} {
		form.Set(k, hiddenValue(h.last, k))
	}
	st, body := h.post("/oauth/authorize", form, false)
	if st != 422 || !strings.Contains(body, `value="999999"`) || !strings.Contains(body, `name="rateLimitPerMinute" type="number" min="1"`) || !strings.Contains(body, `value="7"`) ||
		!strings.Contains(body, `id="spend-error"`) || !strings.Contains(body, `value="quote" checked`) {
		t.Errorf("consent after an error: %d\n%s", st, body)
	}
}

// Readable values: one timestamp form with the exact UTC time on hover, labels for enum
// names; an issued key gets a snippet for every host the README shows and curl; revoking
// asks first; empty lists say what to do.
func TestReadableKeysPage(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	h := newHuman(t, env)
	h.signIn("read@example.com")
	for path, cta := range map[string]string{"/developer/api-keys": `href="#name">Issue your first key`, "/developer/intents": `href="/developer/intents/new">Publish your first intent`,
		"/developer/integrations": `href="#slug">Create your first integration`, "/developer/connections": `href="/docs/mcp-hosts">Connect an MCP host`} {
		if _, body := h.get(path); !strings.Contains(body, `<div class="empty">`) || !strings.Contains(body, cta) {
			t.Errorf("%s: no call to action in the empty state", path)
		}
	}
	_, body := h.post("/developer/api-keys", url.Values{"csrf": {h.csrf()}, "name": {"snippets"}, "scopes": {"read"}}, false)
	secret := secretRe.FindStringSubmatch(body)[1]
	for _, want := range []string{
		"claude mcp add --transport http switchboard " + env.URL + `/mcp --header "x-api-key: ` + secret + `"</pre>`,
		`id="snippet-cursor">{ "mcpServers": { "switchboard": {` + "\n    \"url\": \"" + env.URL + "/mcp\",\n    \"headers\": { \"x-api-key\": \"" + secret + `" } } } }</pre>`,
		`id="snippet-vscode">`, `"type": "http", "url": "` + env.URL + `/mcp",` + "\n    " + `"headers": { "x-api-key": "${input:switchboard-key}" } } } }</pre>`,
		`id="snippet-desktop">`, `"SWITCHBOARD_API_KEY": "` + secret + `"`,
		`id="snippet-curl">curl -s ` + env.URL + `/v1/account -H "x-api-key: ` + secret + `"</pre>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("issued key page misses %q", want)
		}
	}
	if st, _, _ := apptest.Do(t, "GET", env.URL+"/v1/account", secret, nil); st != 200 {
		t.Errorf("the curl line's request: %d", st)
	}
	_, settings := h.get("/developer/settings")
	if !regexp.MustCompile(`data-label="Signed in"><time datetime="[0-9T:.\-]+Z" title="\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6} UTC">\d{1,2} [A-Z][a-z]{2} \d{4}, \d\d:\d\d UTC</time> with e-mail code`).MatchString(settings) {
		t.Errorf("sign-in time is not one readable time with the exact UTC on hover:\n%s", settings)
	}
	_, body = h.get("/developer/api-keys")
	if regexp.MustCompile(`\d\d:\d\d:\d\d\.\d+Z?<`).MatchString(body) {
		t.Errorf("a raw ISO time on the keys page:\n%s", body)
	}
	if !strings.Contains(body, `<details class="confirm"><summary aria-label="Revoke snippets">Revoke</summary>`) || !strings.Contains(body, "stop working at once. This cannot") {
		t.Errorf("revoke does not ask for confirmation")
	}
	// Revoking a key revokes the keys minted under it: the confirmation counts them.
	st, _, child := apptest.Do(t, "POST", env.URL+"/v1/keys", secret, map[string]any{"name": "child", "scopes": []string{"read"}})
	if st != 201 {
		t.Fatalf("mint a child: %d %v", st, child)
	}
	if st, _, out := apptest.Do(t, "POST", env.URL+"/v1/keys", child["secret"].(string), map[string]any{"name": "grandchild", "scopes": []string{"read"}}); st != 201 {
		t.Fatalf("mint a grandchild: %d %v", st, out)
	}
	_, body = h.get("/developer/api-keys")
	for _, want := range []string{"<strong>snippets</strong> stop working at once, and so do the 2 keys minted under it.",
		"<strong>child</strong> stop working at once, and so does the key minted under it.", "<strong>grandchild</strong> stop working at once. This cannot"} {
		if !strings.Contains(body, want) {
			t.Errorf("the keys page's revoke confirmation misses %q:\n%s", want, body)
		}
	}

	if _, body := h.get("/developer/intents/new"); !strings.Contains(body, `<option value="usd_per_call" selected>USD per call</option>`) ||
		!strings.Contains(body, `value="MUTATES_USER_FUNDS" > Moves user funds</label>`) {
		t.Errorf("enum names are not labelled:\n%s", body)
	}
}

// The code e-mail says where to enter the code: the sign-in page for a human who asked there;
// for an agent, both doors (a REST caller has no agent_verify tool).
func TestCodeEmailWording(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	h := newHuman(t, env)
	h.post("/developer/sign-in", url.Values{"email": {"human@example.com"}}, false)
	env.Onboard(t, "agent@example.com")
	for _, m := range env.Inbox.Messages() {
		switch m.To[0] {
		case "human@example.com":
			if !strings.Contains(m.Text, "Enter it on the Switchboard sign-in page") || strings.Contains(m.Text, "agent_verify") {
				t.Errorf("the human's e-mail: %s", m.Text)
			}
		case "agent@example.com":
			if !strings.Contains(m.Text, "POST /v1/agents/verify") || !strings.Contains(m.Text, "agent_verify tool") {
				t.Errorf("the agent's e-mail: %s", m.Text)
			}
		}
	}
}

// A JSON field of a form nested past the limit is refused at its field, naming the limit,
// before anything decodes it.
func TestFormJSONFieldsAreDepthBounded(t *testing.T) {
	env, _ := withPartner(t, nil)
	h := newHuman(t, env)
	h.signIn("deep@example.com")
	h.get("/developer/intents/new")
	deep := strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000)
	st, body := h.post("/developer/intents/new", url.Values{"csrf": {h.csrf()}, "action": {"publish"}, "publicIdentifier": {"@deep_schema"}, "name": {"Deep"},
		"description": {"d"}, "category": {"QUERY"}, "bindingType": {"REST"}, "toolEndpoint": {"https://example.com/x"},
		"parametersSchema": {deep}, "feeRate": {"0"}}, false)
	if st != 422 || !strings.Contains(body, `id="parametersSchema-error"`) || !strings.Contains(body, "nested deeper than 64 levels") {
		t.Fatalf("a schema nested 100,000 deep: %d\n%.2000s", st, body)
	}
}

package portal_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/signing/partnerexample"
)

// The two widths every page is checked (and photographed) at: a laptop and a phone.
var widths = []int64{1280, 390}

// axeSource is axe-core as npm installs it from portal/a11y/package-lock.json.
func axeSource(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("a11y", "node_modules", "axe-core", "axe.min.js"))
	if err != nil {
		t.Fatalf("the accessibility tests need axe-core: (cd portal/a11y && npm ci): %v", err)
	}
	quoted, _ := json.Marshal(string(b)) // a JavaScript string literal, evaluated once per page
	return string(quoted)
}

type axeViolation struct {
	ID     string   `json:"id"`
	Impact string   `json:"impact"`
	Help   string   `json:"help"`
	Nodes  []string `json:"nodes"`
}

// auditor runs axe-core on pages at both widths, fails on serious or critical violations,
// photographs each page at each width (SWITCHBOARD_SCREENSHOTS), and writes the results per
// page (SWITCHBOARD_A11Y_REPORT).
type auditor struct {
	t     *testing.T
	ctx   context.Context
	axe   string
	mu    sync.Mutex
	lines []string
}

func (a *auditor) audit(name string) {
	a.t.Helper()
	start := time.Now()
	defer func() { a.t.Logf("audit %s: %v", name, time.Since(start)) }()
	for _, w := range widths {
		if err := chromedp.Do(a.ctx, chromedp.EmulateViewport(w, 900), chromedp.Sleep(100*time.Millisecond)); err != nil {
			a.t.Fatalf("%s at %d px: %v", name, w, err)
		}
		// Injected through DevTools: the page's CSP (no inline script) does not apply to it.
		if _, err := chromedp.Run(a.ctx, chromedp.Evaluate[bool](`typeof axe === "undefined" ? (0, eval)(`+a.axe+`) || true : true`)); err != nil {
			a.t.Fatalf("inject axe-core into %s: %v", name, err)
		}
		vs, err := chromedp.Run(a.ctx, chromedp.Evaluate[[]axeViolation](`axe.run(document, {resultTypes: ["violations"]}).then(r => r.violations.map(v =>
			({id: v.id, impact: v.impact || "", help: v.help, nodes: v.nodes.map(n => n.target.join(" ") + " " + n.html.slice(0, 120))})))`, chromedp.EvalAwaitPromise))
		if err != nil {
			a.t.Fatalf("axe on %s at %d px: %v", name, w, err)
		}
		counts := map[string]int{}
		var ids []string
		for _, v := range vs {
			counts[v.Impact]++
			ids = append(ids, v.ID+" ("+v.Impact+")")
			if v.Impact == "serious" || v.Impact == "critical" {
				a.t.Errorf("%s at %d px: %s violation %s: %s on %v", name, w, v.Impact, v.ID, v.Help, v.Nodes)
			}
		}
		sort.Strings(ids)
		a.mu.Lock()
		a.lines = append(a.lines, fmt.Sprintf("| %s | %d px | %d | %d | %d | %d | %s |", name, w, counts["critical"], counts["serious"], counts["moderate"], counts["minor"], strings.Join(ids, ", ")))
		a.mu.Unlock()
		if os.Getenv("SWITCHBOARD_SCREENSHOTS") != "" {
			screenshot(a.t, a.ctx, fmt.Sprintf("%s-%d", name, w))
		}
	}
	if err := chromedp.Do(a.ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		a.t.Fatal(err)
	}
}

func (a *auditor) report() {
	path := os.Getenv("SWITCHBOARD_A11Y_REPORT")
	if path == "" {
		return
	}
	out := "| page | width | critical | serious | moderate | minor | rules |\n|---|---|---|---|---|---|---|\n" + strings.Join(a.lines, "\n") + "\n"
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		a.t.Fatal(err)
	}
}

// axe-core finds no serious or critical violation on any portal page, at 1280 px and at
// 390 px: signed out, signed in, empty, filled, with form errors, and at each step of the
// flows (key issued, endpoint tested, intent active, wallet export, OAuth consent, connect).
func TestAccessibilityOfEveryPage(t *testing.T) {
	env, partner := withPartner(t, nil)
	ctx := browserFor(t, 5*time.Minute)
	a := &auditor{t: t, ctx: ctx, axe: axeSource(t)}
	defer a.report()
	do, text := steps(t, ctx)
	const email = "a11y@example.com"

	do("sign-in page", chromedp.Navigate(env.URL+"/developer/sign-in"), chromedp.WaitVisible(chromedp.CSS(`#email`)))
	a.audit("sign-in")
	do("request a code", chromedp.SendKeys(chromedp.CSS(`#email`), email), chromedp.Click(chromedp.CSS(`form[action="/developer/sign-in"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`#code`)))
	a.audit("sign-in-code")
	do("a wrong code", chromedp.SendKeys(chromedp.CSS(`#code`), "00000000"), chromedp.Click(chromedp.CSS(`form[action="/developer/sign-in/code"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`#code-error`)))
	a.audit("sign-in-error")
	do("sign in", chromedp.SetValue(chromedp.CSS(`#code`), env.Inbox.Code(t, email, 1)), chromedp.Click(chromedp.CSS(`form[action="/developer/sign-in/code"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`main h1`)))
	a.audit("account")

	do("keys", chromedp.Navigate(env.URL+"/developer/api-keys"), chromedp.WaitVisible(chromedp.CSS(`#name`)))
	a.audit("api-keys-empty")
	do("a key form with errors", chromedp.SendKeys(chromedp.CSS(`#spendLimitUsd`), "lots"),
		chromedp.Click(chromedp.CSS(`form[action="/developer/api-keys"] button[type=submit]`)), chromedp.WaitVisible(chromedp.CSS(`#name-error`)))
	a.audit("api-keys-errors")
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(document.querySelector("#spendLimitUsd").value = "", true)`)); err != nil {
		t.Fatal(err)
	}
	do("issue a key", chromedp.SendKeys(chromedp.CSS(`#name`), "laptop agent"),
		chromedp.Click(chromedp.CSS(`input[value=read]`)), chromedp.Click(chromedp.CSS(`form[action="/developer/api-keys"] button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#secret`)))
	a.audit("api-keys-issued")
	do("the key list, revoke opened", chromedp.Navigate(env.URL+"/developer/api-keys"), chromedp.WaitVisible(chromedp.CSS(`table`)),
		chromedp.Click(chromedp.CSS(`summary`)))
	a.audit("api-keys")

	do("intents", chromedp.Navigate(env.URL+"/developer/intents"), chromedp.WaitVisible(chromedp.CSS(`main h1`)))
	a.audit("intents-empty")
	do("partner profile", chromedp.Navigate(env.URL+"/developer/partner/settings"), chromedp.WaitVisible(chromedp.CSS(`main h1`)))
	a.audit("partner-empty")
	do("intent form", chromedp.Navigate(env.URL+"/developer/intents/new"), chromedp.WaitVisible(chromedp.CSS(`#publicIdentifier`)))
	a.audit("intent-form")
	do("intent form errors", chromedp.SendKeys(chromedp.CSS(`#publicIdentifier`), "no handle"), chromedp.SendKeys(chromedp.CSS(`#feeRate`), "x"),
		chromedp.Click(chromedp.CSS(`button[value=publish]`)), chromedp.WaitVisible(chromedp.CSS(`#publicIdentifier-error`)))
	a.audit("intent-form-errors")
	do("test the endpoint", chromedp.SetValue(chromedp.CSS(`#publicIdentifier`), "@a11ypub"), chromedp.SetValue(chromedp.CSS(`#feeRate`), "0"),
		chromedp.SetValue(chromedp.CSS(`#name`), "Accessible"), chromedp.SetValue(chromedp.CSS(`#description`), "checked by axe"),
		chromedp.SetValue(chromedp.CSS(`#toolEndpoint`), partner.URL+partnerexample.RESTPath),
		chromedp.Click(chromedp.CSS(`button[value=test]`)), chromedp.WaitVisible(chromedp.CSS(`.checklist`)))
	a.audit("intent-tested")
	do("publish and activate", chromedp.Click(chromedp.CSS(`button[value=publish]`)), chromedp.WaitVisible(chromedp.CSS(`.flash`)),
		chromedp.Click(chromedp.CSS(`button[value=activate]`)), chromedp.WaitVisible(chromedp.CSS(`button[value=deactivate]`)))
	a.audit("intent")
	do("intents", chromedp.Navigate(env.URL+"/developer/intents"), chromedp.WaitVisible(chromedp.CSS(`table`)))
	a.audit("intents")
	do("partner profile", chromedp.Navigate(env.URL+"/developer/partner/settings"), chromedp.WaitVisible(chromedp.CSS(`table`)))
	a.audit("partner")

	do("integrations", chromedp.Navigate(env.URL+"/developer/integrations"), chromedp.WaitVisible(chromedp.CSS(`#slug`)))
	a.audit("integrations-empty")
	do("create an integration", chromedp.SendKeys(chromedp.CSS(`#slug`), "a11y-app"), chromedp.SendKeys(chromedp.CSS(`#name`), "A11y App"),
		chromedp.Click(chromedp.CSS(`input[name=scopes][value=read]`)), chromedp.Click(chromedp.CSS(`form[action="/developer/integrations"] button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`.flash`)))
	a.audit("integrations")
	do("connect", chromedp.Navigate(env.URL+"/connect/a11y-app"), chromedp.WaitVisible(chromedp.CSS(`form[action="/connect/a11y-app"] button`)))
	a.audit("connect")
	do("connect: issue", chromedp.Click(chromedp.CSS(`form[action="/connect/a11y-app"] button`)), chromedp.WaitVisible(chromedp.CSS(`#secret`)))
	a.audit("connect-issued")

	do("connections", chromedp.Navigate(env.URL+"/developer/connections"), chromedp.WaitVisible(chromedp.CSS(`main h1`)))
	a.audit("connections-empty")

	_, reg := register(t, env, map[string]any{"client_name": "A11y Host", "redirect_uris": []string{"http://127.0.0.1:5555/callback"}})
	_, challenge := pkce("a11y")
	c := &oauthClient{t: t, env: env, id: reg["client_id"].(string), redirect: "http://127.0.0.1:5555/callback"}
	// A connection, allowed from another browser of the same human (the consent page itself
	// is audited last: DevTools loses the tab after a form answered 422 there).
	h := newHuman(t, env)
	noFollow(h)
	h.signIn(email)
	verifier, challenge2 := pkce("a11y2")
	back := h.consent(c.authorizeURL(challenge2, nil), url.Values{"decision": {"allow"}, "scopes": {"read"}})
	if st, tok := c.token(url.Values{"grant_type": {"authorization_code"}, "code": {back.Query().Get("code")}, "client_id": {c.id},
		"redirect_uri": {c.redirect}, "code_verifier": {verifier}}); st != 200 {
		t.Fatalf("token: %d %v", st, tok)
	}
	do("connections", chromedp.Navigate(env.URL+"/developer/connections"), chromedp.WaitVisible(chromedp.CSS(`table`)))
	a.audit("connections")
	do("settings", chromedp.Navigate(env.URL+"/developer/settings"), chromedp.WaitVisible(chromedp.CSS(`main h1`)))
	a.audit("settings")
	do("wallet export", chromedp.Navigate(env.URL+"/developer/settings/wallet-export"), chromedp.WaitVisible(chromedp.CSS(`button[type=submit]`)))
	a.audit("wallet-export")
	do("wallet export: code", chromedp.Click(chromedp.CSS(`main form button[type=submit]`)), chromedp.WaitVisible(chromedp.CSS(`#code`)))
	a.audit("wallet-export-code")
	do("wallet export: reveal", chromedp.SendKeys(chromedp.CSS(`#code`), env.Inbox.Code(t, email, 3) /* sign-in, the second browser, the export */), chromedp.Click(chromedp.CSS(`main form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#key-0`)))
	a.audit("wallet-export-keys")

	for _, d := range []string{"", "/agents", "/mcp-hosts", "/partners", "/api"} {
		do("docs"+d, chromedp.Navigate(env.URL+"/docs"+d), chromedp.WaitVisible(chromedp.CSS(`article`)))
		a.audit(strings.TrimSuffix("docs-"+strings.TrimPrefix(d, "/"), "-"))
	}
	do("not found", chromedp.Navigate(env.URL+"/developer/nothing"), chromedp.WaitVisible(chromedp.CSS(`main h1`)))
	a.audit("not-found")
	do("consent", chromedp.Navigate(env.URL+c.authorizeURL(challenge, nil)), chromedp.WaitVisible(chromedp.CSS(`#spend`)))
	a.audit("consent")
	do("consent with an error", chromedp.SetValue(chromedp.CSS(`#spend`), "999999"), chromedp.Click(chromedp.CSS(`button[value=allow]`)),
		chromedp.WaitVisible(chromedp.CSS(`#spend-error`)))
	a.audit("consent-error")
	do("sign out", chromedp.Click(chromedp.CSS(`header button[type=submit]`)), chromedp.WaitVisible(chromedp.CSS(`#email`)),
		chromedp.Navigate(env.URL+"/connect/a11y-app"), chromedp.WaitVisible(chromedp.CSS(`a.button.primary`)))
	if !strings.Contains(text(`main .card`), "A11y App, published by an account of example.com") {
		t.Errorf("signed-out connect page: %q", text(`main .card`))
	}
	a.audit("connect-signed-out")
	do("docs signed out", chromedp.Navigate(env.URL+"/docs/errors"), chromedp.WaitVisible(chromedp.CSS(`article`)))
	a.audit("docs-errors")
}

// A human who uses only the keyboard signs in, issues a key, publishes an intent and
// activates it: every step is reached with Tab and done with Enter, Space or typing, and the
// focused element is visible (it has an outline).
func TestKeyboardOnly(t *testing.T) {
	env, partner := withPartner(t, nil)
	ctx := browser(t)
	do, text := steps(t, ctx)
	const email = "keys@example.com"

	// tab presses Tab until the focused element matches sel (at most 60 presses).
	tab := func(sel string) {
		t.Helper()
		for range 60 {
			ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`document.activeElement && document.activeElement.matches(%q)`, sel)))
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				outline, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`getComputedStyle(document.activeElement).outlineStyle`))
				if outline == "none" {
					t.Errorf("%s has focus but no visible outline", sel)
				}
				return
			}
			do("Tab", chromedp.KeyEvent(kb.Tab))
		}
		t.Fatalf("Tab never reaches %s", sel)
	}
	typeIn := func(sel, s string) {
		t.Helper()
		tab(sel)
		do("type into "+sel, chromedp.KeyEvent(s))
	}
	press := func(sel, key string, wait string) {
		t.Helper()
		tab(sel)
		do("press on "+sel, chromedp.KeyEvent(key), chromedp.WaitVisible(chromedp.CSS(wait)))
	}

	do("open the portal", chromedp.Navigate(env.URL+"/developer"), chromedp.WaitVisible(chromedp.CSS(`#email`)))
	tab(`a.skip`) // the first stop skips the navigation
	typeIn(`#email`, email)
	press(`form[action="/developer/sign-in"] button`, kb.Enter, `#code`)
	typeIn(`#code`, env.Inbox.Code(t, email, 1))
	press(`form[action="/developer/sign-in/code"] button`, kb.Enter, `header a[href="/developer"][aria-current=page]`)

	press(`header a[href="/developer/api-keys"]`, kb.Enter, `#name`)
	typeIn(`#name`, "keyboard agent")
	tab(`input[name=scopes][value=read]`)
	do("check read", chromedp.KeyEvent(" "))
	tab(`input[name=scopes][value=partner]`)
	do("check partner", chromedp.KeyEvent(" "))
	press(`form[action="/developer/api-keys"] button[type=submit]`, kb.Enter, `#secret`)
	secret := text(`#secret`)
	if out, e := apptest.CallTool(t, env.MCP(t, secret), "account_get", nil); e != nil || out["email"] != email {
		t.Fatalf("the key issued by keyboard: %v %v", out, e)
	}

	press(`header a[href="/developer/intents"]`, kb.Enter, `.empty a.button`)
	press(`.empty a.button`, kb.Enter, `#publicIdentifier`)
	typeIn(`#publicIdentifier`, "@keyboard")
	typeIn(`#name`, "Keyboard")
	typeIn(`#description`, "published with the keyboard only")
	typeIn(`#toolEndpoint`, partner.URL+partnerexample.RESTPath)
	press(`button[value=test]`, kb.Enter, `.checklist`)
	if r := text(`.card[role=status]`); !strings.Contains(r, "ready to activate") {
		t.Fatalf("endpoint test: %s", r)
	}
	press(`button[value=publish]`, kb.Enter, `.flash`)
	press(`button[value=activate]`, kb.Enter, `button[value=deactivate]`)
	if f := text(`.flash`); !strings.Contains(f, "Activated") {
		t.Fatalf("activate: %s", f)
	}
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	u, _ := url.Parse(loc)
	st, out := env.REST(t, "POST", "/v1/invoke", secret, map[string]any{"message": "@keyboard hello"})
	if st != 200 || !strings.HasPrefix(u.Path, "/developer/intents/") {
		t.Fatalf("the intent activated by keyboard, invoked: %d %v (at %s)", st, out, loc)
	}
}

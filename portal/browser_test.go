package portal_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/oauth2-proxy/mockoidc"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/signing/partnerexample"
	"github.com/switchboard-hq/switchboard/tools"
)

// browser starts headless Chromium (Debian's chromium package). It fails, never skips, when
// Chromium is missing: CI installs it.
func browser(t *testing.T) context.Context {
	t.Helper()
	return browserFor(t, 90*time.Second)
}

// browserFor is browser with a longer bound for the tests that visit every page.
func browserFor(t *testing.T, limit time.Duration) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("the browser tests need Chromium: apt-get install chromium")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1100, 900))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	ctx, cancel3 := context.WithTimeout(ctx, limit)
	t.Cleanup(cancel3)
	return ctx
}

// steps returns do (run actions, failing the test on an error) and text (an element's text).
func steps(t *testing.T, ctx context.Context) (func(string, ...chromedp.Action[chromedp.Void]), func(string) string) {
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return strings.TrimSpace(s)
	}
	return do, text
}

// screenshot saves the page as a PNG in SWITCHBOARD_SCREENSHOTS (to look at, and for the
// docs/portal.md) or the test's temp dir.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("SWITCHBOARD_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	shot := chromedp.FullScreenshot(100)
	if strings.HasPrefix(name, "docs") { // long pages: their first screen tells enough
		shot = chromedp.CaptureScreenshot()
	}
	png, err := chromedp.Run(ctx, shot)
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A human in a real browser: signs in with the e-mail code, issues a key (copy button and
// snippet on the page), the key works over MCP, revokes it; a forged cross-site form from
// another origin writes nothing; signs out.
func TestPortalInABrowser(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	ctx := browser(t)
	const email = "browser@example.com"

	do, text := steps(t, ctx)

	do("request a code",
		chromedp.Navigate(env.URL+"/developer/api-keys"), // signed out: sent to sign in
		chromedp.WaitVisible(chromedp.CSS(`#email`)),
		chromedp.SendKeys(chromedp.CSS(`#email`), email),
		chromedp.Click(chromedp.CSS(`button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#code`)))
	screenshot(t, ctx, "sign-in-code")
	do("sign in",
		chromedp.SendKeys(chromedp.CSS(`#code`), env.Inbox.Code(t, email, 1)),
		chromedp.Click(chromedp.CSS(`form[action="/developer/sign-in/code"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`table`)))
	if h := text(`main h1`); h != "Account" {
		t.Fatalf("after sign-in: %q", h)
	}
	screenshot(t, ctx, "account")

	do("issue a key",
		chromedp.Navigate(env.URL+"/developer/api-keys"),
		chromedp.WaitVisible(chromedp.CSS(`#name`)),
		chromedp.SendKeys(chromedp.CSS(`#name`), "laptop agent"), // read is ticked already
		chromedp.Click(chromedp.CSS(`input[value=partner]`)),
		chromedp.Click(chromedp.CSS(`form[action="/developer/api-keys"] button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#secret`)))
	screenshot(t, ctx, "api-keys-issued")
	secret := text(`#secret`)
	out, e := apptest.CallTool(t, env.MCP(t, secret), "account_get", nil)
	if e != nil || out["email"] != email {
		t.Fatalf("the key from the browser over MCP: %v %v", out, e)
	}

	// Another site's page posts a form to the portal: nothing is written.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<form id=f method=post action="%s/developer/api-keys"><input name=name value=evil><input name=scopes value=read><input name=csrf value=x></form><script>document.getElementById("f").submit()</script>`, env.URL)
	}))
	defer evil.Close()
	do("forged form", chromedp.Navigate(strings.Replace(evil.URL, "127.0.0.1", "localhost", 1)), chromedp.Sleep(700*time.Millisecond))
	do("back to the keys", chromedp.Navigate(env.URL+"/developer/api-keys"), chromedp.WaitVisible(chromedp.CSS(`table`)))
	if keys := text(`table`); strings.Contains(keys, "evil") || !strings.Contains(keys, "laptop agent") {
		t.Fatalf("after a cross-site form: %q", keys)
	}

	do("revoke, confirmed", chromedp.Click(chromedp.CSS(`summary[aria-label="Revoke laptop agent"]`)),
		chromedp.Click(chromedp.CSS(`details[open] button.danger`)), chromedp.WaitVisible(chromedp.CSS(`.flash`)))
	if _, e := apptest.CallTool(t, env.MCP(t, secret), "account_get", nil); e == nil || e.Code != tools.CodeUnauthenticated {
		t.Fatalf("a revoked key over MCP: %v", e)
	}
	do("the intent form", chromedp.Navigate(env.URL+"/developer/intents/new"), chromedp.WaitVisible(chromedp.CSS(`#publicIdentifier`)))
	screenshot(t, ctx, "intent-form")
	do("settings", chromedp.Navigate(env.URL+"/developer/settings"), chromedp.WaitVisible(chromedp.CSS(`main h1`)))
	screenshot(t, ctx, "settings")
	do("sign out", chromedp.Click(chromedp.CSS(`header button[type=submit]`)), chromedp.WaitVisible(chromedp.CSS(`#email`)))
}

// In the browser: sign in through an OpenID Connect provider (in-process), publish an intent
// through the form against a real partner (Test endpoint, Publish, Activate), create an
// integration, and a second user connects to it and gets a scoped key; an expired session is
// sent back to sign in.
func TestPartnerFlowsInABrowser(t *testing.T) {
	idp, err := mockoidc.Run()
	if err != nil {
		t.Fatal(err)
	}
	defer idp.Shutdown()
	cfg := idp.Config()
	env, partner := withPartner(t, func(c *apptest.Config) {
		c.OIDCProviders = "label=Test IdP,issuer=" + cfg.Issuer + ",client_id=" + cfg.ClientID + ",client_secret=" + cfg.ClientSecret
	})
	ctx := browser(t)
	do, text := steps(t, ctx)

	idp.QueueUser(&mockoidc.MockUser{Subject: "p1", Email: "builder@example.com", EmailVerified: true})
	do("sign in with the provider",
		chromedp.Navigate(env.URL+"/developer/sign-in"),
		chromedp.Click(chromedp.CSS(`a.button`)),
		chromedp.WaitVisible(chromedp.CSS(`table`)))
	if !strings.Contains(text(`table`), "builder@example.com") {
		t.Fatalf("signed in as someone else: %s", text(`table`))
	}

	do("fill the intent form",
		chromedp.Navigate(env.URL+"/developer/intents/new"),
		chromedp.WaitVisible(chromedp.CSS(`#publicIdentifier`)),
		chromedp.SendKeys(chromedp.CSS(`#publicIdentifier`), "@browserpub"),
		chromedp.SendKeys(chromedp.CSS(`#name`), "Browser published"),
		chromedp.SendKeys(chromedp.CSS(`#description`), "published from a real browser"),
		chromedp.SendKeys(chromedp.CSS(`#toolEndpoint`), partner.URL+partnerexample.RESTPath),
		chromedp.Click(chromedp.CSS(`button[value=test]`)),
		chromedp.WaitVisible(chromedp.CSS(`.card[role=status]`)))
	if r := text(`.card[role=status]`); !strings.Contains(r, "ready to activate") || strings.Count(r, "✓ Pass") < 3 || strings.Contains(r, "✗ Fail") {
		t.Fatalf("endpoint test in the page: %s", r)
	}
	screenshot(t, ctx, "intent-tested")
	do("publish and activate",
		chromedp.Click(chromedp.CSS(`button[value=publish]`)),
		chromedp.WaitVisible(chromedp.CSS(`.flash`)),
		chromedp.Click(chromedp.CSS(`button[value=activate]`)),
		chromedp.WaitVisible(chromedp.CSS(`button[value=deactivate]`)))
	if f := text(`.flash`); !strings.Contains(f, "Activated") {
		t.Fatalf("activate: %s", f)
	}

	do("create an integration",
		chromedp.Navigate(env.URL+"/developer/integrations"),
		chromedp.WaitVisible(chromedp.CSS(`#slug`)),
		chromedp.SendKeys(chromedp.CSS(`#slug`), "browser-app"),
		chromedp.SendKeys(chromedp.CSS(`#name`), "Browser App"),
		chromedp.Click(chromedp.CSS(`input[name=scopes][value=read]`)),
		chromedp.Click(chromedp.CSS(`form[action="/developer/integrations"] button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`.flash`)))

	// A user of the integration: signs out the partner, follows the connect link, signs in
	// (the provider), comes back, issues the key.
	idp.QueueUser(&mockoidc.MockUser{Subject: "u9", Email: "appuser@example.com", EmailVerified: true})
	do("connect",
		chromedp.Click(chromedp.CSS(`header button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`a.button`)),
		chromedp.Navigate(env.URL+"/connect/browser-app"),
		chromedp.WaitVisible(chromedp.CSS(`a.button.primary`)))
	if who := text(`main .card`); !strings.Contains(who, "Browser App, published by an account of example.com") {
		t.Fatalf("signed-out connect page: %q", who)
	}
	screenshot(t, ctx, "connect-signed-out")
	do("sign in to connect",
		chromedp.Click(chromedp.CSS(`a.button.primary`)),
		chromedp.WaitVisible(chromedp.CSS(`a.button`)),
		chromedp.Click(chromedp.CSS(`a.button`)),
		chromedp.WaitVisible(chromedp.CSS(`form[action="/connect/browser-app"] button`)))
	screenshot(t, ctx, "connect")
	do("issue the connect key", chromedp.Click(chromedp.CSS(`form[action="/connect/browser-app"] button`)), chromedp.WaitVisible(chromedp.CSS(`#secret`)))
	out, e := apptest.CallTool(t, env.MCP(t, strings.TrimSpace(text(`#secret`))), "account_get", nil)
	if e != nil || out["email"] != "appuser@example.com" || fmt.Sprint(out["scopes"]) != "[read]" {
		t.Fatalf("the connect key over MCP: %v %v", out, e)
	}

	// Idle past the limit: back to sign-in.
	env.Clock.Advance(13 * time.Hour)
	do("expired session", chromedp.Navigate(env.URL+"/developer/api-keys"), chromedp.WaitVisible(chromedp.CSS(`a.button`)))
	if h := text(`main h1`); h != "Sign in" {
		t.Fatalf("an expired session reached %q", h)
	}
}

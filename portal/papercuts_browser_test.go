package portal_test

import (
	"bytes"
	"fmt"
	"html"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
)

// The papercuts a new user hit in the portal, each in a real browser.

// lockedLog is the server's log, read while it writes.
type lockedLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// On a local server without SMTP (the test environment's development mailer) the sign-in
// page says the code is in the server's log, and it is there: the human signs in with it.
// With a mail server the page says it was e-mailed, and nothing about a log.
func TestSignInSaysWhereTheDevelopmentCodeIs(t *testing.T) {
	log := &lockedLog{}
	env := apptest.Start(t, apptest.Options{Log: log, Config: func(c *apptest.Config) { c.SMTPURL = "" }})
	ctx := browser(t)
	do, text := steps(t, ctx)
	const email = "local@example.com"
	do("open sign-in", chromedp.Navigate(env.URL+"/developer/sign-in"), chromedp.WaitVisible(chromedp.CSS(`#email`)))
	if p := text(`main .card p`); !strings.Contains(p, "server's log") {
		t.Fatalf("the sign-in page does not say where the code goes: %s", p)
	}
	do("request a code", chromedp.SendKeys(chromedp.CSS(`#email`), email), chromedp.Click(chromedp.CSS(`button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#code`)))
	if p := text(`main .card p`); !strings.Contains(p, "server's log") || !strings.Contains(p, "switchboard serve") || strings.Contains(p, "We e-mailed") {
		t.Fatalf("the code step: %s", p)
	}
	screenshot(t, ctx, "sign-in-code-in-log")
	m := regexp.MustCompile(`Your Switchboard code: (\d{8})`).FindStringSubmatch(log.String())
	if m == nil {
		t.Fatalf("no code in the server's log:\n%s", log)
	}
	do("sign in with the code from the log", chromedp.SendKeys(chromedp.CSS(`#code`), m[1]),
		chromedp.Click(chromedp.CSS(`form[action="/developer/sign-in/code"] button`)), chromedp.WaitVisible(chromedp.CSS(`table`)))

	mailed := apptest.Start(t, apptest.Options{})
	do("request a code by e-mail", chromedp.Navigate(mailed.URL+"/developer/sign-in"), chromedp.WaitVisible(chromedp.CSS(`#email`)),
		chromedp.SendKeys(chromedp.CSS(`#email`), email), chromedp.Click(chromedp.CSS(`button[type=submit]`)), chromedp.WaitVisible(chromedp.CSS(`#code`)))
	if p := text(`main .card p`); strings.Contains(p, "log") || !strings.Contains(p, "We e-mailed") {
		t.Fatalf("with a mail server, the code step: %s", p)
	}
}

// signIn signs a human in through the page with the code from the inbox.
func signIn(t *testing.T, env *apptest.Env, do func(string, ...chromedp.Action[chromedp.Void]), email string) {
	t.Helper()
	do("request a code", chromedp.Navigate(env.URL+"/developer/sign-in"), chromedp.WaitVisible(chromedp.CSS(`#email`)),
		chromedp.SendKeys(chromedp.CSS(`#email`), email), chromedp.Click(chromedp.CSS(`button[type=submit]`)), chromedp.WaitVisible(chromedp.CSS(`#code`)))
	do("sign in", chromedp.SendKeys(chromedp.CSS(`#code`), env.Inbox.Code(t, email, 1)),
		chromedp.Click(chromedp.CSS(`form[action="/developer/sign-in/code"] button`)), chromedp.WaitVisible(chromedp.CSS(`table`)))
}

// At 390 px (a phone) every entry of the portal's navigation is on the screen and is what a
// tap at its centre reaches: none is cut off, hidden in a scroll with no cue, or covered.
func TestNavigationAt390px(t *testing.T) { testNavigationAt(t, 390, 844) }

// Issue 46 item 7: at 1280 px (a laptop) too, signed in or out, every entry is in view; the
// one-row header hid five in a sideways scroll.
func TestNavigationAt1280px(t *testing.T) { testNavigationAt(t, 1280, 800) }

func testNavigationAt(t *testing.T, width, height int64) {
	env := apptest.Start(t, apptest.Options{})
	ctx := browser(t)
	do, _ := steps(t, ctx)
	do(fmt.Sprintf("%d px wide", width), chromedp.EmulateViewport(width, height))
	check := func(what string) {
		t.Helper()
		hidden, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(() => {
			const out = [];
			for (const el of document.querySelectorAll("header nav li > a, header nav li button")) {
				const r = el.getBoundingClientRect();
				const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
				if (r.width === 0 || r.left < 0 || r.right > window.innerWidth + 0.5 || !(hit === el || el.contains(hit))) {
					out.push(el.textContent.trim() + " at " + Math.round(r.left) + ".." + Math.round(r.right) + " of " + window.innerWidth);
				}
			}
			if (document.documentElement.scrollWidth > window.innerWidth) out.push("the page scrolls sideways: " + document.documentElement.scrollWidth);
			return out;
		})()`))
		if err != nil {
			t.Fatal(err)
		}
		if len(hidden) > 0 {
			t.Errorf("%s at %d px: nav entries out of reach: %v", what, width, hidden)
		}
	}
	do("signed out", chromedp.Navigate(env.URL+"/marketplace"), chromedp.WaitVisible(chromedp.CSS(`header nav`)))
	check("signed out")
	signIn(t, env, do, "phone@example.com")
	do("signed in", chromedp.Navigate(env.URL+"/developer/usage"), chromedp.WaitVisible(chromedp.CSS(`header nav`)))
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("header nav li").length`))
	if err != nil || n < 10 {
		t.Fatalf("the signed-in navigation has %d entries (%v)", n, err)
	}
	check("signed in")
	screenshot(t, ctx, fmt.Sprintf("nav-%d", width))
}

// The key form opens with read ticked, so naming the key and submitting issues it.
func TestKeyFormTicksReadByDefault(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	ctx := browser(t)
	do, text := steps(t, ctx)
	signIn(t, env, do, "keys@example.com")
	do("open the key form", chromedp.Navigate(env.URL+"/developer/api-keys"), chromedp.WaitVisible(chromedp.CSS(`#name`)))
	ticked, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("input[name=scopes]:checked")].map(e => e.value)`))
	if err != nil || len(ticked) != 1 || ticked[0] != "read" {
		t.Fatalf("ticked on opening: %v %v", ticked, err)
	}
	do("name it and submit", chromedp.SendKeys(chromedp.CSS(`#name`), "first agent"),
		chromedp.Click(chromedp.CSS(`form[action="/developer/api-keys"] button[type=submit]`)), chromedp.WaitVisible(chromedp.CSS(`#secret`)))
	if s := text(`#secret`); !strings.HasPrefix(s, "sb_test_") {
		t.Fatalf("issued: %q", s)
	}
}

// The publish form with three bad fields (the handle, the parameters schema, a negative fee)
// shows three errors, each beside its field; and again when the schema is JSON that is no
// schema.
func TestPublishFormShowsEveryError(t *testing.T) {
	env, partner := withPartner(t, nil)
	ctx := browser(t)
	do, _ := steps(t, ctx)
	signIn(t, env, do, "publisher@example.com")
	for _, schema := range []string{`{"type": "object", "properties": `, `{"type": "objekt"}`} {
		do("fill the form badly",
			chromedp.Navigate(env.URL+"/developer/intents/new"), chromedp.WaitVisible(chromedp.CSS(`#publicIdentifier`)),
			chromedp.SendKeys(chromedp.CSS(`#publicIdentifier`), "Bad Handle!"),
			chromedp.SendKeys(chromedp.CSS(`#name`), "Forecast"),
			chromedp.SendKeys(chromedp.CSS(`#description`), "weather forecast for any city"),
			chromedp.SendKeys(chromedp.CSS(`#toolEndpoint`), partner.URL+"/rest"),
			chromedp.SetValue(chromedp.CSS(`#parametersSchema`), schema),
			chromedp.SetValue(chromedp.CSS(`#feeRate`), "-1"),
			chromedp.Click(chromedp.CSS(`button[value=publish]`)),
			chromedp.WaitVisible(chromedp.CSS(`#publicIdentifier-error`)))
		shown, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("p.error")].map(e => e.id + ": " + e.textContent)`))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"publicIdentifier", "parametersSchema", "feeRate"} {
			if !strings.Contains(strings.Join(shown, "\n"), f+"-error: ") {
				t.Errorf("schema %s: no error beside %s; shown: %q", schema, f, shown)
			}
		}
	}
	screenshot(t, ctx, "publish-errors")
}

var uuidRe = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// A listing names its publisher by handle, never by its internal id, says its price "up to",
// and counts "1 call". Opening it signed in creates no key; the first Try it creates the Try
// it key with only the scopes the intent needs (partner, for a query), and records its use,
// so the key list does not say "never".
func TestListingPublisherPriceAndTheTryItKey(t *testing.T) {
	env, partner := withPartner(t, nil)
	pub := env.Onboard(t, "cut-pub@example.com")["apiKey"].(string)
	publishLive(t, env, pub, weather(partner, "@cut-read", "QUERY"), true)
	ctx := browser(t)
	do, text := steps(t, ctx)
	signIn(t, env, do, "cut-try@example.com")

	do("open the listing", chromedp.Navigate(env.URL+"/marketplace/@cut-read"), chromedp.WaitVisible(chromedp.CSS(`#try`)))
	page := text(`main`)
	if uuidRe.MatchString(page) || !strings.Contains(page, "The partner behind @cut-read") {
		t.Fatalf("the publisher is not named by handle:\n%s", page)
	}
	if !strings.Contains(page, "Up to 0.001 USD per call") {
		t.Fatalf("the price does not say up to:\n%s", page)
	}
	keyRows := func() string {
		t.Helper()
		do("the key list", chromedp.Navigate(env.URL+"/developer/api-keys"), chromedp.WaitVisible(chromedp.CSS(`#name`)))
		rows, err := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll("tbody tr")].map(r => r.innerText.replace(/\s+/g, " ")).join("\n")`))
		if err != nil {
			t.Fatal(err)
		}
		return rows
	}
	if rows := keyRows(); strings.Contains(rows, "Try it") {
		t.Fatalf("opening a listing made a key:\n%s", rows)
	}

	do("try it", chromedp.Navigate(env.URL+"/marketplace/@cut-read"), chromedp.WaitVisible(chromedp.CSS(`#query`)),
		chromedp.SendKeys(chromedp.CSS(`#query`), "rain in Lisbon?"), chromedp.Click(chromedp.CSS(`button[value=try]`)),
		chromedp.WaitVisible(chromedp.CSS(`.try-result`)))
	if r := text(`.try-result`); !strings.Contains(r, "Infrastructure") || !strings.Contains(r, "0.001 USD") {
		t.Fatalf("the charge: %s", r)
	}
	rows := keyRows()
	var try string
	for _, r := range strings.Split(rows, "\n") {
		if strings.Contains(r, "Try it on the portal") {
			try = r
		}
	}
	if try == "" || strings.Contains(try, "read") || strings.Contains(try, "publish") || !strings.Contains(try, "partner") || strings.Contains(strings.ToLower(try), "never") {
		t.Fatalf("the Try it key after one call: %q\nall keys:\n%s", try, rows)
	}
	screenshot(t, ctx, "try-it-key")

	do("the marketplace", chromedp.Navigate(env.URL+"/marketplace?q=weather"), chromedp.WaitVisible(chromedp.CSS(`.market-list`)))
	if l := text(`.market-list`); strings.Contains(l, "1 calls") || !strings.Contains(l, "1 call in 30 days") {
		t.Fatalf("the call count: %s", l)
	}
}

var restSnippetRe = regexp.MustCompile(`(?s)<h3>REST</h3>\s*<pre>(.*?)</pre>`)

// The REST snippet of a listing, pasted into bash as the page shows it with the key in
// SWITCHBOARD_API_KEY, authenticates and calls: the partner's (POST /v1/invoke, whose
// placeholder request is the query) and a built-in capability's (its GET route).
func TestListingRESTSnippetRunsInBash(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("the snippet test runs curl: apt-get install curl")
	}
	env, partner := withPartner(t, nil)
	key := env.Onboard(t, "paste@example.com")["apiKey"].(string)
	publishLive(t, env, key, weather(partner, "@paste-read", "QUERY"), true)
	for handle, want := range map[string]string{"@paste-read": `"success":true`, "@resolve_token": `"code":"BAD_INPUT"`} {
		_, page := newHuman(t, env).get("/marketplace/" + handle)
		m := restSnippetRe.FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("%s: no REST snippet on the page", handle)
		}
		snippet := html.UnescapeString(m[1])
		cmd := exec.Command("bash", "-c", snippet+" -s")
		cmd.Env = append(os.Environ(), "SWITCHBOARD_API_KEY="+key)
		out, err := cmd.CombinedOutput()
		if err != nil || strings.Contains(string(out), "UNAUTHENTICATED") || !strings.Contains(string(out), want) {
			t.Fatalf("%s: the snippet as pasted:\n%s\nanswered (%v):\n%s", handle, snippet, err, out)
		}
	}
}

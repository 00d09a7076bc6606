package portal_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// In a real browser, without running any script of ours: a visitor browses and searches the
// marketplace signed out and opens an intent; signed in, Try it on a write shows the
// itemized quote (the partner has received nothing), Confirm calls it; the usage page draws
// the spend as SVG that Chromium lays out, and its chart opens the call log and a call.
func TestMarketplaceInABrowser(t *testing.T) {
	env, partner := withPartner(t, nil)
	pub := env.Onboard(t, "browse-pub@example.com")["apiKey"].(string)
	publishLive(t, env, pub, weather(partner, "@browse-read", "QUERY"), true)
	w := weather(partner, "@browse-write", "EXECUTE")
	w["parametersSchema"] = map[string]any{"type": "object", "required": []string{"query", "amount"},
		"properties": map[string]any{"query": map[string]any{"type": "string"}, "amount": map[string]any{"type": "integer"}}}
	publishLive(t, env, pub, w, true)

	ctx := browser(t)
	do, text := steps(t, ctx)
	do("browse signed out", chromedp.Navigate(env.URL+"/marketplace"), chromedp.WaitVisible(chromedp.CSS(`.market-list`)))
	if l := text(`.market-list`); !strings.Contains(l, "@browse-read") || !strings.Contains(l, "@browse-write") {
		t.Fatalf("the marketplace lists: %s", l)
	}
	do("search",
		chromedp.SendKeys(chromedp.CSS(`#q`), "weather forecast"),
		chromedp.SetValue(chromedp.CSS(`#category`), "EXECUTE"),
		chromedp.Click(chromedp.CSS(`form[role=search] button`)),
		// The answer's own field says the search: the page before it had it empty.
		chromedp.WaitVisible(chromedp.CSS(`#q[value="weather forecast"]`)))
	if l := text(`.market-list`); strings.Contains(l, "@browse-read") || !strings.Contains(l, "@browse-write") {
		t.Fatalf("search with the category filter lists: %s", l)
	}
	screenshot(t, ctx, "marketplace")
	do("open the intent", chromedp.Click(chromedp.CSS(`a[href="/marketplace/@browse-write"]`)), chromedp.WaitVisible(chromedp.CSS(`#try`)))
	if tr := text(`#try`); !strings.Contains(tr, "Sign in") {
		t.Fatalf("Try it signed out: %s", tr)
	}
	screenshot(t, ctx, "marketplace-intent")

	const email = "browse-try@example.com"
	do("request a code",
		chromedp.Navigate(env.URL+"/developer/sign-in"),
		chromedp.WaitVisible(chromedp.CSS(`#email`)),
		chromedp.SendKeys(chromedp.CSS(`#email`), email),
		chromedp.Click(chromedp.CSS(`button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#code`)))
	do("sign in",
		chromedp.SendKeys(chromedp.CSS(`#code`), env.Inbox.Code(t, email, 1)),
		chromedp.Click(chromedp.CSS(`form[action="/developer/sign-in/code"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`table`)))

	hits := len(partner.Hits())
	do("get the quote",
		chromedp.Navigate(env.URL+"/marketplace/@browse-write"),
		chromedp.WaitVisible(chromedp.CSS(`#arg-query`)),
		chromedp.SendKeys(chromedp.CSS(`#arg-query`), "move it"),
		chromedp.SendKeys(chromedp.CSS(`#arg-amount`), "3"),
		chromedp.Click(chromedp.CSS(`button[value=try]`)),
		chromedp.WaitVisible(chromedp.CSS(`.try-confirm`)))
	if c := text(`.try-confirm`); !strings.Contains(c, "maxChargeUsd") || !strings.Contains(c, "Partner fee") || len(partner.Hits()) != hits {
		t.Fatalf("the quote (partner requests since: %d): %s", len(partner.Hits())-hits, c)
	}
	screenshot(t, ctx, "try-confirm")
	do("confirm", chromedp.Click(chromedp.CSS(`button[value=confirm]`)), chromedp.WaitVisible(chromedp.CSS(`.try-result`)))
	if r := text(`.try-result`); !strings.Contains(r, "You asked: move it") || !strings.Contains(r, "Signed receipt") || len(partner.Hits()) != hits+1 {
		t.Fatalf("after confirming: %s", r)
	}
	screenshot(t, ctx, "try-result")

	do("charts", chromedp.Navigate(env.URL+"/developer/usage"), chromedp.WaitVisible(chromedp.CSS(`svg.chart rect.bar`)))
	width, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`document.querySelector("svg.chart rect.bar").getBoundingClientRect().width`))
	if err != nil || width <= 0 {
		t.Fatalf("the bar is not laid out: %v %v", width, err)
	}
	screenshot(t, ctx, "usage")
	do("the chart opens the calls", chromedp.Click(chromedp.CSS(`figure.chart-box figcaption a`)), chromedp.WaitVisible(chromedp.CSS(`table.calls`)))
	if c := text(`table.calls`); !strings.Contains(c, "@browse-write") || !strings.Contains(c, "Succeeded") {
		t.Fatalf("the call log: %s", c)
	}
	screenshot(t, ctx, "calls")
	// At phone width (390 px) nothing overflows sideways: the call log becomes cards, the
	// charts shrink with their viewBox.
	for _, page := range []string{"/developer/calls", "/developer/usage", "/marketplace", "/marketplace/@browse-write"} {
		do("phone "+page, chromedp.EmulateViewport(390, 844), chromedp.Navigate(env.URL+page), chromedp.WaitVisible(chromedp.CSS(`main h1`)))
		over, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth`))
		if err != nil || over {
			screenshot(t, ctx, "phone-overflow")
			t.Fatalf("%s overflows at 390 px (%v)", page, err)
		}
	}
	screenshot(t, ctx, "marketplace-intent-phone")
	do("desktop again", chromedp.EmulateViewport(1100, 900), chromedp.Navigate(env.URL+"/developer/calls"), chromedp.WaitVisible(chromedp.CSS(`table.calls`)))
	do("a call", chromedp.Click(chromedp.CSS(`table.calls tbody a[href^="/developer/calls/"]`)), chromedp.WaitVisible(chromedp.CSS(`main pre`)))
	if h := text(`main h1`); h != "Call to @browse-write" {
		t.Fatalf("call detail: %q", h)
	}
}

package portal_test

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// On a phone (390 px) the owner sets an approval rule in the policy form, sees the agent's
// waiting call as a card that fits the screen, and taps Approve: the agent's next call is
// dispatched, once.
func TestApprovalOnAPhone(t *testing.T) {
	env, partner := withPartner(t, nil)
	pub := env.Onboard(t, "phone-pub@example.com")["apiKey"].(string)
	publishLive(t, env, pub, weather(partner, "@phone-quotes", "QUERY"), true)
	const email = "phone@example.com"
	agent := env.Onboard(t, email)["apiKey"].(string)
	ctx := browser(t)
	do, text := steps(t, ctx)
	do("a phone", chromedp.EmulateViewport(390, 844))
	do("request a code", chromedp.Navigate(env.URL+"/developer/sign-in"), chromedp.WaitVisible(chromedp.CSS(`#email`)),
		chromedp.SendKeys(chromedp.CSS(`#email`), email), chromedp.Click(chromedp.CSS(`button[type=submit]`)), chromedp.WaitVisible(chromedp.CSS(`#code`)))
	do("sign in", chromedp.SendKeys(chromedp.CSS(`#code`), env.Inbox.Code(t, email, 2 /* the agent's, then this one */)),
		chromedp.Click(chromedp.CSS(`form[action="/developer/sign-in/code"] button`)), chromedp.WaitVisible(chromedp.CSS(`table`)))

	do("the policy page", chromedp.Navigate(env.URL+"/developer/policy"), chromedp.WaitVisible(chromedp.CSS(`#approval_aboveUsd`)))
	save := chromedp.Click(chromedp.CSS(`form[action="/developer/policy"] button[type=submit]`))
	do("a cap of 0", chromedp.SendKeys(chromedp.CSS(`#cap_hour`), "0"), save, chromedp.WaitVisible(chromedp.CSS(`#cap_hour-error`)))
	do("ask me first for QUERY calls", chromedp.Evaluate[chromedp.Void](`document.querySelector("#cap_hour").value = ""`), chromedp.Click(chromedp.CSS(`input[name=approval_categories][value=QUERY]`)), save,
		chromedp.WaitVisible(chromedp.CSS(`.flash`)))

	st, out := env.REST(t, "POST", "/v1/invoke", agent, map[string]any{"message": "@phone-quotes hello"})
	id, _ := errDetails(out)["requestId"].(string)
	if st != 409 || errCodeOf(out) != "APPROVAL_REQUIRED" || id == "" {
		t.Fatalf("a QUERY call under the approval rule: %d %v", st, out)
	}
	do("the inbox", chromedp.Navigate(env.URL+"/developer/approvals"), chromedp.WaitVisible(chromedp.CSS(`form.decide button`)))
	if wide, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > 390`)); err != nil || wide {
		t.Errorf("the inbox scrolls sideways at 390 px (%v)", err)
	}
	hits := len(partner.Hits())
	do("approve", chromedp.Click(chromedp.CSS(`form.decide button[value=approve]`)), chromedp.WaitVisible(chromedp.CSS(`.flash`)))
	if f := text(`.flash`); f == "" {
		t.Fatal("no word after approving")
	}
	for range 2 {
		if st, out := env.REST(t, "POST", "/v1/invoke", agent, map[string]any{"message": "@phone-quotes hello", "confirmRequestId": id}); st != 200 {
			t.Fatalf("the call approved on the phone: %d %v", st, out)
		}
	}
	if got := len(partner.Hits()) - hits; got != 1 {
		t.Fatalf("the approved call reached the partner %d times", got)
	}
}

package portal_test

import (
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"

	"github.com/oauth2-proxy/mockoidc"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
)

// Sign-in through a real OpenID Connect provider (mockoidc: discovery, authorization code
// with PKCE, signed ID tokens) in-process: the human follows the redirects and lands signed in,
// on the same account as the agent that verified the same e-mail. An unverified e-mail and a
// callback this browser did not start are refused.
func TestSignInWithOpenIDConnect(t *testing.T) {
	idp, err := mockoidc.Run()
	if err != nil {
		t.Fatal(err)
	}
	defer idp.Shutdown()
	cfg := idp.Config()
	env := apptest.Start(t, apptest.Options{Config: func(c *apptest.Config) {
		c.OIDCProviders = "label=Test IdP,issuer=" + cfg.Issuer + ",client_id=" + cfg.ClientID + ",client_secret=" + cfg.ClientSecret
	}})
	agent := env.Onboard(t, "oidc@example.com")

	h := newHuman(t, env) // follows redirects, as a browser does
	if _, body := h.get("/developer/sign-in"); !strings.Contains(body, "Sign in with Test IdP") {
		t.Fatalf("no provider button:\n%s", body)
	}
	idp.QueueUser(&mockoidc.MockUser{Subject: "u1", Email: "oidc@example.com", EmailVerified: true})
	st, body := h.get("/developer/sign-in/oidc/0")
	if st != 200 || !strings.Contains(body, "<h1>Account</h1>") || !strings.Contains(body, agent["userId"].(string)) {
		t.Fatalf("OIDC sign-in: %d\n%s", st, body)
	}
	if _, body := h.get("/developer/settings"); !strings.Contains(body, "with identity provider "+strings.TrimPrefix(cfg.Issuer, "http://")) {
		t.Fatalf("the session does not say it came from the provider")
	}

	// An e-mail the provider has not verified is refused.
	h2 := newHuman(t, env)
	idp.QueueUser(&mockoidc.MockUser{Subject: "u2", Email: "unverified@example.com", EmailVerified: false})
	if st, body := h2.get("/developer/sign-in/oidc/0"); st != 401 || !strings.Contains(body, "has not verified") {
		t.Fatalf("unverified e-mail: %d\n%s", st, body)
	}
	// A callback without this browser's flow (a forged or replayed state) is refused.
	jar, _ := cookiejar.New(nil)
	stranger := &http.Client{Jar: jar}
	resp, err := stranger.Get(env.URL + "/developer/sign-in/oidc/callback?state=x&code=y")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("callback without a flow: %d", resp.StatusCode)
	}
}

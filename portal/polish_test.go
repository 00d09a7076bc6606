package portal_test

import (
	"io"
	"net/http"
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

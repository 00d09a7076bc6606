package app

import (
	"html/template"
	"net/http"
)

// signInOff is what /developer answers where nobody can sign in (production without a mailer
// or an identity provider): why, and how a person gets in anyway, instead of a bare 404.
var signInOff = template.Must(template.New("off").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sign-in is off · Switchboard</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 40rem; margin: 3rem auto; padding: 0 1rem; line-height: 1.5">
<h1>Sign-in is off on this deployment</h1>
<p>This Switchboard has no mailer (<code>SWITCHBOARD_SMTP_URL</code>) and no identity provider
(<code>SWITCHBOARD_OIDC_PROVIDERS</code>), so nobody can sign in or sign up by e-mail here.</p>
<p><strong>Need an API key?</strong> Ask the operator of {{.}}. They issue one with</p>
<pre>switchboard admin account create --email you@example.com
switchboard admin key issue --email you@example.com --scopes read,partner</pre>
<p><strong>The operator</strong> turns sign-in on by setting <code>SWITCHBOARD_SMTP_URL</code>
(or <code>SWITCHBOARD_OIDC_PROVIDERS</code>) and restarting.</p>
<p>Agents: <a href="/llms.txt">/llms.txt</a>.</p>
</body></html>
`))

// mountSignInOff answers the portal's paths with the sign-in-off page.
func mountSignInOff(mux *http.ServeMux, baseURL string) {
	page := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_ = signInOff.Execute(w, baseURL)
	}
	mux.HandleFunc("GET /developer", page)
	mux.HandleFunc("GET /developer/", page)
}

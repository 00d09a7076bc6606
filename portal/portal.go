// Package portal is the door for humans: server-rendered pages under /developer, signed in
// with an e-mail one-time code, where a human issues the API keys they paste to their agents.
// Every action calls the same kernel tools as MCP and REST, with the signed-in session as the
// Principal, so no rule has a second copy here; what only the portal does (the wallet export,
// sessions, charts, integrations, connections) is kernel tools only a session may call.
package portal

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/shopspring/decimal"
	"github.com/switchboard-hq/switchboard/portal/present"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/discover"
	"github.com/switchboard-hq/switchboard/tools/integrations"
	"github.com/switchboard-hq/switchboard/tools/keys"
	"github.com/switchboard-hq/switchboard/tools/oauth"
	"github.com/switchboard-hq/switchboard/tools/onboarding"
	"github.com/switchboard-hq/switchboard/tools/sessions"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

// PageCSP is the portal pages' Content-Security-Policy: scripts and styles only from files
// this site serves (the copy buttons are static/copy.js), no inline code, no framing.
// form-action is left open: the OAuth consent redirects to the MCP host's own address.
const PageCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"

// SecurityHeaders sets the headers every response of the service carries: csp, no MIME
// sniffing, no framing, and no path or query (an OAuth code, a connect slug) sent to other
// sites in Referer.
func SecurityHeaders(h http.Header, csp string) {
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
}

// CookieName is the session cookie.
const CookieName = "sb_session"

// Options are the portal's dependencies.
type Options struct {
	Kernel   *tools.Kernel
	Sessions *sessions.Service
	// SignIn checks an e-mail code and returns the account (onboarding.Service.SignIn).
	// nil when no mailer is configured: only the identity providers sign in.
	SignIn func(ctx context.Context, email, code, clientAddr string) (string, error)
	// CodesInLog says the development mailer writes codes to the server's log instead of
	// e-mailing them (the test environment without SMTP): the sign-in page says where to look.
	CodesInLog bool
	// AccountForEmail returns (creating) the account of an e-mail an identity provider verified.
	AccountForEmail func(ctx context.Context, email string) (string, error)
	OIDC            []OIDCProvider // sign-in buttons besides the e-mail code
	// Integrations finds an integration for its public connect page and manifest; the
	// partner's own list and form go through integration_list and integration_create.
	Integrations *integrations.Service
	OpenAPI      []byte           // the OpenAPI document the docs' API reference is rendered from
	Now          func() time.Time // nil: time.Now
	BaseURL      string
	// StdioDataDir is the data directory a `switchboard stdio` on the server's machine opens
	// to share its accounts: the issued key's Claude Desktop snippet runs stdio with it. Empty
	// (hosted, production, PostgreSQL): the snippet adds the server by its URL instead.
	StdioDataDir string
	CSRFKey      []byte         // keys the per-session form tokens
	Ceiling      keys.Limits    // the account's own ceiling, shown beside the key form
	OAuth        *oauth.Service // MCP authorization; nil: hosts connect with pasted keys only
	// Limiter counts sign-in steps and client registrations per address: the kernel's, so
	// replicas sharing a Redis share these limits too. nil: counted in this process.
	Limiter tools.Limiter
	Log     *slog.Logger

	// The marketplace (market.go); the charts and call logs are the usage_* tools.
	Marketplace *discover.Service // nil: the marketplace is not served
	// TryAs is the principal a session's Try it calls are made as, with the scopes the call
	// needs (keys.Service.ForSession).
	TryAs func(ctx context.Context, p *tools.Principal, scopes []string) (*tools.Principal, error)
}

var notFound = tools.Errorf(tools.CodeNotFound, "there is no page at this address; use the navigation above, or start from the documentation")

// signInsPerMinute bounds sign-in requests per client address (codes have their own limits).
const signInsPerMinute = 20

type portal struct {
	o       Options
	limiter tools.Limiter
	pages   map[string]*template.Template
	oidc    providers
}

// New returns the /developer handler, protected against cross-site requests.
func New(o Options) (http.Handler, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	p := &portal{o: o, pages: map[string]*template.Template{}, oidc: providers{found: map[int]*oidc.Provider{}}, limiter: limiterOf(o)}
	funcs := present.Funcs()
	for _, page := range append([]string{"signin", "account", "keys", "settings", "intents", "intent_form", "intent", "partner", "docs", "integrations", "connect", "consent", "connections", "error", "wallet_export"}, append(append(marketPages, webhookPages...), policyPages...)...) {
		t, err := template.New(page).Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", "templates/parts.html", "templates/"+page+".html")
		if err != nil {
			return nil, err
		}
		p.pages[page] = t
	}
	static, _ := fs.Sub(staticFiles, "static")
	favicon, _ := fs.ReadFile(static, "logo.svg")
	mux := http.NewServeMux()
	mux.Handle("GET /developer/static/", http.StripPrefix("/developer/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /docs", p.docsIndex)
	mux.HandleFunc("GET /docs.md", p.docsIndex)
	mux.HandleFunc("GET /docs/{page}", p.doc)
	mux.Handle("GET /docs/screenshots/", docImages)
	mux.HandleFunc("GET /sdk/{path...}", p.sdkReadme)
	mux.HandleFunc("GET /developer/sign-in", p.signInPage)
	mux.Handle("POST /developer/sign-in", p.limited(p.sendCode))
	mux.Handle("POST /developer/sign-in/code", p.limited(p.checkCode))
	mux.Handle("GET /developer/sign-in/oidc/callback", p.limited(p.oidcCallback))
	mux.Handle("GET /developer/sign-in/oidc/{n}", p.limited(p.oidcStart))
	mux.Handle("GET /developer", p.authed(p.account))
	mux.Handle("GET /developer/api-keys", p.authed(p.keys))
	mux.Handle("POST /developer/api-keys", p.authed(p.issueKey))
	mux.Handle("POST /developer/api-keys/{id}/revoke", p.authed(p.revokeKey))
	mux.Handle("GET /developer/settings", p.authed(p.settings))
	mux.Handle("POST /developer/sessions/{id}/revoke", p.authed(p.revokeSession))
	mux.Handle("POST /developer/settings/signing", p.authed(p.setSigning))
	mux.Handle("POST /developer/credit/topup", p.authed(p.topup))
	mux.Handle("GET /developer/settings/wallet-export", p.authed(p.exportPage))
	mux.Handle("POST /developer/settings/wallet-export", p.authed(p.exportAction))
	mux.Handle("GET /developer/intents", p.authed(p.intents))
	mux.Handle("GET /developer/intents/new", p.authed(p.newIntentPage))
	mux.Handle("POST /developer/intents/new", p.authed(p.newIntent))
	mux.Handle("GET /developer/intents/{id}", p.authed(p.intent))
	mux.Handle("POST /developer/intents/{id}", p.authed(p.intentAction))
	mux.Handle("GET /developer/partner/settings", p.authed(p.partnerProfile))
	mux.Handle("GET /developer/integrations", p.authed(p.integrationsPage))
	mux.Handle("POST /developer/integrations", p.authed(p.createIntegration))
	p.marketRoutes(mux)
	mux.HandleFunc("GET /connect/{slug}", p.connect)
	mux.HandleFunc("POST /connect/{slug}", p.connect)
	mux.HandleFunc("GET /connect/{slug}/manifest.json", p.manifest)
	mux.HandleFunc("GET /oauth/authorize", p.authorize)
	mux.HandleFunc("POST /oauth/authorize", p.authorize)
	mux.Handle("GET /developer/webhooks", p.authed(p.webhooks))
	mux.Handle("POST /developer/webhooks", p.authed(p.createWebhook))
	mux.Handle("POST /developer/webhooks/{id}/delete", p.authed(p.deleteWebhook))
	mux.Handle("POST /developer/webhooks/deliveries/{id}/replay", p.authed(p.replayWebhook))
	mux.Handle("GET /developer/approvals", p.authed(p.approvals))
	mux.Handle("POST /developer/approvals/{id}", p.authed(p.decideApproval))
	mux.Handle("GET /developer/policy", p.authed(p.policy))
	mux.Handle("POST /developer/policy", p.authed(p.setPolicy))
	mux.Handle("GET /developer/connections", p.authed(p.connections))
	mux.Handle("POST /developer/connections/{id}/revoke", p.authed(p.revokeConnection))
	mux.Handle("POST /developer/sign-out", p.authed(p.signOut))
	mux.Handle("POST /developer/sign-out-everywhere", p.authed(p.signOutEverywhere))
	mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/svg+xml")
		w.Header().Set("Cache-Control", "public, max-age=86400")
		w.Write(favicon)
	})
	// Anything else under the portal's paths: the styled error page, with navigation.
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { p.fail(w, r, notFound) })
	// Browsers say where a request comes from (Sec-Fetch-Site, Origin): a cross-site
	// state-changing request is refused before any handler runs; forms also carry a token.
	return http.NewCrossOriginProtection().Handler(mux), nil
}

// view is what every page renders.
type view struct {
	Title    string
	SignedIn bool
	CSRF     string
	BaseURL  string
	Data     any
	Form     map[string]any
	Errors   map[string]string
	Nav      string // the navigation entry of this page, marked aria-current
	Notice   string // an account event the human must know of (a wallet key exported elsewhere)
}

// navOf is the navigation entry a page belongs to.
var navOf = map[string]string{"account": "account", "keys": "keys", "settings": "settings", "intents": "intents", "intent_form": "intents",
	"intent": "intents", "partner": "intents", "integrations": "integrations", "connections": "connections", "docs": "docs", "wallet_export": "settings", "signin": "signin",
	"marketplace": "marketplace", "listing": "marketplace", "usage": "usage", "intent_usage": "usage", "calls": "calls", "call": "calls",
	"approvals": "approvals", "policy": "policy"}

func (p *portal) render(w http.ResponseWriter, status int, page string, v view) {
	v.BaseURL = p.o.BaseURL
	if v.Nav == "" {
		v.Nav = navOf[page]
	}
	if nw, ok := w.(*noticeWriter); ok {
		v.Notice = nw.notice
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	SecurityHeaders(w.Header(), PageCSP)
	w.WriteHeader(status)
	if err := p.pages[page].ExecuteTemplate(w, "layout", v); err != nil {
		p.o.Log.Error("render", "page", page, "err", err)
	}
}

func (p *portal) csrf(sessionID string) string {
	m := hmac.New(sha256.New, p.o.CSRFKey)
	m.Write([]byte("portal form v1\x00" + sessionID))
	return hex.EncodeToString(m.Sum(nil))[:32]
}

type authedHandler func(w http.ResponseWriter, r *http.Request, pr *tools.Principal)

// authed resolves the session cookie; without a live session a page sends the human to sign
// in, and a form post is refused unless it carries the session's token.
func (p *portal) authed(h authedHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var token string
		if c, err := r.Cookie(CookieName); err == nil {
			token = c.Value
		}
		pr, err := p.o.Sessions.Authenticate(r.Context(), token)
		if errors.Is(err, sessions.ErrNoSession) {
			http.Redirect(w, r, "/developer/sign-in", http.StatusSeeOther)
			return
		}
		if err != nil {
			p.fail(w, r, tools.Translate(err))
			return
		}
		if r.Method == http.MethodPost && !p.validForm(r, pr) {
			p.fail(w, r, tools.Errorf(tools.CodeForbidden, "this form is stale or was not sent from this site; reload the page and try again"))
			return
		}
		h(p.withNotice(w, r, pr), r, pr)
	})
}

// limited bounds a sign-in step per client address: 429 with Retry-After past the limit.
func (p *portal) limited(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ok, wait, err := p.limiter.Allow(r.Context(), "signin:"+r.Header.Get(tools.HeaderClientAddr), signInsPerMinute)
		switch {
		case err != nil:
			// As the kernel does for calls that write: never let them through unlimited.
			p.o.Log.WarnContext(r.Context(), "rate limiter unavailable; sign-in refused", "err", err)
			e := tools.Errorf(tools.CodeUnavailable, "signing in is paused for a moment: the rate limiter is unreachable; retry in a few seconds")
			e.RetryAfter = 2 * time.Second
			p.fail(w, r, e)
			return
		case !ok:
			e := tools.Errorf(tools.CodeRateLimited, "too many sign-in attempts from this address; wait a minute and try again")
			e.RetryAfter = wait + time.Second
			p.fail(w, r, e)
			return
		}
		h(w, r)
	})
}

// limiterOf is o's limiter, or one in this process.
func limiterOf(o Options) tools.Limiter {
	if o.Limiter != nil {
		return o.Limiter
	}
	return tools.NewRateLimiter(o.Now)
}

// sessionOf is the signed-in human of r, nil when there is none.
func (p *portal) sessionOf(r *http.Request) *tools.Principal {
	c, err := r.Cookie(CookieName)
	if err != nil {
		return nil
	}
	pr, err := p.o.Sessions.Authenticate(r.Context(), c.Value)
	if err != nil {
		return nil
	}
	return pr
}

// validForm checks a posted form's token against the session.
func (p *portal) validForm(r *http.Request, pr *tools.Principal) bool {
	return hmac.Equal([]byte(r.PostFormValue("csrf")), []byte(p.csrf(pr.SessionID)))
}

// fail answers with the error page, at the HTTP status of the error's code: a request the
// tools refused (another account's id, a stale form: 4xx) is logged at INFO, our own failure
// (5xx) at ERROR.
func (p *portal) fail(w http.ResponseWriter, r *http.Request, e *tools.Error) {
	status := e.Code.HTTPStatus()
	level := slog.LevelInfo
	if status >= http.StatusInternalServerError {
		level = slog.LevelError
	}
	p.o.Log.Log(r.Context(), level, "portal", "path", r.URL.Path, "status", status, "code", e.Code, "err", e.Error())
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((e.RetryAfter+time.Second-1)/time.Second)))
	}
	v := view{Title: http.StatusText(status), Data: e}
	if pr := p.sessionOf(r); pr != nil { // the navigation of a signed-in human
		v.SignedIn, v.CSRF = true, p.csrf(pr.SessionID)
	}
	p.render(w, status, "error", v)
}

// call runs a kernel tool as the principal and returns its JSON object result.
func (p *portal) call(r *http.Request, pr *tools.Principal, tool string, args any) (map[string]any, *tools.Error) {
	out, e := p.run(r, pr, tool, args)
	if e != nil {
		return nil, e
	}
	b, _ := json.Marshal(out)
	var m map[string]any
	json.Unmarshal(b, &m)
	return m, nil
}

// run runs a kernel tool as the principal and returns what its handler returned.
func (p *portal) run(r *http.Request, pr *tools.Principal, tool string, args any) (any, *tools.Error) {
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, tools.Errorf(tools.CodeBadInput, "arguments: %v", err)
	}
	return p.o.Kernel.Call(r.Context(), tools.Request{Tool: tool, Args: raw, Principal: pr,
		ClientAddr: r.Header.Get(tools.HeaderClientAddr), RequestID: r.Header.Get(tools.HeaderRequestID)})
}

// callAs runs a kernel tool whose handler answers Out (a session-only tool's typed result,
// which the pages render as it is).
func callAs[Out any](p *portal, r *http.Request, pr *tools.Principal, tool string, args any) (Out, *tools.Error) {
	out, e := p.run(r, pr, tool, args)
	if e != nil {
		var zero Out
		return zero, e
	}
	return out.(Out), nil
}

// Sign-in.

func (p *portal) signInPage(w http.ResponseWriter, r *http.Request) {
	p.render(w, http.StatusOK, "signin", view{Title: "Sign in", Data: p.signInData(signInData{})})
}

type signInData struct {
	EmailCode   bool // the e-mail code sign-in is offered
	CodesInLog  bool // the codes are in the server's log, not e-mailed
	CodeStep    bool
	Email, Code string
	Providers   []string // labels of the OpenID Connect buttons, by index
}

func (p *portal) signInData(d signInData) signInData {
	d.EmailCode, d.CodesInLog = p.o.SignIn != nil, p.o.CodesInLog
	for _, pv := range p.o.OIDC {
		d.Providers = append(d.Providers, pv.Label)
	}
	return d
}

func toolsError(err error) *tools.Error { return tools.Translate(err) }

// startSession opens a session for a human who proved an e-mail, and sends them in.
func (p *portal) startSession(w http.ResponseWriter, r *http.Request, accountID, method string) {
	token, err := p.o.Sessions.Start(r.Context(), accountID, method, r.Header.Get(tools.HeaderClientAddr), r.UserAgent())
	if err != nil {
		p.fail(w, r, tools.Translate(err))
		return
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: token, Path: "/", HttpOnly: true,
		Secure: strings.HasPrefix(p.o.BaseURL, "https://"), SameSite: http.SameSiteLaxMode})
	http.SetCookie(w, &http.Cookie{Name: nextCookie, Value: "", Path: "/", MaxAge: -1})
	http.Redirect(w, r, next(r), http.StatusSeeOther)
}

func (p *portal) sendCode(w http.ResponseWriter, r *http.Request) {
	if p.o.SignIn == nil {
		p.fail(w, r, notFound)
		return
	}
	email := strings.TrimSpace(r.PostFormValue("email"))
	_, e := p.call(r.WithContext(onboarding.FromSignInPage(r.Context())), nil, "agent_signup", map[string]any{"email": email})
	if e != nil {
		msg := e.Message
		if e.Code == tools.CodeBadInput {
			msg = "enter a valid e-mail address"
		}
		p.render(w, http.StatusUnprocessableEntity, "signin", view{Title: "Sign in", Data: p.signInData(signInData{Email: email}), Errors: map[string]string{"email": msg}})
		return
	}
	p.render(w, http.StatusOK, "signin", view{Title: "Enter your code", Data: p.signInData(signInData{CodeStep: true, Email: email})})
}

func (p *portal) checkCode(w http.ResponseWriter, r *http.Request) {
	if p.o.SignIn == nil {
		p.fail(w, r, notFound)
		return
	}
	email, code := strings.TrimSpace(r.PostFormValue("email")), strings.TrimSpace(r.PostFormValue("code"))
	addr := r.Header.Get(tools.HeaderClientAddr)
	var accountID string
	e := tools.CheckText("email", email)
	if e == nil {
		e = tools.CheckText("code", code)
	}
	if e == nil {
		var err error
		accountID, err = p.o.SignIn(r.Context(), email, code, addr)
		e = tools.Translate(err)
	}
	if e != nil {
		p.render(w, http.StatusUnprocessableEntity, "signin", view{Title: "Enter your code",
			Data: signInData{CodeStep: true, Email: email, Code: code}, Errors: map[string]string{"code": e.Message}})
		return
	}
	p.startSession(w, r, accountID, "email_code")
}

// Pages.

func (p *portal) page(pr *tools.Principal, title string, data any) view {
	return view{Title: title, SignedIn: true, CSRF: p.csrf(pr.SessionID), Data: data}
}

func (p *portal) account(w http.ResponseWriter, r *http.Request, pr *tools.Principal) {
	acct, e := p.call(r, pr, "account_get", nil)
	if e != nil {
		p.fail(w, r, e)
		return
	}
	if v, err := decimal.NewFromString(r.URL.Query().Get("topped")); err == nil && v.IsPositive() {
		acct["toppedUp"] = v.String()
	}
	p.render(w, http.StatusOK, "account", p.page(pr, "Account", acct))
}

// topup buys credit from the embedded wallet (credit_topup with payWithWallet: the account's
// signing must be on), and shows the account with what was bought.
func (p *portal) topup(w http.ResponseWriter, r *http.Request, pr *tools.Principal) {
	amount, err := decimal.NewFromString(strings.TrimSpace(r.PostFormValue("amountUsd")))
	if err != nil {
		p.fail(w, r, tools.Errorf(tools.CodeBadInput, "the amount %q is not a number of USD; enter e.g. 5", r.PostFormValue("amountUsd")))
		return
	}
	out, e := p.call(r, pr, "credit_topup", map[string]any{"amountUsd": json.Number(amount.String()), "payWithWallet": true})
	if e != nil {
		p.fail(w, r, e)
		return
	}
	http.Redirect(w, r, "/developer?topped="+url.QueryEscape(fmt.Sprint(out["creditedUsd"])), http.StatusSeeOther)
}

type keysData struct {
	Keys    []any
	Scopes  []string
	Issued  map[string]any
	Flash   string
	Ceiling struct{ Spend, Rate string }
	// StdioDataDir is Options.StdioDataDir as a JSON string, for the stdio snippet; empty: none.
	StdioDataDir string
}

func (p *portal) keysView(r *http.Request, pr *tools.Principal) (keysData, *tools.Error) {
	list, e := p.call(r, pr, "api_key_list", nil)
	if e != nil {
		return keysData{}, e
	}
	d := keysData{Scopes: tools.ScopeNames()}
	if p.o.StdioDataDir != "" {
		dir, _ := json.Marshal(p.o.StdioDataDir) // a path with a backslash or a quote stays one JSON string
		d.StdioDataDir = string(dir)
	}
	d.Keys, _ = list["keys"].([]any)
	countMintedUnder(d.Keys)
	d.Ceiling.Spend = tools.USD(p.o.Ceiling.SpendMicro).String()
	d.Ceiling.Rate = strconv.Itoa(p.o.Ceiling.RatePerMinute)
	return d, nil
}

// countMintedUnder sets each listed key's "mintedUnder": how many live keys were minted under
// it at any depth, which revoking it revokes too (the revoke confirmation says so).
func countMintedUnder(keys []any) {
	parent := map[string]string{}
	for _, k := range keys {
		if m, ok := k.(map[string]any); ok && m["revokedAt"] == nil {
			id, _ := m["id"].(string)
			parent[id], _ = m["parentId"].(string)
		}
	}
	under := map[string]int{}
	for id := range parent {
		for p := parent[id]; p != ""; p = parent[p] {
			under[p]++
		}
	}
	for _, k := range keys {
		if m, ok := k.(map[string]any); ok {
			id, _ := m["id"].(string)
			m["mintedUnder"] = under[id]
		}
	}
}

func (p *portal) keys(w http.ResponseWriter, r *http.Request, pr *tools.Principal) {
	d, e := p.keysView(r, pr)
	if e != nil {
		p.fail(w, r, e)
		return
	}
	if r.URL.Query().Get("revoked") != "" {
		d.Flash = "The key was revoked: it stops working at once."
	}
	v := p.page(pr, "API keys", d)
	v.Form = newKeyForm()
	p.render(w, http.StatusOK, "keys", v)
}

// newKeyForm is the key form as it opens: read ticked, the least a key does, so the form
// submits as it is.
func newKeyForm() map[string]any {
	return map[string]any{"scopes": []string{string(tools.ScopeRead)}}
}

func (p *portal) issueKey(w http.ResponseWriter, r *http.Request, pr *tools.Principal) {
	form := map[string]any{"name": strings.TrimSpace(r.PostFormValue("name")), "scopes": r.PostForm["scopes"],
		"spendLimitUsd": strings.TrimSpace(r.PostFormValue("spendLimitUsd")), "rateLimitPerMinute": strings.TrimSpace(r.PostFormValue("rateLimitPerMinute"))}
	args := map[string]any{"name": form["name"], "scopes": r.PostForm["scopes"]}
	errs := map[string]string{}
	if len(r.PostForm["scopes"]) == 0 {
		errs["scopes"] = "choose at least one scope"
	}
	if v := form["spendLimitUsd"].(string); v != "" {
		if !json.Valid([]byte(v)) || strings.ContainsAny(v, `"{}[]`) {
			errs["spendLimitUsd"] = "a number of US dollars, e.g. 25 or 2.5"
		} else {
			args["spendLimitUsd"] = json.RawMessage(v)
		}
	}
	if v := form["rateLimitPerMinute"].(string); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			errs["rateLimitPerMinute"] = "a whole number of requests per minute"
		}
		args["rateLimitPerMinute"] = n
	}
	if e := tools.CheckText("name", present.Str(form["name"])); e != nil || form["name"] == "" {
		errs["name"] = "give the key a name, e.g. the agent or machine that uses it"
	}
	var issued map[string]any
	if len(errs) == 0 {
		out, e := p.call(r, pr, "api_key_create", args)
		if e != nil {
			errs = present.FieldErrors(e, "name", "scopes", "spendLimitUsd", "rateLimitPerMinute")
		}
		issued = out
	}
	d, e := p.keysView(r, pr)
	if e != nil {
		p.fail(w, r, e)
		return
	}
	v := p.page(pr, "API keys", d)
	status := http.StatusOK
	if len(errs) > 0 {
		v.Form, v.Errors, status = form, errs, http.StatusUnprocessableEntity
	} else {
		d.Issued = issued
		v.Data, v.Form = d, newKeyForm()
	}
	p.render(w, status, "keys", v)
}

func (p *portal) revokeKey(w http.ResponseWriter, r *http.Request, pr *tools.Principal) {
	if _, e := p.call(r, pr, "api_key_revoke", map[string]any{"keyId": r.PathValue("id")}); e != nil {
		p.fail(w, r, e)
		return
	}
	http.Redirect(w, r, "/developer/api-keys?revoked=1", http.StatusSeeOther)
}

type settingsData struct {
	Account  map[string]any
	Sessions []sessions.Info
	Current  string
	Flash    string
}

func (p *portal) settings(w http.ResponseWriter, r *http.Request, pr *tools.Principal) {
	acct, e := p.call(r, pr, "account_get", nil)
	if e != nil {
		p.fail(w, r, e)
		return
	}
	list, e := callAs[sessions.ListOutput](p, r, pr, "session_list", nil)
	if e != nil {
		p.fail(w, r, e)
		return
	}
	d := settingsData{Account: acct, Sessions: list.Sessions, Current: list.Current}
	switch {
	case r.URL.Query().Get("revoked") != "":
		d.Flash = "Signed that session out."
	case r.URL.Query().Get("signing") == "fresh":
		d.Flash = "Turning signing on needs a fresh sign-in: sign out, sign in again, then turn it on."
	case r.URL.Query().Get("signing") != "":
		d.Flash = "Signing on your agents' behalf is now " + r.URL.Query().Get("signing") + "."
	}
	p.render(w, http.StatusOK, "settings", p.page(pr, "Settings", d))
}

func (p *portal) setSigning(w http.ResponseWriter, r *http.Request, pr *tools.Principal) {
	on := r.PostFormValue("signing") == "on"
	if _, e := p.run(r, pr, "signing_set", map[string]any{"on": on}); e != nil {
		if e.Code != tools.CodeForbidden {
			p.fail(w, r, e)
			return
		}
		http.Redirect(w, r, "/developer/settings?signing=fresh", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, "/developer/settings?signing="+map[bool]string{true: "on", false: "off"}[on], http.StatusSeeOther)
}

func (p *portal) revokeSession(w http.ResponseWriter, r *http.Request, pr *tools.Principal) {
	if _, e := p.run(r, pr, "session_revoke", map[string]any{"sessionId": r.PathValue("id")}); e != nil {
		p.fail(w, r, e)
		return
	}
	http.Redirect(w, r, "/developer/settings?revoked=1", http.StatusSeeOther)
}

func (p *portal) signOut(w http.ResponseWriter, r *http.Request, pr *tools.Principal) {
	p.endSessions(w, r, pr, pr.SessionID)
}

func (p *portal) signOutEverywhere(w http.ResponseWriter, r *http.Request, pr *tools.Principal) {
	p.endSessions(w, r, pr, "")
}

// endSessions signs out (the portal's own authentication, like signing in: never refused by
// a rate limit).
func (p *portal) endSessions(w http.ResponseWriter, r *http.Request, pr *tools.Principal, id string) {
	if _, err := p.o.Sessions.Revoke(r.Context(), pr.AccountID, id); err != nil {
		p.fail(w, r, tools.Translate(err))
		return
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: "/", MaxAge: -1, Expires: time.Unix(0, 0), HttpOnly: true,
		Secure: strings.HasPrefix(p.o.BaseURL, "https://"), SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, "/developer/sign-in", http.StatusSeeOther)
}

package portal

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/switchboard-hq/switchboard/portal/present"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/oauth"
)

// The MCP authorization door's human side: the authorize step is a portal page behind the
// sign-in, with the portal's CSRF protection on the consent form; the endpoints MCP hosts
// call (metadata, registration, token, revocation) are portal/oauthapi.

// authorizeParams are the request parameters the consent form carries back.
var authorizeParams = []string{"response_type", "client_id", "redirect_uri", "state", "code_challenge", "code_challenge_method", "resource", "scope"}

type consentData struct {
	ClientName, RedirectHost string
	// ClientDomain is where a client's metadata document is served ("" for a client that
	// registered itself, whose identity nothing vouches for); LocalOnly is a client that only
	// returns to this computer (any program on it could claim the name).
	ClientDomain    string
	LocalOnly       bool
	Params          map[string]string
	Scopes, Chosen  []string
	Requested       []string // the known scopes the client asked for, ticked or not
	Spend, MaxSpend string
	Rate            string // as typed, kept after an error
	MaxRate         int
}

// authorize is the authorization endpoint: the human signs in (the portal's own sign-in, then
// back here), sees who asks and chooses scopes and limits (capped by the account's ceiling).
func (p *portal) authorize(w http.ResponseWriter, r *http.Request) {
	if p.o.OAuth == nil {
		p.fail(w, r, tools.Errorf(tools.CodeNotFound, "signing in MCP hosts is not enabled on this service; paste an API key into your host instead"))
		return
	}
	q := r.URL.Query()
	if r.Method == http.MethodPost {
		// A consent is a signed-in human's form from this site, or nothing happens.
		if pr := p.sessionOf(r); pr == nil || !p.validForm(r, pr) {
			p.fail(w, r, tools.Errorf(tools.CodeForbidden, "this form is stale or was not sent from this site; start the connection again from your MCP host"))
			return
		}
		q = url.Values{}
		for _, k := range authorizeParams {
			q.Set(k, r.PostFormValue(k))
		}
	}
	req, redirectable, oe := p.o.OAuth.CheckAuthorize(r.Context(), q)
	if oe != nil {
		if redirectable {
			redirectWith(w, r, req, url.Values{"error": {oe.Code}, "error_description": {oe.Description}})
			return
		}
		p.fail(w, r, tools.Errorf(tools.CodeBadInput, "this connection request cannot be completed: %s. Start again from your MCP host", oe.Description))
		return
	}
	pr := p.sessionOf(r)
	if pr == nil {
		http.SetCookie(w, &http.Cookie{Name: nextCookie, Value: "/oauth/authorize?" + r.URL.RawQuery, Path: "/", MaxAge: 900, HttpOnly: true, SameSite: http.SameSiteLaxMode})
		http.Redirect(w, r, "/developer/sign-in", http.StatusSeeOther)
		return
	}
	data := p.consentData(req, q, pr, nil)
	if r.Method == http.MethodGet {
		p.render(w, http.StatusOK, "consent", p.page(pr, "Connect "+req.Client.Name, data))
		return
	}
	if r.PostFormValue("decision") != "allow" {
		redirectWith(w, r, req, url.Values{"error": {"access_denied"}, "error_description": {"the account owner denied the connection"}})
		return
	}
	data = p.consentData(req, q, pr, r.PostForm["scopes"])
	args := map[string]any{"name": truncateName(req.Client.Name) + " (MCP connection)", "scopes": data.Chosen}
	if s := strings.TrimSpace(r.PostFormValue("spendLimitUsd")); s != "" {
		args["spendLimitUsd"] = json.Number(s)
	}
	if s := strings.TrimSpace(r.PostFormValue("rateLimitPerMinute")); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			n = -1 // refused by the tool's schema, shown at the field
		}
		args["rateLimitPerMinute"] = n
	}
	out, e := p.call(r, pr, "api_key_create", args)
	if e != nil {
		// Everything typed stays as typed; each problem is shown at its field.
		data.Spend, data.Rate = r.PostFormValue("spendLimitUsd"), r.PostFormValue("rateLimitPerMinute")
		v := p.page(pr, "Connect "+req.Client.Name, data)
		v.Errors = present.FieldErrors(e, "scopes", "spendLimitUsd", "rateLimitPerMinute")
		if len(data.Chosen) == 0 {
			v.Errors["scopes"] = "choose at least one scope"
			delete(v.Errors, "form")
		}
		p.render(w, http.StatusUnprocessableEntity, "consent", v)
		return
	}
	keyID, _ := out["id"].(string)
	code, err := p.o.OAuth.Consent(r.Context(), req, pr.AccountID, keyID)
	if err != nil {
		p.fail(w, r, tools.Translate(err))
		return
	}
	redirectWith(w, r, req, url.Values{"code": {code}, "iss": {p.o.OAuth.Config().Issuer}})
}

func truncateName(s string) string {
	if r := []rune(s); len(r) > 60 {
		return string(r[:60])
	}
	return s
}

func (p *portal) consentData(req *oauth.Request, q url.Values, pr *tools.Principal, chosen []string) consentData {
	params := map[string]string{}
	for _, k := range authorizeParams {
		if v := q.Get(k); v != "" {
			params[k] = v
		}
	}
	var requested []string
	for _, s := range req.Scopes {
		if tools.Scope(s).Known() {
			requested = append(requested, s)
		}
	}
	if chosen == nil {
		chosen = leastPrivilege(requested)
	}
	host := req.RedirectURI
	if u, err := url.Parse(req.RedirectURI); err == nil && u.Host != "" {
		host = u.Scheme + "://" + u.Host
	}
	local := true
	for _, r := range req.Client.RedirectURIs {
		if u, err := url.Parse(r); err != nil || u.Scheme != "http" {
			local = false
		}
	}
	return consentData{ClientName: req.Client.Name, RedirectHost: host, ClientDomain: oauth.ClientDomain(req.Client.ID), LocalOnly: local,
		Params: params, Scopes: tools.ScopeNames(), Chosen: chosen, Requested: requested,
		Spend: tools.USD(min(p.o.Ceiling.SpendMicro, 10_000_000)).String(), MaxSpend: tools.USD(pr.SpendLimitMicro).String(),
		Rate: strconv.Itoa(min(30, pr.RateLimitPerMinute)), MaxRate: pr.RateLimitPerMinute}
}

// leastPrivilege is what the consent form ticks before the human chooses: of the scopes the
// client asked for, only the ones that move no money and change nothing (read, partner);
// read and partner when it asked for none of them. Every client here registered itself (DCR)
// or names itself by a metadata document, so what it asks for is its own claim: a write
// scope (swap, send, wallet, publish, ...) is ticked by the human, never by default.
func leastPrivilege(requested []string) []string {
	safe := []string{string(tools.ScopeRead), string(tools.ScopePartner)}
	var out []string
	for _, s := range safe {
		if slices.Contains(requested, s) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return safe
	}
	return out
}

// redirectWith sends the browser back to the client with the answer and its state.
func redirectWith(w http.ResponseWriter, r *http.Request, req *oauth.Request, v url.Values) {
	u, _ := url.Parse(req.RedirectURI)
	q := u.Query()
	for k, vs := range v {
		q[k] = vs
	}
	if req.State != "" {
		q.Set("state", req.State)
	}
	u.RawQuery = q.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

func (p *portal) connections(w http.ResponseWriter, r *http.Request, pr *tools.Principal) {
	if p.o.OAuth == nil {
		p.fail(w, r, tools.Errorf(tools.CodeNotFound, "MCP connections are not enabled on this service"))
		return
	}
	out, e := callAs[oauth.ConnectionsOutput](p, r, pr, "connection_list", nil)
	if e != nil {
		p.fail(w, r, e)
		return
	}
	p.render(w, http.StatusOK, "connections", p.page(pr, "Connections", map[string]any{"List": out.Connections}))
}

func (p *portal) revokeConnection(w http.ResponseWriter, r *http.Request, pr *tools.Principal) {
	if p.o.OAuth == nil {
		p.fail(w, r, tools.Errorf(tools.CodeNotFound, "MCP connections are not enabled on this service"))
		return
	}
	if _, e := p.run(r, pr, "connection_revoke", map[string]any{"connectionId": r.PathValue("id")}); e != nil {
		p.fail(w, r, e)
		return
	}
	http.Redirect(w, r, "/developer/connections", http.StatusSeeOther)
}

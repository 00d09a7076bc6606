package portal

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/jsonlimit"
	"github.com/switchboard-hq/switchboard/tools/oauth"
)

// The MCP authorization door. The metadata, registration, token and revocation endpoints are
// called by MCP hosts (native apps and browser apps alike: CORS open, no cookies, so no
// cross-site protection applies); the authorize step is a portal page behind the sign-in,
// with the portal's CSRF protection on the consent form.

// registrationsPerMinute bounds client registrations per client address.
const registrationsPerMinute = 20

// OAuthAPI serves /.well-known/oauth-protected-resource (RFC 9728),
// /.well-known/oauth-authorization-server (RFC 8414), /oauth/register (RFC 7591),
// /oauth/token and /oauth/revoke (RFC 7009).
func OAuthAPI(o Options) http.Handler {
	if o.Now == nil {
		o.Now = time.Now
	}
	cfg := o.OAuth.Config()
	limiter := limiterOf(o)
	mux := http.NewServeMux()
	resource := func(w http.ResponseWriter, r *http.Request) {
		writeOAuthJSON(w, http.StatusOK, map[string]any{
			"resource": cfg.Resource, "authorization_servers": []string{cfg.Issuer}, "scopes_supported": tools.ScopeNames(),
			"bearer_methods_supported": []string{"header"}, "resource_name": "Switchboard",
			"resource_documentation": cfg.Issuer + "/docs",
		})
	}
	mux.HandleFunc("GET /.well-known/oauth-protected-resource", resource)
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", resource)
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		writeOAuthJSON(w, http.StatusOK, map[string]any{
			"issuer": cfg.Issuer, "authorization_endpoint": cfg.Issuer + "/oauth/authorize", "token_endpoint": cfg.Issuer + "/oauth/token",
			// MCP 2026-07-28 hosts identify by a client metadata document; the registration
			// endpoint (RFC 7591, deprecated by that revision) stays for older hosts.
			"client_id_metadata_document_supported": o.OAuth.MetadataDocuments(),
			"registration_endpoint":                 cfg.Issuer + "/oauth/register", "revocation_endpoint": cfg.Issuer + "/oauth/revoke",
			"response_types_supported": []string{"code"}, "grant_types_supported": []string{"authorization_code", "refresh_token"},
			"code_challenge_methods_supported": []string{"S256"}, "token_endpoint_auth_methods_supported": []string{"none"},
			"revocation_endpoint_auth_methods_supported": []string{"none"}, "scopes_supported": tools.ScopeNames(),
			"service_documentation": cfg.Issuer + "/docs/mcp-hosts",
		})
	})
	mux.HandleFunc("POST /oauth/register", func(w http.ResponseWriter, r *http.Request) {
		ok, wait, err := limiter.Allow(r.Context(), "register:"+r.Header.Get(tools.HeaderClientAddr), registrationsPerMinute)
		switch {
		case err != nil: // a registration writes: never let it through unlimited
			w.Header().Set("Retry-After", "2")
			writeOAuthJSON(w, http.StatusServiceUnavailable, &oauth.Error{Code: "temporarily_unavailable", Description: "registration is paused for a moment; retry in a few seconds"})
			return
		case !ok:
			w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
			writeOAuthJSON(w, http.StatusTooManyRequests, &oauth.Error{Code: "slow_down", Description: "too many registrations from this address; wait a minute"})
			return
		}
		var reg oauth.Registration
		body, err := io.ReadAll(r.Body) // bounded by the front's body limit
		if err == nil {
			if err := jsonlimit.Request(body); err != nil {
				writeOAuthJSON(w, http.StatusBadRequest, &oauth.Error{Code: "invalid_client_metadata", Description: "the registration is " + err.Error()})
				return
			}
			err = json.Unmarshal(body, &reg)
		}
		if err != nil {
			writeOAuthJSON(w, http.StatusBadRequest, &oauth.Error{Code: "invalid_client_metadata", Description: "the body must be a JSON client registration (RFC 7591)"})
			return
		}
		out, oe := o.OAuth.Register(r.Context(), reg)
		if oe != nil {
			writeOAuthJSON(w, oe.Status, oe)
			return
		}
		writeOAuthJSON(w, http.StatusCreated, out)
	})
	mux.HandleFunc("POST /oauth/token", func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			writeOAuthJSON(w, http.StatusBadRequest, &oauth.Error{Code: "invalid_request", Description: "send application/x-www-form-urlencoded parameters"})
			return
		}
		out, oe := o.OAuth.Exchange(r.Context(), r.PostForm)
		if oe != nil {
			writeOAuthJSON(w, oe.Status, oe)
			return
		}
		writeOAuthJSON(w, http.StatusOK, out)
	})
	mux.HandleFunc("POST /oauth/revoke", func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil || r.PostForm.Get("token") == "" {
			writeOAuthJSON(w, http.StatusBadRequest, &oauth.Error{Code: "invalid_request", Description: "send the token to revoke as the form parameter token"})
			return
		}
		if err := o.OAuth.Revoke(r.Context(), r.PostForm.Get("token")); err != nil {
			writeOAuthJSON(w, http.StatusServiceUnavailable, &oauth.Error{Code: "temporarily_unavailable", Description: "try again"})
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	return cors(mux)
}

// cors opens the host-facing endpoints to browser-based MCP clients: they carry no cookies.
func cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		if r.Method == http.MethodOptions {
			w.Header().Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
			w.Header().Set("Access-Control-Allow-Headers", "Content-Type, Authorization, MCP-Protocol-Version")
			w.Header().Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func writeOAuthJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

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
		v.Errors = fieldErrors(e, "scopes", "spendLimitUsd", "rateLimitPerMinute")
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
	if chosen == nil {
		for _, s := range req.Scopes {
			if tools.Scope(s).Known() {
				chosen = append(chosen, s)
			}
		}
		if len(chosen) == 0 {
			chosen = []string{string(tools.ScopeRead), string(tools.ScopePartner)}
		}
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
		Params: params, Scopes: tools.ScopeNames(), Chosen: chosen,
		Spend: tools.USD(min(p.o.Ceiling.SpendMicro, 10_000_000)).String(), MaxSpend: tools.USD(pr.SpendLimitMicro).String(),
		Rate: strconv.Itoa(min(30, pr.RateLimitPerMinute)), MaxRate: pr.RateLimitPerMinute}
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

type connectionRow struct {
	ID, Name, RedirectHost, Scopes string
	Created                        time.Time
	LastUsed                       *time.Time
}

func (p *portal) connections(w http.ResponseWriter, r *http.Request, pr *tools.Principal) {
	if p.o.OAuth == nil {
		p.fail(w, r, tools.Errorf(tools.CodeNotFound, "MCP connections are not enabled on this service"))
		return
	}
	conns, err := p.o.OAuth.Connections(r.Context(), pr.AccountID)
	if err != nil {
		p.fail(w, r, tools.Translate(err))
		return
	}
	rows := make([]connectionRow, 0, len(conns))
	for _, c := range conns {
		row := connectionRow{ID: c.ID, Created: c.CreatedAt, LastUsed: c.LastUsedAt, Scopes: strings.Join(c.Scopes, ", ")}
		if c.Client != nil {
			row.Name = c.Client.Name
			if len(c.Client.RedirectURIs) > 0 {
				if u, err := url.Parse(c.Client.RedirectURIs[0]); err == nil {
					row.RedirectHost = u.Scheme + "://" + u.Host
				}
			}
		}
		rows = append(rows, row)
	}
	p.render(w, http.StatusOK, "connections", p.page(pr, "Connections", map[string]any{"List": rows}))
}

func (p *portal) revokeConnection(w http.ResponseWriter, r *http.Request, pr *tools.Principal) {
	if p.o.OAuth == nil {
		p.fail(w, r, tools.Errorf(tools.CodeNotFound, "MCP connections are not enabled on this service"))
		return
	}
	if err := p.o.OAuth.RevokeGrant(r.Context(), pr.AccountID, r.PathValue("id")); err != nil {
		p.fail(w, r, tools.Translate(err))
		return
	}
	http.Redirect(w, r, "/developer/connections", http.StatusSeeOther)
}

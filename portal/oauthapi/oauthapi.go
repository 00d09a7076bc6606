// Package oauthapi is the MCP authorization server's endpoints that MCP hosts call: metadata,
// client registration, token and revocation. Hosts are native apps and browser apps alike:
// CORS is open and no cookie is read, so no cross-site protection applies. The authorize step
// is a portal page behind the human's sign-in (portal/oauth.go); every rule is tools/oauth's.
package oauthapi

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/jsonlimit"
	"github.com/switchboard-hq/switchboard/tools/oauth"
)

// registrationsPerMinute bounds client registrations per client address.
const registrationsPerMinute = 20

// New serves /.well-known/oauth-protected-resource (RFC 9728),
// /.well-known/oauth-authorization-server (RFC 8414), /oauth/register (RFC 7591),
// /oauth/token and /oauth/revoke (RFC 7009) for svc. limiter counts registrations per client
// address (the kernel's, so replicas sharing a Redis share the limit too; nil: counted in
// this process).
func New(svc *oauth.Service, limiter tools.Limiter) http.Handler {
	if limiter == nil {
		limiter = tools.NewRateLimiter(time.Now)
	}
	cfg := svc.Config()
	mux := http.NewServeMux()
	resource := func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{
			"resource": cfg.Resource, "authorization_servers": []string{cfg.Issuer}, "scopes_supported": tools.ScopeNames(),
			"bearer_methods_supported": []string{"header"}, "resource_name": "Switchboard",
			"resource_documentation": cfg.Issuer + "/docs",
		})
	}
	mux.HandleFunc("GET /.well-known/oauth-protected-resource", resource)
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", resource)
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{
			"issuer": cfg.Issuer, "authorization_endpoint": cfg.Issuer + "/oauth/authorize", "token_endpoint": cfg.Issuer + "/oauth/token",
			// MCP 2026-07-28 hosts identify by a client metadata document; the registration
			// endpoint (RFC 7591, deprecated by that revision) stays for older hosts.
			"client_id_metadata_document_supported": svc.MetadataDocuments(),
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
			writeJSON(w, http.StatusServiceUnavailable, &oauth.Error{Code: "temporarily_unavailable", Description: "registration is paused for a moment; retry in a few seconds"})
			return
		case !ok:
			w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
			writeJSON(w, http.StatusTooManyRequests, &oauth.Error{Code: "slow_down", Description: "too many registrations from this address; wait a minute"})
			return
		}
		var reg oauth.Registration
		body, err := io.ReadAll(r.Body) // bounded by the front's body limit
		if err == nil {
			if err := jsonlimit.Request(body); err != nil {
				writeJSON(w, http.StatusBadRequest, &oauth.Error{Code: "invalid_client_metadata", Description: "the registration is " + err.Error()})
				return
			}
			err = json.Unmarshal(body, &reg)
		}
		if err != nil {
			writeJSON(w, http.StatusBadRequest, &oauth.Error{Code: "invalid_client_metadata", Description: "the body must be a JSON client registration (RFC 7591)"})
			return
		}
		out, oe := svc.Register(r.Context(), reg)
		if oe != nil {
			writeJSON(w, oe.Status, oe)
			return
		}
		writeJSON(w, http.StatusCreated, out)
	})
	mux.HandleFunc("POST /oauth/token", func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			writeJSON(w, http.StatusBadRequest, &oauth.Error{Code: "invalid_request", Description: "send application/x-www-form-urlencoded parameters"})
			return
		}
		out, oe := svc.Exchange(r.Context(), r.PostForm)
		if oe != nil {
			writeJSON(w, oe.Status, oe)
			return
		}
		writeJSON(w, http.StatusOK, out)
	})
	mux.HandleFunc("POST /oauth/revoke", func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil || r.PostForm.Get("token") == "" {
			writeJSON(w, http.StatusBadRequest, &oauth.Error{Code: "invalid_request", Description: "send the token to revoke as the form parameter token"})
			return
		}
		if err := svc.Revoke(r.Context(), r.PostForm.Get("token")); err != nil {
			writeJSON(w, http.StatusServiceUnavailable, &oauth.Error{Code: "temporarily_unavailable", Description: "try again"})
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

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

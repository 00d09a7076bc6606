package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/switchboard-hq/switchboard/mcpserver"
	"github.com/switchboard-hq/switchboard/portal"
	"github.com/switchboard-hq/switchboard/rest"
	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/keyring"
	"github.com/switchboard-hq/switchboard/tools/oauth"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
)

// frontOptions are the doors and documents the HTTP front composes.
type frontOptions struct {
	Kernel   *tools.Kernel
	MCP      http.Handler // /mcp: API keys (x-api-key, Bearer), authenticated by the kernel
	Portal   http.Handler // /developer, /docs, /connect, /oauth/authorize: portal sessions; nil when no one can sign in
	OAuthAPI http.Handler // OAuth metadata, registration, token, revocation; nil with no portal
	OAuth    *oauth.Service
	Docs     rest.Docs                       // Docs.Portal says whether Portal is mounted
	Keys     *keyring.Ring                   // the current public key and the published key set
	Ready    func(ctx context.Context) error // /healthz: the database answers
	// Readiness is /readyz: nil when this replica should get traffic, else why not (a short
	// phrase, no internals: the probe is public).
	Readiness func(ctx context.Context) error
	Log       *slog.Logger
	Observe   func(route string, status int, elapsed time.Duration) // metrics; route is from a fixed set
	// BodyReadTimeout bounds reading one request's body (SWITCHBOARD_BODY_READ_TIMEOUT).
	BodyReadTimeout time.Duration
}

// front is the one HTTP surface: every door mounted on one mux behind one middleware.
func front(o frontOptions) (http.Handler, error) {
	mux := http.NewServeMux()
	mcpDoor, v1 := o.MCP, rest.Handler(o.Kernel, restWraps()...)
	if o.OAuth != nil {
		mcpDoor, v1 = mcpChallenge(o.MCP, o.Kernel, o.OAuth), accessTokensNotHere(v1, o.OAuth)
		for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/", "/.well-known/oauth-authorization-server",
			"/oauth/register", "/oauth/token", "/oauth/revoke"} {
			mux.Handle(path, o.OAuthAPI)
		}
	}
	mux.Handle("/mcp", oneCredential(mcpEnvelope(mcpDoor)))
	mux.Handle("/v1/", oneCredential(v1))
	portalPaths := []string{"/developer", "/developer/", "/docs", "/docs.md", "/docs/", "/sdk/", "/connect/", "/oauth/authorize", "/marketplace", "/marketplace/", "/favicon.ico"}
	if o.Portal != nil {
		for _, path := range portalPaths {
			mux.Handle(path, o.Portal)
		}
	} else {
		mountSignInOff(mux, o.Docs.BaseURL)
	}
	llms := rest.LLMsTxt(o.Docs)
	mux.HandleFunc("GET /llms.txt", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, llms)
	})
	mux.HandleFunc("GET /.well-known/service-public-key", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-pem-file")
		w.Header().Set("Cache-Control", "public, max-age=3600")
		w.Write(o.Keys.CurrentPEM())
	})
	mux.HandleFunc("GET "+signing.KeySetPath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=300")
		json.NewEncoder(w).Encode(o.Keys.KeySet())
	})
	doc, err := rest.OpenAPI(o.Kernel, o.Docs)
	if err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	mux.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(doc)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if err := o.Ready(r.Context()); err != nil {
			o.Log.ErrorContext(r.Context(), "health check", "err", err)
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"status":"unavailable"}`)
			return
		}
		io.WriteString(w, `{"status":"ok"}`)
	})
	// Liveness is the process answering HTTP: an outage of the database is not cured by a
	// restart, so it belongs to readiness only.
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"status":"ok"}`)
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if err := o.Readiness(r.Context()); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			json.NewEncoder(w).Encode(map[string]string{"status": "not ready", "reason": err.Error()})
			return
		}
		io.WriteString(w, `{"status":"ready"}`)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		// A browser opening the service's address lands on the documentation; an API client
		// keeps the JSON answer that says where the routes are.
		if r.URL.Path == "/" && (r.Method == http.MethodGet || r.Method == http.MethodHead) && o.Portal != nil && acceptsHTML(r) {
			http.Redirect(w, r, "/docs", http.StatusSeeOther)
			return
		}
		rest.NotFound(w, r)
	})
	var observe func(*http.Request, int, time.Duration)
	if o.Observe != nil {
		route := routeLabels(mux, portalPaths)
		observe = func(r *http.Request, status int, elapsed time.Duration) { o.Observe(route(r), status, elapsed) }
	}
	return middleware(mux, o.Log, observe, o.BodyReadTimeout), nil
}

// routeLabels names requests for metrics from the pattern of mux that matches them, never from
// the raw path: /v1/<resource> for the REST routes' first segments, "portal" for the portal's
// pages, the pattern for the documents, "other" for everything unrouted. The set is fixed,
// whatever callers send.
func routeLabels(mux *http.ServeMux, portalPaths []string) func(r *http.Request) string {
	portal, v1 := map[string]bool{}, map[string]bool{}
	for _, p := range portalPaths {
		portal[p] = true
	}
	for _, rt := range rest.Routes() {
		seg, _, _ := strings.Cut(strings.TrimPrefix(rt.Path, "/v1/"), "/")
		v1[seg] = true
	}
	return func(r *http.Request) string {
		// Asked of mux, not read from r.Pattern: the doors' own muxes overwrite that.
		_, pattern := mux.Handler(r)
		if _, p, ok := strings.Cut(pattern, " "); ok { // "GET /healthz" -> "/healthz"
			pattern = p
		}
		switch {
		case pattern == "/v1/":
			if seg, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/v1/"), "/"); v1[seg] {
				return "/v1/" + seg
			}
			return "/v1/other"
		case pattern == "" || pattern == "/":
			return "other"
		case portal[pattern]:
			return "portal"
		}
		return pattern
	}
}

// middleware gives every request an id and bounds its body (size and read time), and sets the two headers the MCP
// door reads as trusted (the client address and the request id) after deleting whatever a
// client sent in them: the MCP handler is safe only behind this.
func middleware(next http.Handler, log *slog.Logger, observe func(r *http.Request, status int, elapsed time.Duration), bodyTimeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := uuid.NewString()
		r.Header.Set(tools.HeaderRequestID, id)
		r.Header.Set(tools.HeaderClientAddr, clientAddr(r))
		// A caller's W3C traceparent parents the call's spans (a no-op with tracing off).
		r = r.WithContext(otel.GetTextMapPropagator().Extract(r.Context(), propagation.HeaderCarrier(r.Header)))
		w.Header().Set("X-Request-Id", id)
		// Every response: JSON, text and errors load nothing; the portal's pages set their own CSP.
		portal.SecurityHeaders(w.Header(), "default-src 'none'; frame-ancestors 'none'")
		if r.ContentLength > rest.MaxBody { // the same answer on every door, before any reads it
			rest.WriteError(w, rest.TooLarge())
			log.InfoContext(r.Context(), "http", "request_id", id, "method", r.Method, "path", r.URL.Path, "status", http.StatusRequestEntityTooLarge)
			if observe != nil {
				observe(r, http.StatusRequestEntityTooLarge, time.Since(start))
			}
			return
		}
		bodyDeadline(w, r, bodyTimeout)
		r.Body = http.MaxBytesReader(w, r.Body, rest.MaxBody)
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r)
		if observe != nil {
			observe(r, sw.status, time.Since(start))
		}
		log.InfoContext(r.Context(), "http", "request_id", id, "method", r.Method, "path", r.URL.Path, "status", sw.status)
	})
}

// oneCredential refuses a request to a door that takes keys (/mcp, /v1) carrying two different
// credentials (tools.KeyFromHeader), before any of it runs: 400 BAD_INPUT, as RFC 6750 answers
// a request that uses more than one method to send a token.
func oneCredential(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, e := tools.KeyFromHeader(r.Header); e != nil {
			rest.WriteError(w, e)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// mcpEnvelope refuses a /mcp POST body that JSON readers could read differently
// (mcpserver.CheckMessage: duplicate keys, invalid UTF-8, unpaired surrogates, trailing data)
// with HTTP 400 and a JSON-RPC parse error, before the OAuth challenge or the go-sdk reads it:
// whatever reads the body after this sees the one call that runs.
func mcpEnvelope(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, ok := rereadBody(w, r)
		if !ok {
			return
		}
		if len(body) > 0 { // the go-sdk answers an empty body
			if e := mcpserver.CheckMessage(body); e != nil {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				w.Write(mcpserver.ParseError(e))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// rereadBody reads r's body (bounded by the front's limit) and puts it back for the next
// reader; false when it could not be read, with the error written.
func rereadBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			rest.WriteError(w, rest.TooLarge())
			return nil, false
		}
		rest.WriteError(w, tools.Errorf(tools.CodeBadInput, "could not read the request body: %v", err))
		return nil, false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, true
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// clientAddr is the peer's IP. Forwarding headers are not trusted: a proxy in front must
// be configured to connect from the client's address or this sees the proxy.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// acceptsHTML reports whether a request is a browser's: its Accept names text/html.
func acceptsHTML(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, _, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(mt), "text/html") {
			return true
		}
	}
	return false
}

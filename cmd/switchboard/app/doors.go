package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-hq/switchboard/mcpserver"
	"github.com/switchboard-hq/switchboard/portal"
	"github.com/switchboard-hq/switchboard/portal/oauthapi"
	"github.com/switchboard-hq/switchboard/rest"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/discover"
	"github.com/switchboard-hq/switchboard/tools/keyring"
	"github.com/switchboard-hq/switchboard/tools/keys"
	"github.com/switchboard-hq/switchboard/tools/oauth"
	"github.com/switchboard-hq/switchboard/tools/onboarding"
	"github.com/switchboard-hq/switchboard/tools/service"
)

// doors are BuildOn's second layer: who a caller is, the kernel, and every door before it.
type doors struct {
	authn    *keys.Authenticator
	kernel   *tools.Kernel
	mcp      *mcpserver.Door
	handler  http.Handler // the HTTP front: every door on one mux
	draining *atomic.Bool // set by Drain
	endAsks  func()       // ends the MCP sessions' waits for a human's answer
}

// buildDoors builds the authenticator (API keys, and OAuth access tokens where people can
// sign in), the kernel on every tool, the MCP server and its session door, the portal and
// MCP authorization, and the HTTP front. What it opens it adds to undo.
func buildDoors(ctx context.Context, cfg Config, d service.Deps, s *services, ring *keyring.Ring, serverSecret []byte, undo *[]func()) (doors, error) {
	// Who a caller is: an API key, or, where people can sign in, an MCP host's OAuth access token.
	authn := keys.NewAuthenticator(d, s.human.accessTokens())

	// The kernel: every door's one call path.
	kernel, err := tools.NewKernel(authn, s.limiter, s.billing.Settled, d.Log, d.Now, s.tools...)
	if err != nil {
		return doors{}, err
	}

	// The doors.
	asking, endAsks := context.WithCancel(context.WithoutCancel(ctx)) // ends when the replica drains
	*undo = append(*undo, endAsks)
	host, _ := os.Hostname()
	mcpSrv := mcpserver.New(kernel, mcpserver.Options{Name: "switchboard", Version: Version, Log: d.Log, Replica: host, Asking: asking,
		Middleware: []mcp.Middleware{s.metrics.MCPMiddleware(toolNames(kernel))}, Wraps: doorWraps()})
	mcpDoor := mcpserver.HTTPHandler(mcpSrv, mcpserver.HTTPOptions{Log: d.Log, Auth: authn, Sessions: mcpserver.DefaultSessionLimits, Kernel: kernel, Draining: asking.Done()})
	*undo = append(*undo, mcpDoor.Close)
	h, err := humanDoors(humanDeps{cfg: cfg, deps: d, kernel: kernel, limiter: s.limiter, mailer: s.mailer, ob: s.onboarding,
		keySvc: s.keys, disc: s.discover, serverSecret: serverSecret, services: s.human})
	if err != nil {
		return doors{}, err
	}
	bodyTimeout, err := cfg.bodyReadTimeout()
	if err != nil {
		return doors{}, err
	}
	st := d.Store
	draining := new(atomic.Bool)
	handler, err := front(frontOptions{BodyReadTimeout: bodyTimeout,
		Kernel: kernel, MCP: mcpDoor, Portal: h.portal, OAuthAPI: h.oauthAPI, OAuth: h.oauth,
		Keys: ring, Ready: st.Ping, Readiness: readiness(st, ring, draining, d.Log), Log: d.Log, Observe: s.metrics.ObserveHTTP,
		Docs: rest.Docs{BaseURL: cfg.PublicBaseURL(), TestBaseURL: cfg.TestBaseURL, Env: cfg.Env, Version: Version, EmailSignup: s.mailer != nil, Portal: h.portal != nil},
	})
	if err != nil {
		return doors{}, err
	}
	return doors{authn: authn, kernel: kernel, mcp: mcpDoor, handler: handler, draining: draining, endAsks: endAsks}, nil
}

// closeWhenDraining ends each connection after its answer once the replica drains, so no
// client holds a kept-alive connection to a listener about to close.
func closeWhenDraining(next http.Handler, draining *atomic.Bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if draining.Load() {
			w.Header().Set("Connection", "close")
		}
		next.ServeHTTP(w, r)
	})
}

// readiness is /readyz: the database answers, every migration this binary knows is applied,
// the signing key is loaded, and the replica is not draining. Logged reasons carry the
// error; the answer says only which.
func readiness(st *store.Store, ring *keyring.Ring, draining *atomic.Bool, log *slog.Logger) func(context.Context) error {
	return func(ctx context.Context) error {
		if draining.Load() {
			return errors.New("draining")
		}
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if err := st.Ping(ctx); err != nil {
			log.WarnContext(ctx, "readiness: database", "err", err)
			return errors.New("database unreachable")
		}
		pending, err := st.Unapplied(ctx)
		if err != nil {
			log.WarnContext(ctx, "readiness: migrations", "err", err)
			return errors.New("migrations unreadable")
		}
		if len(pending) > 0 {
			return fmt.Errorf("migrations not applied: %s", strings.Join(pending, ", "))
		}
		if len(ring.CurrentPEM()) == 0 {
			return errors.New("signing key not loaded")
		}
		return nil
	}
}

// toolNames are the kernel's tools' names: the only tool labels the metrics take.
func toolNames(k *tools.Kernel) []string {
	var names []string
	for _, t := range k.Tools() {
		names = append(names, t.Name)
	}
	return names
}

// humanDeps is what the portal and the authorization server are built from.
type humanDeps struct {
	cfg          Config
	deps         service.Deps
	kernel       *tools.Kernel
	limiter      tools.Limiter // the kernel's: sign-in and registration limits are shared the same way
	mailer       onboarding.Mailer
	ob           *onboarding.Service
	keySvc       *keys.Service
	disc         *discover.Service
	serverSecret []byte
	services     humanServices
}

// humanDoor is the portal and the OAuth authorization server (nil without a way to sign in).
type humanDoor struct {
	portal, oauthAPI http.Handler
	oauth            *oauth.Service
}

// humanDoors builds the portal and MCP authorization. The portal signs humans in with an
// e-mail code or an identity provider: with neither it has no way in, and neither is built.
func humanDoors(d humanDeps) (humanDoor, error) {
	cfg, now, h := d.cfg, d.deps.Now, d.services
	if h.sessions == nil {
		return humanDoor{}, nil
	}
	var signIn func(ctx context.Context, email, code, clientAddr string) (string, error)
	if d.mailer != nil {
		signIn = d.ob.SignIn
	}
	// The docs' API reference is rendered from the same OpenAPI document /openapi.json serves.
	apiDoc, err := rest.OpenAPI(d.kernel, rest.Docs{BaseURL: cfg.PublicBaseURL(), TestBaseURL: cfg.TestBaseURL, Env: cfg.Env, Version: Version})
	if err != nil {
		return humanDoor{}, err
	}
	_, codesInLog := d.mailer.(onboarding.DevMailer)
	popts := portal.Options{Kernel: d.kernel, Sessions: h.sessions, SignIn: signIn, CodesInLog: codesInLog, OpenAPI: apiDoc,
		AccountForEmail: d.ob.AccountForEmail, OIDC: h.providers, Integrations: h.integ, Now: now,
		BaseURL: cfg.PublicBaseURL(), CSRFKey: derive(d.serverSecret, "switchboard portal forms v1"), Ceiling: h.ceiling,
		OAuth: h.oauth, Log: d.deps.Log, Marketplace: d.disc, TryAs: d.keySvc.ForSession, Limiter: d.limiter,
		StdioDataDir: cfg.LocalStdioDataDir(d.deps.Store.Postgres())}
	handler, err := portal.New(popts)
	if err != nil {
		return humanDoor{}, err
	}
	return humanDoor{portal: handler, oauthAPI: oauthapi.New(h.oauth, d.limiter), oauth: h.oauth}, nil
}

package app

import (
	"context"
	"crypto/ed25519"
	"log/slog"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"
	"github.com/switchboard-hq/switchboard/mcpserver"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/invocations"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/dispatch"
	"github.com/switchboard-hq/switchboard/tools/keyring"
	"github.com/switchboard-hq/switchboard/tools/onboarding"
	"github.com/switchboard-hq/switchboard/tools/partners"
	"github.com/switchboard-hq/switchboard/tools/payments"
	"github.com/switchboard-hq/switchboard/tools/service"
	"github.com/switchboard-hq/switchboard/tools/webhooks"
)

// Version is the service version reported by MCP and OpenAPI.
const Version = "0.1.0"

// Deps are what the app takes from outside besides Config: a clock and a mailer override
// (tests inject both; nil means the real ones).
type Deps struct {
	Now    func() time.Time
	Mailer onboarding.Mailer
	Log    *slog.Logger
	// Metadata, when set, fetches client metadata documents instead of the guarded client
	// (tests serve documents on loopback, which the guard refuses whatever the settings).
	Metadata *http.Client
	// CheckAnswers, when set, is told of every answer that breaks its tool's output schema
	// (tests: tools.CheckingAnswers).
	CheckAnswers func(tool string, err error)
}

// App is a built service: the HTTP front, the operator's metrics handler, the background work
// serve runs and the operator's facade (Admin). BuildOn builds every part once, in dependency
// order, and assigns nothing to it afterwards; the parts stay inside (Parts hands tests what
// they arrange and inspect below the doors).
type App struct {
	cfg        Config
	log        *slog.Logger
	store      *store.Store
	kernel     *tools.Kernel
	handler    http.Handler // the public front: every door on one mux
	metrics    http.Handler // /metrics and /debug/pprof/: serve only on the operator's listener (SWITCHBOARD_METRICS_ADDR), never beside handler
	signingKey ed25519.PrivateKey
	ring       *keyring.Ring     // the service's signing keys (rotation)
	partners   *partners.Service // partner intents: the re-probes
	billing    *billing.Service  // credit, ledger, the reservation sweeper
	dispatch   *dispatch.Service // partner calls; concludes abandoned ones
	payments   *payments.Service // flat-fee payments on chain and partner payouts; nil when not configured
	webhooks   *webhooks.Service // endpoints and the delivery worker (run by Build)
	admin      *Admin            // what `switchboard admin` does
	redis      *redis.Client     // the shared rate limiter's connection; nil when not configured
	stop       func()            // ends the background work Build started, and waits for it
	draining   *atomic.Bool      // set by Drain: /readyz answers 503 from then on
	endAsks    func()            // Drain: confirmations waiting on a human fall back to confirmRequestId
}

// Handler is the public HTTP front: MCP, REST, the portal and the documents on one mux.
func (a *App) Handler() http.Handler { return a.handler }

// Metrics serves /metrics and /debug/pprof/, for the operator's listener only.
func (a *App) Metrics() http.Handler { return a.metrics }

// Admin is the operator CLI's way in (switchboard admin).
func (a *App) Admin() *Admin { return a.admin }

// Postgres reports whether the service runs on PostgreSQL (serve logs it).
func (a *App) Postgres() bool { return a.store.Postgres() }

// PaysOut reports whether the flat-fee network is configured, so partners are paid on chain
// (RunPayouts).
func (a *App) PaysOut() bool { return a.payments != nil }

// Parts are the built services tests reach below the doors, to arrange state and inspect it
// (apptest); commands use App's methods and Admin instead.
type Parts struct {
	Kernel     *tools.Kernel
	Billing    *billing.Service
	Payments   *payments.Service // nil when not configured
	Webhooks   *webhooks.Service
	Keys       *keyring.Ring
	SigningKey ed25519.PrivateKey // the key file's (or SWITCHBOARD_SIGNING_KEY_FILE's) key the ring was seeded with
	Dispatch   *dispatch.Service
}

// Parts returns the built services (for tests).
func (a *App) Parts() Parts {
	return Parts{Kernel: a.kernel, Billing: a.billing, Payments: a.payments, Webhooks: a.webhooks, Keys: a.ring, SigningKey: a.signingKey, Dispatch: a.dispatch}
}

// Drain marks the replica as leaving: /readyz answers 503 at once, so proxies and Kubernetes
// stop sending it new calls while the ones in flight finish (serve's SIGTERM path).
// Confirmations still waiting for a human's answer on an MCP session stop waiting: each
// call answers CONFIRMATION_REQUIRED, which the host completes with confirmRequestId on
// another replica, so the drain never waits for a person.
func (a *App) Drain() {
	a.draining.Store(true)
	a.endAsks()
}

// WaitTasks waits, until ctx ends, for the tasks this replica runs (serve's drain, after the
// listener has closed so no new one starts); it reports how many it left to the sweeper.
func (a *App) WaitTasks(ctx context.Context) int { return a.dispatch.WaitTasks(ctx) }

// Settled returns budget leases and returns once every finished invocation this process left
// to the batch writer has committed (callers of the API need not: each read waits for its own
// account's).
func (a *App) Settled(ctx context.Context) error { return a.billing.Drain(ctx) }

// StdioServer is the MCP server for stdio: the same tools, acting with SWITCHBOARD_API_KEY
// when a call carries no key (the HTTP server never does), listing SWITCHBOARD_TOOLSETS.
func (a *App) StdioServer() *mcp.Server {
	sets, _ := tools.ParseToolsets(a.cfg.Toolsets) // checked by Config.Validate
	return mcpserver.New(a.kernel, mcpserver.Options{Name: "switchboard", Version: Version, Stdio: true, APIKey: a.cfg.APIKey, Toolsets: sets, Log: a.log, Wraps: doorWraps()})
}

// Close releases the database and the Redis connection.
func (a *App) Close() error {
	a.Stop()
	closeRedis(a.redis)
	shutdown(a.payments)
	return a.store.Close()
}

// closeRedis closes the shared rate limiter's connection, when there is one.
func closeRedis(rdb *redis.Client) {
	if rdb != nil {
		rdb.Close()
	}
}

// shutdown closes the flat-fee network's connection, when there is one.
func shutdown(p *payments.Service) {
	if p != nil {
		p.Shutdown()
	}
}

// Stop ends the background work Build started (the key watch, key-use writes) and waits for
// it; Close calls it. A caller of BuildOn, which keeps its store, calls Stop instead.
func (a *App) Stop() {
	// Its tasks are left where they stand, as a crash leaves them: the sweeper concludes them.
	if a.dispatch != nil {
		a.dispatch.StopTasks()
	}
	if a.stop != nil {
		a.stop()
	}
}

// Build opens the store, runs migrations, loads (or on first start creates) the keys, and
// assembles the tools and both doors.
func Build(ctx context.Context, cfg Config, deps Deps) (*App, error) {
	// Before the store opens: a production process without its secrets leaves nothing behind.
	if err := cfg.CheckSecrets(); err != nil {
		return nil, err
	}
	st, err := store.Open(ctx, cfg.DatabaseURL, cfg.DataDir)
	if err != nil {
		return nil, err
	}
	st.SetMaxConns(cfg.DatabaseMaxConns)
	a, err := BuildOn(ctx, cfg, deps, st)
	if err != nil {
		st.Close()
		return nil, err
	}
	return a, nil
}

// BuildOn is Build on an already open store, which the caller keeps ownership of.
//
// It builds in dependency order, each value once, with everything it needs passed to its
// constructor, in three layers on the database and the keys: the services and every tool
// they offer (buildServices: billing on its Recording, the partner side, payments, the
// portal's session-only tools); who callers are, the kernel and the doors (buildDoors: the
// MCP server and its session door, the portal, the HTTP front); then the background work
// (startBackground), the operator's facade and the App. A failed build closes what it
// opened (the store is the caller's).
func BuildOn(ctx context.Context, cfg Config, deps Deps, st *store.Store) (_ *App, err error) {
	d := sharedDeps(deps, st)
	var undo []func() // what to close again if a later step fails, last opened first
	defer func() {
		if err != nil {
			for _, f := range slices.Backward(undo) {
				f()
			}
		}
	}()

	// The database and the keys.
	sec, ring, err := openKeys(ctx, cfg, d)
	if err != nil {
		return nil, err
	}
	s, err := buildServices(ctx, cfg, deps, d, sec, ring.Signer(), &undo)
	if err != nil {
		return nil, err
	}
	dr, err := buildDoors(ctx, cfg, d, s, ring, sec.serverSecret, &undo)
	if err != nil {
		return nil, err
	}
	stop := startBackground(ctx, cfg, d, s, dr)
	admin := &Admin{store: st, accounts: accounts.New(st), invocations: invocations.New(st), partners: s.partners.svc, billing: s.billing, dispatch: s.dispatch, payments: s.payments, ring: ring, sealer: sec.sealer,
		onboarding: s.onboarding, apiKeys: s.keys, policies: s.policies, idempotency: s.idem}
	return &App{cfg: cfg, log: d.Log, store: st, kernel: dr.kernel, handler: closeWhenDraining(dr.handler, dr.draining), metrics: s.metrics.Handler(), signingKey: sec.signingKey,
		ring: ring, partners: s.partners.svc, billing: s.billing, dispatch: s.dispatch, payments: s.payments, webhooks: s.webhooks, admin: admin,
		redis: s.redis, stop: stop, draining: dr.draining, endAsks: dr.endAsks}, nil
}

// sharedDeps are what every service shares: the store, and Deps' clock and log or the real ones.
func sharedDeps(deps Deps, st *store.Store) service.Deps {
	log := deps.Log
	if log == nil {
		log = slog.Default()
	}
	now := deps.Now
	if now == nil {
		now = time.Now
	}
	return service.Deps{Store: st, Now: now, Log: log}
}

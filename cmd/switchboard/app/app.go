package app

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/metrics"
	"github.com/switchboard-hq/switchboard/contracts"
	"github.com/switchboard-hq/switchboard/mcpserver"
	"github.com/switchboard-hq/switchboard/portal"
	"github.com/switchboard-hq/switchboard/portal/oauthapi"
	"github.com/switchboard-hq/switchboard/rest"
	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/commit"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/account"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/discover"
	"github.com/switchboard-hq/switchboard/tools/dispatch"
	"github.com/switchboard-hq/switchboard/tools/idempotency"
	"github.com/switchboard-hq/switchboard/tools/integrations"
	"github.com/switchboard-hq/switchboard/tools/keyring"
	"github.com/switchboard-hq/switchboard/tools/keys"
	"github.com/switchboard-hq/switchboard/tools/oauth"
	"github.com/switchboard-hq/switchboard/tools/onboarding"
	"github.com/switchboard-hq/switchboard/tools/partners"
	"github.com/switchboard-hq/switchboard/tools/partners/demo"
	"github.com/switchboard-hq/switchboard/tools/partners/outbound"
	"github.com/switchboard-hq/switchboard/tools/payments"
	"github.com/switchboard-hq/switchboard/tools/policies"
	"github.com/switchboard-hq/switchboard/tools/ratelimit"
	"github.com/switchboard-hq/switchboard/tools/rowcache"
	"github.com/switchboard-hq/switchboard/tools/service"
	"github.com/switchboard-hq/switchboard/tools/sessions"
	"github.com/switchboard-hq/switchboard/tools/tokens"
	"github.com/switchboard-hq/switchboard/tools/usage"
	"github.com/switchboard-hq/switchboard/tools/wallets"
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
}

// Parts returns the built services (for tests).
func (a *App) Parts() Parts {
	return Parts{Kernel: a.kernel, Billing: a.billing, Payments: a.payments, Webhooks: a.webhooks, Keys: a.ring, SigningKey: a.signingKey}
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

// Settled returns budget leases and returns once every finished invocation this process left
// to the batch writer has committed (callers of the API need not: each read waits for its own
// account's).
func (a *App) Settled(ctx context.Context) error { return a.billing.Drain(ctx) }

// Sweep concludes dispatches a crashed process abandoned (sending idempotent ones again for
// their real outcome) and refunds reservations nobody settled. It is safe on several
// replicas at once.
func (a *App) Sweep(ctx context.Context) (recovered, refunded int, err error) {
	return sweep(ctx, a.dispatch, a.billing, a.payments)
}

// sweep is App.Sweep and Admin.Sweep: one sweep, whoever runs it.
func sweep(ctx context.Context, d *dispatch.Service, b *billing.Service, p *payments.Service) (recovered, refunded int, err error) {
	if recovered, err = d.Recover(ctx); err != nil {
		return recovered, 0, err
	}
	refunded, err = b.Sweep(ctx)
	if err != nil || p == nil {
		return recovered, refunded, err
	}
	concluded, err := p.Reconcile(ctx)
	return recovered + concluded, refunded, err
}

// RunReprobe re-probes active intents every minute, each at the configured interval, until
// ctx ends (claims make it safe on every replica).
func (a *App) RunReprobe(ctx context.Context, every time.Duration) {
	repeat(ctx, a.log, time.Minute, "re-probe", func(ctx context.Context) error {
		_, err := a.partners.Reprobe(ctx, every, 4)
		return err
	})
}

// RunKeyRefresh follows key rotations (another replica's, or the operator's rotate-key) every
// 30 seconds until ctx ends.
func (a *App) RunKeyRefresh(ctx context.Context) {
	a.ring.RunRefresh(ctx, 30*time.Second, func(err error) { a.log.ErrorContext(ctx, "service keys", "err", err) })
}

// RunPayouts pays partners' accrued per-call fees on chain every interval until ctx ends.
func (a *App) RunPayouts(ctx context.Context, every time.Duration) {
	repeat(ctx, a.log, every, "payouts", func(ctx context.Context) error {
		_, err := a.payments.Payouts(ctx)
		return err
	})
}

// RunSweeper sweeps every interval until ctx ends. It first records the outcomes a previous
// run of this data directory journaled and could not commit (a crash, a database outage).
func (a *App) RunSweeper(ctx context.Context, every time.Duration) {
	if n, err := a.billing.ReplayJournal(ctx); err != nil {
		a.log.WarnContext(ctx, "journal replay; the sweeper retries", "err", err)
	} else if n > 0 {
		a.log.InfoContext(ctx, "journal replayed", "outcomes", n)
	}
	repeat(ctx, a.log, every, "sweep", func(ctx context.Context) error {
		_, _, err := a.Sweep(ctx)
		return err
	})
}

// repeat runs job every interval until ctx ends, logging its failures.
func repeat(ctx context.Context, log *slog.Logger, every time.Duration, name string, job func(context.Context) error) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := job(ctx); err != nil && ctx.Err() == nil {
				log.ErrorContext(ctx, name, "err", err)
			}
		}
	}
}

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
// constructor: the database and the keys; the services (billing on its Recording: the batch
// writer, the leases, the journal) and the tools they offer; the portal's session-only tools;
// who callers are (API keys, and OAuth access tokens where people can sign in); the kernel;
// the doors (the MCP server and its session door, the portal, the HTTP front); then the
// background work, the operator's facade and the App. A failed build closes what it opened
// (the store is the caller's).
func BuildOn(ctx context.Context, cfg Config, deps Deps, st *store.Store) (_ *App, err error) {
	log := deps.Log
	if log == nil {
		log = slog.Default()
	}
	now := deps.Now
	if now == nil {
		now = time.Now
	}
	d := service.Deps{Store: st, Now: now, Log: log} // what every service shares
	var undo []func()                                // what to close again if a later step fails, last opened first
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
	signingKey, serverSecret, sealer := sec.signingKey, sec.serverSecret, sec.sealer
	signer := ring.Signer()

	// The services, and the tools they offer.
	spend, err := usdMicro("SWITCHBOARD_DEFAULT_SPEND_LIMIT_USD", cfg.DefaultSpendLimit, tools.MaxUSDMicro)
	if err != nil {
		return nil, err
	}
	keySvc := keys.NewService(keys.Config{Env: cfg.Env, Defaults: keys.Limits{SpendMicro: spend, RatePerMinute: cfg.DefaultRateLimit}}, d)
	billCfg, err := billingConfig(cfg)
	if err != nil {
		return nil, err
	}
	// The intent and the caller's tier every invocation reads, from memory on every replica.
	rows := rowcache.New(d)
	billCfg.TierOf = rows.Tier
	listeners := webhooks.NewListeners(st, d.Now)
	billCfg.Listens = listeners.Any
	failpoint := failpointOf(cfg.Failpoint, log)
	rec, batcher, err := recording(cfg, st, log, failpoint)
	if err != nil {
		return nil, err
	}
	billSvc := billing.NewService(billCfg, d, rec)

	mailer, err := chooseMailer(cfg, deps, log)
	if err != nil {
		return nil, err
	}
	var all []*tools.Tool
	ob := onboarding.NewService(onboardingConfig(serverSecret, billSvc), d, mailer, keySvc, sealer)
	if mailer != nil { // without one, e-mail onboarding is off
		all = append(all, ob.Tools()...)
	}
	all = append(all, keySvc.Tools()...)
	all = append(all, account.NewService(d, keySvc).Tools()...)
	ps, err := newPartnerSide(ctx, cfg, d, signer, mailer, ob, serverSecret, deps.Metadata)
	if err != nil {
		return nil, err
	}
	undo = append(undo, ps.close)
	partnerOut, metadataClient, partnerSvc := ps.out, ps.metadata, ps.svc
	all = append(all, partnerSvc.Tools()...)
	hooks, err := webhooks.NewService(webhooks.Config{SecretKey: derive(serverSecret, "switchboard webhook endpoint secrets v1"),
		Signer: signer, Client: partnerOut, AllowLocal: cfg.AllowLocalEndpoints, Notify: notifier(d, mailer), Listeners: listeners}, d)
	if err != nil {
		return nil, err
	}
	all = append(all, hooks.Tools()...)
	tokenSvc, err := tokens.NewService(cfg.Tokens, d)
	if err != nil {
		return nil, err
	}
	all = append(all, tokenSvc.Tools()...)
	paySvc, err := flatFee(ctx, cfg, d, billSvc, func(ctx context.Context, accountID string) ([]byte, string, error) {
		return wallets.EVMKey(ctx, st, sealer, accountID)
	})
	if err != nil {
		return nil, err
	}
	undo = append(undo, func() { shutdown(paySvc) })
	topupCfg, err := topupConfig(cfg)
	if err != nil {
		return nil, err
	}
	topupCfg.Failpoint = failpoint
	all = append(all, payments.NewTopups(topupCfg, d, paySvc).Tools()...)
	// Rate limits: in this process by default; shared by every replica through Redis when
	// one is configured.
	limiter, rdb, err := rateLimiter(ctx, cfg, now)
	if err != nil {
		return nil, err
	}
	undo = append(undo, func() { closeRedis(rdb) })
	// Always measured (it is cheap); served only when SWITCHBOARD_METRICS_ADDR is set.
	mx := metrics.New(st, rdb, log)
	// One approval life: dispatch asks and reads, the owner decides through the policy tools.
	approvals := policies.NewApprovals(d, notifier(d, mailer))
	dispatchSvc := dispatch.NewService(dispatch.Config{UserID: partnerSvc.UserID, SettlementChain: cfg.SettlementChain,
		Payments: paySvc, Signer: signer, Observe: mx.ObserveInvoke, Intents: rows.Intent, Failpoint: failpoint, Approvals: approvals}, d, partnerOut, billSvc, tokenSvc)
	all = append(all, dispatchSvc.Tools()...)
	policySvc := policies.NewService(d, billSvc, keySvc, approvals)
	all = append(all, policySvc.Tools()...)

	disc, err := discover.NewService(ctx, discover.Config{Registered: all, InfraCostMicro: billCfg.InfraCostMicro}, d)
	if err != nil {
		return nil, err
	}
	all = append(all, disc.Tools()...)

	// The portal's own tools (tools.SessionOnly): registered with the rest, published by no door.
	// Its sessions and MCP authorization are built here too, where people can sign in.
	settled := billSvc.Settled
	human, err := newHumanServices(cfg, d, mailer, ob, keySvc, partnerSvc, settled, metadataClient, sealer)
	if err != nil {
		return nil, err
	}
	all = append(all, human.tools...)

	// Every tool that declares TakesIdempotencyKey takes one, on every door (tools/idempotency).
	// Their answers are sealed under the master key (admin reseal moves them); the server
	// secret's key only opens what earlier releases sealed.
	idem, err := idempotency.NewService(idempotency.Config{Sealer: sealer, LegacyKey: derive(serverSecret, "switchboard idempotency answers v1")}, d)
	if err != nil {
		return nil, err
	}
	if all, err = idem.Wrap(all); err != nil {
		return nil, err
	}

	if deps.CheckAnswers != nil {
		all = tools.CheckingAnswers(all, deps.CheckAnswers)
	}

	// Who a caller is: an API key, or, where people can sign in, an MCP host's OAuth access token.
	authn := keys.NewAuthenticator(d, human.accessTokens())

	// The kernel: every door's one call path.
	kernel, err := tools.NewKernel(authn, limiter, settled, log, now, all...)
	if err != nil {
		return nil, err
	}

	// The doors.
	asking, endAsks := context.WithCancel(context.WithoutCancel(ctx)) // ends when the replica drains
	undo = append(undo, endAsks)
	host, _ := os.Hostname()
	mcpSrv := mcpserver.New(kernel, mcpserver.Options{Name: "switchboard", Version: Version, Log: log, Replica: host, Asking: asking,
		Middleware: []mcp.Middleware{mx.MCPMiddleware(toolNames(kernel))}, Wraps: doorWraps()})
	mcpDoor := mcpserver.HTTPHandler(mcpSrv, mcpserver.HTTPOptions{Log: log, Auth: authn, Sessions: mcpserver.DefaultSessionLimits})
	undo = append(undo, mcpDoor.Close)
	h, err := humanDoors(humanDeps{cfg: cfg, deps: d, kernel: kernel, limiter: limiter, mailer: mailer, ob: ob,
		keySvc: keySvc, disc: disc, serverSecret: serverSecret, services: human})
	if err != nil {
		return nil, err
	}
	portalHandler, oauthAPI, oauthSvc := h.portal, h.oauthAPI, h.oauth
	bodyTimeout, err := cfg.bodyReadTimeout()
	if err != nil {
		return nil, err
	}
	draining := new(atomic.Bool)
	handler, err := front(frontOptions{BodyReadTimeout: bodyTimeout,
		Kernel: kernel, MCP: mcpDoor, Portal: portalHandler, OAuthAPI: oauthAPI, OAuth: oauthSvc,
		Keys: ring, Ready: st.Ping, Readiness: readiness(st, ring, draining, log), Log: log, Observe: mx.ObserveHTTP,
		Docs: rest.Docs{BaseURL: cfg.PublicBaseURL(), TestBaseURL: cfg.TestBaseURL, Env: cfg.Env, Version: Version, EmailSignup: mailer != nil, Portal: portalHandler != nil},
	})
	if err != nil {
		return nil, err
	}

	// The background work, until Stop.
	bgCtx, cancelBg := context.WithCancel(context.WithoutCancel(ctx))
	var bg sync.WaitGroup
	bg.Go(func() { authn.Watch(bgCtx, 5*time.Second) })
	bg.Go(func() { rows.Watch(bgCtx) })
	bg.Go(func() { batcher.Run(bgCtx) })
	bg.Go(func() { hooks.Run(bgCtx, time.Second) }) // every replica: leases keep deliveries apart
	bg.Go(func() { repeat(bgCtx, log, time.Second, "checkpoint the SQLite write-ahead log", st.Checkpoint) })
	bg.Go(func() { repeat(bgCtx, log, time.Minute, "forget idempotency keys past 24 hours", idem.Sweep) })
	if cfg.BudgetLeases {
		bg.Go(func() { repeat(bgCtx, log, time.Second, "return idle leases", billSvc.ReturnIdleLeases) })
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			defer ps.close()
			billSvc.ReturnLeases("") // queued before the batch writer's last drain
			cancelBg()
			bg.Wait()
			endAsks()
			mcpDoor.Close()
		})
	}
	admin := &Admin{store: st, partners: partnerSvc, billing: billSvc, dispatch: dispatchSvc, payments: paySvc, ring: ring, sealer: sealer,
		onboarding: ob, apiKeys: keySvc, policies: policySvc, idempotency: idem}
	return &App{cfg: cfg, log: log, store: st, kernel: kernel, handler: closeWhenDraining(handler, draining), metrics: mx.Handler(), signingKey: signingKey,
		ring: ring, partners: partnerSvc, billing: billSvc, dispatch: dispatchSvc, payments: paySvc, webhooks: hooks, admin: admin,
		redis: rdb, stop: stop, draining: draining, endAsks: endAsks}, nil
}

// openKeys applies the migrations, then loads the process's secrets and opens the service
// key ring: the service key lives in the database (rotations, replicas), the key file seeds it.
func openKeys(ctx context.Context, cfg Config, d service.Deps) (secrets, *keyring.Ring, error) {
	applied, err := d.Store.Migrate(ctx)
	if err != nil {
		return secrets{}, nil, err
	}
	if len(applied) > 0 {
		d.Log.Info("migrations applied", "migrations", applied)
	}
	sec, err := loadSecrets(cfg, d.Log)
	if err != nil {
		return secrets{}, nil, err
	}
	ring, err := keyring.Open(ctx, keyring.Config{Bootstrap: sec.signingKey}, d, sec.sealer)
	if err != nil {
		return secrets{}, nil, secretsToCopy(cfg, err)
	}
	return sec, ring, nil
}

// partnerSide is what partner calls go through: the demo partner (test environment only),
// the outbound client, the client metadata fetcher and the partner intents' service.
type partnerSide struct {
	demo     *demo.Partner // nil where it is not offered
	out      *outbound.Client
	metadata *http.Client
	svc      *partners.Service
}

// close stops the demo partner, when there is one.
func (p partnerSide) close() {
	if p.demo != nil {
		p.demo.Close()
	}
}

// newPartnerSide builds the partner side, and offers the demo partner where it runs.
// metadata, when set, replaces the guarded metadata client (Deps.Metadata).
func newPartnerSide(ctx context.Context, cfg Config, d service.Deps, signer *signing.Signer, mailer onboarding.Mailer, ob *onboarding.Service,
	serverSecret []byte, metadata *http.Client) (p partnerSide, err error) {
	if p.demo, err = startDemo(cfg, signer, d.Log); err != nil {
		return p, err
	}
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	var guarded *http.Client
	if p.out, guarded, err = partnerClient(cfg, signer, d.Log, p.demo); err != nil {
		return p, err
	}
	p.metadata = cmp.Or(metadata, guarded)
	pseudonyms := derive(serverSecret, "switchboard partner pseudonyms v1") // the userId partners see
	if p.svc, err = newPartners(cfg, d, mailer, p.out, pseudonyms); err != nil {
		return p, err
	}
	if p.demo != nil {
		if err := offerDemo(ctx, ob, p.svc, d.Log); err != nil {
			d.Log.Warn("demo partner not offered", "err", err)
		}
	}
	return p, nil
}

// onboardingConfig is e-mail onboarding's: the code hashes are keyed by a server-side secret
// (stealing the database alone does not let anyone test codes offline), and a new account gets
// its starting grant.
func onboardingConfig(serverSecret []byte, billSvc *billing.Service) onboarding.Config {
	c := onboarding.DefaultConfig(derive(serverSecret, "switchboard e-mail codes v1"))
	c.OnCreate = billSvc.StartingGrant()
	return c
}

// toolNames are the kernel's tools' names: the only tool labels the metrics take.
func toolNames(k *tools.Kernel) []string {
	var names []string
	for _, t := range k.Tools() {
		names = append(names, t.Name)
	}
	return names
}

// partnerClient is the outbound client every partner call and probe goes through: the
// service's signature, the SSRF guard, the extra CA of SWITCHBOARD_PARTNER_CA_FILE. metadata
// fetches client metadata documents: the same, with the guard on whatever
// SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS says (anyone can name a document's URL; only the operator
// names partner endpoints in development).
// The demo partner (test environment) is reached by partner calls only, never by metadata fetches.
func partnerClient(cfg Config, signer *signing.Signer, log *slog.Logger, demoPartner *demo.Partner) (out *outbound.Client, metadata *http.Client, err error) {
	if cfg.AllowLocalEndpoints && cfg.Env == "production" { // serve and stdio refuse it (Config.CheckLocalEndpoints)
		log.Warn("SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS is on in production for this operator command: its partner probes may reach local addresses; a serving process refuses it")
	}
	partnerCA, err := outbound.ReadCAFile(cfg.PartnerCAFile)
	if err != nil {
		return nil, nil, err
	}
	callCA := partnerCA
	if demoPartner != nil { // its certificate is valid for its in-process host alone
		callCA = append(append(append([]byte{}, partnerCA...), '\n'), demoPartner.CAPEM()...)
	}
	if out, err = outbound.New(outbound.Options{Signer: signer, AllowLocal: cfg.AllowLocalEndpoints, ExtraCAPEM: callCA, Log: log,
		InProcess: demoDialers(demoPartner)}); err != nil {
		return nil, nil, fmt.Errorf("SWITCHBOARD_PARTNER_CA_FILE: %w", err)
	}
	guarded, err := outbound.New(outbound.Options{ExtraCAPEM: partnerCA, Log: log})
	if err != nil {
		return nil, nil, fmt.Errorf("SWITCHBOARD_PARTNER_CA_FILE: %w", err)
	}
	return out, guarded.HTTPClient(), nil
}

// newPartners builds the partner intents' service; its notices (an intent deactivated by
// its re-probes) go to the owner by e-mail when a mailer is configured.
func newPartners(cfg Config, d service.Deps, mailer onboarding.Mailer, out *outbound.Client, pseudonyms []byte) (*partners.Service, error) {
	return partners.NewService(partners.Config{Env: cfg.Env, PseudonymSecret: pseudonyms,
		ReprobeFailures: cfg.ReprobeFailures, Notify: notifier(d, mailer)}, d, out)
}

// notifier e-mails an account's owner (nil without a mailer): an intent deactivated by its
// re-probes, a webhook endpoint disabled.
func notifier(d service.Deps, mailer onboarding.Mailer) func(ctx context.Context, accountID, subject, text string) error {
	if mailer == nil {
		return nil
	}
	return func(ctx context.Context, accountID, subject, text string) error {
		acct, err := d.Store.AccountByID(ctx, accountID)
		if err != nil {
			return err
		}
		return mailer.Send(ctx, onboarding.Message{To: acct.Email, Subject: subject, Text: text})
	}
}

// humanServices are the services behind the portal: its sessions and MCP authorization, and
// the session-only tools it calls through the kernel (none without a way to sign in).
type humanServices struct {
	providers []portal.OIDCProvider
	sessions  *sessions.Service
	oauth     *oauth.Service
	integ     *integrations.Service
	ceiling   keys.Limits
	tools     []*tools.Tool
}

// newHumanServices builds them before the kernel, which registers their tools. The portal
// signs humans in with an e-mail code or an identity provider: with neither, none is built.
func newHumanServices(cfg Config, d service.Deps, mailer onboarding.Mailer, ob *onboarding.Service, keySvc *keys.Service, partnerSvc *partners.Service,
	settled tools.Settled, metadata *http.Client, sealer *wallets.Sealer) (humanServices, error) {
	providers, err := cfg.Providers()
	if err != nil || (mailer == nil && len(providers) == 0) {
		return humanServices{}, err
	}
	idle, err1 := time.ParseDuration(cfg.SessionIdle)
	maxAge, err2 := time.ParseDuration(cfg.SessionMaxAge)
	if err1 != nil || err2 != nil || idle < time.Minute || maxAge < idle {
		return humanServices{}, fmt.Errorf("SWITCHBOARD_SESSION_IDLE=%q, SWITCHBOARD_SESSION_MAX_AGE=%q: want Go durations, idle at least 1m and at most the max age", cfg.SessionIdle, cfg.SessionMaxAge)
	}
	h := humanServices{providers: providers, ceiling: keySvc.Defaults(), integ: integrations.NewService(d),
		// MCP hosts sign in through the portal (MCP authorization): tokens resolve like keys.
		oauth: oauth.New(oauth.Config{Issuer: cfg.PublicBaseURL(), Resource: cfg.PublicBaseURL() + "/mcp", Metadata: metadata}, d)}
	h.sessions = sessions.NewService(sessions.Config{Idle: idle, Absolute: maxAge, Ceiling: h.ceiling}, d)
	// The charts and call logs read like every reader: after the account's pending outcomes.
	use := usage.NewService(usage.Config{Settled: settled, UserID: partnerSvc.UserID}, d)
	h.tools = slices.Concat(h.sessions.Tools(), use.Tools(), h.integ.Tools(), h.oauth.Tools())
	if mailer != nil { // the export asks for an e-mailed code
		h.tools = append(h.tools, wallets.NewExporter(d, sealer, ob.SignIn).Tools()...)
	}
	return h, nil
}

// accessTokens is the kernel authenticator's way to MCP hosts' OAuth access tokens; nil (none
// accepted) where nobody can sign in.
func (h humanServices) accessTokens() keys.Tokens {
	if h.oauth == nil {
		return nil
	}
	return h.oauth.Authenticate
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

// secrets are the keys a process needs from its configuration or data directory.
type secrets struct {
	signingKey   ed25519.PrivateKey
	serverSecret []byte // never rotates: e-mail code hashes, pseudonyms and form tokens derive from it
	sealer       *wallets.Sealer
}

// loadSecrets reads (or, in the test environment, creates) the signing key, the wallet master
// keys and the server secret. Production supplies all three (Config.CheckSecrets) and never
// writes a secret file.
func loadSecrets(cfg Config, log *slog.Logger) (secrets, error) {
	if err := cfg.CheckSecrets(); err != nil {
		return secrets{}, err
	}
	signingKey, err := loadSigningKey(cfg, log)
	if err != nil {
		return secrets{}, err
	}
	masterKeys, err := loadKeys("SWITCHBOARD_MASTER_KEY", cfg.MasterKey, filepath.Join(cfg.DataDir, "master.key"), "wallet master key", log)
	if err != nil {
		return secrets{}, err
	}
	// The e-mail code and pseudonym secrets derive from a secret that never rotates, so
	// rotating the master key changes neither the userId partners see nor live codes.
	serverSecret, err := loadKeys("SWITCHBOARD_SERVER_SECRET", cfg.ServerSecret, filepath.Join(cfg.DataDir, "server-secret.key"), "server secret", log)
	if err != nil {
		return secrets{}, err
	}
	if len(serverSecret) != 1 || len(serverSecret[0]) != 32 {
		return secrets{}, errors.New("SWITCHBOARD_SERVER_SECRET: want exactly one base64 32-byte key")
	}
	sealer, err := wallets.NewSealer(masterKeys...)
	if err != nil {
		return secrets{}, fmt.Errorf("master key: %w", err)
	}
	return secrets{signingKey: signingKey, serverSecret: serverSecret[0], sealer: sealer}, nil
}

// rateLimiter is in this process by default, shared by every replica through Redis when one
// is configured (rdb, to close, is nil otherwise).
func rateLimiter(ctx context.Context, cfg Config, now func() time.Time) (tools.Limiter, *redis.Client, error) {
	if cfg.RedisURL == "" {
		return tools.NewRateLimiter(now), nil, nil
	}
	client, err := ratelimit.Open(ctx, cfg.RedisURL)
	if err != nil {
		return nil, nil, err
	}
	return ratelimit.NewRedis(client, "switchboard:ratelimit:"), client, nil
}

// recording is how calls' records are committed, decided once for the replica: the batch
// writer (finished calls committed after their callers are answered, when
// SWITCHBOARD_SETTLE_AFTER_ANSWER is on, and budget leases with SWITCHBOARD_BUDGET_LEASES), and
// the journal of write outcomes in the data directory (kept until the database has them).
// The batch writer is returned to be run.
func recording(cfg Config, st *store.Store, log *slog.Logger, failpoint func(string)) (billing.Recording, *commit.Batcher, error) {
	journal, err := commit.OpenJournal(filepath.Join(cfg.DataDir, "journal"))
	if err != nil {
		return billing.Recording{}, nil, err
	}
	batcher := commit.NewBatcher(st, 256, log)
	batcher.BeforeCommit(func() { failpoint("batch") })
	rec := billing.Recording{Journal: journal, Failpoint: failpoint}
	if cfg.SettleAfterAnswer {
		rec.Batch = batcher
		if cfg.BudgetLeases {
			leases := billing.DefaultLeaseConfig()
			rec.Leases = &leases
		}
	}
	return rec, batcher, nil
}

// billingConfig reads the prices; production accounts start with no credit.
func billingConfig(cfg Config) (billing.Config, error) {
	c := billing.DefaultConfig()
	var err error
	if c.SweepMargin, err = time.ParseDuration(cfg.SweepMargin); err != nil || c.SweepMargin < time.Second {
		return c, fmt.Errorf("SWITCHBOARD_SWEEP_MARGIN=%q: want a Go duration of at least 1s, e.g. 30s", cfg.SweepMargin)
	}
	if c.InfraCostMicro, err = usdMicro("SWITCHBOARD_INFRA_COST_USD", cfg.InfraCostUSD, billing.MaxGrantMicro); err != nil {
		return c, err
	}
	if c.StartingGrantMicro, err = usdMicro("SWITCHBOARD_STARTING_CREDIT_USD", cfg.StartingCreditUSD, billing.MaxGrantMicro); err != nil {
		return c, err
	}
	if cfg.Env == "production" {
		c.StartingGrantMicro = 0
	}
	if c.PlatformFloorMicro, err = usdMicro("SWITCHBOARD_PLATFORM_FLOOR_USD", cfg.PlatformFloorUSD, billing.MaxGrantMicro); err != nil {
		return c, err
	}
	if cfg.GasMarginBps < 0 || cfg.GasMarginBps > 100_000 {
		return c, fmt.Errorf("SWITCHBOARD_GAS_MARGIN_BPS=%d: want 0 to 100000 (0 to +1000%%)", cfg.GasMarginBps)
	}
	c.GasMarginBps = int64(cfg.GasMarginBps)
	if c.TierBps, c.DefaultTier, err = feeTiers(cfg.FeeTiers); err != nil {
		return c, err
	}
	return c, nil
}

var tierNameRe = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

// feeTiers parses "standard=30,pro=15": tier names and their basis points. standard, every
// new account's tier, must be listed.
func feeTiers(v string) (map[string]int64, string, error) {
	bad := func(why string) error {
		return fmt.Errorf("SWITCHBOARD_FEE_TIERS=%q: %s; want tier=bps pairs, e.g. standard=30,pro=15 (bps 0 to 10000)", v, why)
	}
	tiers := map[string]int64{}
	for _, part := range strings.Split(v, ",") {
		name, num, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || !tierNameRe.MatchString(name) {
			return nil, "", bad(fmt.Sprintf("%q is not tier=bps with a lowercase tier name", part))
		}
		bps, err := strconv.ParseInt(num, 10, 64)
		if err != nil || bps < 0 || bps > 10_000 {
			return nil, "", bad(fmt.Sprintf("tier %s: %q is not a whole number of basis points", name, num))
		}
		if _, dup := tiers[name]; dup {
			return nil, "", bad("tier " + name + " is listed twice")
		}
		tiers[name] = bps
	}
	if _, ok := tiers[store.DefaultTier]; !ok {
		return nil, "", bad(fmt.Sprintf("the tier %q (every new account's) must be listed", store.DefaultTier))
	}
	return tiers, store.DefaultTier, nil
}

// usdMicro parses a non-negative decimal USD amount with at most 6 places into micro-USD.
func usdMicro(name, v string, maxMicro int64) (int64, error) {
	d, err := decimal.NewFromString(v)
	if err != nil || d.IsNegative() || !d.Shift(6).IsInteger() || d.Shift(6).GreaterThan(decimal.New(maxMicro, 0)) {
		return 0, fmt.Errorf("%s=%q: want a non-negative USD amount with at most 6 decimals, at most %s", name, v, tools.USD(maxMicro))
	}
	return d.Shift(6).IntPart(), nil
}

func chooseMailer(cfg Config, deps Deps, log *slog.Logger) (onboarding.Mailer, error) {
	switch {
	case deps.Mailer != nil:
		return deps.Mailer, nil
	case cfg.SMTPURL != "":
		return onboarding.NewSMTPMailer(cfg.SMTPURL, cfg.MailFrom)
	case cfg.Env == "production":
		log.Warn("no SWITCHBOARD_SMTP_URL in production: e-mail sign-up and sign-in are off (agent_signup answers 404, /developer says so); " +
			"let people in with 'switchboard admin account create --email ...' and 'switchboard admin key issue --email ... --scopes ...', or set SWITCHBOARD_SMTP_URL")
		return nil, nil
	default:
		log.Warn("no SWITCHBOARD_SMTP_URL: the development mailer writes one-time codes to this log instead of sending them")
		return onboarding.DevMailer{Log: log}, nil
	}
}

func loadSigningKey(cfg Config, log *slog.Logger) (ed25519.PrivateKey, error) {
	path := cfg.SigningKeyFile
	if cfg.Env == "production" { // the file must be there: production generates no key
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("SWITCHBOARD_SIGNING_KEY_FILE: %w (production never generates its signing key: make it with `openssl genpkey -algorithm ed25519 -out signing-key.pem`)", err)
		}
		key, err := signing.ParsePrivateKeyPEM(data)
		if err != nil {
			return nil, fmt.Errorf("SWITCHBOARD_SIGNING_KEY_FILE %s: %w", path, err)
		}
		return key, nil
	}
	if path == "" {
		path = filepath.Join(cfg.DataDir, "signing-key.pem")
	}
	key, created, err := signing.LoadOrCreatePrivateKey(path)
	if err != nil {
		return nil, err
	}
	if created {
		log.Warn("generated a new Ed25519 signing key for the test environment; production refuses to start without its own (SWITCHBOARD_SIGNING_KEY_FILE)", "path", path)
	}
	return key, nil
}

// loadKeys returns the base64 32-byte keys of a setting (comma-separated, current first) or,
// when it is empty, of a file in the data dir, generating the file (0600) on first start.
func loadKeys(env, value, path, what string, log *slog.Logger) ([][]byte, error) {
	if value != "" {
		keys, err := wallets.ParseMasterKeys(value)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", env, err)
		}
		if len(keys) == 0 {
			return nil, fmt.Errorf("%s holds no key", env)
		}
		return keys, nil
	}
	data, err := os.ReadFile(path)
	if err == nil {
		return wallets.ParseMasterKeys(strings.TrimSpace(string(data)))
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", what, err)
	}
	_, werr := f.WriteString(base64.StdEncoding.EncodeToString(key) + "\n")
	if cerr := f.Close(); werr != nil || cerr != nil {
		return nil, fmt.Errorf("write %s: %w", what, errors.Join(werr, cerr))
	}
	log.Warn("generated a new "+what+" for the test environment; production refuses to start without its own ("+env+")", "path", path)
	return [][]byte{key}, nil
}

// derive keys a purpose-specific secret from the server secret.
func derive(serverSecret []byte, purpose string) []byte {
	m := hmac.New(sha256.New, serverSecret)
	m.Write([]byte(purpose))
	return m.Sum(nil)
}

// topupConfig reads credit_topup's bounds.
func topupConfig(cfg Config) (payments.TopupConfig, error) {
	var c payments.TopupConfig
	var err error
	f, def := cfg, Defaults() // unset (a configuration built without Defaults): the defaults
	for _, v := range []struct {
		got *string
		def string
	}{{&f.TopupMinUSD, def.TopupMinUSD}, {&f.TopupMaxUSD, def.TopupMaxUSD}, {&f.TopupCapUSD, def.TopupCapUSD}} {
		if *v.got == "" {
			*v.got = v.def
		}
	}
	if c.MinMicro, err = usdMicro("SWITCHBOARD_TOPUP_MIN_USD", f.TopupMinUSD, tools.MaxUSDMicro); err != nil {
		return c, err
	}
	if c.MaxMicro, err = usdMicro("SWITCHBOARD_TOPUP_MAX_USD", f.TopupMaxUSD, tools.MaxUSDMicro); err != nil {
		return c, err
	}
	if c.CapMicro, err = usdMicro("SWITCHBOARD_TOPUP_BALANCE_CAP_USD", f.TopupCapUSD, billing.MaxBalanceMicro); err != nil {
		return c, err
	}
	if c.MinMicro <= 0 || c.MinMicro > c.MaxMicro || c.MaxMicro > c.CapMicro {
		return c, fmt.Errorf("SWITCHBOARD_TOPUP_MIN_USD (%s), SWITCHBOARD_TOPUP_MAX_USD (%s), SWITCHBOARD_TOPUP_BALANCE_CAP_USD (%s): want 0 < min <= max <= cap", f.TopupMinUSD, f.TopupMaxUSD, f.TopupCapUSD)
	}
	return c, nil
}

// flatFee connects the flat-fee network when one is configured.
func flatFee(ctx context.Context, cfg Config, d service.Deps, bill *billing.Service,
	walletKey func(context.Context, string) ([]byte, string, error)) (*payments.Service, error) {
	f := cfg.FlatFee
	if f.RPCURL == "" {
		return nil, nil
	}
	for name, v := range map[string]string{"SWITCHBOARD_FLATFEE_TOKEN": f.Token, "SWITCHBOARD_FLATFEE_PAYER": f.Payer} {
		if !common.IsHexAddress(v) {
			return nil, fmt.Errorf("%s=%q: want a 0x address (switchboard admin deploy-payer prints it)", name, v)
		}
	}
	key, err := contracts.ParseKey(f.RelayerKey)
	if err != nil {
		return nil, fmt.Errorf("SWITCHBOARD_FLATFEE_RELAYER_KEY: want a hex secp256k1 private key: %w", err)
	}
	platform, err := usdMicro("SWITCHBOARD_FLATFEE_PLATFORM_USD", f.PlatformUSD, billing.MaxGrantMicro)
	if err != nil {
		return nil, err
	}
	var treasury common.Address // unset: the payer contract's (top-ups are paid to it)
	if f.Treasury != "" {
		if !common.IsHexAddress(f.Treasury) {
			return nil, fmt.Errorf("SWITCHBOARD_FLATFEE_TREASURY=%q: want a 0x address", f.Treasury)
		}
		treasury = common.HexToAddress(f.Treasury)
	}
	return payments.New(ctx, payments.Config{RPCURL: f.RPCURL, ChainID: int64(f.ChainID), Token: common.HexToAddress(f.Token),
		Payer: common.HexToAddress(f.Payer), Treasury: treasury, RelayerKey: key, Confirmations: f.Confirmations, PlatformMicro: platform, WalletKey: walletKey, BaseURL: cfg.PublicBaseURL()}, d, bill)
}

// failpointOf is the tests' failpoint: the process kills itself (SIGKILL, no cleanup) at the
// first step named step; a no-op when step is empty (Config.Validate refuses it in production).
func failpointOf(step string, log *slog.Logger) func(string) {
	if step == "" {
		return func(string) {}
	}
	return func(at string) {
		if at != step {
			return
		}
		log.Warn("failpoint reached: killing this process", "step", at)
		if p, err := os.FindProcess(os.Getpid()); err == nil {
			p.Kill()
		}
		select {} // the signal is on its way
	}
}

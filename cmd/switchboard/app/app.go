package app

import (
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
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/shopspring/decimal"
	"github.com/switchboard-hq/switchboard/mcpserver"
	"github.com/switchboard-hq/switchboard/portal"
	"github.com/switchboard-hq/switchboard/rest"
	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/account"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/discover"
	"github.com/switchboard-hq/switchboard/tools/dispatch"
	"github.com/switchboard-hq/switchboard/tools/integrations"
	"github.com/switchboard-hq/switchboard/tools/keys"
	"github.com/switchboard-hq/switchboard/tools/onboarding"
	"github.com/switchboard-hq/switchboard/tools/partners"
	"github.com/switchboard-hq/switchboard/tools/partners/outbound"
	"github.com/switchboard-hq/switchboard/tools/sessions"
	"github.com/switchboard-hq/switchboard/tools/tokens"
	"github.com/switchboard-hq/switchboard/tools/wallets"
)

// Version is the service version reported by MCP and OpenAPI.
const Version = "0.1.0"

// Deps are what the app takes from outside besides Config: a clock and a mailer override
// (tests inject both; nil means the real ones).
type Deps struct {
	Now    func() time.Time
	Mailer onboarding.Mailer
	Log    *slog.Logger
}

// App is a built service.
type App struct {
	Config     Config
	Store      *store.Store
	Kernel     *tools.Kernel
	MCP        *mcp.Server // served over Streamable HTTP at /mcp
	Handler    http.Handler
	SigningKey ed25519.PrivateKey
	Log        *slog.Logger
	Partners   *partners.Service // partner intents; the operator CLI uses it
	Billing    *billing.Service  // credit, ledger, the reservation sweeper
	Dispatch   *dispatch.Service // partner calls; concludes abandoned ones
}

// Sweep concludes dispatches a crashed process abandoned (sending idempotent ones again for
// their real outcome) and refunds reservations nobody settled. It is safe on several
// replicas at once.
func (a *App) Sweep(ctx context.Context) (recovered, refunded int, err error) {
	if recovered, err = a.Dispatch.Recover(ctx); err != nil {
		return recovered, 0, err
	}
	refunded, err = a.Billing.Sweep(ctx)
	return recovered, refunded, err
}

// RunSweeper sweeps every interval until ctx ends.
func (a *App) RunSweeper(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, _, err := a.Sweep(ctx); err != nil && ctx.Err() == nil {
				a.Log.ErrorContext(ctx, "sweep", "err", err)
			}
		}
	}
}

// StdioServer is the MCP server for stdio: the same tools, acting with SWITCHBOARD_API_KEY
// when a call carries no key (the HTTP server never does).
func (a *App) StdioServer() *mcp.Server {
	return mcpserver.New(a.Kernel, mcpserver.Options{Name: "switchboard", Version: Version, Stdio: true, APIKey: a.Config.APIKey, Log: a.Log})
}

// Close releases the database.
func (a *App) Close() error { return a.Store.Close() }

// Build opens the store, runs migrations, loads (or on first start creates) the keys, and
// assembles the tools and both doors.
func Build(ctx context.Context, cfg Config, deps Deps) (*App, error) {
	st, err := store.Open(ctx, cfg.DatabaseURL, cfg.DataDir)
	if err != nil {
		return nil, err
	}
	a, err := BuildOn(ctx, cfg, deps, st)
	if err != nil {
		st.Close()
		return nil, err
	}
	return a, nil
}

// BuildOn is Build on an already open store, which the caller keeps ownership of.
func BuildOn(ctx context.Context, cfg Config, deps Deps, st *store.Store) (*App, error) {
	log := deps.Log
	if log == nil {
		log = slog.Default()
	}
	now := deps.Now
	if now == nil {
		now = time.Now
	}
	applied, err := st.Migrate(ctx)
	if err != nil {
		return nil, err
	}
	if len(applied) > 0 {
		log.Info("migrations applied", "migrations", applied)
	}
	signingKey, err := loadSigningKey(cfg, log)
	if err != nil {
		return nil, err
	}
	masterKeys, err := loadKeys("SWITCHBOARD_MASTER_KEY", cfg.MasterKey, filepath.Join(cfg.DataDir, "master.key"), "wallet master key", log)
	if err != nil {
		return nil, err
	}
	// The e-mail code and pseudonym secrets derive from a secret that never rotates, so
	// rotating the master key changes neither the userId partners see nor live codes.
	serverSecret, err := loadKeys("SWITCHBOARD_SERVER_SECRET", cfg.ServerSecret, filepath.Join(cfg.DataDir, "server-secret.key"), "server secret", log)
	if err != nil {
		return nil, err
	}
	if len(serverSecret) != 1 || len(serverSecret[0]) != 32 {
		return nil, errors.New("SWITCHBOARD_SERVER_SECRET: want exactly one base64 32-byte key")
	}
	sealer, err := wallets.NewSealer(masterKeys...)
	if err != nil {
		return nil, fmt.Errorf("master key: %w", err)
	}
	spend, err := usdMicro("SWITCHBOARD_DEFAULT_SPEND_LIMIT_USD", cfg.DefaultSpendLimit, tools.MaxUSDMicro)
	if err != nil {
		return nil, err
	}
	keySvc := keys.NewService(st, cfg.Env, keys.Limits{SpendMicro: spend, RatePerMinute: cfg.DefaultRateLimit}, now)
	billCfg, err := billingConfig(cfg)
	if err != nil {
		return nil, err
	}
	billSvc := billing.NewService(st, billCfg, now, log)

	mailer, err := chooseMailer(cfg, deps, log)
	if err != nil {
		return nil, err
	}
	var all []*tools.Tool
	// The code hashes are keyed by a server-side secret: stealing the database alone does
	// not let anyone test codes offline.
	obCfg := onboarding.DefaultConfig(derive(serverSecret[0], "switchboard e-mail codes v1"), now)
	obCfg.StartingGrant = billCfg.StartingGrantMicro
	ob := onboarding.NewService(obCfg, st, mailer, keySvc, sealer)
	if mailer != nil { // without one, e-mail onboarding is off
		all = append(all, ob.Tools()...)
	}
	all = append(all, keySvc.Tools()...)
	all = append(all, account.NewService(st, keySvc, now).Tools()...)
	if cfg.AllowLocalEndpoints && cfg.Env == "production" {
		log.Warn("SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS is on in production: partner endpoints may be http and local addresses (SSRF guard off); use it only to probe partners from an operator machine")
	}
	partnerCA, err := outbound.ReadCAFile(cfg.PartnerCAFile)
	if err != nil {
		return nil, err
	}
	partnerOut, err := outbound.New(outbound.Options{Signer: signing.NewSigner(signingKey), AllowLocal: cfg.AllowLocalEndpoints, ExtraCAPEM: partnerCA, Log: log})
	if err != nil {
		return nil, fmt.Errorf("SWITCHBOARD_PARTNER_CA_FILE: %w", err)
	}
	pseudonyms := derive(serverSecret[0], "switchboard partner pseudonyms v1") // the userId partners see
	partnerSvc, err := partners.NewService(partners.Config{Env: cfg.Env, PseudonymSecret: pseudonyms, Now: now, Log: log}, st, partnerOut)
	if err != nil {
		return nil, err
	}
	all = append(all, partnerSvc.Tools()...)
	tokenSvc, err := tokens.NewService(st, cfg.Tokens, now, log)
	if err != nil {
		return nil, err
	}
	all = append(all, tokenSvc.Tools()...)
	dispatchSvc := dispatch.NewService(dispatch.Config{PseudonymSecret: pseudonyms, SettlementChain: cfg.SettlementChain},
		st, partnerOut, billSvc, tokenSvc, now, log)
	all = append(all, dispatchSvc.Tools()...)

	disc, err := discover.NewService(ctx, st, now, all)
	if err != nil {
		return nil, err
	}
	all = append(all, disc.Tools()...)

	kernel, err := tools.NewKernel(tools.NewAuthenticator(st, now, log), tools.NewRateLimiter(now), log, now, all...)
	if err != nil {
		return nil, err
	}
	mcpSrv := mcpserver.New(kernel, mcpserver.Options{Name: "switchboard", Version: Version, Log: log})
	pubPEM, err := signing.MarshalPublicKeyPEM(signingKey.Public().(ed25519.PublicKey))
	if err != nil {
		return nil, err
	}
	// The portal signs humans in with an e-mail code or an identity provider: with neither it
	// has no way in.
	providers, err := cfg.Providers()
	if err != nil {
		return nil, err
	}
	var portalHandler http.Handler
	if mailer != nil || len(providers) > 0 {
		idle, err1 := time.ParseDuration(cfg.SessionIdle)
		maxAge, err2 := time.ParseDuration(cfg.SessionMaxAge)
		if err1 != nil || err2 != nil || idle < time.Minute || maxAge < idle {
			return nil, fmt.Errorf("SWITCHBOARD_SESSION_IDLE=%q, SWITCHBOARD_SESSION_MAX_AGE=%q: want Go durations, idle at least 1m and at most the max age", cfg.SessionIdle, cfg.SessionMaxAge)
		}
		ceiling := keySvc.Defaults()
		sessSvc := sessions.NewService(sessions.Config{Idle: idle, Absolute: maxAge, Ceiling: ceiling}, st, now)
		var signIn func(ctx context.Context, email, code, clientAddr string) (string, error)
		if mailer != nil {
			signIn = ob.SignIn
		}
		// The docs' API reference is rendered from the same OpenAPI document /openapi.json serves.
		apiDoc, err := rest.OpenAPI(kernel, rest.Docs{BaseURL: cfg.PublicBaseURL(), TestBaseURL: cfg.TestBaseURL, Env: cfg.Env, Version: Version})
		if err != nil {
			return nil, err
		}
		if portalHandler, err = portal.New(portal.Options{Kernel: kernel, Sessions: sessSvc, SignIn: signIn, OpenAPI: apiDoc,
			AccountForEmail: ob.AccountForEmail, OIDC: providers, Integrations: integrations.NewService(st, now), Now: now,
			BaseURL: cfg.PublicBaseURL(), CSRFKey: derive(serverSecret[0], "switchboard portal forms v1"), Ceiling: ceiling, Log: log}); err != nil {
			return nil, err
		}
	}
	handler, err := front(frontOptions{
		Kernel: kernel, MCP: mcpserver.HTTPHandler(mcpSrv, log), Portal: portalHandler, PublicKeyPEM: pubPEM, Ready: st.Ping, Log: log,
		Docs: rest.Docs{BaseURL: cfg.PublicBaseURL(), TestBaseURL: cfg.TestBaseURL, Env: cfg.Env, Version: Version, EmailSignup: mailer != nil},
	})
	if err != nil {
		return nil, err
	}
	return &App{Config: cfg, Store: st, Kernel: kernel, MCP: mcpSrv, Handler: handler, SigningKey: signingKey, Log: log, Partners: partnerSvc, Billing: billSvc, Dispatch: dispatchSvc}, nil
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
	if cfg.PlatformFeeBps < 0 || cfg.PlatformFeeBps > 10_000 {
		return c, fmt.Errorf("SWITCHBOARD_PLATFORM_FEE_BPS=%d: want 0 to 10000", cfg.PlatformFeeBps)
	}
	c.PlatformFeeBps = int64(cfg.PlatformFeeBps)
	return c, nil
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
		log.Warn("no SWITCHBOARD_SMTP_URL in production: e-mail onboarding is off; humans paste keys")
		return nil, nil
	default:
		log.Warn("no SWITCHBOARD_SMTP_URL: the development mailer writes one-time codes to this log instead of sending them")
		return onboarding.DevMailer{Log: log}, nil
	}
}

func loadSigningKey(cfg Config, log *slog.Logger) (ed25519.PrivateKey, error) {
	path := cfg.SigningKeyFile
	if path == "" {
		path = filepath.Join(cfg.DataDir, "signing-key.pem")
	}
	key, created, err := signing.LoadOrCreatePrivateKey(path)
	if err != nil {
		return nil, err
	}
	if created {
		log.Warn("generated a new Ed25519 signing key; production must supply its own (SWITCHBOARD_SIGNING_KEY_FILE)", "path", path)
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
	log.Warn("generated a new "+what+"; production must supply its own ("+env+")", "path", path)
	return [][]byte{key}, nil
}

// derive keys a purpose-specific secret from the server secret.
func derive(serverSecret []byte, purpose string) []byte {
	m := hmac.New(sha256.New, serverSecret)
	m.Write([]byte(purpose))
	return m.Sum(nil)
}

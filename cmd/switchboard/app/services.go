package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/redis/go-redis/v9"
	"github.com/switchboard-hq/switchboard/chain/evm"
	"github.com/switchboard-hq/switchboard/chain/solana/transfer"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/metrics"
	"github.com/switchboard-hq/switchboard/contracts"
	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/commit"
	"github.com/switchboard-hq/switchboard/store/sends"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/account"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/discover"
	"github.com/switchboard-hq/switchboard/tools/dispatch"
	"github.com/switchboard-hq/switchboard/tools/idempotency"
	"github.com/switchboard-hq/switchboard/tools/keys"
	"github.com/switchboard-hq/switchboard/tools/onboarding"
	"github.com/switchboard-hq/switchboard/tools/payments"
	"github.com/switchboard-hq/switchboard/tools/policies"
	"github.com/switchboard-hq/switchboard/tools/ratelimit"
	"github.com/switchboard-hq/switchboard/tools/rowcache"
	"github.com/switchboard-hq/switchboard/tools/send"
	"github.com/switchboard-hq/switchboard/tools/service"
	"github.com/switchboard-hq/switchboard/tools/tokens"
	"github.com/switchboard-hq/switchboard/tools/wallets"
	"github.com/switchboard-hq/switchboard/tools/webhooks"
)

// services are BuildOn's first layer: the built services and every tool they offer, in the
// order the kernel registers them (buildServices).
type services struct {
	keys       *keys.Service
	billing    *billing.Service
	infraCost  int64           // billing's infrastructure cost per call, micro-USD (discover lists it)
	rows       *rowcache.Cache // the intent and the caller's tier every invocation reads
	listeners  *webhooks.Listeners
	batcher    *commit.Batcher // the recording's batch writer, run by the background work
	failpoint  func(string)
	mailer     onboarding.Mailer // nil: e-mail onboarding is off
	onboarding *onboarding.Service
	partners   partnerSide
	webhooks   *webhooks.Service
	payments   *payments.Service // nil when not configured
	wallet     *send.Wallet      // wallet_send, and the follower of its sends
	limiter    tools.Limiter
	redis      *redis.Client // the shared rate limiter's connection; nil when not configured
	metrics    *metrics.Metrics
	dispatch   *dispatch.Service
	policies   *policies.Service
	discover   *discover.Service
	human      humanServices
	idem       *idempotency.Service
	tools      []*tools.Tool // every tool, wrapped (idempotency, answer checks): the kernel's
}

// buildServices builds the services and the tools they offer: keys, billing and onboarding;
// the partner side, webhooks, tokens, payments, dispatch and policies; then the portal's
// session-only tools, and every tool wrapped once. What it opens it adds to undo.
func buildServices(ctx context.Context, cfg Config, deps Deps, d service.Deps, sec secrets, signer *signing.Signer, undo *[]func()) (*services, error) {
	s := &services{}
	if err := s.buildAccounts(cfg, deps, d, sec); err != nil {
		return nil, err
	}
	if err := s.buildCalls(ctx, cfg, deps, d, sec, signer, undo); err != nil {
		return nil, err
	}
	if err := s.buildHuman(cfg, deps, d, sec); err != nil {
		return nil, err
	}
	return s, nil
}

// buildAccounts builds keys, billing (on its Recording and the row cache's tiers), the mailer,
// onboarding and account.
func (s *services) buildAccounts(cfg Config, deps Deps, d service.Deps, sec secrets) error {
	spend, err := usdMicro("SWITCHBOARD_DEFAULT_SPEND_LIMIT_USD", cfg.DefaultSpendLimit, tools.MaxUSDMicro)
	if err != nil {
		return err
	}
	s.keys = keys.NewService(keys.Config{Env: cfg.Env, Defaults: keys.Limits{SpendMicro: spend, RatePerMinute: cfg.DefaultRateLimit}}, d)
	billCfg, err := billingConfig(cfg)
	if err != nil {
		return err
	}
	s.infraCost = billCfg.InfraCostMicro
	// The intent and the caller's tier every invocation reads, from memory on every replica.
	s.rows = rowcache.New(d)
	billCfg.TierOf = s.rows.Tier
	s.listeners = webhooks.NewListeners(d.Store, d.Now)
	billCfg.Listens = s.listeners.Any
	s.failpoint = failpointOf(cfg.Failpoint, d.Log)
	rec, batcher, err := recording(cfg, d.Store, d.Log, s.failpoint)
	if err != nil {
		return err
	}
	s.batcher = batcher
	s.billing = billing.NewService(billCfg, d, rec)

	if s.mailer, err = chooseMailer(cfg, deps, d.Log); err != nil {
		return err
	}
	s.onboarding = onboarding.NewService(onboardingConfig(sec.serverSecret, s.billing), d, s.mailer, s.keys, sec.sealer)
	if s.mailer != nil { // without one, e-mail onboarding is off
		s.tools = append(s.tools, s.onboarding.Tools()...)
	}
	s.tools = append(s.tools, s.keys.Tools()...)
	s.tools = append(s.tools, account.NewService(d, s.keys).Tools()...)
	return nil
}

// buildCalls builds what partner calls and payments go through: the partner side, webhooks,
// tokens, flat-fee payments and top-ups, the rate limiter and the metrics, dispatch, policies
// and discover.
func (s *services) buildCalls(ctx context.Context, cfg Config, deps Deps, d service.Deps, sec secrets, signer *signing.Signer, undo *[]func()) (err error) {
	if s.partners, err = newPartnerSide(ctx, cfg, d, signer, s.mailer, s.onboarding, sec.serverSecret, deps.Metadata); err != nil {
		return err
	}
	*undo = append(*undo, s.partners.close)
	s.tools = append(s.tools, s.partners.svc.Tools()...)
	if s.webhooks, err = webhooks.NewService(webhooks.Config{SecretKey: derive(sec.serverSecret, "switchboard webhook endpoint secrets v1"),
		Signer: signer, Client: s.partners.out, AllowLocal: cfg.AllowLocalEndpoints, Notify: notifier(d, s.mailer), Listeners: s.listeners}, d); err != nil {
		return err
	}
	s.tools = append(s.tools, s.webhooks.Tools()...)
	tokenSvc, err := tokens.NewService(cfg.Tokens, d)
	if err != nil {
		return err
	}
	s.tools = append(s.tools, tokenSvc.Tools()...)
	if s.payments, err = flatFee(ctx, cfg, d, s.billing, func(ctx context.Context, accountID string) ([]byte, string, error) {
		return wallets.EVMKey(ctx, d.Store, sec.sealer, accountID)
	}); err != nil {
		return err
	}
	paySvc := s.payments
	*undo = append(*undo, func() { shutdown(paySvc) })
	topupCfg, err := topupConfig(cfg)
	if err != nil {
		return err
	}
	topupCfg.Failpoint = s.failpoint
	s.tools = append(s.tools, payments.NewTopups(topupCfg, d, s.payments).Tools()...)
	// Rate limits: in this process by default; shared by every replica through Redis when
	// one is configured.
	if s.limiter, s.redis, err = rateLimiter(ctx, cfg, d.Now); err != nil {
		return err
	}
	rdb := s.redis
	*undo = append(*undo, func() { closeRedis(rdb) })
	// Always measured (it is cheap); served only when SWITCHBOARD_METRICS_ADDR is set.
	s.metrics = metrics.New(d.Store, s.redis, d.Log)
	// One approval life: dispatch asks and reads, the owner decides through the policy tools.
	approvals := policies.NewApprovals(d, notifier(d, s.mailer))
	taskAfter, err := cfg.taskAfter()
	if err != nil {
		return err
	}
	replica, _ := os.Hostname()
	// wallet_send: the embedded wallets send on the balances chains, the follower concludes;
	// invoke signs what MUTATES_USER_FUNDS partners propose with the same wallets.
	s.wallet = send.NewWallet(newSender(cfg, d, sec.sealer, s.failpoint), tokenSvc, s.billing, approvals, d)
	s.dispatch = dispatch.NewService(dispatch.Config{UserID: s.partners.svc.UserID, SettlementChain: cfg.SettlementChain,
		Payments: s.payments, Signer: signer, Observe: s.metrics.ObserveInvoke, Intents: s.rows.Intent, Failpoint: s.failpoint, Approvals: approvals,
		TaskAfter: taskAfter, Replica: replica, Wallet: s.wallet}, d, s.partners.out, s.billing, tokenSvc)
	s.tools = append(s.tools, s.dispatch.Tools()...)
	s.policies = policies.NewService(d, s.billing, s.keys, approvals)
	s.tools = append(s.tools, s.policies.Tools()...)
	// x402_fetch: the embedded wallet pays x402 resources, through the partner client's guard.
	s.tools = append(s.tools, payments.NewFetches(payments.FetchConfig{Client: s.partners.out}, d, s.payments, s.billing, approvals).Tools()...)
	s.tools = append(s.tools, s.wallet.Tools()...)

	if s.discover, err = discover.NewService(ctx, discover.Config{Registered: s.tools, InfraCostMicro: s.infraCost}, d); err != nil {
		return err
	}
	s.tools = append(s.tools, s.discover.Tools()...)
	return nil
}

// buildHuman builds the portal's own tools (tools.SessionOnly: registered with the rest,
// published by no door) and the services behind them, where people can sign in; then wraps
// every tool once: idempotency keys, and the tests' answer checks.
func (s *services) buildHuman(cfg Config, deps Deps, d service.Deps, sec secrets) (err error) {
	if s.human, err = newHumanServices(cfg, d, s.mailer, s.onboarding, s.keys, s.partners.svc, s.billing.Settled, s.partners.metadata, sec.sealer); err != nil {
		return err
	}
	s.tools = append(s.tools, s.human.tools...)

	// Every tool that declares TakesIdempotencyKey takes one, on every door (tools/idempotency).
	// Their answers are sealed under the master key (admin reseal moves them); the server
	// secret's key only opens what earlier releases sealed.
	if s.idem, err = idempotency.NewService(idempotency.Config{Sealer: sec.sealer, LegacyKey: derive(sec.serverSecret, "switchboard idempotency answers v1")}, d); err != nil {
		return err
	}
	if s.tools, err = s.idem.Wrap(s.tools); err != nil {
		return err
	}
	if deps.CheckAnswers != nil {
		s.tools = tools.CheckingAnswers(s.tools, deps.CheckAnswers)
	}
	return nil
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

// onboardingConfig is e-mail onboarding's: the code hashes are keyed by a server-side secret
// (stealing the database alone does not let anyone test codes offline), and a new account gets
// its starting grant.
func onboardingConfig(serverSecret []byte, billSvc *billing.Service) onboarding.Config {
	c := onboarding.DefaultConfig(derive(serverSecret, "switchboard e-mail codes v1"))
	c.OnCreate = billSvc.StartingGrant()
	return c
}

// notifier e-mails an account's owner (nil without a mailer): an intent deactivated by its
// re-probes, a webhook endpoint disabled.
func notifier(d service.Deps, mailer onboarding.Mailer) func(ctx context.Context, accountID, subject, text string) error {
	if mailer == nil {
		return nil
	}
	return func(ctx context.Context, accountID, subject, text string) error {
		acct, err := accounts.New(d.Store).ByID(ctx, accountID)
		if err != nil {
			return err
		}
		return mailer.Send(ctx, onboarding.Message{To: acct.Email, Subject: subject, Text: text})
	}
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
	margin, _ := time.ParseDuration(cfg.SweepMargin) // checked with the money settings; 0: the default
	return payments.New(ctx, payments.Config{RPCURL: f.RPCURL, ChainID: int64(f.ChainID), Token: common.HexToAddress(f.Token),
		Payer: common.HexToAddress(f.Payer), Treasury: treasury, RelayerKey: key, Confirmations: f.Confirmations, PlatformMicro: platform, WalletKey: walletKey, BaseURL: cfg.PublicBaseURL(),
		SweepMargin: margin}, d, bill)
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

// newSender is wallet_send's sender on the balances chains' nodes (SWITCHBOARD_RPC_*, each at
// its chain's id) and Solana's (SWITCHBOARD_SOLANA_RPC_URL); a chain without a URL sends
// nothing. The wallets' keys are opened only while the account's signing is on.
func newSender(cfg Config, d service.Deps, sealer *wallets.Sealer, failpoint func(string)) *send.Sender {
	hc := &http.Client{Timeout: 20 * time.Second}
	sc := send.Config{EVM: map[string]send.Chain{}, Failpoint: failpoint}
	for _, c := range tokens.Chains {
		url := cfg.Tokens.RPCURL(c.Name)
		switch {
		case url == "":
		case c.Family == tokens.FamilyEVM:
			sc.EVM[c.Name] = send.Chain{Client: evm.NewClient(c.ID, url, hc, d.Now), Confirmations: 1}
		case c.Name == send.SolanaChain:
			sc.Solana = transfer.NewClient(url, hc, d.Now)
		}
	}
	return send.New(sc, d, sends.New(d.Store), send.Keys{
		EVM: func(ctx context.Context, accountID string) ([]byte, string, error) {
			return wallets.EVMKey(ctx, d.Store, sealer, accountID)
		},
		Solana: func(ctx context.Context, accountID string) ([]byte, string, error) {
			return wallets.SolanaKey(ctx, d.Store, sealer, accountID)
		},
	})
}

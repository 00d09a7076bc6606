// Package app wires Switchboard together: configuration, store, keys, tools, and the MCP and
// REST doors. cmd/switchboard and the end-to-end tests both build the service through it.
package app

import (
	"errors"
	"flag"
	"fmt"
	"github.com/switchboard-hq/switchboard/store"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-hq/switchboard/portal"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/keys"
	"github.com/switchboard-hq/switchboard/tools/send"
	"github.com/switchboard-hq/switchboard/tools/tokens"
)

// Config is every setting, read from SWITCHBOARD_* environment variables; the common ones are
// also flags of `switchboard serve`.
// Failpoints are the steps SWITCHBOARD_FAILPOINT may name (the crash-consistency tests).
var Failpoints = []string{"reserve", "answered", "batch", "topup", send.FailJudged, send.FailSigned, send.FailBroadcast}

type Config struct {
	Addr                string
	MetricsAddr         string // the operator's listener: /metrics and /debug/pprof/; empty: off
	BaseURL             string
	TestBaseURL         string
	DataDir             string
	DatabaseURL         string
	DatabaseMaxConns    int // PostgreSQL pool size of this process
	Env                 string
	SMTPURL             string
	MailFrom            string
	SigningKeyFile      string
	MasterKey           string
	ServerSecret        string
	AllowLocalEndpoints bool
	DemoPartner         bool // test environment: serve offers the in-process demo partner @demo_echo
	PartnerCAFile       string
	InfraCostUSD        string // reserved per invocation, decimal USD
	FeeTiers            string // tier=bps,... platform basis points on routed value by caller tier
	PlatformFloorUSD    string // platform fee of a call that routes no value, decimal USD
	GasMarginBps        int    // held over a gas estimate for the worst case
	StartingCreditUSD   string // credit of a new account (test environment only)
	// credit_topup's bounds, decimal USD: per top-up, and the balance it may bring an account to.
	TopupMinUSD, TopupMaxUSD, TopupCapUSD string
	SettlementChain                       string
	SweepMargin                           string // Go duration added to a call's timeout before the sweeper may conclude it
	SweepInterval                         string // Go duration between sweeps of a serving process
	DrainDelay                            string // Go duration serve keeps accepting after SIGTERM, readiness off
	ShutdownTimeout                       string // Go duration serve waits for in-flight calls after it stops accepting
	SettleAfterAnswer                     bool   // a finished invocation commits in a batch after its caller is answered
	BudgetLeases                          bool   // new non-write calls reserve from per-key budget leases (needs SettleAfterAnswer)
	SessionIdle                           string // portal sessions end after this long unused
	SessionMaxAge                         string // portal sessions end this long after sign-in
	OIDCProviders                         string // label=...,issuer=...,client_id=...,client_secret=... entries separated by ;
	APIKey                                string
	Toolsets                              string // the toolsets `switchboard stdio` lists, comma-separated; empty: the key's default
	DefaultSpendLimit                     string // USD, decimal
	DefaultRateLimit                      int
	LogLevel                              string
	BodyReadTimeout                       string        // Go duration reading one request body may take
	TaskAfter                             string        // Go duration: an intent whose timeoutMs is above it runs as a task for hosts that take one
	MaxConnsPerClient                     int           // connections open at once from one client address; 0: no cap
	RedisURL                              string        // shared rate limits for several replicas; empty: in this process
	ReprobeInterval                       string        // Go duration between re-probes of each active intent; 0 disables
	ReprobeFailures                       int           // re-probes in a row that may fail before an intent is deactivated
	Tokens                                tokens.Config // token lookups: RPC endpoints, price providers
	FlatFee                               FlatFeeConfig // the network flat-fee intents are paid on
	Failpoint                             string        // tests only: the invoke step at which this process kills itself

	// The default data directory (SWITCHBOARD_DATA_DIR empty): the per-user root it is under,
	// the directory Validate chose for the environment (so a flag that changes the environment
	// changes it too), and what to tell the operator about that choice.
	dataRoot, dataDirAuto, dataDirNote string
}

type setting struct {
	env, flag, usage string
	str              *string
	boolean          *bool
	integer          *int
	common           bool // also a flag
}

func (c *Config) settings() []setting {
	return []setting{
		{env: "SWITCHBOARD_ADDR", flag: "addr", usage: "listen address for HTTP (MCP at /mcp, REST at /v1, the portal, the well-known documents)", str: &c.Addr, common: true},
		{env: "SWITCHBOARD_METRICS_ADDR", flag: "metrics-addr", usage: "listen address for the operator's /metrics (Prometheus) and /debug/pprof/, e.g. 127.0.0.1:9090; keep it off the public network; empty: off", str: &c.MetricsAddr, common: true},
		{env: "SWITCHBOARD_BASE_URL", flag: "base-url", usage: "public base URL (https, required in production), used in llms.txt, OpenAPI and links; empty in test: derived from the listen address", str: &c.BaseURL, common: true},
		{env: "SWITCHBOARD_TEST_BASE_URL", flag: "test-base-url", usage: "base URL of this deployment's test environment, listed in OpenAPI servers beside the base URL", str: &c.TestBaseURL},
		{env: "SWITCHBOARD_DATA_DIR", flag: "data-dir", usage: "embedded database, generated keys (test environment) and the journal of write outcomes; empty: a folder per environment, test or production, under $XDG_DATA_HOME/switchboard, else ~/.local/share/switchboard, so serve, stdio and admin of one environment find the same database from any directory", str: &c.DataDir, common: true},
		{env: "SWITCHBOARD_DATABASE_URL", flag: "database-url", usage: "postgres://... selects PostgreSQL; a path selects another SQLite file; empty: SQLite in the data dir", str: &c.DatabaseURL, common: true},
		{env: "SWITCHBOARD_DATABASE_MAX_CONNS", flag: "database-max-conns", usage: "PostgreSQL connections this process keeps open at most (all kept when idle); N replicas use up to N times this", integer: &c.DatabaseMaxConns},
		{env: "SWITCHBOARD_ENV", flag: "env", usage: "test or production (key prefixes sb_test_ and sb_live_, publishing rules)", str: &c.Env, common: true},
		{env: "SWITCHBOARD_SMTP_URL", flag: "smtp-url", usage: "smtp://user:pass@host:port (STARTTLS when offered) or smtps://; empty: development mailer logs codes (test env only)", str: &c.SMTPURL, common: true},
		{env: "SWITCHBOARD_MAIL_FROM", flag: "mail-from", usage: "sender of code e-mails", str: &c.MailFrom},
		{env: "SWITCHBOARD_SIGNING_KEY_FILE", flag: "signing-key-file", usage: "PEM (PKCS#8) Ed25519 private key for envelopes (openssl genpkey -algorithm ed25519 -out signing-key.pem); required in production; empty (test environment): <data dir>/signing-key.pem, generated when absent", str: &c.SigningKeyFile},
		{env: "SWITCHBOARD_MASTER_KEY", flag: "master-key", usage: "base64 32-byte key(s) sealing wallet keys, current first, comma-separated (rotation; openssl rand -base64 32); required in production; empty (test environment): <data dir>/master.key, generated", str: &c.MasterKey},
		{env: "SWITCHBOARD_SERVER_SECRET", flag: "server-secret", usage: "base64 32-byte secret keying e-mail code hashes and partner pseudonyms (userId; openssl rand -base64 32); the same on every replica, never rotated; required in production; empty (test environment): <data dir>/server-secret.key, generated", str: &c.ServerSecret},
		{env: "SWITCHBOARD_DEMO_PARTNER", flag: "demo-partner", usage: "test environment only: offer @demo_echo, a partner served inside the process (signed, verified, billed in test credit) so discover → invoke works on a fresh install; never offered in production", boolean: &c.DemoPartner},
		{env: "SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS", flag: "allow-local-endpoints", usage: "development only (production refuses to start with it): partner endpoints may be http and local addresses; client metadata documents never may", boolean: &c.AllowLocalEndpoints},
		{env: "SWITCHBOARD_INFRA_COST_USD", flag: "infra-cost-usd", usage: "infrastructure cost reserved at the start of each invocation, consumed on success, refunded on failure", str: &c.InfraCostUSD},
		{env: "SWITCHBOARD_FEE_TIERS", flag: "fee-tiers", usage: "platform fee in basis points of the value a call routes, by the caller's tier (tier=bps, comma-separated; must list standard, every new account's tier; the operator moves accounts with `switchboard admin set-tier`)", str: &c.FeeTiers},
		{env: "SWITCHBOARD_PLATFORM_FLOOR_USD", flag: "platform-floor-usd", usage: "platform fee of a call that routes no value (reads, queries, writes whose value cannot be quoted)", str: &c.PlatformFloorUSD},
		{env: "SWITCHBOARD_GAS_MARGIN_BPS", flag: "gas-margin-bps", usage: "held over a write's gas estimate for its worst case, in basis points of the estimate (5000: +50%); gas settles at the partner-reported actual, capped there, or at the estimate", integer: &c.GasMarginBps},
		{env: "SWITCHBOARD_STARTING_CREDIT_USD", flag: "starting-credit-usd", usage: "credit a new account starts with (test environment only; production starts at 0)", str: &c.StartingCreditUSD},
		{env: "SWITCHBOARD_SETTLEMENT_CHAIN", flag: "settlement-chain", usage: "payoutAddresses key partner fees settle to first (namespace:chain); the bare namespace is the fallback", str: &c.SettlementChain},
		{env: "SWITCHBOARD_SESSION_IDLE", flag: "session-idle", usage: "a portal session unused this long ends (Go duration)", str: &c.SessionIdle},
		{env: "SWITCHBOARD_SESSION_MAX_AGE", flag: "session-max-age", usage: "a portal session ends this long after sign-in, used or not (Go duration)", str: &c.SessionMaxAge},
		{env: "SWITCHBOARD_OIDC_PROVIDERS", flag: "oidc-providers", usage: "OpenID Connect providers humans may sign in with: label=Google,issuer=https://accounts.google.com,client_id=...,client_secret=... (several separated by ;); redirect URI <base>/developer/sign-in/oidc/callback; empty: e-mail code only", str: &c.OIDCProviders},
		{env: "SWITCHBOARD_BUDGET_LEASES", flag: "budget-leases", usage: "with settle-after-answer: a key's calls that are not writes reserve from a budget lease this replica holds (one transaction per 64 calls instead of one per call; docs/decisions.md, Budget leases); false: each call's reservation commits before its dispatch", boolean: &c.BudgetLeases},
		{env: "SWITCHBOARD_SETTLE_AFTER_ANSWER", flag: "settle-after-answer", usage: "commit a finished read's outcome in a batch after its caller is answered, once its dispatching record has landed (the reservation holds the worst case meanwhile; writes and flat-fee calls are always answered after their outcome commits); false: answer only after the commit", boolean: &c.SettleAfterAnswer},
		{env: "SWITCHBOARD_SWEEP_INTERVAL", flag: "sweep-interval", usage: "how often a serving process sweeps for abandoned dispatches, reservations and payments (Go duration; every replica may sweep)", str: &c.SweepInterval},
		{env: "SWITCHBOARD_DRAIN_DELAY", flag: "drain-delay", usage: "after SIGTERM, how long serve keeps accepting calls with /readyz answering 503, so a proxy's health check takes it out before it stops listening (Go duration; 0 when Kubernetes' preStop does this; docs/operations.md)", str: &c.DrainDelay},
		{env: "SWITCHBOARD_SHUTDOWN_TIMEOUT", flag: "shutdown-timeout", usage: "after it stops accepting, how long serve waits for calls in flight (a partner call takes up to its timeoutMs x tries) before it flushes the batch writer, returns budget leases and exits 0 (Go duration)", str: &c.ShutdownTimeout},
		{env: "SWITCHBOARD_SWEEP_MARGIN", flag: "sweep-margin", usage: "how long past a partner call's timeout (x tries) its dispatch counts as abandoned (a crash, a lost database) and the sweeper concludes it (Go duration)", str: &c.SweepMargin},
		{env: "SWITCHBOARD_PARTNER_CA_FILE", flag: "partner-ca-file", usage: "PEM certificates trusted for partner endpoints besides the system roots (a private CA, tests)", str: &c.PartnerCAFile},
		{env: "SWITCHBOARD_REDIS_URL", flag: "redis-url", usage: "redis://host:port/db: rate limits shared by every replica (GCRA in Redis); empty: in this process. When Redis is unreachable, calls that write or cost money are refused (UNAVAILABLE), reads pass", str: &c.RedisURL, common: true},
		{env: "SWITCHBOARD_FLATFEE_RPC_URL", flag: "flatfee-rpc-url", usage: "JSON-RPC of the test network flat-fee intents are paid on; empty: flat-fee intents cannot be called", str: &c.FlatFee.RPCURL},
		{env: "SWITCHBOARD_FLATFEE_CHAIN_ID", flag: "flatfee-chain-id", usage: "that network's chain id (checked against the node)", integer: &c.FlatFee.ChainID},
		{env: "SWITCHBOARD_FLATFEE_TOKEN", flag: "flatfee-token", usage: "the EIP-3009 stablecoin (6 decimals) flat fees are paid in", str: &c.FlatFee.Token},
		{env: "SWITCHBOARD_FLATFEE_PAYER", flag: "flatfee-payer", usage: "the FlatFeePayer contract (switchboard admin deploy-payer prints it)", str: &c.FlatFee.Payer},
		{env: "SWITCHBOARD_FLATFEE_RELAYER_KEY", flag: "flatfee-relayer-key", usage: "hex secp256k1 key of the relayer that submits payments, settles, refunds and pays partners (holds gas and the payout float)", str: &c.FlatFee.RelayerKey},
		{env: "SWITCHBOARD_FLATFEE_TREASURY", flag: "flatfee-treasury", usage: "the platform's address its share of flat fees settles to (fixed in the contract at deploy-payer)", str: &c.FlatFee.Treasury},
		{env: "SWITCHBOARD_FLATFEE_CONFIRMATIONS", flag: "flatfee-confirmations", usage: "blocks a payment waits for before the partner is called", integer: &c.FlatFee.Confirmations},
		{env: "SWITCHBOARD_FLATFEE_PLATFORM_USD", flag: "flatfee-platform-usd", usage: "the platform's share added to each flat fee", str: &c.FlatFee.PlatformUSD},
		{env: "SWITCHBOARD_TOPUP_MIN_USD", flag: "topup-min-usd", usage: "the least credit one credit_topup buys (paid on the flat-fee network, to the treasury)", str: &c.TopupMinUSD},
		{env: "SWITCHBOARD_TOPUP_MAX_USD", flag: "topup-max-usd", usage: "the most credit one credit_topup buys", str: &c.TopupMaxUSD},
		{env: "SWITCHBOARD_TOPUP_BALANCE_CAP_USD", flag: "topup-balance-cap-usd", usage: "a credit_topup that would bring an account's available + reserved credit over this is refused", str: &c.TopupCapUSD},
		{env: "SWITCHBOARD_PAYOUT_INTERVAL", flag: "payout-interval", usage: "how often serve pays partners' accrued per-call fees on chain (Go duration; 0 disables; needs the flat-fee network)", str: &c.FlatFee.PayoutInterval},
		{env: "SWITCHBOARD_REPROBE_INTERVAL", flag: "reprobe-interval", usage: "how often serve probes each active intent again (negative-auth probe, plus a signed health call for idempotent categories; Go duration, jittered ±10%; 0 disables)", str: &c.ReprobeInterval},
		{env: "SWITCHBOARD_REPROBE_FAILURES", flag: "reprobe-failures", usage: "re-probes in a row that may fail (timeouts, 5xx, unclear refusals) before an intent is deactivated as unhealthy", integer: &c.ReprobeFailures},
		{env: "SWITCHBOARD_API_KEY", flag: "api-key", usage: "the key `switchboard stdio` acts with", str: &c.APIKey},
		{env: "SWITCHBOARD_TOOLSETS", flag: "toolsets", usage: "the toolsets `switchboard stdio` lists (onboarding, agent, partner, owner; comma-separated); empty: what the key may call, or onboarding and agent without a key (docs/mcp-hosts.md)", str: &c.Toolsets},
		{env: "SWITCHBOARD_DEFAULT_SPEND_LIMIT_USD", flag: "default-spend-limit-usd", usage: "spend limit of keys minted without one", str: &c.DefaultSpendLimit},
		{env: "SWITCHBOARD_DEFAULT_RATE_LIMIT_PER_MINUTE", flag: "default-rate-limit-per-minute", usage: "rate limit of keys minted without one (1 to " + strconv.Itoa(keys.MaxRatePerMinute) + ", the most admin key issue gives a key)", integer: &c.DefaultRateLimit},
		{env: "SWITCHBOARD_FAILPOINT", flag: "failpoint", usage: "tests only (refused in production): this process kills itself with SIGKILL at the first invoke reaching the step named: reserve (before the reservation commits), answered (the partner answered, nothing recorded yet) or batch (a batch of records is written, not committed); TestCrashMatrix uses it; topup: the first credit_topup whose transfer is confirmed, before it is credited (TestTopupCrashAfterTransfer); send-judged: the first confirmed wallet_send judged and recorded dispatching, before it is signed; send-signed: the first whose signed transaction is recorded, before it is broadcast; send-broadcast: the first whose transaction the node took, before that is recorded (TestSendCrash)", str: &c.Failpoint},
		{env: "SWITCHBOARD_TASK_AFTER", flag: "task-after", usage: "a partner call whose intent's timeoutMs is above this (Go duration) is answered with a task for a host that declares MCP Tasks or sends Prefer: respond-async, and paid on completion; shorter calls answer in their request", str: &c.TaskAfter},
		{env: "SWITCHBOARD_BODY_READ_TIMEOUT", flag: "body-read-timeout", usage: "how long reading one request body may take (Go duration); 20s reads the 1 MiB maximum at 64 KiB/s (512 kbit/s) with 4 s to spare. A slower body is cut off and its connection closed", str: &c.BodyReadTimeout},
		{env: "SWITCHBOARD_MAX_CONNS_PER_CLIENT", flag: "max-conns-per-client", usage: "connections open at once from one client address (an IPv4 address, an IPv6 /64); one more is answered 429 and closed. 0: no cap (behind a proxy that connects from its own address, every caller is one client: raise it or use 0)", integer: &c.MaxConnsPerClient},
		{env: "SWITCHBOARD_LOG_LEVEL", flag: "log-level", usage: "debug, info, warn or error", str: &c.LogLevel},
		{env: "SWITCHBOARD_RPC_ETHEREUM", flag: "rpc-ethereum", usage: "Ethereum JSON-RPC URL (balances, token metadata, wallet_send; each chain below likewise)", str: &c.Tokens.RPCEthereum},
		{env: "SWITCHBOARD_RPC_ARBITRUM", flag: "rpc-arbitrum", usage: "Arbitrum One JSON-RPC URL", str: &c.Tokens.RPCArbitrum},
		{env: "SWITCHBOARD_RPC_BASE", flag: "rpc-base", usage: "Base JSON-RPC URL", str: &c.Tokens.RPCBase},
		{env: "SWITCHBOARD_RPC_POLYGON", flag: "rpc-polygon", usage: "Polygon PoS JSON-RPC URL", str: &c.Tokens.RPCPolygon},
		{env: "SWITCHBOARD_RPC_OPTIMISM", flag: "rpc-optimism", usage: "OP Mainnet JSON-RPC URL", str: &c.Tokens.RPCOptimism},
		{env: "SWITCHBOARD_RPC_AVALANCHE", flag: "rpc-avalanche", usage: "Avalanche C-Chain JSON-RPC URL", str: &c.Tokens.RPCAvalanche},
		{env: "SWITCHBOARD_RPC_BSC", flag: "rpc-bsc", usage: "BNB Smart Chain JSON-RPC URL", str: &c.Tokens.RPCBSC},
		{env: "SWITCHBOARD_SOLANA_RPC_URL", flag: "solana-rpc-url", usage: "Solana JSON-RPC URL (balances, token metadata, wallet_send)", str: &c.Tokens.SolanaRPC},
		{env: "SWITCHBOARD_COINGECKO_URL", flag: "coingecko-url", usage: "CoinGecko API base (https://pro-api.coingecko.com/api/v3 for a pro key)", str: &c.Tokens.CoinGeckoURL},
		{env: "SWITCHBOARD_COINGECKO_API_KEY", flag: "coingecko-api-key", usage: "CoinGecko key (sent as x-cg-demo-api-key, or x-cg-pro-api-key on the pro API); empty: keyless", str: &c.Tokens.CoinGeckoAPIKey},
		{env: "SWITCHBOARD_DEFILLAMA_URL", flag: "defillama-url", usage: "DefiLlama coins API base", str: &c.Tokens.DefiLlamaURL},
		{env: "SWITCHBOARD_JUPITER_URL", flag: "jupiter-url", usage: "Jupiter API base: price v3 and tokens v2 (https://api.jup.ag with a key)", str: &c.Tokens.JupiterURL},
		{env: "SWITCHBOARD_JUPITER_API_KEY", flag: "jupiter-api-key", usage: "Jupiter key (x-api-key); empty: keyless", str: &c.Tokens.JupiterAPIKey},
		{env: "SWITCHBOARD_PRICE_MAX_AGE", flag: "price-max-age", usage: "oldest provider timestamp a price may carry (Go duration)", str: &c.Tokens.PriceMaxAge},
		{env: "SWITCHBOARD_BALANCES_CHAIN_TIMEOUT", flag: "balances-chain-timeout", usage: "deadline of each chain in get_balances (Go duration)", str: &c.Tokens.BalancesTimeout},
		{env: "SWITCHBOARD_MAX_CONNECTED_WALLETS", flag: "max-connected-wallets", usage: "watch-only wallets an account may connect", integer: &c.Tokens.MaxConnectedWallets},
	}
}

// Defaults returns the documented defaults.
func Defaults() Config {
	return Config{
		Addr: ":8080", Env: "test", DemoPartner: true,
		MailFrom: "Switchboard <no-reply@localhost>", DefaultSpendLimit: "50", DefaultRateLimit: 30, LogLevel: "info", BodyReadTimeout: "20s", TaskAfter: "30s", MaxConnsPerClient: 64,
		InfraCostUSD: "0.001", FeeTiers: "standard=30,pro=15,enterprise=5", PlatformFloorUSD: "0.001", GasMarginBps: 5000, StartingCreditUSD: "10", SettlementChain: "evm:8453", SweepMargin: "30s", SweepInterval: "30s", DrainDelay: "0s", ShutdownTimeout: "250s", SettleAfterAnswer: true, BudgetLeases: true, DatabaseMaxConns: store.DefaultMaxConns, SessionIdle: "12h", SessionMaxAge: "720h",
		Tokens:          tokens.DefaultConfig(),
		ReprobeInterval: "1h", ReprobeFailures: 3,
		FlatFee:     FlatFeeConfig{Confirmations: 1, PlatformUSD: "0.01", PayoutInterval: "24h"},
		TopupMinUSD: "1", TopupMaxUSD: "1000", TopupCapUSD: "10000",
	}
}

// FlatFeeConfig is the network flat-fee intents are paid on.
type FlatFeeConfig struct {
	RPCURL         string
	ChainID        int
	Token          string
	Payer          string
	RelayerKey     string
	Treasury       string
	Confirmations  int
	PlatformUSD    string
	PayoutInterval string
}

// FromEnv returns the defaults overridden by the environment (getenv, normally os.Getenv).
func FromEnv(getenv func(string) string) (Config, error) {
	c := Defaults()
	for _, s := range c.settings() {
		v := getenv(s.env)
		if v == "" {
			continue
		}
		switch {
		case s.str != nil:
			*s.str = v
		case s.boolean != nil:
			b, err := strconv.ParseBool(v)
			if err != nil {
				return c, fmt.Errorf("%s=%q: want true or false", s.env, v)
			}
			*s.boolean = b
		case s.integer != nil:
			n, err := strconv.Atoi(v)
			if err != nil {
				return c, fmt.Errorf("%s=%q: want a whole number", s.env, v)
			}
			*s.integer = n
		}
	}
	if c.DataDir == "" {
		root, err := DefaultDataDir(getenv)
		if err != nil {
			return c, err
		}
		c.dataRoot = root
	}
	// The data directory is chosen by Validate, once the flags have said the environment.
	return c, c.validateValues()
}

// RegisterFlags adds the settings as flags of fs, defaulting to their current values. all
// also adds the uncommon ones.
func (c *Config) RegisterFlags(fs *flag.FlagSet, all bool) {
	for _, s := range c.settings() {
		if !s.common && !all {
			continue
		}
		usage := s.usage + " (env " + s.env + ")"
		switch {
		case s.str != nil:
			fs.StringVar(s.str, s.flag, *s.str, usage)
		case s.boolean != nil:
			fs.BoolVar(s.boolean, s.flag, *s.boolean, usage)
		case s.integer != nil:
			fs.IntVar(s.integer, s.flag, *s.integer, usage)
		}
	}
}

// Validate checks values that have a closed set and, when SWITCHBOARD_DATA_DIR is empty,
// chooses the environment's data directory. Commands call it once their flags are parsed.
func (c *Config) Validate() error {
	if err := c.validateValues(); err != nil {
		return err
	}
	return c.chooseDataDir()
}

// chooseDataDir sets DataDir to the environment's default when the operator named none (or
// named none since the last choice: a flag may have changed the environment).
func (c *Config) chooseDataDir() error {
	if c.dataRoot == "" || (c.DataDir != "" && c.DataDir != c.dataDirAuto) {
		return nil
	}
	dir, note, err := environmentDataDir(c.dataRoot, c.Env)
	if err != nil {
		return err
	}
	c.DataDir, c.dataDirAuto, c.dataDirNote = dir, dir, note
	return nil
}

// DataDirNote is what the operator should know about the default data directory chosen
// (the test environment still on data from an earlier release); empty otherwise.
func (c *Config) DataDirNote() string { return c.dataDirNote }

func (c *Config) validateValues() error {
	if c.Env != "test" && c.Env != "production" {
		return fmt.Errorf("SWITCHBOARD_ENV=%q: want test or production", c.Env)
	}
	// The bound admin key issue holds keys to: a default it would refuse is refused at start,
	// not at the first key the operator issues without limits.
	if c.DefaultRateLimit < 1 || c.DefaultRateLimit > keys.MaxRatePerMinute {
		return fmt.Errorf("SWITCHBOARD_DEFAULT_RATE_LIMIT_PER_MINUTE=%d: want 1 to %d requests per minute, the most the operator may give a key (admin key issue)", c.DefaultRateLimit, keys.MaxRatePerMinute)
	}
	switch {
	case c.Failpoint == "":
	case c.Env == "production":
		return fmt.Errorf("SWITCHBOARD_FAILPOINT is for tests: unset it in production")
	case !slices.Contains(Failpoints, c.Failpoint):
		return fmt.Errorf("SWITCHBOARD_FAILPOINT=%q: want one of %v", c.Failpoint, Failpoints)
	}
	if _, e := tools.ParseToolsets(c.Toolsets); e != nil {
		return fmt.Errorf("SWITCHBOARD_TOOLSETS=%q: %s", c.Toolsets, e.Message)
	}
	if _, _, err := net.SplitHostPort(c.MetricsAddr); c.MetricsAddr != "" && err != nil {
		return fmt.Errorf("SWITCHBOARD_METRICS_ADDR=%q: want host:port, e.g. 127.0.0.1:9090", c.MetricsAddr)
	}
	if _, err := c.taskAfter(); err != nil {
		return err
	}
	if _, err := c.bodyReadTimeout(); err != nil {
		return err
	}
	if c.MaxConnsPerClient < 0 {
		return fmt.Errorf("SWITCHBOARD_MAX_CONNS_PER_CLIENT=%d: want 0 (no cap) or more, e.g. 64", c.MaxConnsPerClient)
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	c.TestBaseURL = strings.TrimRight(c.TestBaseURL, "/")
	return nil
}

// Providers parses SWITCHBOARD_OIDC_PROVIDERS.
func (c *Config) Providers() ([]portal.OIDCProvider, error) {
	var out []portal.OIDCProvider
	for i, entry := range strings.Split(c.OIDCProviders, ";") {
		if strings.TrimSpace(entry) == "" {
			continue
		}
		var p portal.OIDCProvider
		for _, kv := range strings.Split(entry, ",") {
			k, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
			switch k {
			case "label":
				p.Label = v
			case "issuer":
				p.Issuer = v
			case "client_id":
				p.ClientID = v
			case "client_secret":
				p.ClientSecret = v
			default:
				return nil, fmt.Errorf("SWITCHBOARD_OIDC_PROVIDERS entry %d: unknown field %q; use label, issuer, client_id, client_secret", i+1, k)
			}
		}
		u, err := url.Parse(p.Issuer)
		if p.Label == "" || p.ClientID == "" || err != nil || u.Host == "" || (u.Scheme != "https" && !(u.Scheme == "http" && c.Env != "production")) {
			return nil, fmt.Errorf("SWITCHBOARD_OIDC_PROVIDERS entry %d: want label, an https issuer URL and client_id (client_secret for confidential clients)", i+1)
		}
		out = append(out, p)
	}
	return out, nil
}

// PublicBaseURL is the base URL callers use: the configured one, or in the test environment
// the listen address (flags may change it after Validate, so it is derived late).
func (c *Config) PublicBaseURL() string {
	if c.BaseURL == "" && c.Env == "test" {
		return baseURLFromAddr(c.Addr)
	}
	return c.BaseURL
}

// LocalStdioDataDir is the data directory a `switchboard stdio` on this machine must open to
// share this server's accounts, for the portal's stdio snippet: only where that snippet can
// work as pasted (the test environment on SQLite in its data directory, reached on a loopback
// address, so the browser is on the server's machine); empty elsewhere (production stdio needs
// the deployment's secrets, PostgreSQL its password, a hosted server's path is no use to a
// visitor), where the portal offers the URL instead.
func (c *Config) LocalStdioDataDir(postgres bool) string {
	if c.Env != "test" || postgres || c.DatabaseURL != "" {
		return ""
	}
	u, err := url.Parse(c.PublicBaseURL())
	if err != nil {
		return ""
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return ""
	}
	return c.DataDir
}

// CheckServe is what serving needs beyond Validate: in production a public https base URL,
// since llms.txt, OpenAPI and every link a caller follows are built from it.
func (c *Config) CheckServe() error {
	if err := c.CheckLocalEndpoints(); err != nil {
		return err
	}
	if c.Env != "production" {
		return nil
	}
	u, err := url.Parse(c.BaseURL)
	if c.BaseURL == "" || err != nil || u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("SWITCHBOARD_BASE_URL=%q: production needs the public https URL callers use, e.g. SWITCHBOARD_BASE_URL=https://switchboard.example.com", c.BaseURL)
	}
	return c.CheckSecrets()
}

// CheckSecrets refuses a production process whose signing key, master key or server secret
// is not supplied: generated ones would differ from every other replica's (partner userIds,
// e-mail codes, sealed wallets) and, left in a data directory, be picked up again by whatever
// runs there next. The error names each one missing and the command that makes it.
// Build calls it before it opens anything; serve, stdio and every admin command that builds
// the service stop on it. migrate and tokens refresh touch no secret and run without them.
func (c *Config) CheckSecrets() error {
	if c.Env != "production" {
		return nil
	}
	var missing []string
	if c.SigningKeyFile == "" {
		missing = append(missing, "SWITCHBOARD_SIGNING_KEY_FILE: the path of a PEM Ed25519 private key; make one with `openssl genpkey -algorithm ed25519 -out signing-key.pem` (chmod 600)")
	}
	if c.MasterKey == "" {
		missing = append(missing, "SWITCHBOARD_MASTER_KEY: `openssl rand -base64 32` (it seals the wallet keys: keep it with the database's backups)")
	}
	if c.ServerSecret == "" {
		missing = append(missing, "SWITCHBOARD_SERVER_SECRET: `openssl rand -base64 32` (set it once and never change it)")
	}
	if len(missing) == 0 {
		return nil
	}
	what := "this one is"
	if len(missing) > 1 {
		what = fmt.Sprintf("these %d are", len(missing))
	}
	return fmt.Errorf("production never generates its secrets, and %s not set:\n  %s\n"+
		"Keep them in your secret store and give every replica of one database the same values (docs/operations.md, Running N replicas)",
		what, strings.Join(missing, "\n  "))
}

// CheckLocalEndpoints refuses SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS in a production process that
// serves (serve, stdio): it turns the partner calls' SSRF guard off. Operator commands may use
// it to probe a partner on a local address.
func (c *Config) CheckLocalEndpoints() error {
	if c.AllowLocalEndpoints && c.Env == "production" {
		return errors.New("SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS=true turns off the SSRF guard and is refused in production; unset it (to check a partner on a local address, run `switchboard partner check URL` from an operator machine)")
	}
	return nil
}

// baseURLFromAddr is the development base URL: the listen address, with an unspecified host
// read as localhost.
func baseURLFromAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://localhost:8080"
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// taskAfter is SWITCHBOARD_TASK_AFTER read: a Go duration of at least a second.
func (c Config) taskAfter() (time.Duration, error) {
	d, err := time.ParseDuration(c.TaskAfter)
	if err != nil || d < time.Second {
		return 0, fmt.Errorf("SWITCHBOARD_TASK_AFTER=%q: want a Go duration of at least 1s, e.g. 30s", c.TaskAfter)
	}
	return d, nil
}

// bodyReadTimeout is SWITCHBOARD_BODY_READ_TIMEOUT read: a Go duration of at least a second.
func (c Config) bodyReadTimeout() (time.Duration, error) {
	d, err := time.ParseDuration(c.BodyReadTimeout)
	if err != nil || d < time.Second {
		return 0, fmt.Errorf("SWITCHBOARD_BODY_READ_TIMEOUT=%q: want a Go duration of at least 1s, e.g. 20s", c.BodyReadTimeout)
	}
	return d, nil
}

// Package tokens answers the read-only token lookups: resolve_token (ticker, name or address
// to token metadata, spam flagged), get_price (a checked USD price from market-data providers
// with failover, or an honest refusal) and get_balances (native and token balances of the
// account's primary and connected wallets on 7 EVM chains and Solana, valued in USD). It also
// lets an account connect watch-only wallets, resolves token arguments before writes
// (ResolveArgs) and refreshes the learned tokens from public lists (Refresh).
package tokens

import (
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/switchboard-hq/switchboard/chain/evm"
	"github.com/switchboard-hq/switchboard/chain/solana"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/connected"
	"github.com/switchboard-hq/switchboard/store/learned"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/service"
	"github.com/switchboard-hq/switchboard/tools/tokens/lists"
	"github.com/switchboard-hq/switchboard/tools/tokens/prices"
)

// Config is the token lookups' configuration (SWITCHBOARD_* settings; see DefaultConfig).
type Config struct {
	RPCEthereum  string
	RPCArbitrum  string
	RPCBase      string
	RPCPolygon   string
	RPCOptimism  string
	RPCAvalanche string
	RPCBSC       string
	SolanaRPC    string

	CoinGeckoURL    string
	CoinGeckoAPIKey string
	DefiLlamaURL    string
	JupiterURL      string
	JupiterAPIKey   string

	PriceMaxAge         string // Go duration; oldest acceptable provider timestamp
	BalancesTimeout     string // Go duration; per-chain deadline of get_balances
	MaxConnectedWallets int
}

// DefaultConfig returns public, keyless defaults.
func DefaultConfig() Config {
	return Config{
		RPCEthereum:  "https://ethereum-rpc.publicnode.com",
		RPCArbitrum:  "https://arbitrum-one-rpc.publicnode.com",
		RPCBase:      "https://base-rpc.publicnode.com",
		RPCPolygon:   "https://polygon-bor-rpc.publicnode.com",
		RPCOptimism:  "https://optimism-rpc.publicnode.com",
		RPCAvalanche: "https://avalanche-c-chain-rpc.publicnode.com",
		RPCBSC:       "https://bsc-rpc.publicnode.com",
		SolanaRPC:    "https://solana-rpc.publicnode.com",

		CoinGeckoURL: "https://api.coingecko.com/api/v3",
		DefiLlamaURL: "https://coins.llama.fi",
		JupiterURL:   "https://lite-api.jup.ag",

		PriceMaxAge:         "10m",
		BalancesTimeout:     "10s",
		MaxConnectedWallets: 20,
	}
}

// RPCURL returns the configured RPC endpoint of chain.
func (c Config) RPCURL(chain string) string {
	switch chain {
	case "ethereum":
		return c.RPCEthereum
	case "arbitrum":
		return c.RPCArbitrum
	case "base":
		return c.RPCBase
	case "polygon":
		return c.RPCPolygon
	case "optimism":
		return c.RPCOptimism
	case "avalanche":
		return c.RPCAvalanche
	case "bsc":
		return c.RPCBSC
	case "solana":
		return c.SolanaRPC
	}
	return ""
}

// Outbound timeouts: every client has one, and every call also carries the caller's context.
const (
	priceTimeout    = 6 * time.Second
	metadataTimeout = 8 * time.Second
	rpcTimeout      = 20 * time.Second
	refreshTimeout  = 3 * time.Minute
)

// Service holds the token lookups' dependencies.
type Service struct {
	store        *store.Store
	accounts     accounts.Accounts
	connected    connected.Wallets
	learned      learned.Tokens
	reg          *Registry
	quoter       *prices.Quoter
	evm          map[string]*evm.Client
	sol          *solana.Client
	cgMeta       *lists.CoinGecko
	jupMeta      *lists.Jupiter
	cgList       *lists.CoinGecko
	jupList      *lists.Jupiter
	now          func() time.Time
	log          *slog.Logger
	chainTimeout time.Duration
	maxConnected int
	searches     searchCache // learned-token searches, for a few seconds
}

// NewService builds the token lookups from cfg.
func NewService(cfg Config, d service.Deps) (*Service, error) {
	d = d.WithDefaults()
	st, now, log := d.Store, d.Now, d.Log
	reg, err := LoadRegistry()
	if err != nil {
		return nil, err
	}
	maxAge, err := time.ParseDuration(cfg.PriceMaxAge)
	if err != nil || maxAge <= 0 {
		return nil, fmt.Errorf("SWITCHBOARD_PRICE_MAX_AGE=%q: want a positive duration such as 10m", cfg.PriceMaxAge)
	}
	chainTimeout, err := time.ParseDuration(cfg.BalancesTimeout)
	if err != nil || chainTimeout <= 0 {
		return nil, fmt.Errorf("SWITCHBOARD_BALANCES_CHAIN_TIMEOUT=%q: want a positive duration such as 10s", cfg.BalancesTimeout)
	}
	if cfg.MaxConnectedWallets < 1 {
		cfg.MaxConnectedWallets = DefaultConfig().MaxConnectedWallets
	}
	for _, c := range Chains {
		if cfg.RPCURL(c.Name) == "" {
			return nil, fmt.Errorf("no RPC URL configured for %s", c.Name)
		}
	}
	client := func(timeout time.Duration) *http.Client { return &http.Client{Timeout: timeout} }
	cg := prices.NewCoinGecko(cfg.CoinGeckoURL, cfg.CoinGeckoAPIKey, client(priceTimeout), now)
	llama := prices.NewDefiLlama(cfg.DefiLlamaURL, maxAge, client(priceTimeout), now)
	jup := prices.NewJupiter(cfg.JupiterURL, cfg.JupiterAPIKey, client(priceTimeout), now)
	s := &Service{
		store: st, accounts: accounts.New(st), connected: connected.New(st), learned: learned.New(st), reg: reg, now: now, log: log, chainTimeout: chainTimeout, maxConnected: cfg.MaxConnectedWallets,
		quoter: prices.NewQuoter(prices.Config{MaxAge: maxAge},
			[]prices.Provider{cg, llama}, []prices.Provider{jup, cg, llama}, now),
		evm:     map[string]*evm.Client{},
		sol:     solana.NewClient(cfg.SolanaRPC, client(rpcTimeout), now),
		cgMeta:  lists.NewCoinGecko(cfg.CoinGeckoURL, cfg.CoinGeckoAPIKey, client(metadataTimeout), now),
		jupMeta: lists.NewJupiter(cfg.JupiterURL, cfg.JupiterAPIKey, client(metadataTimeout), now),
		cgList:  lists.NewCoinGecko(cfg.CoinGeckoURL, cfg.CoinGeckoAPIKey, client(refreshTimeout), now),
		jupList: lists.NewJupiter(cfg.JupiterURL, cfg.JupiterAPIKey, client(refreshTimeout), now),
	}
	for _, c := range Chains {
		if c.Family == FamilyEVM {
			s.evm[c.Name] = evm.NewClient(c.ID, cfg.RPCURL(c.Name), client(rpcTimeout), now)
		}
	}
	return s, nil
}

var readOnly = tools.Annotations{ReadOnly: tools.Bool(true), Idempotent: true, OpenWorld: tools.Bool(true)}

// Tools returns resolve_token, get_price, get_balances and the connected-wallet tools.
func (s *Service) Tools() []*tools.Tool {
	return []*tools.Tool{
		tools.New(tools.Def{
			Name:  "resolve_token",
			Title: "Resolve a token",
			Description: "Find a token by ticker (\"USDC\"), name (\"wrapped ether\"), contract address or Solana mint, optionally " +
				"on one chain; natural text such as \"usdc on base\" works too. Chains: ethereum, arbitrum, base, polygon, optimism, " +
				"avalanche, bsc, solana (aliases eth, arb, matic, op, avax, bnb, sol). Matches come most trusted first. An " +
				"ambiguous ticker returns every match (e.g. USDC and bridged USDC.e on arbitrum): pick from context or ask. An " +
				"unknown token returns an empty list. Spam-flagged tokens are shown with isSpam true and spamReason; never " +
				"swap, bridge or send them. Unknown EVM addresses are read on chain; unknown Solana mints at Jupiter.",
			Access:      tools.RequireScope(tools.ScopeRead),
			Annotations: readOnly,
		}, s.resolveTool),
		tools.New(tools.Def{
			Name:  "get_price",
			Title: "Get a token's USD price",
			Description: "Current USD price of a token given by ticker, name or address, optionally on a chain (same query " +
				"forms as resolve_token), as an exact decimal string. Providers are tried in order (Solana tokens: Jupiter, " +
				"CoinGecko, DefiLlama; others: CoinGecko, DefiLlama) and a price older than the configured maximum age is never " +
				"used. When no provider gives a usable price the call fails with UNAVAILABLE and details.providers lists each " +
				"provider's reason: there is no number in that answer; say you cannot quote and retry later.",
			Access:      tools.RequireScope(tools.ScopeRead),
			Annotations: readOnly,
		}, s.priceTool),
		tools.New(tools.Def{
			Name:  "get_balances",
			Title: "Get wallet balances",
			Description: "Balances of the calling account's wallets: the primary embedded wallets (EVM and Solana) and any " +
				"connected watch-only wallets, on ethereum, arbitrum, base, polygon, optimism, avalanche, bsc and solana " +
				"(optional chains filter), with USD values. Zero balances and spam tokens are left out (spamHidden counts them). " +
				"status PARTIAL means a chain or token could not be read or priced (failures and unpriced say which and why); " +
				"totalUsd then covers only what is shown.",
			Access:      tools.RequireScope(tools.ScopeRead),
			Annotations: readOnly,
		}, s.balancesTool),
		tools.New(tools.Def{
			Name:  "connected_wallet_add",
			Title: "Connect a watch-only wallet",
			Description: "Add a wallet by address (EVM 0x address or Solana address) to the account, watch-only: Switchboard " +
				"holds no key for it and never signs with it; get_balances then includes it with walletType \"connected\". " +
				"Adding an already connected address returns it unchanged. At most 20 connected wallets per account by default.",
			Access:              tools.RequireScope(tools.ScopeWallet),
			TakesIdempotencyKey: true,
			Annotations:         tools.Annotations{ReadOnly: tools.Bool(false), Destructive: tools.Bool(false), Idempotent: true, OpenWorld: tools.Bool(false)},
		}, s.connectTool),
		tools.New(tools.Def{
			Name:        "connected_wallet_list",
			Title:       "List connected wallets",
			Description: "List the account's connected watch-only wallets (address, family evm or svm, label, createdAt).",
			Access:      tools.RequireScope(tools.ScopeRead),
			Annotations: tools.Annotations{ReadOnly: tools.Bool(true), Idempotent: true, OpenWorld: tools.Bool(false)},
		}, s.listConnectedTool),
		tools.New(tools.Def{
			Name:        "connected_wallet_remove",
			Title:       "Remove a connected wallet",
			Description: "Remove a connected watch-only wallet by address; its balances stop counting. Primary wallets cannot be removed.",
			Access:      tools.RequireScope(tools.ScopeWallet),
			Annotations: tools.Annotations{ReadOnly: tools.Bool(false), Destructive: tools.Bool(true), Idempotent: true, OpenWorld: tools.Bool(false)},
		}, s.removeConnectedTool),
	}
}

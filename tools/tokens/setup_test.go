package tokens

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/keys"
	"github.com/switchboard-hq/switchboard/tools/service"
	"github.com/switchboard-hq/switchboard/tools/tokens/tokenstest"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Test wallets: private keys 1 and 2 (EVM), fixture owners (Solana).
const (
	primaryEVM   = "0x7E5F4552091A69125d5DfCb7b8C2659029395Bdf"
	connectedEVM = "0x2B5AD5c4795c026514f8317c7a215E218DcCD6cF"
	primarySVM   = "8xzeSGWMVNyH4nNfWQjo5CYSH7a9REAPrs8HZcky3hrv"
	connectedSVM = "21wQsDYnQGUbE6SwTwqJTNH37wpXh2jyfoRjWJDctHCz"
	makerAddr    = "0x9f8F72aA9304c8B593d555F12eF6589cC3A579A2"
	widgetAddr   = "0x09CB042AfcD7B55862827cD2ff1358a4f296A606"
	spamEVMAddr  = "0x13B4eF8a929763838eEbaE4724417a9dE46CA7C4"
	eoaAddr      = "0x7D36D8dE1b144b09050482aD18a5598d233380cd"
	pyusdMint    = "2b1kV6DkPAnxd5ixfnxCpjxmKwqjjaYmCZfHsFu24GXo"
	spamMint     = "4iZ35JenmoLepfxDkSas2DXEdFnxRAWnDdjUQKjpW6wJ"
	meowMint     = "FkSrZ22YnoLqr53au3orrpGZYe84wg8dKtAPrz1uikJM"
	accountID    = "acct-1"
	apiSecret    = "sb_test_tokens_secret_0123456789abcdef"
)

type env struct {
	s     *Service
	st    *store.Store
	up    *tokenstest.Upstreams
	clock *clock
}

func evmChainIDs() map[string]int64 {
	ids := map[string]int64{}
	for _, c := range Chains {
		if c.Family == FamilyEVM {
			ids[c.Name] = c.ID
		}
	}
	return ids
}

// testConfig points every upstream at the fakes.
func testConfig(up *tokenstest.Upstreams) Config {
	cfg := DefaultConfig()
	cfg.RPCEthereum = up.EVM["ethereum"].URL
	cfg.RPCArbitrum = up.EVM["arbitrum"].URL
	cfg.RPCBase = up.EVM["base"].URL
	cfg.RPCPolygon = up.EVM["polygon"].URL
	cfg.RPCOptimism = up.EVM["optimism"].URL
	cfg.RPCAvalanche = up.EVM["avalanche"].URL
	cfg.RPCBSC = up.EVM["bsc"].URL
	cfg.SolanaRPC = up.Solana.URL
	cfg.CoinGeckoURL = up.CoinGecko.URL + "/api/v3"
	cfg.DefiLlamaURL = up.DefiLlama.URL
	cfg.JupiterURL = up.Jupiter.URL
	return cfg
}

func newEnv(t testing.TB, st *store.Store, tweak ...func(*Config)) *env {
	t.Helper()
	up := tokenstest.Start(t, evmChainIDs())
	cfg := testConfig(up)
	for _, f := range tweak {
		f(&cfg)
	}
	c := &clock{t: tokenstest.T0}
	s, err := NewService(cfg, service.Deps{Store: st, Now: c.now, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return &env{s: s, st: st, up: up, clock: c}
}

// withAccount creates the test account: primary wallets and a key carrying every scope.
func withAccount(t testing.TB, st *store.Store) *tools.Caller {
	t.Helper()
	now := time.Now().UTC()
	key := &accounts.APIKey{ID: "key-1", AccountID: accountID, Name: "k", Prefix: apiSecret[:12], Hash: tools.HashKey(apiSecret),
		Scopes: []string{"read", "quote", "swap", "bridge", "send", "wallet", "publish", "partner"}, SpendLimitMicro: 50_000_000,
		RateLimitPerMinute: 1000, CreatedAt: now}
	err := accounts.New(st).Create(context.Background(), &accounts.Account{ID: accountID, Email: "agent@example.com", CreatedAt: now},
		[]*accounts.Wallet{
			{ID: "w-evm", AccountID: accountID, Family: accounts.FamilyEVM, Address: primaryEVM, SealedKey: []byte{1}, MasterKeyID: "m", CreatedAt: now},
			{ID: "w-svm", AccountID: accountID, Family: accounts.FamilySVM, Address: primarySVM, SealedKey: []byte{1}, MasterKeyID: "m", CreatedAt: now},
		}, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tools.Caller{Principal: keys.KeyPrincipal(key)}
}

func (e *env) tool(name string) *tools.Tool {
	for _, t := range e.s.Tools() {
		if t.Name == name {
			return t
		}
	}
	panic("no tool " + name)
}

// checkOut validates a handler's result against the tool's published output schema.
func (e *env) checkOut(t testing.TB, name string, out any) {
	t.Helper()
	if err := e.tool(name).ValidateOutput(out); err != nil {
		raw, _ := json.Marshal(out)
		t.Fatalf("%s output does not match its schema: %v\n%s", name, err, raw)
	}
}

func toolErr(t testing.TB, err error, code tools.Code) *tools.Error {
	t.Helper()
	var te *tools.Error
	if !errors.As(err, &te) || te.Code != code {
		t.Fatalf("error %v, want %s", err, code)
	}
	return te
}

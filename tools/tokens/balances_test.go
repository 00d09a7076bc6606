package tokens

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/learned"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/keys"
	"github.com/switchboard-hq/switchboard/tools/service"
)

func connect(t *testing.T, e *env, c *tools.Caller, address, label string) ConnectOutput {
	t.Helper()
	out, err := e.s.connectTool(context.Background(), c, ConnectInput{Address: address, Label: label})
	if err != nil {
		t.Fatalf("connect %s: %v", address, err)
	}
	e.checkOut(t, "connected_wallet_add", out)
	return out
}

func balances(t *testing.T, e *env, c *tools.Caller, chains ...string) BalancesOutput {
	t.Helper()
	out, err := e.s.balancesTool(context.Background(), c, BalancesInput{Chains: chains})
	if err != nil {
		t.Fatalf("get_balances: %v", err)
	}
	e.checkOut(t, "get_balances", out)
	return out
}

func rowsOf(out BalancesOutput) string {
	var lines []string
	for _, b := range out.Balances {
		lines = append(lines, strings.Join([]string{b.Chain, b.WalletType, b.Ticker, b.Amount, b.AmountUsd}, " "))
	}
	return strings.Join(lines, "\n")
}

func TestBalancesAcrossChainsAndWallets(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st)
		c := withAccount(t, st)
		connect(t, e, c, connectedEVM, "cold")
		connect(t, e, c, connectedSVM, "")
		out := balances(t, e, c)
		want := strings.Join([]string{
			"ethereum primary ETH 0.25 864.195",
			"ethereum primary USDC 100 99.9812",
			"ethereum connected WETH 2 6911.82",
			"arbitrum primary USDC.e 5 4.99756",
			"base primary ETH 1.5 5185.17",
			"base primary USDC 1234.5678 1234.335701",
			"base primary DAI 123456789.123456789123456789 123438270.605088",
			"solana primary SOL 2.5 468.34775",
			"solana primary USDC 150.25 150.236478",
			"solana primary MEOW 42 ", // tokens off the registry: in the node's order, SPL Token then Token-2022
			"solana primary PYUSD 20.5 20.497335",
			"solana connected JUP 1000 811.9",
		}, "\n")
		if got := rowsOf(out); got != want {
			t.Fatalf("balances\n%s\nwant\n%s", got, want)
		}
		if out.TotalUsd != "123454022.086112" {
			t.Fatalf("totalUsd %s", out.TotalUsd)
		}
		// GMX's balanceOf reverted inside aggregate3: reported, the rest of arbitrum answered.
		if len(out.Failures) != 1 || out.Failures[0] != (Failure{Chain: "arbitrum", Token: "GMX", Reason: "balanceOf reverted"}) {
			t.Fatalf("failures %+v", out.Failures)
		}
		// MEOW has no price anywhere: shown without USD, and named with each provider's reason.
		if len(out.Unpriced) != 1 || out.Unpriced[0].Ticker != "MEOW" || len(out.Unpriced[0].Providers) != 3 {
			t.Fatalf("unpriced %+v", out.Unpriced)
		}
		if out.Status != "PARTIAL" || out.SpamHidden != 1 {
			t.Fatalf("status %s, spamHidden %d", out.Status, out.SpamHidden)
		}
		for _, b := range out.Balances {
			if b.Ticker == "USDC" && b.Chain == "base" && b.TokenAddress != "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913" {
				t.Fatalf("token address %s", b.TokenAddress)
			}
			if b.WalletType == "connected" && b.Wallet != connectedEVM && b.Wallet != connectedSVM {
				t.Fatalf("connected row in wallet %s", b.Wallet)
			}
		}
		if len(out.Wallets) != 4 {
			t.Fatalf("wallets %+v", out.Wallets)
		}
		// The spam mint and MEOW were learned from Jupiter on the way.
		if tok, err := learned.New(st).TokenAt(context.Background(), "solana", spamMint); err != nil || !tok.IsSpam {
			t.Fatalf("spam mint not remembered: %+v %v", tok, err)
		}

		// One round trip per chain: the batch carries eth_chainId (first time), eth_getBalance
		// per wallet and one aggregate3 eth_call.
		if n := e.up.EVM["base"].Calls(""); n != 1 {
			t.Fatalf("base RPC requests = %d, want 1", n)
		}
		only := balances(t, e, c, "sol")
		for _, b := range only.Balances {
			if b.Chain != "solana" {
				t.Fatalf("chains filter ignored: %+v", b)
			}
		}
		_, err := e.s.balancesTool(context.Background(), c, BalancesInput{Chains: []string{"fantom"}})
		toolErr(t, err, tools.CodeBadInput)
	})
}

func TestBalancesReportAFailingChainAndKeepTheOthers(t *testing.T) {
	st := storetest.Open(t, "sqlite")
	e := newEnv(t, st, func(c *Config) { c.BalancesTimeout = "300ms" })
	c := withAccount(t, st)
	e.up.EVM["base"].Fail(http.StatusServiceUnavailable, "", "coingecko/error_5xx.html")
	e.up.EVM["ethereum"].ChainIDOverride(5) // a misconfigured URL: another chain's node
	e.up.EVM["polygon"].RPCError("header not found")
	e.up.Solana.Hang()
	out := balances(t, e, c)
	reasons := map[string]string{}
	for _, f := range out.Failures {
		reasons[f.Chain+"/"+f.Token] = f.Reason
	}
	if reasons["base/"] != "HTTP 503" || reasons["polygon/"] != "eth_chainId: JSON-RPC error -32000: header not found" || reasons["solana/"] != "timed out" ||
		!strings.Contains(reasons["ethereum/"], "serves chain id 5, not 1") {
		t.Fatalf("failures %+v", out.Failures)
	}
	if got := rowsOf(out); got != "arbitrum primary USDC.e 5 4.99756" {
		t.Fatalf("the healthy chains must still answer:\n%s", got)
	}
	if out.Status != "PARTIAL" || out.TotalUsd != "4.99756" {
		t.Fatalf("status %s total %s", out.Status, out.TotalUsd)
	}
	// Every chain down: UNAVAILABLE with each chain's reason.
	for _, n := range e.up.EVM {
		n.Fail(http.StatusBadGateway, "", "")
	}
	_, err := e.s.balancesTool(context.Background(), c, BalancesInput{})
	te := toolErr(t, err, tools.CodeUnavailable)
	if fails, _ := te.Details["failures"].([]Failure); len(fails) != 8 {
		t.Fatalf("details %+v", te.Details)
	}
}

func TestBalancesWithoutPricesStillShowAmounts(t *testing.T) {
	st := storetest.Open(t, "sqlite")
	e := newEnv(t, st)
	c := withAccount(t, st)
	e.up.CoinGecko.Fail(http.StatusInternalServerError, "", "")
	e.up.DefiLlama.Fail(http.StatusInternalServerError, "", "")
	out := balances(t, e, c, "base")
	if got := rowsOf(out); got != "base primary ETH 1.5 \nbase primary USDC 1234.5678 \nbase primary DAI 123456789.123456789123456789 " {
		t.Fatalf("rows:\n%s", got)
	}
	if out.TotalUsd != "0" || len(out.Unpriced) != 3 || out.Status != "PARTIAL" {
		t.Fatalf("total %s unpriced %+v", out.TotalUsd, out.Unpriced)
	}
	raw, _ := json.Marshal(out.Balances[0])
	if strings.Contains(string(raw), "amountUsd") {
		t.Fatalf("an unpriced row carries a USD value: %s", raw)
	}
}

func TestFormatUnitsIsExact(t *testing.T) {
	raw, _ := new(big.Int).SetString("123456789123456789123456789", 10)
	for _, tc := range []struct {
		raw  *big.Int
		dec  int
		want string
	}{
		{raw, 18, "123456789.123456789123456789"},
		{big.NewInt(1), 18, "0.000000000000000001"},
		{big.NewInt(1000000), 6, "1"},
		{big.NewInt(1500000), 6, "1.5"},
		{big.NewInt(42), 0, "42"},
	} {
		if got := FormatUnits(tc.raw, tc.dec); got != tc.want {
			t.Errorf("FormatUnits(%s, %d) = %s, want %s", tc.raw, tc.dec, got, tc.want)
		}
	}
}

func TestConnectedWalletTools(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, func(c *Config) { c.MaxConnectedWallets = 2 })
		c := withAccount(t, st)
		ctx := context.Background()
		out := connect(t, e, c, strings.ToLower(connectedEVM), "cold storage")
		if !out.Added || out.Wallet.Address != connectedEVM || out.Wallet.Family != "evm" || out.Wallet.Label != "cold storage" {
			t.Fatalf("add: %+v", out)
		}
		if again := connect(t, e, c, connectedEVM, "other"); again.Added || again.Wallet.Label != "cold storage" {
			t.Fatalf("re-adding must return the existing wallet unchanged: %+v", again)
		}
		for _, bad := range []string{primaryEVM, primarySVM, "0x2b5AD5c4795c026514f8317c7a215E218DcCD6cF", "not-an-address-at-all-not-an-address"} {
			_, err := e.s.connectTool(ctx, c, ConnectInput{Address: bad})
			toolErr(t, err, tools.CodeBadInput)
		}
		if svm := connect(t, e, c, connectedSVM, ""); !svm.Added || svm.Wallet.Family != "svm" {
			t.Fatalf("solana: %+v", svm)
		}
		_, err := e.s.connectTool(ctx, c, ConnectInput{Address: eoaAddr})
		toolErr(t, err, tools.CodeConflict)
		list, err := e.s.listConnectedTool(ctx, c, ListConnectedInput{})
		if err != nil || len(list.Wallets) != 2 || list.Max != 2 {
			t.Fatalf("list: %+v %v", list, err)
		}
		e.checkOut(t, "connected_wallet_list", list)
		rm, err := e.s.removeConnectedTool(ctx, c, RemoveConnectedInput{Address: strings.ToLower(connectedEVM)})
		if err != nil || rm.Removed.Address != connectedEVM {
			t.Fatalf("remove: %+v %v", rm, err)
		}
		e.checkOut(t, "connected_wallet_remove", rm)
		_, err = e.s.removeConnectedTool(ctx, c, RemoveConnectedInput{Address: connectedEVM})
		toolErr(t, err, tools.CodeNotFound)
		if out := balances(t, e, c, "ethereum"); strings.Contains(rowsOf(out), "connected") {
			t.Fatalf("a removed wallet still counts:\n%s", rowsOf(out))
		}
	})
}

// Through the kernel, as MCP and REST call it: authentication, scope, input validation,
// and the JSON the caller receives.
func TestToolsThroughTheKernel(t *testing.T) {
	st := storetest.Open(t, "sqlite")
	e := newEnv(t, st)
	withAccount(t, st)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	k, err := tools.NewKernel(keys.NewAuthenticator(service.Deps{Store: st, Now: time.Now, Log: log}, nil), tools.NewRateLimiter(time.Now), nil, log, time.Now, e.s.Tools()...)
	if err != nil {
		t.Fatal(err)
	}
	call := func(tool, args string) (string, *tools.Error) {
		out, te := k.Call(context.Background(), tools.Request{Tool: tool, Args: json.RawMessage(args), APIKey: apiSecret})
		raw, _ := json.Marshal(out)
		return string(raw), te
	}
	got, te := call("resolve_token", `{"query":"usdc","chain":"base"}`)
	if te != nil || got != `{"status":"OK","tokens":[{"ticker":"USDC","name":"USD Coin","address":"0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913","chain":"base","chainId":8453,"decimals":6,"marketDataId":"usd-coin","isSpam":false}]}` {
		t.Fatalf("resolve_token: %s %v", got, te)
	}
	if _, te := call("resolve_token", `{"query":"usdc","network":"base"}`); te == nil || te.Code != tools.CodeBadInput {
		t.Fatalf("unknown field accepted: %v", te)
	}
	if _, te := call("get_price", `{}`); te == nil || te.Code != tools.CodeBadInput {
		t.Fatalf("missing query accepted: %v", te)
	}
	got, te = call("get_balances", `{"chains":["base"]}`)
	if te != nil || !strings.Contains(got, `"amount":"123456789.123456789123456789"`) || !strings.Contains(got, `"totalUsd":"123444690.110789"`) {
		t.Fatalf("get_balances: %s %v", got, te)
	}
	got, te = call("get_price", `{"query":"sol"}`)
	if te != nil || !strings.Contains(got, `"priceUsd":"187.3391"`) || !strings.Contains(got, `"fetchedAt":"2026-11-18T11:06:40Z"`) {
		t.Fatalf("get_price: %s %v", got, te)
	}
}

// Balances take natural-language text: the chains and tickers it names narrow the answer,
// and the total is the total of what is shown.
func TestBalancesFromText(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st)
		c := withAccount(t, st)
		out, err := e.s.balancesTool(context.Background(), c, BalancesInput{Query: "my USDC on base and solana"})
		if err != nil {
			t.Fatal(err)
		}
		e.checkOut(t, "get_balances", out)
		want := "base primary USDC 1234.5678 1234.335701\nsolana primary USDC 150.25 150.236478"
		if got := rowsOf(out); got != want || out.TotalUsd != "1384.572179" {
			t.Fatalf("balances for %q:\n%s\ntotal %s; want\n%s", "my USDC on base and solana", got, out.TotalUsd, want)
		}
		// Only chains: everything on them.
		out, _ = e.s.balancesTool(context.Background(), c, BalancesInput{Query: "what do I hold on solana?"})
		for _, b := range out.Balances {
			if b.Chain != "solana" {
				t.Fatalf("chain from text ignored: %+v", b)
			}
		}
		if len(out.Balances) == 0 {
			t.Fatal("nothing on solana")
		}
	})
}

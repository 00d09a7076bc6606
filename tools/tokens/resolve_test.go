package tokens

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/learned"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/tokens/prices"
)

func TestRegistryAddressesAreChecksummedAndComplete(t *testing.T) {
	r, err := LoadRegistry()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range Chains {
		toks := r.OnChain(c.Name)
		if len(toks) < 4 || !toks[0].native || toks[0].Ticker != c.Native {
			t.Errorf("%s: want its native %s first and major tokens after, got %d entries", c.Name, c.Native, len(toks))
		}
		for _, e := range toks {
			if c.Family == FamilyEVM && DisplayAddress(c, e.Address) != e.Address {
				t.Errorf("%s %s: address %s is not EIP-55 checksummed", c.Name, e.Ticker, e.Address)
			}
		}
	}
	if _, err := parseRegistry([]byte(`{"tokens":[{"chain":"base","ticker":"X","name":"X","address":"0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02914","decimals":6,"marketDataId":"x"}]}`)); err == nil {
		t.Fatal("a registry entry with a bad checksum was accepted")
	}
}

func TestParseQuery(t *testing.T) {
	for _, tc := range []struct {
		text, chain, term, want string
	}{
		{"usdc on base", "", "usdc", "base"},
		{"What is USDC on Base?", "", "USDC", "base"},
		{"price of SOL", "", "SOL", ""},
		{"eth", "", "eth", ""},
		{"sol", "", "sol", ""},
		{"eth on arb", "", "eth", "arbitrum"},
		{"bnb chain usdt", "", "usdt", "bsc"},
		{"wrapped ether on arbitrum one", "", "wrapped ether", "arbitrum"},
		{"$PEPE", "", "PEPE", ""},
		{"usdc", "matic", "usdc", "polygon"},
		{"usdc", "AVAX", "usdc", "avalanche"},
		{"base:" + widgetAddr, "", widgetAddr, "base"},
		{"10 usdc", "", "10 usdc", ""},
	} {
		q, err := parseQuery(tc.text, tc.chain)
		if err != nil {
			t.Errorf("%q/%q: %v", tc.text, tc.chain, err)
			continue
		}
		got := ""
		if q.chain != nil {
			got = q.chain.Name
		}
		if q.term != tc.term || got != tc.want {
			t.Errorf("%q/%q = (%q, %q), want (%q, %q)", tc.text, tc.chain, q.term, got, tc.term, tc.want)
		}
	}
	for _, bad := range [][2]string{{"usdc on base", "ethereum"}, {"usdc", "fantom"}, {"price of", ""}} {
		if _, err := parseQuery(bad[0], bad[1]); err == nil {
			t.Errorf("%q/%q: no error", bad[0], bad[1])
		} else {
			toolErr(t, err, tools.CodeBadInput)
		}
	}
}

func resolve(t *testing.T, e *env, query, chain string) []Token {
	t.Helper()
	out, err := e.s.resolveTool(context.Background(), nil, ResolveInput{Query: query, Chain: chain})
	if err != nil {
		t.Fatalf("resolve %q/%q: %v", query, chain, err)
	}
	e.checkOut(t, "resolve_token", out)
	if out.Status != "OK" {
		t.Fatalf("status %q", out.Status)
	}
	return out.Tokens
}

func summary(ts []Token) string {
	var parts []string
	for _, t := range ts {
		s := t.Ticker + "@" + t.Chain
		if t.IsSpam {
			s += "(spam)"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

func TestResolveAmbiguousTickersByTrust(t *testing.T) {
	e := newEnv(t, storetest.Open(t, "sqlite"))
	got := resolve(t, e, "USDC", "arbitrum")
	if summary(got) != "USDC@arbitrum USDC.e@arbitrum" {
		t.Fatalf("USDC on arbitrum: %s", summary(got))
	}
	want := Token{Ticker: "USDC", Name: "USD Coin", Address: "0xaf88d065e77c8cC2239327C5EDb3A432268e5831", Chain: "arbitrum",
		ChainID: 42161, Decimals: 6, MarketDataID: "usd-coin"}
	if got[0] != want {
		t.Fatalf("USDC on arbitrum = %+v", got[0])
	}
	all := resolve(t, e, "usdc", "")
	if summary(all) != "USDC@ethereum USDC@arbitrum USDC@base USDC@polygon USDC@optimism USDC@avalanche USDC@bsc USDC@solana "+
		"USDC.e@arbitrum USDC.e@polygon USDC.e@optimism USDC.e@avalanche" {
		t.Fatalf("usdc everywhere: %s", summary(all))
	}
	if s := summary(resolve(t, e, "matic", "")); s != "POL@ethereum POL@polygon" {
		t.Fatalf("matic: %s", s)
	}
	if s := summary(resolve(t, e, "wrapped ether on arbitrum", "")); s != "WETH@arbitrum" {
		t.Fatalf("by name: %s", s)
	}
	sol := resolve(t, e, "sol", "")
	if len(sol) != 1 || sol[0].Address != WrappedSOLMint || sol[0].ChainID != SolanaChainID || sol[0].Decimals != 9 {
		t.Fatalf("sol: %+v", sol)
	}
	none := resolve(t, e, "NOSUCHTOKEN", "")
	if none == nil || len(none) != 0 {
		t.Fatalf("unknown ticker: %#v, want an empty list", none)
	}
	raw, _ := json.Marshal(ResolveOutput{Status: "OK", Tokens: none})
	if string(raw) != `{"status":"OK","tokens":[]}` {
		t.Fatalf("unknown ticker JSON %s", raw)
	}
}

func TestResolveAddresses(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st)
		eth := e.up.EVM["ethereum"]

		// A registry address, in any case, needs no chain call.
		got := resolve(t, e, strings.ToLower("0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48"), "")
		if summary(got) != "USDC@ethereum" || eth.Calls("") != 0 {
			t.Fatalf("registry address: %s (%d RPC calls)", summary(got), eth.Calls(""))
		}

		// An unknown contract is read on chain (bytes32 name and symbol) and looked up at CoinGecko.
		got = resolve(t, e, makerAddr, "eth")
		want := Token{Ticker: "MKR", Name: "Maker", Address: makerAddr, Chain: "ethereum", ChainID: 1, Decimals: 18, MarketDataID: "maker"}
		if len(got) != 1 || got[0] != want {
			t.Fatalf("MKR: %+v", got)
		}
		calls := eth.Calls("")
		if again := resolve(t, e, strings.ToLower(makerAddr), ""); len(again) != 1 || again[0] != want || eth.Calls("") != calls {
			t.Fatalf("second lookup must come from the store: %+v (%d -> %d calls)", again, calls, eth.Calls(""))
		}

		// Without a chain, every EVM chain is asked; only ethereum has this contract.
		got = resolve(t, e, widgetAddr, "")
		if len(got) != 1 || got[0].Ticker != "WDGT" || got[0].Decimals != 12 || got[0].MarketDataID != "" || got[0].IsSpam {
			t.Fatalf("widget: %+v", got)
		}
		for name, node := range e.up.EVM {
			if node.Calls("") == 0 {
				t.Errorf("chain %s was not asked", name)
			}
		}

		// An address with no contract is no token.
		if got := resolve(t, e, eoaAddr, "base"); len(got) != 0 {
			t.Fatalf("EOA: %+v", got)
		}
		// A wrong checksum is refused rather than guessed at.
		_, err := e.s.resolveTool(context.Background(), nil, ResolveInput{Query: "0x9F8F72aA9304c8B593d555F12eF6589cC3A579A2"})
		toolErr(t, err, tools.CodeBadInput)
		_, err = e.s.resolveTool(context.Background(), nil, ResolveInput{Query: makerAddr, Chain: "solana"})
		toolErr(t, err, tools.CodeBadInput)

		// A chain that cannot be read is reported, not taken for "no token".
		e.up.EVM["optimism"].Fail(http.StatusServiceUnavailable, "", "")
		_, err = e.s.resolveTool(context.Background(), nil, ResolveInput{Query: eoaAddr, Chain: "optimism"})
		te := toolErr(t, err, tools.CodeUnavailable)
		if fmt.Sprint(te.Details["failures"]) != "[map[chain:optimism reason:HTTP 503]]" {
			t.Fatalf("details %v", te.Details)
		}

		// Solana mints go to Jupiter's token API; CoinGecko supplies the market-data id.
		got = resolve(t, e, pyusdMint, "")
		if len(got) != 1 || got[0].Ticker != "PYUSD" || got[0].Decimals != 6 || got[0].MarketDataID != "paypal-usd" || got[0].IsSpam || got[0].ChainID != SolanaChainID {
			t.Fatalf("PYUSD: %+v", got)
		}
		if got := resolve(t, e, "GUWKswvFiHtDQUr8MdKsHyVxbr3SqW48DL3kFK37xJUk", "sol"); len(got) != 0 {
			t.Fatalf("unknown mint: %+v", got)
		}
	})
}

func TestSpamIsFlaggedAndShown(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st)
		got := resolve(t, e, spamEVMAddr, "base")
		if len(got) != 1 || !got[0].IsSpam || got[0].SpamReason != "a URL in its name or ticker" || got[0].Ticker != "USDC" {
			t.Fatalf("spam contract: %+v", got)
		}
		got = resolve(t, e, spamMint, "")
		if len(got) != 1 || !got[0].IsSpam || got[0].SpamReason != "flagged suspicious by Jupiter" {
			t.Fatalf("spam mint: %+v", got)
		}
		// Once learned, spam is listed with the ticker it imitates: last, and marked.
		if s := summary(resolve(t, e, "usdc on base", "")); s != "USDC@base USDC@base(spam)" {
			t.Fatalf("usdc on base: %s", s)
		}
		if s := summary(resolve(t, e, "usdc", "solana")); s != "USDC@solana USDC@solana(spam)" {
			t.Fatalf("usdc on solana: %s", s)
		}
	})
}

func TestSpamSignals(t *testing.T) {
	r, _ := LoadRegistry()
	for _, tc := range []struct{ ticker, name, flag, want string }{
		{"MEOW", "Meow Cat", "", ""},
		{"stETH2", "Something Staked", "", ""},
		{"USDC", "USD Coin", "", "impersonates USDC: same ticker as a major token but not its contract"},
		{"usdc.e", "Bridged", "", "impersonates USDC.E: same ticker as a major token but not its contract"},
		{"USDС", "USD Coin", "", "look-alike of USDC (disguised characters in its ticker)"},       // Cyrillic С
		{"ＵＳＤＴ", "Tether", "", "look-alike of USDT (disguised characters in its ticker)"},         // full-width
		{"U\u200bSDC", "USD Coin", "", "look-alike of USDC (disguised characters in its ticker)"}, // zero-width space
		{"$WETH", "Wrapped", "", "look-alike of WETH (disguised characters in its ticker)"},
		{"ΕΤΗ", "Ether", "", "look-alike of ETH (disguised characters in its ticker)"}, // Greek
		{"GIFT", "Visit https://rewards.example", "", "a URL in its name or ticker"},
		{"BONUS", "bonus drop", "", "claim/airdrop bait in its name or ticker"},
		{"X", "Airdrop pass", "", "claim/airdrop bait in its name or ticker"},
		{"X", "X", "flagged suspicious by Jupiter", "flagged suspicious by Jupiter"},
	} {
		if got := spamSignals(tc.ticker, tc.name, r.majors, tc.flag); got != tc.want {
			t.Errorf("spamSignals(%q, %q) = %q, want %q", tc.ticker, tc.name, got, tc.want)
		}
	}
}

func TestListedTokensAreNeverSpam(t *testing.T) {
	e := newEnv(t, storetest.Open(t, "sqlite"))
	// PYUSD is on Jupiter's verified list; even with bait in its name it is not flagged.
	tok := e.s.learn(context.Background(), chainOf("solana"), pyusdMint, "USDC", "claim your airdrop", 6, true, "flagged suspicious by Jupiter", "jupiter", false)
	if tok.IsSpam {
		t.Fatalf("listed token flagged: %+v", tok)
	}
	tok = e.s.learn(context.Background(), chainOf("solana"), meowMint, "USDC", "USD Coin", 6, false, "", "jupiter", false)
	if !tok.IsSpam {
		t.Fatalf("unlisted impersonation not flagged: %+v", tok)
	}
}

func price(t *testing.T, e *env, query, chain string) (PriceOutput, error) {
	t.Helper()
	out, err := e.s.priceTool(context.Background(), nil, ResolveInput{Query: query, Chain: chain})
	if err == nil {
		e.checkOut(t, "get_price", out)
	}
	return out, err
}

func TestGetPrice(t *testing.T) {
	e := newEnv(t, storetest.Open(t, "sqlite"))
	out, err := price(t, e, "eth", "")
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != "OK" || out.Ticker != "ETH" || out.PriceUsd != "3456.78" || out.Source != "coingecko" ||
		out.FetchedAt != "2026-11-18T11:06:40Z" || out.Token.Chain != "ethereum" {
		t.Fatalf("eth: %+v", out)
	}
	if out, err = price(t, e, "sol", ""); err != nil || out.Source != "jupiter" || out.PriceUsd != "187.3391" {
		t.Fatalf("sol: %+v %v", out, err)
	}
	if out, err = price(t, e, "pepe", ""); err != nil || out.PriceUsd != "0.00001234" {
		t.Fatalf("pepe: %+v %v", out, err)
	}
	if out, err = price(t, e, "USDC on base", ""); err != nil || out.PriceUsd != "0.999812" || out.Token.Chain != "base" {
		t.Fatalf("usdc on base: %+v %v", out, err)
	}
	_, err = price(t, e, "NOSUCHTOKEN", "")
	toolErr(t, err, tools.CodeNotFound)

	// Every provider down: UNAVAILABLE, each provider's reason, and no number anywhere.
	e.up.CoinGecko.Fail(http.StatusTooManyRequests, "60", "coingecko/error_429.json")
	e.up.DefiLlama.Use("defillama/low_confidence.json")
	e.clock.advance(time.Minute)
	_, err = price(t, e, "eth", "")
	te := toolErr(t, err, tools.CodeUnavailable)
	raw, _ := json.Marshal(tools.Body{Error: te})
	if !strings.Contains(te.Message, "cannot quote ETH") || strings.Contains(string(raw), "3456") || strings.Contains(string(raw), "2999") {
		t.Fatalf("all-down answer: %s", raw)
	}
	fails, _ := te.Details["providers"].([]prices.Failure)
	if len(fails) != 2 || fails[0].Source != "coingecko" || fails[1].Reason != "low confidence 0.5 (need 0.9)" {
		t.Fatalf("providers: %+v", te.Details["providers"])
	}
}

func TestResolveArgsBeforeWrites(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st)
		ctx := context.Background()
		schema := json.RawMessage(`{"type":"object","properties":{
			"fromToken":{"type":"string","x-token":true},
			"toToken":{"type":"string","x-token":{"chainProperty":"toChain"}},
			"chain":{"type":"string"},"toChain":{"type":"string"},"amount":{"type":"string"}}}`)
		got, err := e.s.ResolveArgs(ctx, "SWAP", schema, map[string]any{"fromToken": "USDC", "chain": "base", "toToken": "eth", "toChain": "arb", "amount": "5"})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].Property != "fromToken" || got[0].Token.Address != "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913" ||
			got[1].Property != "toToken" || got[1].Token.Chain != "arbitrum" || got[1].Token.Ticker != "ETH" {
			t.Fatalf("resolved %+v", got)
		}
		// A spam token stops the call.
		_, err = e.s.ResolveArgs(ctx, "swap", schema, map[string]any{"fromToken": spamEVMAddr, "chain": "base"})
		te := toolErr(t, err, tools.CodeBadInput)
		if !strings.Contains(te.Message, "flagged as spam") || !strings.Contains(te.Message, "Nothing was sent or charged") {
			t.Fatalf("spam message: %s", te.Message)
		}
		if tok, ok := te.Details["token"].(Token); !ok || !tok.IsSpam {
			t.Fatalf("spam details: %v", te.Details)
		}
		// Ambiguity is not guessed away for a write.
		_, err = e.s.ResolveArgs(ctx, "BRIDGE", schema, map[string]any{"fromToken": "USDC"})
		te = toolErr(t, err, tools.CodeBadInput)
		if !strings.Contains(te.Message, "matches 8 tokens equally") {
			t.Fatalf("ambiguity: %s", te.Message)
		}
		_, err = e.s.ResolveArgs(ctx, "SEND", schema, map[string]any{"fromToken": "NOSUCHTOKEN", "chain": "base"})
		toolErr(t, err, tools.CodeBadInput)
		_, err = e.s.ResolveArgs(ctx, "SEND", schema, map[string]any{"fromToken": 12})
		toolErr(t, err, tools.CodeBadInput)
		// A schema without markers resolves nothing.
		if got, err := e.s.ResolveArgs(ctx, "SWAP", json.RawMessage(`{"type":"object","properties":{"token":{"type":"string"}}}`), map[string]any{"token": spamEVMAddr}); got != nil || err != nil {
			t.Fatalf("unmarked: %v %v", got, err)
		}
		if _, err := e.s.ResolveArgs(ctx, "SWAP", json.RawMessage(`{"properties":{"t":{"x-token":"yes"}}}`), map[string]any{"t": "USDC"}); err == nil {
			t.Fatal("a malformed marker was accepted")
		}
	})
}

func TestRefreshLearnsPublicLists(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st)
		reports, err := e.s.Refresh(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		bySource := map[string]SourceReport{}
		for _, r := range reports {
			bySource[r.Source] = r
		}
		if r := bySource["coingecko token list base"]; r.Tokens != 2 || r.Err != "" {
			t.Fatalf("base list: %+v", r)
		}
		if r := bySource["coingecko token list ethereum"]; r.Err != "HTTP 404" {
			t.Fatalf("a missing list must be reported: %+v", r)
		}
		if r := bySource["jupiter verified"]; r.Tokens != 2 {
			t.Fatalf("jupiter: %+v", r)
		}
		brett := resolve(t, e, "brett", "")
		if len(brett) != 1 || brett[0].Chain != "base" || brett[0].MarketDataID != "based-brett" || brett[0].Address != "0x532f27101965dd16442E59d40670FaF5eBB142E4" {
			t.Fatalf("brett: %+v", brett)
		}
		py := resolve(t, e, "pyusd", "")
		if len(py) != 1 || py[0].MarketDataID != "paypal-usd" || py[0].IsSpam {
			t.Fatalf("pyusd: %+v", py)
		}
		all, listed, _ := learned.New(st).CountTokens(context.Background())
		if all != 4 || listed != 4 {
			t.Fatalf("stored %d/%d tokens, want 4 listed", all, listed)
		}
		// Every list down: an error, nothing stored.
		e.up.CoinGecko.Fail(http.StatusServiceUnavailable, "", "")
		e.up.Jupiter.Fail(http.StatusServiceUnavailable, "", "")
		if _, err := e.s.Refresh(context.Background()); err == nil {
			t.Fatal("refresh with every source down reported success")
		}
	})
}

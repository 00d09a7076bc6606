package lists_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/chain/httpx"
	"github.com/switchboard-hq/switchboard/tools/tokens/lists"
	"github.com/switchboard-hq/switchboard/tools/tokens/tokenstest"
)

// The fakes speak CoinGecko's API v3 and Jupiter's token API v2 from testdata/tokens.

func coinGecko(t *testing.T, key string) (*tokenstest.CoinGecko, *lists.CoinGecko) {
	fake := tokenstest.NewCoinGecko(t)
	return fake, lists.NewCoinGecko(fake.URL+"/api/v3/", key, fake.Client(), time.Now)
}

func jupiter(t *testing.T, key string) (*tokenstest.Jupiter, *lists.Jupiter) {
	fake := tokenstest.NewJupiter(t)
	return fake, lists.NewJupiter(fake.URL, key, fake.Client(), time.Now)
}

// A listed contract's coin id; an unlisted one (CoinGecko's 404) is not found rather than an
// error. The address is sent as given (Solana's mints are case-sensitive) and the key in the
// demo header.
func TestCoinGeckoContract(t *testing.T) {
	fake, cg := coinGecko(t, "CG-demo")
	ctx := context.Background()
	id, found, err := cg.Contract(ctx, "ethereum", "0x9f8f72aa9304c8b593d555f12ef6589cc3a579a2")
	if err != nil || !found || id != "maker" {
		t.Fatalf("MKR: %q %v %v", id, found, err)
	}
	if fake.DemoKey() != "CG-demo" {
		t.Fatalf("demo key header %q", fake.DemoKey())
	}
	id, found, err = cg.Contract(ctx, "solana", "2b1kV6DkPAnxd5ixfnxCpjxmKwqjjaYmCZfHsFu24GXo")
	if err != nil || !found || id != "paypal-usd" {
		t.Fatalf("PYUSD on Solana: %q %v %v", id, found, err)
	}
	if got := fake.LastRequest().URL.Path; got != "/api/v3/coins/solana/contract/2b1kV6DkPAnxd5ixfnxCpjxmKwqjjaYmCZfHsFu24GXo" {
		t.Fatalf("path %s", got)
	}
	id, found, err = cg.Contract(ctx, "solana", "2B1KV6DKPANXD5IXFNXCPJXMKWQJJAYMCZFHSFU24GXO")
	if err != nil || found || id != "" {
		t.Fatalf("a mint in the wrong case: %q %v %v, want not found", id, found, err)
	}
	// A path segment in the address cannot walk to another endpoint.
	if _, found, err := cg.Contract(ctx, "ethereum", "../../list"); err != nil || found {
		t.Fatalf("an address with slashes: %v %v", found, err)
	}
	if p := fake.LastRequest().URL.EscapedPath(); !strings.HasSuffix(p, "/contract/..%2F..%2Flist") {
		t.Fatalf("escaped path %s", p)
	}
}

// A rate limit is an error that carries CoinGecko's Retry-After; a gateway's HTML page and a
// truncated body are errors, not an empty answer.
func TestCoinGeckoFailures(t *testing.T) {
	fake, cg := coinGecko(t, "")
	ctx := context.Background()
	fake.Fail(http.StatusTooManyRequests, "30", "coingecko/error_429.json")
	_, found, err := cg.Contract(ctx, "ethereum", "0x9f8f72aa9304c8b593d555f12ef6589cc3a579a2")
	var se *httpx.StatusError
	if !errors.As(err, &se) || se.Status != 429 || se.RetryAfter != 30*time.Second || found {
		t.Fatalf("429: %v %v", found, err)
	}
	if _, err := cg.TokenList(ctx, "base"); !errors.As(err, &se) || se.Status != 429 {
		t.Fatalf("token list under a rate limit: %v", err)
	}
	fake.Fail(http.StatusBadGateway, "", "coingecko/error_5xx.html")
	if _, err := cg.CoinsList(ctx); !errors.As(err, &se) || se.Status != 502 {
		t.Fatalf("502: %v", err)
	}
	fake.Fail(http.StatusOK, "", "coingecko/malformed.json")
	if _, _, err := cg.Contract(ctx, "ethereum", "0x9f8f72aa9304c8b593d555f12ef6589cc3a579a2"); err == nil || !strings.Contains(err.Error(), "malformed JSON") {
		t.Fatalf("truncated body: %v", err)
	}
	if fake.DemoKey() != "" {
		t.Fatalf("a key header sent without a key: %q", fake.DemoKey())
	}
}

// A platform's token list in the tokenlists.org format, numbers kept as written (decimals
// out of range are for the caller to refuse); a platform without a list is an error.
func TestCoinGeckoTokenList(t *testing.T) {
	_, cg := coinGecko(t, "")
	ctx := context.Background()
	toks, err := cg.TokenList(ctx, "base")
	if err != nil {
		t.Fatal(err)
	}
	if len(toks) != 3 {
		t.Fatalf("%d tokens, want 3", len(toks))
	}
	usdc := toks[0]
	if usdc.ChainID.String() != "8453" || usdc.Address != "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913" || usdc.Symbol != "USDC" || usdc.Name != "USDC" || usdc.Decimals.String() != "6" {
		t.Fatalf("USDC on Base: %+v", usdc)
	}
	if toks[2].Decimals.String() != "99" {
		t.Fatalf("decimals rewritten: %+v", toks[2])
	}
	var se *httpx.StatusError
	if _, err := cg.TokenList(ctx, "no-such-platform"); !errors.As(err, &se) || se.Status != 404 {
		t.Fatalf("unknown platform: %v", err)
	}
}

// Every coin with its contracts per platform; a coin with none has an empty map.
func TestCoinGeckoCoinsList(t *testing.T) {
	fake, cg := coinGecko(t, "")
	coins, err := cg.CoinsList(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if q := fake.LastRequest().URL.Query().Get("include_platform"); q != "true" {
		t.Fatalf("include_platform=%q", q)
	}
	byID := map[string]lists.Coin{}
	for _, c := range coins {
		byID[c.ID] = c
	}
	if len(coins) != 4 || byID["usd-coin"].Platforms["solana"] != "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v" ||
		byID["usd-coin"].Symbol != "usdc" || len(byID["bitcoin"].Platforms) != 0 {
		t.Fatalf("coins %+v", coins)
	}
}

// Jupiter's search by mint and symbol, with what it says about verification and suspicion.
func TestJupiterSearch(t *testing.T) {
	fake, j := jupiter(t, "jup-key")
	ctx := context.Background()
	toks, err := j.Search(ctx, "2b1kV6DkPAnxd5ixfnxCpjxmKwqjjaYmCZfHsFu24GXo,MEOW")
	if err != nil {
		t.Fatal(err)
	}
	if got := fake.LastRequest().Header.Get("x-api-key"); got != "jup-key" {
		t.Fatalf("x-api-key %q", got)
	}
	if len(toks) != 2 || toks[0].Symbol != "PYUSD" || toks[0].Decimals.String() != "6" || !toks[0].Listed() || toks[0].SpamFlag() != "" {
		t.Fatalf("PYUSD: %+v", toks)
	}
	if meow := toks[1]; meow.Symbol != "MEOW" || meow.Listed() || meow.SpamFlag() != "" {
		t.Fatalf("MEOW, community-tagged and not verified: %+v", meow)
	}
	toks, err = j.Search(ctx, "usdc")
	if err != nil || len(toks) != 1 {
		t.Fatalf("usdc: %+v %v", toks, err)
	}
	if fake := toks[0]; fake.Listed() || fake.SpamFlag() != "flagged suspicious by Jupiter" {
		t.Fatalf("the suspicious USDC look-alike: listed %v, flag %q", fake.Listed(), fake.SpamFlag())
	}
	if toks, err := j.Search(ctx, "nothing-like-this"); err != nil || len(toks) != 0 {
		t.Fatalf("no match: %+v %v", toks, err)
	}
}

// The verified list; without a key no key header is sent.
func TestJupiterVerified(t *testing.T) {
	fake, j := jupiter(t, "")
	toks, err := j.Verified(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := fake.LastRequest().Header["X-Api-Key"]; ok {
		t.Fatal("a key header sent without a key")
	}
	if len(toks) != 3 || toks[1].Symbol != "JUP" || !toks[1].Listed() {
		t.Fatalf("verified %+v", toks)
	}
	fake.Fail(http.StatusServiceUnavailable, "", "")
	var se *httpx.StatusError
	if _, err := j.Verified(context.Background()); !errors.As(err, &se) || se.Status != 503 {
		t.Fatalf("503: %v", err)
	}
}

// Listed reads isVerified first, then the verified or strict tags; SpamFlag only Jupiter's own
// audit verdict.
func TestJupiterTokenVerdicts(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		tok    lists.JupiterToken
		listed bool
		flag   bool
	}{
		{lists.JupiterToken{IsVerified: &yes}, true, false},
		{lists.JupiterToken{IsVerified: &no}, false, false},
		{lists.JupiterToken{IsVerified: &no, Tags: []string{"strict"}}, true, false},
		{lists.JupiterToken{Tags: []string{"verified"}}, true, false},
		{lists.JupiterToken{Tags: []string{"community", "lst"}}, false, false},
		{lists.JupiterToken{}, false, false},
	} {
		if got := tc.tok.Listed(); got != tc.listed {
			t.Errorf("%+v: Listed %v", tc.tok, got)
		}
		if got := tc.tok.SpamFlag() != ""; got != tc.flag {
			t.Errorf("%+v: SpamFlag %q", tc.tok, tc.tok.SpamFlag())
		}
	}
	sus := lists.JupiterToken{}
	sus.Audit = &struct {
		IsSus *bool `json:"isSus"`
	}{IsSus: &yes}
	if sus.SpamFlag() == "" {
		t.Error("isSus true not flagged")
	}
	sus.Audit.IsSus = &no
	if sus.SpamFlag() != "" {
		t.Error("isSus false flagged")
	}
}

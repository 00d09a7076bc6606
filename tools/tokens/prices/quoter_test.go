package prices_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/tools/tokens/prices"
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

type rig struct {
	cg    *tokenstest.CoinGecko
	llama *tokenstest.DefiLlama
	jup   *tokenstest.Jupiter
	clock *clock
	q     *prices.Quoter
}

func newRig(t *testing.T, cfg prices.Config, apiKey string, timeout time.Duration) *rig {
	r := &rig{cg: tokenstest.NewCoinGecko(t), llama: tokenstest.NewDefiLlama(t), jup: tokenstest.NewJupiter(t),
		clock: &clock{t: tokenstest.T0}}
	hc := &http.Client{Timeout: timeout}
	if cfg.MaxAge == 0 {
		cfg.MaxAge = 10 * time.Minute
	}
	cg := prices.NewCoinGecko(r.cg.URL+"/api/v3", apiKey, hc, r.clock.now)
	llama := prices.NewDefiLlama(r.llama.URL, cfg.MaxAge, hc, r.clock.now)
	jup := prices.NewJupiter(r.jup.URL, "", hc, r.clock.now)
	r.q = prices.NewQuoter(cfg, []prices.Provider{cg, llama}, []prices.Provider{jup, cg, llama}, r.clock.now)
	return r
}

var (
	eth  = prices.Asset{Chain: "ethereum", Platform: "ethereum", Llama: "ethereum", MarketDataID: "ethereum"}
	usdc = prices.Asset{Chain: "ethereum", Platform: "ethereum", Llama: "ethereum", MarketDataID: "usd-coin", Address: "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48"}
	sol  = prices.Asset{Chain: "solana", Solana: true, Platform: "solana", Llama: "solana", MarketDataID: "solana", Address: "So11111111111111111111111111111111111111112"}
	meow = prices.Asset{Chain: "solana", Solana: true, Platform: "solana", Llama: "solana", Address: "FkSrZ22YnoLqr53au3orrpGZYe84wg8dKtAPrz1uikJM"}
)

func (r *rig) quote(t *testing.T, a prices.Asset) (prices.Quote, []prices.Failure, bool) {
	t.Helper()
	qs, fs := r.q.Quote(context.Background(), []prices.Asset{a})
	q, ok := qs[a.Key()]
	if ok == (len(fs[a.Key()]) > 0) {
		t.Fatalf("asset %s must be either quoted or failed: quote %v failures %v", a.Key(), ok, fs[a.Key()])
	}
	return q, fs[a.Key()], ok
}

func wantQuote(t *testing.T, q prices.Quote, fs []prices.Failure, ok bool, source, price string) {
	t.Helper()
	if !ok {
		t.Fatalf("no quote: %+v", fs)
	}
	if q.Source != source || q.Price.String() != price {
		t.Fatalf("quote %s from %s, want %s from %s", q.Price, q.Source, price, source)
	}
}

func reasons(fs []prices.Failure) string {
	var parts []string
	for _, f := range fs {
		parts = append(parts, f.Source+": "+f.Reason)
	}
	return strings.Join(parts, " | ")
}

func TestCoinGeckoFirstForEVMAndMajors(t *testing.T) {
	r := newRig(t, prices.Config{}, "", 5*time.Second)
	q, fs, ok := r.quote(t, eth)
	wantQuote(t, q, fs, ok, "coingecko", "3456.78")
	if !q.At.Equal(time.Unix(1794999940, 0)) || !q.FetchedAt.Equal(tokenstest.T0) {
		t.Fatalf("timestamps: at %v fetched %v", q.At, q.FetchedAt)
	}
	if r.llama.Calls("") != 0 {
		t.Fatal("DefiLlama asked although CoinGecko answered")
	}
	// By contract, for a token without a CoinGecko id: /simple/token_price.
	widget := prices.Asset{Chain: "ethereum", Platform: "ethereum", Llama: "ethereum", Address: "0x09CB042AfcD7B55862827cD2ff1358a4f296A606"}
	q, fs, ok = r.quote(t, widget)
	wantQuote(t, q, fs, ok, "coingecko", "0.0421")
	if r.cg.Calls("/simple/token_price") != 1 {
		t.Fatal("token_price not used for a token without an id")
	}
}

func TestDecimalExactnessFromScientificNotation(t *testing.T) {
	r := newRig(t, prices.Config{}, "", 5*time.Second)
	q, fs, ok := r.quote(t, prices.Asset{Chain: "ethereum", Platform: "ethereum", MarketDataID: "pepe", Address: "0x6982508145454Ce325dDbE47a25d4ec3d2311933"})
	wantQuote(t, q, fs, ok, "coingecko", "0.00001234")
}

func TestRateLimitFailsOverAndRestsForRetryAfter(t *testing.T) {
	r := newRig(t, prices.Config{}, "", 5*time.Second)
	r.cg.Fail(http.StatusTooManyRequests, "120", "coingecko/error_429.json")
	q, fs, ok := r.quote(t, eth)
	wantQuote(t, q, fs, ok, "defillama", "3455.12")
	if r.cg.Calls("") != 1 {
		t.Fatalf("coingecko calls = %d, want 1", r.cg.Calls(""))
	}
	r.cg.Recover()
	r.clock.advance(60 * time.Second) // past the cache, inside the 120 s rest
	q, fs, ok = r.quote(t, eth)
	wantQuote(t, q, fs, ok, "defillama", "3455.12")
	if r.cg.Calls("") != 1 {
		t.Fatal("a resting provider was asked")
	}
	r.clock.advance(61 * time.Second) // rest over
	q, fs, ok = r.quote(t, eth)
	wantQuote(t, q, fs, ok, "coingecko", "3456.78")
}

func TestRateLimitRestReportedWhenAllFail(t *testing.T) {
	r := newRig(t, prices.Config{}, "", 5*time.Second)
	r.cg.Fail(http.StatusTooManyRequests, "30", "coingecko/error_429.json")
	r.llama.Fail(http.StatusServiceUnavailable, "", "")
	_, fs, ok := r.quote(t, eth)
	if ok || reasons(fs) != "coingecko: rate limited (HTTP 429); resting 30s | defillama: HTTP 503" {
		t.Fatalf("failures %q", reasons(fs))
	}
	r.clock.advance(10 * time.Second)
	_, fs, _ = r.quote(t, eth)
	if !strings.HasPrefix(reasons(fs), "coingecko: resting after HTTP 429 until ") {
		t.Fatalf("resting provider reason: %q", reasons(fs))
	}
}

func TestFailoverOnEveryKindOfBadAnswer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		break_ func(r *rig)
		asset  prices.Asset
		reason string
	}{
		{"5xx HTML", func(r *rig) { r.cg.Fail(http.StatusBadGateway, "", "coingecko/error_5xx.html") }, eth, "HTTP 502"},
		{"malformed body", func(r *rig) { r.cg.Fail(http.StatusOK, "", "coingecko/malformed.json") }, eth, "malformed JSON"},
		{"timeout", func(r *rig) { r.cg.Hang() }, eth, "timed out"},
		{"stale", func(r *rig) { r.cg.UsePrices("coingecko/simple_price_stale.json") }, eth, "stale: last updated 2h0m0s ago, older than the 10m0s maximum"},
		{"missing token", func(r *rig) {}, prices.Asset{Chain: "ethereum", MarketDataID: "ethereum-classic-typo", Llama: "ethereum"}, "not listed"},
		{"non-positive price", func(r *rig) {}, prices.Asset{Chain: "ethereum", MarketDataID: "zero-coin"}, "price 0 is not positive"},
		{"no timestamp", func(r *rig) {}, prices.Asset{Chain: "ethereum", MarketDataID: "undated-coin"}, "no last_updated_at in the answer; cannot tell how fresh the price is"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, prices.Config{}, "", 300*time.Millisecond)
			r.llama.Use("defillama/empty.json") // so that every reason shows
			tc.break_(r)
			_, fs, ok := r.quote(t, tc.asset)
			if ok {
				t.Fatal("quoted")
			}
			if len(fs) == 0 || fs[0].Source != "coingecko" || !strings.HasPrefix(fs[0].Reason, tc.reason) {
				t.Fatalf("failures %q, want coingecko: %s first", reasons(fs), tc.reason)
			}
			if len(fs) != 2 || fs[1] != (prices.Failure{Source: "defillama", Reason: "not listed"}) {
				t.Fatalf("DefiLlama not tried after CoinGecko: %q", reasons(fs))
			}
		})
	}
}

func TestFailoverReachesDefiLlamaFromEachBadCoinGeckoAnswer(t *testing.T) {
	for name, brk := range map[string]func(r *rig){
		"5xx":       func(r *rig) { r.cg.Fail(http.StatusInternalServerError, "", "coingecko/error_5xx.html") },
		"malformed": func(r *rig) { r.cg.Fail(http.StatusOK, "", "coingecko/malformed.json") },
		"stale":     func(r *rig) { r.cg.UsePrices("coingecko/simple_price_stale.json") },
		"timeout":   func(r *rig) { r.cg.Hang() },
	} {
		t.Run(name, func(t *testing.T) {
			r := newRig(t, prices.Config{}, "", 300*time.Millisecond)
			brk(r)
			q, fs, ok := r.quote(t, usdc)
			wantQuote(t, q, fs, ok, "defillama", "0.99979")
		})
	}
}

func TestDefiLlamaRejections(t *testing.T) {
	for file, reason := range map[string]string{
		"defillama/low_confidence.json": "low confidence 0.5 (need 0.9)",
		"defillama/old.json":            "stale: last updated 2h0m0s ago, older than the 10m0s maximum",
		"defillama/empty.json":          "not listed",
	} {
		t.Run(file, func(t *testing.T) {
			r := newRig(t, prices.Config{}, "", 5*time.Second)
			r.cg.Fail(http.StatusServiceUnavailable, "", "")
			r.llama.Use(file)
			q, fs, ok := r.quote(t, usdc)
			if ok {
				t.Fatalf("quoted %s from %s", q.Price, q.Source)
			}
			if want := "coingecko: HTTP 503 | defillama: " + reason; reasons(fs) != want {
				t.Fatalf("failures %q, want %q", reasons(fs), want)
			}
			if r.llama.SearchWidth() != "10m" {
				t.Fatalf("searchWidth %q, want the short 10m window", r.llama.SearchWidth())
			}
		})
	}
}

func TestSolanaOrderJupiterCoinGeckoDefiLlama(t *testing.T) {
	r := newRig(t, prices.Config{}, "", 5*time.Second)
	q, fs, ok := r.quote(t, sol)
	wantQuote(t, q, fs, ok, "jupiter", "187.3391")
	if !q.At.Equal(tokenstest.T0) {
		t.Fatalf("a live Jupiter quote is as of its fetch: %v", q.At)
	}
	// A mint Jupiter omits goes on to CoinGecko (by contract) and DefiLlama, in that order.
	_, fs, ok = r.quote(t, meow)
	if ok || reasons(fs) != "jupiter: not listed | coingecko: not listed | defillama: not listed" {
		t.Fatalf("failures %q", reasons(fs))
	}
	r.jup.Fail(http.StatusInternalServerError, "", "")
	r.clock.advance(31 * time.Second)
	q, fs, ok = r.quote(t, sol)
	wantQuote(t, q, fs, ok, "coingecko", "187.42")
	r.cg.Fail(http.StatusInternalServerError, "", "")
	r.clock.advance(31 * time.Second)
	q, fs, ok = r.quote(t, sol)
	wantQuote(t, q, fs, ok, "defillama", "187.1")
}

func TestAllProvidersDownGivesReasonsAndNoNumber(t *testing.T) {
	r := newRig(t, prices.Config{}, "", 5*time.Second)
	r.jup.Fail(http.StatusBadGateway, "", "coingecko/error_5xx.html")
	r.cg.Fail(http.StatusTooManyRequests, "", "coingecko/error_429.json")
	r.llama.Use("defillama/low_confidence.json")
	qs, fs := r.q.Quote(context.Background(), []prices.Asset{sol, eth})
	if len(qs) != 0 {
		t.Fatalf("quotes given: %v", qs)
	}
	if got := reasons(fs[sol.Key()]); got != "jupiter: HTTP 502 | coingecko: rate limited (HTTP 429); resting 1m0s | defillama: low confidence 0.5 (need 0.9)" &&
		got != "jupiter: HTTP 502 | coingecko: resting after HTTP 429 until 2026-11-18T11:07:40Z | defillama: low confidence 0.5 (need 0.9)" {
		t.Fatalf("sol failures %q", got)
	}
	if len(fs[eth.Key()]) != 2 {
		t.Fatalf("eth failures %q", reasons(fs[eth.Key()]))
	}
}

func TestCacheServesOnlyFreshPrices(t *testing.T) {
	t.Run("cache TTL", func(t *testing.T) {
		r := newRig(t, prices.Config{}, "", 5*time.Second)
		q1, fs, ok := r.quote(t, eth)
		wantQuote(t, q1, fs, ok, "coingecko", "3456.78")
		r.cg.Fail(http.StatusInternalServerError, "", "")
		r.llama.Fail(http.StatusInternalServerError, "", "")
		r.clock.advance(20 * time.Second)
		q2, fs, ok := r.quote(t, eth)
		wantQuote(t, q2, fs, ok, "coingecko", "3456.78")
		if !q2.FetchedAt.Equal(q1.FetchedAt) || r.cg.Calls("") != 1 {
			t.Fatal("a cached price must be served as fetched, without asking again")
		}
		r.clock.advance(11 * time.Second) // 31 s after the fetch: past the 30 s cache
		if _, fs, ok := r.quote(t, eth); ok {
			t.Fatal("served from the cache after 30 s")
		} else if len(fs) != 2 {
			t.Fatalf("failures %q", reasons(fs))
		}
	})
	t.Run("provider timestamp", func(t *testing.T) {
		// The fixture price is 60 s old at T0; with an 80 s maximum age it may be used at T0
		// but not served from the cache 25 s later, although the cache itself is still young.
		r := newRig(t, prices.Config{MaxAge: 80 * time.Second}, "", 5*time.Second)
		q, fs, ok := r.quote(t, eth)
		wantQuote(t, q, fs, ok, "coingecko", "3456.78")
		r.cg.Fail(http.StatusInternalServerError, "", "")
		r.llama.Fail(http.StatusInternalServerError, "", "")
		r.clock.advance(15 * time.Second)
		if _, _, ok := r.quote(t, eth); !ok {
			t.Fatal("a 75 s old price within the 80 s maximum was not served from the cache")
		}
		r.clock.advance(10 * time.Second)
		if q, _, ok := r.quote(t, eth); ok {
			t.Fatalf("served a cached price whose provider timestamp is 85 s old: %s", q.Price)
		}
	})
}

func TestCoinGeckoDemoKeyHeader(t *testing.T) {
	r := newRig(t, prices.Config{}, "demo-key-123", 5*time.Second)
	r.quote(t, eth)
	if r.cg.DemoKey() != "demo-key-123" {
		t.Fatalf("x-cg-demo-api-key = %q", r.cg.DemoKey())
	}
	if h := prices.CoinGeckoHeaders("https://pro-api.coingecko.com/api/v3", "k"); h["x-cg-pro-api-key"] != "k" {
		t.Fatalf("pro API header: %v", h)
	}
	if h := prices.CoinGeckoHeaders("https://api.coingecko.com/api/v3", ""); h != nil {
		t.Fatalf("keyless must send no key header: %v", h)
	}
}

func TestBatchQuotesEachAssetOnce(t *testing.T) {
	r := newRig(t, prices.Config{}, "", 5*time.Second)
	var assets []prices.Asset
	for i := range 3 {
		a := usdc
		a.Chain = fmt.Sprint("chain", i) // the same CoinGecko id on three chains
		a.Address = ""
		assets = append(assets, a, a)
	}
	qs, fs := r.q.Quote(context.Background(), append(assets, eth, sol))
	if len(qs) != 5 || len(fs) != 0 {
		t.Fatalf("quotes %d failures %v", len(qs), fs)
	}
	if r.cg.Calls("/simple/price") != 1 || r.jup.Calls("") != 1 {
		t.Fatalf("calls: coingecko %d jupiter %d, want one batch each", r.cg.Calls("/simple/price"), r.jup.Calls(""))
	}
}

package prices

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/shopspring/decimal"
	"github.com/switchboard-hq/switchboard/chain/httpx"
)

// MaxBody bounds a price answer.
const MaxBody = 1 << 20

// batch sizes per request
const (
	coingeckoBatch = 50
	llamaBatch     = 50
	jupiterBatch   = 50
)

func chunks[T any](xs []T, n int) [][]T {
	var out [][]T
	for len(xs) > n {
		out = append(out, xs[:n])
		xs = xs[n:]
	}
	if len(xs) > 0 {
		out = append(out, xs)
	}
	return out
}

// number reads a JSON number as an exact decimal.
func number(n *json.Number) (decimal.Decimal, bool) {
	if n == nil || *n == "" {
		return decimal.Decimal{}, false
	}
	d, err := decimal.NewFromString(n.String())
	return d, err == nil
}

// unixTime reads a JSON number of Unix seconds.
func unixTime(n *json.Number) (time.Time, bool) {
	d, ok := number(n)
	if !ok || d.IsNegative() || d.GreaterThan(decimal.NewFromInt(math.MaxInt32*4)) {
		return time.Time{}, false
	}
	return time.Unix(d.IntPart(), 0).UTC(), true
}

// CoinGecko quotes through /simple/price (by CoinGecko id) and /simple/token_price/{platform}
// (by contract, for tokens without an id). Keyless by default; a demo key is sent as
// x-cg-demo-api-key, or x-cg-pro-api-key when the base URL is the pro API.
type CoinGecko struct {
	base   string
	apiKey string
	http   *http.Client
	now    func() time.Time
}

// NewCoinGecko returns the CoinGecko provider for base (e.g. https://api.coingecko.com/api/v3).
func NewCoinGecko(base, apiKey string, hc *http.Client, now func() time.Time) *CoinGecko {
	return &CoinGecko{base: strings.TrimRight(base, "/"), apiKey: apiKey, http: hc, now: now}
}

// Name implements Provider.
func (c *CoinGecko) Name() string { return "coingecko" }

// Headers are the authentication headers for a CoinGecko request.
func (c *CoinGecko) Headers() map[string]string { return CoinGeckoHeaders(c.base, c.apiKey) }

// CoinGeckoHeaders returns the key header for base: pro key on the pro API, demo key elsewhere.
func CoinGeckoHeaders(base, apiKey string) map[string]string {
	if apiKey == "" {
		return nil
	}
	if strings.Contains(base, "pro-api.coingecko.com") {
		return map[string]string{"x-cg-pro-api-key": apiKey}
	}
	return map[string]string{"x-cg-demo-api-key": apiKey}
}

type cgEntry struct {
	USD           *json.Number `json:"usd"`
	LastUpdatedAt *json.Number `json:"last_updated_at"`
}

func (e cgEntry) observation() Observation {
	price, ok := number(e.USD)
	if !ok {
		return Observation{Reject: "no USD price in the answer"}
	}
	at, ok := unixTime(e.LastUpdatedAt)
	if !ok {
		return Observation{Reject: "no last_updated_at in the answer; cannot tell how fresh the price is"}
	}
	return Observation{Price: price, At: at}
}

// Observe implements Provider.
func (c *CoinGecko) Observe(ctx context.Context, assets []Asset) (map[string]Observation, error) {
	out := map[string]Observation{}
	var errs []error
	byID := map[string][]Asset{}
	var ids []string
	byPlatform := map[string][]Asset{}
	for _, a := range assets {
		switch {
		case a.MarketDataID != "":
			if _, ok := byID[a.MarketDataID]; !ok {
				ids = append(ids, a.MarketDataID)
			}
			byID[a.MarketDataID] = append(byID[a.MarketDataID], a)
		case a.Address != "" && a.Platform != "":
			byPlatform[a.Platform] = append(byPlatform[a.Platform], a)
		}
	}
	for _, chunk := range chunks(ids, coingeckoBatch) {
		q := url.Values{"ids": {strings.Join(chunk, ",")}, "vs_currencies": {"usd"},
			"include_last_updated_at": {"true"}, "precision": {"full"}}
		var ans map[string]cgEntry
		if err := c.get(ctx, "/simple/price?"+q.Encode(), &ans); err != nil {
			errs = append(errs, err)
			continue
		}
		for _, id := range chunk {
			e, ok := ans[id]
			if !ok {
				continue
			}
			for _, a := range byID[id] {
				out[a.Key()] = e.observation()
			}
		}
	}
	for platform, list := range byPlatform {
		for _, chunk := range chunks(list, coingeckoBatch) {
			addrs := make([]string, len(chunk))
			for i, a := range chunk {
				addrs[i] = a.Address
			}
			q := url.Values{"contract_addresses": {strings.Join(addrs, ",")}, "vs_currencies": {"usd"},
				"include_last_updated_at": {"true"}, "precision": {"full"}}
			var ans map[string]cgEntry
			if err := c.get(ctx, "/simple/token_price/"+url.PathEscape(platform)+"?"+q.Encode(), &ans); err != nil {
				errs = append(errs, err)
				continue
			}
			for _, a := range chunk {
				if e, ok := lookup(ans, a.Address, !a.Solana); ok {
					out[a.Key()] = e.observation()
				}
			}
		}
	}
	return out, errors.Join(errs...)
}

func (c *CoinGecko) get(ctx context.Context, path string, v any) error {
	body, err := httpx.Get(ctx, c.http, c.base+path, c.Headers(), MaxBody, c.now)
	if err != nil {
		return err
	}
	return httpx.Decode(body, v)
}

// lookup finds key in m, case-insensitively for EVM addresses.
func lookup[V any](m map[string]V, key string, foldCase bool) (V, bool) {
	if v, ok := m[key]; ok {
		return v, true
	}
	if foldCase {
		for k, v := range m {
			if strings.EqualFold(k, key) {
				return v, true
			}
		}
	}
	var zero V
	return zero, false
}

// DefiLlama quotes through coins.llama.fi /prices/current/{coins} with a short search window,
// accepting only entries with confidence at or above the minimum (0.9).
type DefiLlama struct {
	base          string
	searchWidth   string
	minConfidence decimal.Decimal
	http          *http.Client
	now           func() time.Time
}

// NewDefiLlama returns the DefiLlama provider. searchWindow is how far from now DefiLlama may
// look for a price (the maximum price age).
func NewDefiLlama(base string, searchWindow time.Duration, hc *http.Client, now func() time.Time) *DefiLlama {
	minutes := int(math.Ceil(searchWindow.Minutes()))
	if minutes < 1 {
		minutes = 1
	}
	return &DefiLlama{base: strings.TrimRight(base, "/"), searchWidth: fmt.Sprintf("%dm", minutes),
		minConfidence: decimal.RequireFromString("0.9"), http: hc, now: now}
}

// Name implements Provider.
func (d *DefiLlama) Name() string { return "defillama" }

// Coin is an asset's DefiLlama coin id: chain:address, or coingecko:id for natives.
func (d *DefiLlama) Coin(a Asset) string {
	switch {
	case a.Address != "" && a.Llama != "":
		if a.Solana {
			return a.Llama + ":" + a.Address
		}
		return a.Llama + ":" + strings.ToLower(a.Address)
	case a.MarketDataID != "":
		return "coingecko:" + a.MarketDataID
	}
	return ""
}

// Observe implements Provider.
func (d *DefiLlama) Observe(ctx context.Context, assets []Asset) (map[string]Observation, error) {
	out := map[string]Observation{}
	var errs []error
	var usable []Asset
	for _, a := range assets {
		if d.Coin(a) != "" {
			usable = append(usable, a)
		}
	}
	for _, chunk := range chunks(usable, llamaBatch) {
		coins := make([]string, len(chunk))
		for i, a := range chunk {
			coins[i] = d.Coin(a)
		}
		path := "/prices/current/" + strings.Join(coins, ",") + "?searchWidth=" + url.QueryEscape(d.searchWidth)
		body, err := httpx.Get(ctx, d.http, d.base+path, nil, MaxBody, d.now)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var ans struct {
			Coins map[string]struct {
				Price      *json.Number `json:"price"`
				Timestamp  *json.Number `json:"timestamp"`
				Confidence *json.Number `json:"confidence"`
			} `json:"coins"`
		}
		if err := httpx.Decode(body, &ans); err != nil {
			errs = append(errs, err)
			continue
		}
		if ans.Coins == nil {
			errs = append(errs, errors.New("malformed answer: no coins object"))
			continue
		}
		for i, a := range chunk {
			e, ok := lookup(ans.Coins, coins[i], !a.Solana)
			if !ok {
				continue
			}
			price, ok := number(e.Price)
			if !ok {
				out[a.Key()] = Observation{Reject: "no price in the answer"}
				continue
			}
			at, ok := unixTime(e.Timestamp)
			if !ok {
				out[a.Key()] = Observation{Reject: "no timestamp in the answer; cannot tell how fresh the price is"}
				continue
			}
			conf, ok := number(e.Confidence)
			if !ok || conf.LessThan(d.minConfidence) {
				c := "none"
				if ok {
					c = conf.String()
				}
				out[a.Key()] = Observation{Reject: fmt.Sprintf("low confidence %s (need %s)", c, d.minConfidence)}
				continue
			}
			out[a.Key()] = Observation{Price: price, At: at}
		}
	}
	return out, errors.Join(errs...)
}

// Jupiter quotes Solana tokens through the Price API v3 (/price/v3?ids=mint,...). Mints
// without a reliable price are omitted by Jupiter. v3 quotes are live and carry no timestamp,
// so the fetch time is their time.
type Jupiter struct {
	base   string
	apiKey string
	http   *http.Client
	now    func() time.Time
}

// NewJupiter returns the Jupiter provider for base (https://lite-api.jup.ag keyless, or
// https://api.jup.ag with an API key).
func NewJupiter(base, apiKey string, hc *http.Client, now func() time.Time) *Jupiter {
	return &Jupiter{base: strings.TrimRight(base, "/"), apiKey: apiKey, http: hc, now: now}
}

// Name implements Provider.
func (j *Jupiter) Name() string { return "jupiter" }

// Headers are the authentication headers for a Jupiter request.
func (j *Jupiter) Headers() map[string]string {
	if j.apiKey == "" {
		return nil
	}
	return map[string]string{"x-api-key": j.apiKey}
}

// Observe implements Provider.
func (j *Jupiter) Observe(ctx context.Context, assets []Asset) (map[string]Observation, error) {
	out := map[string]Observation{}
	var errs []error
	var mints []Asset
	for _, a := range assets {
		if a.Solana && a.Address != "" {
			mints = append(mints, a)
		}
	}
	for _, chunk := range chunks(mints, jupiterBatch) {
		ids := make([]string, len(chunk))
		for i, a := range chunk {
			ids[i] = a.Address
		}
		body, err := httpx.Get(ctx, j.http, j.base+"/price/v3?ids="+url.QueryEscape(strings.Join(ids, ",")), j.Headers(), MaxBody, j.now)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var ans map[string]*struct {
			USDPrice *json.Number `json:"usdPrice"`
		}
		if err := httpx.Decode(body, &ans); err != nil {
			errs = append(errs, err)
			continue
		}
		for _, a := range chunk {
			e, ok := ans[a.Address]
			if !ok || e == nil {
				continue
			}
			price, ok := number(e.USDPrice)
			if !ok {
				out[a.Key()] = Observation{Reject: "no usdPrice in the answer"}
				continue
			}
			out[a.Key()] = Observation{Price: price}
		}
	}
	return out, errors.Join(errs...)
}

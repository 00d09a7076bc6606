package tokenstest

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// CoinGecko fakes api.coingecko.com/api/v3.
type CoinGecko struct {
	server
	pmu       sync.Mutex
	priceFile string
}

// NewCoinGecko starts the CoinGecko fake.
func NewCoinGecko(t testing.TB) *CoinGecko {
	c := &CoinGecko{priceFile: "coingecko/simple_price.json"}
	c.start(t, c.serve)
	return c
}

// UsePrices switches /simple/price to another fixture (e.g. simple_price_stale.json).
func (c *CoinGecko) UsePrices(file string) {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	c.priceFile = file
}

// DemoKey is the x-cg-demo-api-key header of the last request.
func (c *CoinGecko) DemoKey() string {
	if r := c.LastRequest(); r != nil {
		return r.Header.Get("x-cg-demo-api-key")
	}
	return ""
}

// subset returns the entries of a fixture object whose keys are wanted (compared with fold
// when fold is set), numbers untouched.
func subset(file string, want []string, fold bool) map[string]json.RawMessage {
	var all map[string]json.RawMessage
	decodeFixture(file, &all)
	out := map[string]json.RawMessage{}
	for _, w := range want {
		for k, v := range all {
			if k == w || fold && strings.EqualFold(k, w) {
				out[k] = v
			}
		}
	}
	return out
}

func split(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func (c *CoinGecko) serve(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	path := strings.TrimPrefix(r.URL.Path, "/api/v3")
	switch {
	case path == "/simple/price":
		if q.Get("vs_currencies") != "usd" || q.Get("include_last_updated_at") != "true" {
			http.Error(w, `{"error":"test fake: expected vs_currencies=usd and include_last_updated_at=true"}`, http.StatusBadRequest)
			return
		}
		c.pmu.Lock()
		file := c.priceFile
		c.pmu.Unlock()
		writeJSON(w, subset(file, split(q.Get("ids")), false)) // unknown ids: {}
	case strings.HasPrefix(path, "/simple/token_price/"):
		platform := strings.TrimPrefix(path, "/simple/token_price/")
		file := "coingecko/token_price_" + platform + ".json"
		if !fixtureExists(file) {
			writeJSON(w, map[string]any{})
			return
		}
		writeJSON(w, subset(file, split(q.Get("contract_addresses")), true))
	case strings.HasPrefix(path, "/coins/list"):
		w.Header().Set("Content-Type", "application/json")
		w.Write(Fixture("coingecko/coins_list.json"))
	case strings.HasPrefix(path, "/coins/") && strings.Contains(path, "/contract/"):
		parts := strings.Split(strings.TrimPrefix(path, "/coins/"), "/contract/")
		var all map[string]json.RawMessage
		decodeFixture("coingecko/contracts.json", &all)
		key := parts[0] + "/" + parts[1]
		if parts[0] != "solana" {
			key = strings.ToLower(key)
		}
		if body, ok := all[key]; ok {
			w.Header().Set("Content-Type", "application/json")
			w.Write(body)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"error":"coin not found"}`))
	case strings.HasPrefix(path, "/token_lists/"):
		platform := strings.TrimSuffix(strings.TrimPrefix(path, "/token_lists/"), "/all.json")
		file := "coingecko/token_list_" + platform + ".json"
		if !fixtureExists(file) {
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error":"Not Found"}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(Fixture(file))
	default:
		http.NotFound(w, r)
	}
}

// DefiLlama fakes coins.llama.fi.
type DefiLlama struct {
	server
	pmu  sync.Mutex
	file string
}

// NewDefiLlama starts the DefiLlama fake.
func NewDefiLlama(t testing.TB) *DefiLlama {
	d := &DefiLlama{file: "defillama/current.json"}
	d.start(t, d.serve)
	return d
}

// Use switches to another fixture (low_confidence.json, old.json, empty.json).
func (d *DefiLlama) Use(file string) {
	d.pmu.Lock()
	defer d.pmu.Unlock()
	d.file = file
}

// SearchWidth is the searchWidth of the last request.
func (d *DefiLlama) SearchWidth() string {
	if r := d.LastRequest(); r != nil {
		return r.URL.Query().Get("searchWidth")
	}
	return ""
}

func (d *DefiLlama) serve(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.URL.Path, "/prices/current/") {
		http.NotFound(w, r)
		return
	}
	d.pmu.Lock()
	file := d.file
	d.pmu.Unlock()
	var all struct {
		Coins map[string]json.RawMessage `json:"coins"`
	}
	decodeFixture(file, &all)
	out := map[string]json.RawMessage{}
	for _, coin := range split(strings.TrimPrefix(r.URL.Path, "/prices/current/")) {
		for k, v := range all.Coins {
			if strings.EqualFold(k, coin) {
				out[k] = v
			}
		}
	}
	writeJSON(w, map[string]any{"coins": out})
}

// Jupiter fakes lite-api.jup.ag (price v3, tokens v2).
type Jupiter struct{ server }

// NewJupiter starts the Jupiter fake.
func NewJupiter(t testing.TB) *Jupiter {
	j := &Jupiter{}
	j.start(t, j.serve)
	return j
}

func (j *Jupiter) serve(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	switch r.URL.Path {
	case "/price/v3":
		writeJSON(w, subset("jupiter/price_v3.json", split(q.Get("ids")), false)) // unpriced mints omitted
	case "/tokens/v2/search":
		var all []map[string]json.RawMessage
		decodeFixture("jupiter/search.json", &all)
		out := []map[string]json.RawMessage{}
		for _, want := range split(q.Get("query")) {
			for _, t := range all {
				var id, sym string
				json.Unmarshal(t["id"], &id)
				json.Unmarshal(t["symbol"], &sym)
				if id == want || strings.EqualFold(sym, want) {
					out = append(out, t)
				}
			}
		}
		writeJSON(w, out)
	case "/tokens/v2/tag":
		if q.Get("query") != "verified" {
			writeJSON(w, []any{})
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(Fixture("jupiter/verified.json"))
	default:
		http.NotFound(w, r)
	}
}

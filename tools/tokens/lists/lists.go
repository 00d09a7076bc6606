// Package lists reads token metadata from the public sources: CoinGecko (a contract's coin id,
// per-platform token lists, the coins list) and Jupiter's token API (a mint's metadata,
// the verified list).
package lists

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/switchboard-hq/switchboard/chain/httpx"
	"github.com/switchboard-hq/switchboard/tools/tokens/prices"
)

// Body limits: one token's page, and whole lists (CoinGecko's coins list with platforms is
// tens of megabytes).
const (
	MaxItemBody = 4 << 20
	MaxListBody = 96 << 20
)

// CoinGecko reads CoinGecko's token metadata.
type CoinGecko struct {
	base, apiKey string
	http         *http.Client
	now          func() time.Time
}

// NewCoinGecko returns a CoinGecko metadata client for base.
func NewCoinGecko(base, apiKey string, hc *http.Client, now func() time.Time) *CoinGecko {
	return &CoinGecko{base: strings.TrimRight(base, "/"), apiKey: apiKey, http: hc, now: now}
}

func (c *CoinGecko) get(ctx context.Context, path string, limit int64, v any) error {
	body, err := httpx.Get(ctx, c.http, c.base+path, prices.CoinGeckoHeaders(c.base, c.apiKey), limit, c.now)
	if err != nil {
		return err
	}
	return httpx.Decode(body, v)
}

// Contract returns the CoinGecko id of the token at address on platform; found is false when
// CoinGecko does not list it.
func (c *CoinGecko) Contract(ctx context.Context, platform, address string) (id string, found bool, err error) {
	var ans struct {
		ID string `json:"id"`
	}
	err = c.get(ctx, "/coins/"+url.PathEscape(platform)+"/contract/"+url.PathEscape(address), MaxItemBody, &ans)
	var se *httpx.StatusError
	if errors.As(err, &se) && se.Status == http.StatusNotFound {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return ans.ID, ans.ID != "", nil
}

// ListToken is one entry of a token list (the tokenlists.org format).
type ListToken struct {
	ChainID  json.Number `json:"chainId"`
	Address  string      `json:"address"`
	Name     string      `json:"name"`
	Symbol   string      `json:"symbol"`
	Decimals json.Number `json:"decimals"`
}

// TokenList returns CoinGecko's token list of platform (/token_lists/{platform}/all.json).
func (c *CoinGecko) TokenList(ctx context.Context, platform string) ([]ListToken, error) {
	var ans struct {
		Tokens []ListToken `json:"tokens"`
	}
	if err := c.get(ctx, "/token_lists/"+url.PathEscape(platform)+"/all.json", MaxListBody, &ans); err != nil {
		return nil, err
	}
	return ans.Tokens, nil
}

// Coin is one entry of CoinGecko's coins list.
type Coin struct {
	ID        string            `json:"id"`
	Symbol    string            `json:"symbol"`
	Name      string            `json:"name"`
	Platforms map[string]string `json:"platforms"`
}

// CoinsList returns every coin with its contract addresses per platform.
func (c *CoinGecko) CoinsList(ctx context.Context) ([]Coin, error) {
	var ans []Coin
	if err := c.get(ctx, "/coins/list?include_platform=true", MaxListBody, &ans); err != nil {
		return nil, err
	}
	return ans, nil
}

// Jupiter reads Jupiter's token API (v2).
type Jupiter struct {
	base, apiKey string
	http         *http.Client
	now          func() time.Time
}

// NewJupiter returns a Jupiter token API client for base.
func NewJupiter(base, apiKey string, hc *http.Client, now func() time.Time) *Jupiter {
	return &Jupiter{base: strings.TrimRight(base, "/"), apiKey: apiKey, http: hc, now: now}
}

// JupiterToken is a token as Jupiter's token API describes it.
type JupiterToken struct {
	ID         string      `json:"id"`
	Name       string      `json:"name"`
	Symbol     string      `json:"symbol"`
	Decimals   json.Number `json:"decimals"`
	IsVerified *bool       `json:"isVerified"`
	Tags       []string    `json:"tags"`
	Audit      *struct {
		IsSus *bool `json:"isSus"`
	} `json:"audit"`
}

// Listed reports whether Jupiter verified the token.
func (t JupiterToken) Listed() bool {
	if t.IsVerified != nil && *t.IsVerified {
		return true
	}
	for _, tag := range t.Tags {
		if tag == "verified" || tag == "strict" {
			return true
		}
	}
	return false
}

// SpamFlag is Jupiter's own suspicion, "" when it has none.
func (t JupiterToken) SpamFlag() string {
	if t.Audit != nil && t.Audit.IsSus != nil && *t.Audit.IsSus {
		return "flagged suspicious by Jupiter"
	}
	return ""
}

func (j *Jupiter) get(ctx context.Context, path string, limit int64) ([]JupiterToken, error) {
	var h map[string]string
	if j.apiKey != "" {
		h = map[string]string{"x-api-key": j.apiKey}
	}
	body, err := httpx.Get(ctx, j.http, j.base+path, h, limit, j.now)
	if err != nil {
		return nil, err
	}
	var ans []JupiterToken
	if err := httpx.Decode(body, &ans); err != nil {
		return nil, err
	}
	return ans, nil
}

// Search looks up a symbol, name or comma-separated mints (/tokens/v2/search?query=).
func (j *Jupiter) Search(ctx context.Context, query string) ([]JupiterToken, error) {
	return j.get(ctx, "/tokens/v2/search?query="+url.QueryEscape(query), MaxItemBody)
}

// Verified returns Jupiter's verified tokens (/tokens/v2/tag?query=verified).
func (j *Jupiter) Verified(ctx context.Context) ([]JupiterToken, error) {
	return j.get(ctx, "/tokens/v2/tag?query=verified", MaxListBody)
}

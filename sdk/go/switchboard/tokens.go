package switchboard

// Token lookups, prices, balances and connected (watch-only) wallets.

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"time"
)

// Token is one resolve_token match.
type Token struct {
	Ticker       string `json:"ticker"`
	Name         string `json:"name"`
	Address      string `json:"address"`
	Chain        string `json:"chain"`
	ChainID      int64  `json:"chainId"`
	Decimals     int    `json:"decimals"`
	MarketDataID string `json:"marketDataId"`
	IsSpam       bool   `json:"isSpam"`
	SpamReason   string `json:"spamReason,omitempty"`
}

// Tokens is ResolveToken's answer.
type Tokens struct {
	Status string  `json:"status"`
	Tokens []Token `json:"tokens"`
}

// TokenQuery is the natural-language text of a lookup ("usdc on base"), optionally narrowed
// to a chain.
type TokenQuery struct {
	Query string
	Chain string
}

func (q TokenQuery) values() url.Values {
	v := url.Values{"query": {q.Query}}
	if q.Chain != "" {
		v.Set("chain", q.Chain)
	}
	return v
}

// Price is GetPrice's answer; PriceUSD is a decimal string.
type Price struct {
	Status    string    `json:"status"`
	Ticker    string    `json:"ticker"`
	PriceUSD  string    `json:"priceUsd"`
	Source    string    `json:"source"`
	FetchedAt time.Time `json:"fetchedAt"`
	Token     Token     `json:"token"`
}

// BalancesQuery narrows Balances: natural-language text ("my USDC on base and solana")
// and/or chain names.
type BalancesQuery struct {
	Query  string
	Chains []string
}

// Balances is the portfolio; amounts are decimal strings.
type Balances struct {
	Status     string            `json:"status"`
	TotalUSD   string            `json:"totalUsd"`
	Balances   []Balance         `json:"balances"`
	Wallets    []BalanceWallet   `json:"wallets"`
	Failures   []BalanceFailure  `json:"failures"`
	Unpriced   []json.RawMessage `json:"unpriced"`
	SpamHidden int               `json:"spamHidden"`
}

// Balance is one holding.
type Balance struct {
	Ticker       string `json:"ticker"`
	Chain        string `json:"chain"`
	TokenAddress string `json:"tokenAddress"`
	Amount       string `json:"amount"`
	AmountUSD    string `json:"amountUsd,omitempty"`
	PriceUSD     string `json:"priceUsd,omitempty"`
	Wallet       string `json:"wallet"`
	WalletType   string `json:"walletType"`
}

// BalanceWallet is a wallet the balances cover.
type BalanceWallet struct {
	Address    string `json:"address"`
	Family     string `json:"family"`
	WalletType string `json:"walletType"`
}

// BalanceFailure is a chain (or token) that could not be read.
type BalanceFailure struct {
	Chain  string `json:"chain"`
	Token  string `json:"token,omitempty"`
	Reason string `json:"reason"`
}

// ConnectedWallet is a watch-only wallet added to the account.
type ConnectedWallet struct {
	Address   string    `json:"address"`
	Family    string    `json:"family"`
	Label     string    `json:"label"`
	CreatedAt time.Time `json:"createdAt"`
}

// ConnectedWallets is ListConnectedWallets' answer.
type ConnectedWallets struct {
	Max     int               `json:"max"`
	Wallets []ConnectedWallet `json:"wallets"`
}

// ResolveToken looks a token up by ticker or address (GET /v1/tokens/resolve).
func (c *Client) ResolveToken(ctx context.Context, q TokenQuery) (*Tokens, error) {
	return callT[Tokens](ctx, c, "resolve_token", nil, q.values(), nil)
}

// Price returns a token's live USD price (GET /v1/tokens/price); when no provider can
// quote it the answer is an UNAVAILABLE *Error, never a stale price.
func (c *Client) Price(ctx context.Context, q TokenQuery) (*Price, error) {
	return callT[Price](ctx, c, "get_price", nil, q.values(), nil)
}

// Balances returns the account's balances with USD values (GET /v1/balances).
func (c *Client) Balances(ctx context.Context, q BalancesQuery) (*Balances, error) {
	v := url.Values{}
	if q.Query != "" {
		v.Set("query", q.Query)
	}
	if len(q.Chains) > 0 {
		v.Set("chains", strings.Join(q.Chains, ","))
	}
	return callT[Balances](ctx, c, "get_balances", nil, v, nil)
}

// AddConnectedWallet adds a watch-only wallet (POST /v1/wallets/connected).
func (c *Client) AddConnectedWallet(ctx context.Context, address, label string) (*ConnectedWallet, error) {
	var out struct {
		Wallet ConnectedWallet `json:"wallet"`
	}
	body := map[string]string{"address": address}
	if label != "" {
		body["label"] = label
	}
	if err := c.call(ctx, "connected_wallet_add", nil, nil, body, &out); err != nil {
		return nil, err
	}
	return &out.Wallet, nil
}

// ListConnectedWallets lists the watch-only wallets (GET /v1/wallets/connected).
func (c *Client) ListConnectedWallets(ctx context.Context) (*ConnectedWallets, error) {
	return callT[ConnectedWallets](ctx, c, "connected_wallet_list", nil, nil, nil)
}

// RemoveConnectedWallet removes a watch-only wallet (DELETE /v1/wallets/connected/{address}).
func (c *Client) RemoveConnectedWallet(ctx context.Context, address string) (*ConnectedWallet, error) {
	var out struct {
		Removed ConnectedWallet `json:"removed"`
	}
	if err := c.call(ctx, "connected_wallet_remove", map[string]string{"address": address}, nil, nil, &out); err != nil {
		return nil, err
	}
	return &out.Removed, nil
}

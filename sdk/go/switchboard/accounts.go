package switchboard

// Onboarding, API keys, the account and its credit.

import (
	"context"
	"encoding/json"
	"time"
)

// Wallets are the account's embedded wallet addresses.
type Wallets struct {
	EVM string `json:"evm"`
	SVM string `json:"svm"`
}

// Account is what Verify answers: the account, its wallets and its first key (shown once).
type Account struct {
	UserID             string   `json:"userId"`
	Wallets            Wallets  `json:"wallets"`
	APIKey             string   `json:"apiKey"`
	Scopes             []string `json:"scopes"`
	SpendLimitUSD      float64  `json:"spendLimitUsd"`
	RateLimitPerMinute int      `json:"rateLimitPerMinute"`
}

// Key is an API key's metadata (never its secret, except Secret right after CreateKey).
type Key struct {
	ID                 string     `json:"id"`
	Name               string     `json:"name"`
	Prefix             string     `json:"prefix"`
	Scopes             []string   `json:"scopes"`
	SpendLimitUSD      float64    `json:"spendLimitUsd"`
	RateLimitPerMinute int        `json:"rateLimitPerMinute"`
	IntegrationID      string     `json:"integrationId,omitempty"`
	ParentID           string     `json:"parentId,omitempty"` // the key it was minted under ("" for a root)
	CreatedAt          time.Time  `json:"createdAt"`
	LastUsedAt         *time.Time `json:"lastUsedAt,omitempty"`
	RevokedAt          *time.Time `json:"revokedAt,omitempty"`
	Secret             string     `json:"secret,omitempty"` // CreateKey only: shown once
}

// CreateKeyInput mints a key. Scopes and limits never exceed the calling key's; omitted
// limits fall back to the agent defaults.
type CreateKeyInput struct {
	Name               string   `json:"name"`
	Scopes             []string `json:"scopes"`
	SpendLimitUSD      *float64 `json:"spendLimitUsd,omitempty"`
	RateLimitPerMinute *int     `json:"rateLimitPerMinute,omitempty"`
	IntegrationID      string   `json:"integrationId,omitempty"`
}

// AccountInfo is GET /v1/account.
type AccountInfo struct {
	UserID            string             `json:"userId"`
	Email             string             `json:"email"`
	KeyID             string             `json:"keyId"`
	Scopes            []string           `json:"scopes"`
	SigningEnabled    bool               `json:"signingEnabled"`
	Wallets           Wallets            `json:"wallets"`
	Keys              []Key              `json:"keys"`
	Limits            Limits             `json:"limits"`
	Credit            Credit             `json:"credit"`
	RecentInvocations []RecentInvocation `json:"recentInvocations"`
	CreatedAt         time.Time          `json:"createdAt"`
}

// Limits are the calling key's limits and the agent defaults.
type Limits struct {
	SpendLimitUSD             float64 `json:"spendLimitUsd"`
	RateLimitPerMinute        int     `json:"rateLimitPerMinute"`
	DefaultSpendLimitUSD      float64 `json:"defaultSpendLimitUsd"`
	DefaultRateLimitPerMinute int     `json:"defaultRateLimitPerMinute"`
}

// Credit is the account's credit and spend.
type Credit struct {
	AvailableUSD  float64 `json:"availableUsd"`
	ReservedUSD   float64 `json:"reservedUsd"`
	KeySpentUSD   float64 `json:"keySpentUsd"`
	MonthSpentUSD float64 `json:"monthSpentUsd"`
}

// RecentInvocation is one recent partner call of the account.
type RecentInvocation struct {
	RequestID string    `json:"requestId"`
	Handle    string    `json:"handle"`
	State     string    `json:"state"`
	CostUSD   float64   `json:"costUsd"`
	At        time.Time `json:"at"`
}

// Signup e-mails a one-time code to email (POST /v1/agents/signup). It always answers
// success for a well-formed address (no account enumeration).
func (c *Client) Signup(ctx context.Context, email string) error {
	return c.call(ctx, "agent_signup", nil, nil, map[string]string{"email": email}, nil)
}

// Verify exchanges the e-mailed code for the account and its first key
// (POST /v1/agents/verify). Verifying an existing account recovers it with a new key.
func (c *Client) Verify(ctx context.Context, email, code string) (*Account, error) {
	return callT[Account](ctx, c, "agent_verify", nil, nil, map[string]string{"email": email, "code": code})
}

// CreateKey mints an API key (POST /v1/keys); its Secret is shown only here.
func (c *Client) CreateKey(ctx context.Context, in CreateKeyInput) (*Key, error) {
	return callT[Key](ctx, c, "api_key_create", nil, nil, in)
}

// ListKeys lists the account's keys, metadata only (GET /v1/keys).
func (c *Client) ListKeys(ctx context.Context) ([]Key, error) {
	var out struct {
		Keys []Key `json:"keys"`
	}
	if err := c.call(ctx, "api_key_list", nil, nil, nil, &out); err != nil {
		return nil, err
	}
	return out.Keys, nil
}

// RevokeKey revokes one of the account's keys (DELETE /v1/keys/{key_id}); it stops working
// at once.
func (c *Client) RevokeKey(ctx context.Context, keyID string) (*Key, error) {
	return callT[Key](ctx, c, "api_key_revoke", map[string]string{"key_id": keyID}, nil, nil)
}

// Account returns the account: wallets, keys, limits, credit (GET /v1/account).
func (c *Client) Account(ctx context.Context) (*AccountInfo, error) {
	return callT[AccountInfo](ctx, c, "account_get", nil, nil, nil)
}

// TopupInput is POST /v1/credit/topup's body. Amounts are exact decimals (json.Number).
type TopupInput struct {
	AmountUSD        json.Number     `json:"amountUsd"`
	PayWithWallet    bool            `json:"payWithWallet,omitempty"`
	Payment          json.RawMessage `json:"payment,omitempty"` // {signature, authorization} of a TransferWithAuthorization to the treasury
	ConfirmRequestID string          `json:"confirmRequestId,omitempty"`
}

// Topup is what a top-up credited.
type Topup struct {
	CreditedUSD json.Number `json:"creditedUsd"`
	CreditUSD   json.Number `json:"creditUsd"`
	Network     string      `json:"network"`
	TxHash      string      `json:"txHash"`
	RequestID   string      `json:"requestId"`
}

// Topup buys credit (POST /v1/credit/topup). Without a payment it answers a PAYMENT_REQUIRED
// *Error whose details carry the x402 requirement (details.x402); pay it and call again with
// Payment and ConfirmRequestID, or with PayWithWallet. A retry with the same payment credits
// once.
func (c *Client) Topup(ctx context.Context, in TopupInput) (*Topup, error) {
	return callT[Topup](ctx, c, "credit_topup", nil, nil, in)
}

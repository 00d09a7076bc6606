package switchboard

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strconv"
	"strings"
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

// DiscoverQuery searches the marketplace.
type DiscoverQuery struct {
	Query    string
	Category string
	Limit    int
}

// DiscoverResult is one marketplace entry.
type DiscoverResult struct {
	Handle             string          `json:"handle"`
	Name               string          `json:"name"`
	Description        string          `json:"description"`
	Category           string          `json:"category"`
	Active             bool            `json:"active"`
	Own                bool            `json:"own"`
	IsCoreIntent       bool            `json:"isCoreIntent"`
	VerificationStatus string          `json:"verificationStatus"`
	Invoke             string          `json:"invoke"`
	ParametersSchema   json.RawMessage `json:"parametersSchema"`
	Fee                struct {
		FeeRate     string `json:"feeRate"`
		FeeRateUnit string `json:"feeRateUnit"`
	} `json:"fee"`
}

// InvokeInput calls a partner by the @handle in Message. Args are structured arguments
// matching the intent's parametersSchema; ConfirmRequestID approves a write intent.
type InvokeInput struct {
	Message          string         `json:"message"`
	Args             map[string]any `json:"args,omitempty"`
	ConfirmRequestID string         `json:"confirmRequestId,omitempty"`
}

// Invocation is Invoke's answer: the partner's result relayed as is, or (Success false)
// its own error in PartnerError, with what was charged.
type Invocation struct {
	Handle            string          `json:"handle"`
	RequestID         string          `json:"requestId"`
	Success           bool            `json:"success"`
	Result            json.RawMessage `json:"result"`
	PartnerError      *PartnerError   `json:"partnerError,omitempty"`
	OutputSchemaValid *bool           `json:"outputSchemaValid,omitempty"`
	Attempts          int             `json:"attempts"`
	Charge            struct {
		// InfrastructureMicro is the infrastructure fee every call costs.
		InfrastructureMicro int64 `json:"infrastructureMicro"`
		// ReservedMicro is InfrastructureMicro under its first name (deprecated).
		ReservedMicro    int64 `json:"reservedMicro"`
		PartnerFeeMicro  int64 `json:"partnerFeeMicro"`
		PlatformFeeMicro int64 `json:"platformFeeMicro"`
		GasMicro         int64 `json:"gasMicro"`
		TotalMicro       int64 `json:"totalMicro"`
		RefundedMicro    int64 `json:"refundedMicro"`
	} `json:"charge"`
}

// PartnerError is a partner's own failure answer.
type PartnerError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Confirmation is what a CONFIRMATION_REQUIRED answer asks the user to approve: nothing was
// sent to the partner yet.
type Confirmation struct {
	RequestID     string         // send it back as InvokeInput.ConfirmRequestID
	Handle        string         // the partner
	Category      string         // the write category
	Args          map[string]any // what would be sent
	MaxChargeUSD  float64
	PartnerFeeUSD float64
	ExpiresAt     time.Time
	Message       string // the service's explanation, for the user
}

// ConfirmationFrom extracts the confirmation request from a CONFIRMATION_REQUIRED error.
func ConfirmationFrom(err error) (*Confirmation, bool) {
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeConfirmationRequired {
		return nil, false
	}
	c := &Confirmation{Message: e.Message}
	c.RequestID, _ = e.Details["requestId"].(string)
	c.Handle, _ = e.Details["handle"].(string)
	c.Category, _ = e.Details["category"].(string)
	c.Args, _ = e.Details["args"].(map[string]any)
	c.MaxChargeUSD, _ = e.Details["maxChargeUsd"].(float64)
	c.PartnerFeeUSD, _ = e.Details["partnerFeeUsd"].(float64)
	if s, ok := e.Details["expiresAt"].(string); ok {
		c.ExpiresAt, _ = time.Parse(time.RFC3339Nano, s)
	}
	return c, c.RequestID != ""
}

// ErrNotApproved is returned by InvokeWithConfirmation when approve declines; it wraps the
// CONFIRMATION_REQUIRED *Error.
var ErrNotApproved = errors.New("switchboard: the write was not approved; nothing was sent")

// Intent is a partner intent row.
type Intent struct {
	ID                 string            `json:"id"`
	PublicIdentifier   string            `json:"publicIdentifier"`
	Name               string            `json:"name"`
	Description        string            `json:"description"`
	Category           string            `json:"category"`
	Capabilities       []string          `json:"capabilities"`
	BindingType        string            `json:"bindingType"`
	ToolEndpoint       string            `json:"toolEndpoint"`
	TimeoutMs          int               `json:"timeoutMs"`
	ParametersSchema   json.RawMessage   `json:"parametersSchema"`
	OutputSchema       json.RawMessage   `json:"outputSchema"`
	FeeRate            float64           `json:"feeRate"`
	FeeRateUnit        string            `json:"feeRateUnit"`
	PayoutAddresses    map[string]string `json:"payoutAddresses"`
	Tier               string            `json:"tier"`
	PricingShape       json.RawMessage   `json:"pricingShape"`
	SampleQueries      []string          `json:"sampleQueries"`
	OwnerID            string            `json:"ownerId"`
	PartnerID          string            `json:"partnerId"`
	IsActive           bool              `json:"isActive"`
	IsCoreIntent       bool              `json:"isCoreIntent"`
	VerificationStatus string            `json:"verificationStatus"`
	ArchivedAt         *time.Time        `json:"archivedAt"`
	CreatedAt          time.Time         `json:"createdAt"`
	UpdatedAt          time.Time         `json:"updatedAt"`
}

// IntentInput publishes one intent (the row's publishable fields). Schemas and pricing
// shapes are any JSON-encodable value (a map, a json.RawMessage).
type IntentInput struct {
	PublicIdentifier string            `json:"publicIdentifier"`
	Name             string            `json:"name"`
	Description      string            `json:"description"`
	Category         string            `json:"category"`
	Capabilities     []string          `json:"capabilities,omitempty"`
	BindingType      string            `json:"bindingType,omitempty"`
	ToolEndpoint     string            `json:"toolEndpoint"`
	TimeoutMs        int               `json:"timeoutMs,omitempty"`
	ParametersSchema any               `json:"parametersSchema,omitempty"`
	OutputSchema     any               `json:"outputSchema,omitempty"`
	FeeRate          float64           `json:"feeRate"`
	FeeRateUnit      string            `json:"feeRateUnit,omitempty"`
	PayoutAddresses  map[string]string `json:"payoutAddresses,omitempty"`
	Tier             string            `json:"tier,omitempty"`
	PricingShape     any               `json:"pricingShape,omitempty"`
	SampleQueries    []string          `json:"sampleQueries,omitempty"`
}

// IntentUpdate edits an intent: only the fields set are sent. The service refuses
// immutable fields with a message naming them.
type IntentUpdate struct {
	Name             *string           `json:"name,omitempty"`
	Description      *string           `json:"description,omitempty"`
	ToolEndpoint     *string           `json:"toolEndpoint,omitempty"`
	TimeoutMs        *int              `json:"timeoutMs,omitempty"`
	ParametersSchema any               `json:"parametersSchema,omitempty"`
	OutputSchema     any               `json:"outputSchema,omitempty"`
	FeeRate          *float64          `json:"feeRate,omitempty"`
	FeeRateUnit      *string           `json:"feeRateUnit,omitempty"`
	PayoutAddresses  map[string]string `json:"payoutAddresses,omitempty"`
	PricingShape     any               `json:"pricingShape,omitempty"`
	SampleQueries    []string          `json:"sampleQueries,omitempty"`
	Tier             *string           `json:"tier,omitempty"`
	// Immutable after publish; set only to see the service refuse them.
	PublicIdentifier *string  `json:"publicIdentifier,omitempty"`
	Category         *string  `json:"category,omitempty"`
	BindingType      *string  `json:"bindingType,omitempty"`
	Capabilities     []string `json:"capabilities,omitempty"`
}

// IntentUpdated is UpdateIntent's answer. Editing the endpoint of an active intent re-runs
// the negative-auth probe (Probe) and deactivates the intent when it fails.
type IntentUpdated struct {
	Intent      Intent          `json:"intent"`
	Deactivated bool            `json:"deactivated"`
	Notice      string          `json:"notice,omitempty"`
	Probe       json.RawMessage `json:"probe"`
}

// IntentActivation is SetActive's answer; Probe is the negative-auth probe run on activation.
type IntentActivation struct {
	Intent Intent          `json:"intent"`
	Probe  json.RawMessage `json:"probe"`
}

// TestEndpointInput tests a published intent (IntentID) or a URL before publishing.
type TestEndpointInput struct {
	IntentID         string         `json:"intentId,omitempty"`
	ToolEndpoint     string         `json:"toolEndpoint,omitempty"`
	BindingType      string         `json:"bindingType,omitempty"`
	PublicIdentifier string         `json:"publicIdentifier,omitempty"`
	TimeoutMs        int            `json:"timeoutMs,omitempty"`
	Args             map[string]any `json:"args,omitempty"`
}

// EndpointTest is the signed round trip plus the negative-auth probe.
type EndpointTest struct {
	Target struct {
		IntentID           string `json:"intentId,omitempty"`
		ToolEndpoint       string `json:"toolEndpoint"`
		BindingType        string `json:"bindingType"`
		TimeoutMs          int    `json:"timeoutMs"`
		IntentDefinitionID string `json:"intentDefinitionId"`
		ToolName           string `json:"toolName,omitempty"`
	} `json:"target"`
	RoundTrip struct {
		Verdict    string          `json:"verdict"` // OK, PARTNER_FAILURE, BAD_RESPONSE, NO_ANSWER, BLOCKED
		RequestID  string          `json:"requestId"`
		Args       map[string]any  `json:"args"`
		ArgsSource string          `json:"argsSource"`
		Status     int             `json:"status,omitempty"`
		LatencyMs  int             `json:"latencyMs"`
		Response   json.RawMessage `json:"response"`
		Error      string          `json:"error,omitempty"`
		ParseError string          `json:"parseError,omitempty"`
		Notes      []string        `json:"notes"`
	} `json:"roundTrip"`
	Probe           Probe  `json:"probe"`
	ReadyToActivate bool   `json:"readyToActivate"`
	Summary         string `json:"summary"`
}

// Probe is the negative-auth probe: an unsigned and a forged request must both be refused.
type Probe struct {
	Verdict string `json:"verdict"` // PASS, FAIL, INCONCLUSIVE
	Reason  string `json:"reason"`
	Steps   []struct {
		Request   string `json:"request"` // unsigned, forged_signature
		Verdict   string `json:"verdict"` // REJECTED, ACCEPTED, WRONG_STATUS, INCONCLUSIVE, BLOCKED
		Status    int    `json:"status,omitempty"`
		LatencyMs int    `json:"latencyMs"`
		Detail    string `json:"detail"`
	} `json:"steps"`
}

// IntentList is ListIntents' answer.
type IntentList struct {
	Intents []Intent        `json:"intents"`
	Partner json.RawMessage `json:"partner"`
}

// EarningsQuery narrows Earnings to one intent and/or a start time.
type EarningsQuery struct {
	IntentID string
	Since    time.Time
}

// Earnings are the partner's fees.
type Earnings struct {
	Since    time.Time `json:"since"`
	TotalUSD float64   `json:"totalUsd"`
	ByIntent []struct {
		IntentID      string  `json:"intentId"`
		Handle        string  `json:"handle"`
		PartnerFeeUSD float64 `json:"partnerFeeUsd"`
		Calls         int     `json:"calls"`
		Succeeded     int     `json:"succeeded"`
	} `json:"byIntent"`
	ByPayout []struct {
		Payout        string  `json:"payout"`
		PartnerFeeUSD float64 `json:"partnerFeeUsd"`
	} `json:"byPayout"`
	Recent []json.RawMessage `json:"recent"`
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

// Discover finds marketplace services by natural language (GET /v1/discover).
func (c *Client) Discover(ctx context.Context, q DiscoverQuery) ([]DiscoverResult, error) {
	v := url.Values{"query": {q.Query}}
	if q.Category != "" {
		v.Set("category", q.Category)
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	var out struct {
		Results []DiscoverResult `json:"results"`
	}
	if err := c.call(ctx, "discover", nil, v, nil, &out); err != nil {
		return nil, err
	}
	return out.Results, nil
}

// Invoke calls the partner named by its @handle in the message (POST /v1/invoke). It is
// never retried by the client. A write intent first answers a CONFIRMATION_REQUIRED
// *Error (see ConfirmationFrom and InvokeWithConfirmation).
func (c *Client) Invoke(ctx context.Context, in InvokeInput) (*Invocation, error) {
	var out Invocation
	if err := c.call(ctx, "invoke_partner_message", nil, nil, in, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// InvokeWithConfirmation invokes, and when the intent is a write that needs the user's
// approval, asks approve; if it approves, it confirms with the same message and the
// answer's requestId. When approve declines it returns an error wrapping both
// ErrNotApproved and the CONFIRMATION_REQUIRED *Error.
func (c *Client) InvokeWithConfirmation(ctx context.Context, in InvokeInput, approve func(context.Context, *Confirmation) (bool, error)) (*Invocation, error) {
	out, err := c.Invoke(ctx, in)
	conf, ok := ConfirmationFrom(err)
	if !ok {
		return out, err
	}
	yes, aerr := approve(ctx, conf)
	if aerr != nil {
		return nil, aerr
	}
	if !yes {
		return nil, errors.Join(ErrNotApproved, err)
	}
	in.ConfirmRequestID = conf.RequestID
	return c.Invoke(ctx, in)
}

// PublishIntent publishes one intent, inactive (POST /v1/partner/intents).
func (c *Client) PublishIntent(ctx context.Context, in IntentInput) (*Intent, error) {
	return callT[Intent](ctx, c, "partner_publish_intent", nil, nil, in)
}

// PublishIntentBundle publishes several intents atomically (POST /v1/partner/intents/bundle).
func (c *Client) PublishIntentBundle(ctx context.Context, in []IntentInput) ([]Intent, error) {
	var out struct {
		Intents []Intent `json:"intents"`
	}
	if err := c.call(ctx, "partner_publish_intent_bundle", nil, nil, map[string]any{"intents": in}, &out); err != nil {
		return nil, err
	}
	return out.Intents, nil
}

// UpdateIntent edits an intent's editable fields (PATCH /v1/partner/intents/{id}).
func (c *Client) UpdateIntent(ctx context.Context, intentID string, in IntentUpdate) (*IntentUpdated, error) {
	return callT[IntentUpdated](ctx, c, "partner_update_intent", map[string]string{"id": intentID}, nil, in)
}

// TestEndpoint runs a signed round trip and the negative-auth probe against an intent or a
// URL (POST /v1/partner/test-endpoint). It changes nothing.
func (c *Client) TestEndpoint(ctx context.Context, in TestEndpointInput) (*EndpointTest, error) {
	return callT[EndpointTest](ctx, c, "partner_test_endpoint", nil, nil, in)
}

// SetActive activates (after the negative-auth probe passes) or deactivates an intent
// (POST /v1/partner/intents/{id}/active).
func (c *Client) SetActive(ctx context.Context, intentID string, active bool) (*IntentActivation, error) {
	return callT[IntentActivation](ctx, c, "partner_set_active", map[string]string{"id": intentID}, nil, map[string]bool{"active": active})
}

// ListIntents lists the partner's intents (GET /v1/partner/intents).
func (c *Client) ListIntents(ctx context.Context, includeArchived bool) (*IntentList, error) {
	var v url.Values
	if includeArchived {
		v = url.Values{"includeArchived": {"true"}}
	}
	return callT[IntentList](ctx, c, "partner_list_intents", nil, v, nil)
}

// ArchiveIntent soft-deletes an intent (DELETE /v1/partner/intents/{id}); its handle stays
// taken.
func (c *Client) ArchiveIntent(ctx context.Context, intentID string) (*Intent, error) {
	return callT[Intent](ctx, c, "partner_archive_intent", map[string]string{"id": intentID}, nil, nil)
}

// Earnings reports the partner's fees (GET /v1/partner/earnings).
func (c *Client) Earnings(ctx context.Context, q EarningsQuery) (*Earnings, error) {
	v := url.Values{}
	if q.IntentID != "" {
		v.Set("intentId", q.IntentID)
	}
	if !q.Since.IsZero() {
		v.Set("since", q.Since.UTC().Format(time.RFC3339))
	}
	return callT[Earnings](ctx, c, "partner_earnings", nil, v, nil)
}

// SignedReceipt is Switchboard's signed receipt of one call.
type SignedReceipt struct {
	Receipt struct {
		RequestID    string           `json:"requestId"`
		Handle       string           `json:"handle"`
		IntentID     string           `json:"intentDefinitionId"`
		UserID       string           `json:"userId"`
		Success      bool             `json:"success"`
		Charges      map[string]int64 `json:"charges"`
		CreatedAt    string           `json:"createdAt"`
		FinishedAt   string           `json:"finishedAt"`
		ResultSHA256 string           `json:"resultSha256"`
		KeyID        string           `json:"keyId"`
	} `json:"receipt"`
	Signature string `json:"signature"`
}

// Receipt fetches the signed receipt of a call to one of the partner's intents
// (GET /v1/partner/receipts/{request_id}).
func (c *Client) Receipt(ctx context.Context, requestID string) (*SignedReceipt, error) {
	return callT[SignedReceipt](ctx, c, "partner_receipt", map[string]string{"request_id": requestID}, nil, nil)
}

// callT calls an operation and decodes its answer into a new T; nil on error.
func callT[T any](ctx context.Context, c *Client, opID string, pathParams map[string]string, query url.Values, body any) (*T, error) {
	var out T
	if err := c.call(ctx, opID, pathParams, query, body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

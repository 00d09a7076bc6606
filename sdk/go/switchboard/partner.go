package switchboard

// The partner routes: intents, endpoint tests, earnings and signed receipts.

import (
	"context"
	"encoding/json"
	"net/url"
	"time"
)

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

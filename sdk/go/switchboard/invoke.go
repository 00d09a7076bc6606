package switchboard

// Marketplace discovery and partner invocation, with the write-confirmation round trip.

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strconv"
	"time"
)

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
	// Transactions are, when this confirmed what a partner proposed, the transactions the
	// embedded wallet signed, each as it stands.
	Transactions []SentTransaction `json:"transactions,omitempty"`
}

// SentTransaction is one proposed transaction once confirmed: status submitted, confirmed,
// failed, dropped or unsigned; FeeNative what it paid the network (wei or lamports) once mined.
type SentTransaction struct {
	RequestID   string `json:"requestId"`
	Chain       string `json:"chain"`
	Status      string `json:"status"`
	TxHash      string `json:"txHash,omitempty"`
	ExplorerURL string `json:"explorerUrl,omitempty"`
	FeeNative   string `json:"feeNative,omitempty"`
	Reason      string `json:"reason,omitempty"`
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

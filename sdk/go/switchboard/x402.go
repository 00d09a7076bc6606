package switchboard

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"
)

// X402FetchInput is POST /v1/x402/fetch's body. MaxUSD is an exact decimal (json.Number).
type X402FetchInput struct {
	URL              string            `json:"url"`
	Method           string            `json:"method,omitempty"`
	Headers          map[string]string `json:"headers,omitempty"`
	Body             string            `json:"body,omitempty"`
	MaxUSD           json.Number       `json:"maxUsd,omitempty"`
	ConfirmRequestID string            `json:"confirmRequestId,omitempty"`
	// MCPTool, when set, calls this tool of the MCP server at URL (x402's MCP transport) and
	// pays what it asks for; the tool's result is Body.
	MCPTool *X402MCPTool `json:"mcpTool,omitempty"`
}

// X402MCPTool names a paid MCP server's tool and its arguments.
type X402MCPTool struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments,omitempty"`
}

// X402Payment is what paid for an x402 resource.
type X402Payment struct {
	Network string `json:"network"`
	Payer   string `json:"payer"`
	PayTo   string `json:"payTo"`
	TxHash  string `json:"txHash,omitempty"`
}

// X402Fetched is an x402 resource's answer, relayed.
type X402Fetched struct {
	Status       int               `json:"status"`
	Headers      map[string]string `json:"headers"`
	Body         string            `json:"body"`
	BodyEncoding string            `json:"bodyEncoding"` // text or base64
	Truncated    bool              `json:"truncated,omitempty"`
	PaidUSD      json.Number       `json:"paidUsd"`
	Payment      *X402Payment      `json:"payment,omitempty"`
	RequestID    string            `json:"requestId,omitempty"`
}

// X402Fetch requests an x402 resource and pays it from the embedded wallet when it asks
// (POST /v1/x402/fetch): at most MaxUSD (default 1) and within the owner's policies, or a
// POLICY_DENIED *Error with nothing signed.
func (c *Client) X402Fetch(ctx context.Context, in X402FetchInput) (*X402Fetched, error) {
	return callT[X402Fetched](ctx, c, "x402_fetch", nil, nil, in)
}

// UsageQuery filters GET /v1/usage: a kind (call, topup, x402, send, proposed), an outcome,
// the previous page's Next as Cursor, and a page size (default 25, at most 100).
type UsageQuery struct {
	Kind, Outcome, Cursor string
	Limit                 int
}

// UsageRow is one money movement of the account's record: a partner call (its cost in
// ChargeMicro) or an on-chain movement with its USD value, network and transaction.
type UsageRow struct {
	RequestID   string       `json:"requestId"`
	Handle      string       `json:"handle"`
	IntentID    string       `json:"intentId"`
	KeyID       string       `json:"keyId"`
	Outcome     string       `json:"outcome"`
	OutcomeCode string       `json:"outcomeCode"`
	ChargeMicro int64        `json:"chargeMicro"`
	Kind        string       `json:"kind"`
	ValueUSD    *json.Number `json:"valueUsd"`
	Network     *string      `json:"network"`
	TxHash      *string      `json:"txHash"`
	CreatedAt   string       `json:"createdAt"`
}

// UsagePage is one page of the record, newest first; Next is "" on the last.
type UsagePage struct {
	Rows []UsageRow `json:"rows"`
	Next string     `json:"next"`
}

// Usage reads one page of the account's record of money movements (GET /v1/usage): a root
// key reads the account's, a minted key its own.
func (c *Client) Usage(ctx context.Context, q UsageQuery) (*UsagePage, error) {
	v := url.Values{}
	for k, s := range map[string]string{"kind": q.Kind, "outcome": q.Outcome, "cursor": q.Cursor} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	return callT[UsagePage](ctx, c, "usage_list", nil, v, nil)
}

// WalletSendInput is POST /v1/wallet/send's body: Amount is an exact decimal string in the
// token's units.
type WalletSendInput struct {
	Chain            string `json:"chain"`
	Token            string `json:"token"`
	To               string `json:"to"`
	Amount           string `json:"amount"`
	ConfirmRequestID string `json:"confirmRequestId,omitempty"`
	Decline          bool   `json:"decline,omitempty"`
}

// WalletSent is a send signed and broadcast from the embedded wallet. ValueUSD is nil when
// the token had no price.
type WalletSent struct {
	RequestID   string       `json:"requestId"`
	Status      string       `json:"status"` // submitted or confirmed
	Chain       string       `json:"chain"`
	Token       string       `json:"token"`
	To          string       `json:"to"`
	Amount      string       `json:"amount"`
	ValueUSD    *json.Number `json:"valueUsd"`
	TxHash      string       `json:"txHash"`
	ExplorerURL string       `json:"explorerUrl,omitempty"`
}

// WalletSend sends the native coin or a token from the embedded wallet (POST
// /v1/wallet/send). The first call answers a CONFIRMATION_REQUIRED *Error (its details:
// requestId, valueUsd, gasUsd, expiresAt); call again with the same input and
// ConfirmRequestID once the user approved it (Decline if not).
func (c *Client) WalletSend(ctx context.Context, in WalletSendInput) (*WalletSent, error) {
	return callT[WalletSent](ctx, c, "wallet_send", nil, nil, in)
}

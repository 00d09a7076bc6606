// Package x402 is x402 version 2's wire format (github.com/coinbase/x402, specs/) on both of
// Switchboard's transports, as the wrapper cmd gives both doors (Wrap): a payment read from
// the PAYMENT-SIGNATURE (or version 1's X-PAYMENT) header or from _meta["x402/payment"] into
// the input of a tool that takes payment; the tool's one payment answer (a *payments.Required
// before the payment, a *payments.Receipt after it) rendered as PaymentRequired (the
// PAYMENT-REQUIRED header, or MCP's structuredContent) with the bazaar discovery extension of
// that transport, and as SettlementResponse (the PAYMENT-RESPONSE header, or
// _meta["x402/payment-response"]). Neither the tool nor the doors know x402.
package x402

import (
	"encoding/json"
	"maps"

	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/payments"
)

// Transport is where a paid call is made: it decides the PaymentRequired's resource.url and
// its bazaar extension.
type Transport int

const (
	HTTP Transport = iota // POST /v1/invoke
	MCP                   // the tool invoke_partner_message at /mcp
)

// The resource's path under the base URL on each transport.
const (
	httpPath = "/v1/invoke"
	mcpPath  = "/mcp"
)

// PaymentRequired is x402 version 2's PaymentRequired. The fields of these wire types are in
// the order clients have always read them (alphabetical: they were rendered from maps).
type PaymentRequired struct {
	Accepts     []PaymentRequirements `json:"accepts"`
	Error       string                `json:"error"`
	Extensions  map[string]any        `json:"extensions,omitempty"`
	Resource    Resource              `json:"resource"`
	X402Version int                   `json:"x402Version"`
}

// Resource is x402's ResourceInfo.
type Resource struct {
	Description string `json:"description"`
	MimeType    string `json:"mimeType"`
	URL         string `json:"url"`
}

// PaymentRequirements is one accepts[] entry: scheme exact on EVM.
type PaymentRequirements struct {
	Amount            string `json:"amount"`
	Asset             string `json:"asset"`
	Extra             Extra  `json:"extra"`
	MaxTimeoutSeconds int64  `json:"maxTimeoutSeconds"`
	Network           string `json:"network"`
	PayTo             string `json:"payTo"`
	Scheme            string `json:"scheme"`
}

// Extra is the exact EVM scheme's extra: the token's EIP-712 domain, and the quote's
// requestId, which the client echoes back in `accepted` and so binds its payment to the quote.
type Extra struct {
	Name      string `json:"name"`
	RequestID string `json:"requestId"`
	Version   string `json:"version"`
}

// PaymentRequiredOf renders r for transport t: scheme exact, which a stock client pays by
// signing TransferWithAuthorization with its own random nonce and a window of
// maxTimeoutSeconds (ReceiveWithAuthorization, the spec's path, is accepted too).
func PaymentRequiredOf(r *payments.Required, t Transport) PaymentRequired {
	q := r.Quote
	route, tool, body, schema := httpPath, "invoke_partner_message", map[string]any{"message": r.Message}, messageSchema
	if p := r.Resource; p != nil {
		route, tool, body, schema = p.HTTPPath, p.Tool, p.Body, p.BodySchema
	}
	path, bazaar := route, bazaarHTTP(body, schema)
	if t == MCP {
		path, bazaar = mcpPath, bazaarMCP(tool, r.Description, body, schema)
	}
	return PaymentRequired{
		X402Version: 2,
		Error:       r.Reason,
		Resource:    Resource{URL: r.BaseURL + path, Description: r.Description, MimeType: "application/json"},
		Accepts: []PaymentRequirements{{
			Scheme: "exact", Network: q.Network, Amount: q.Amount, Asset: q.Token, PayTo: q.PayTo, MaxTimeoutSeconds: r.MaxTimeoutSeconds,
			Extra: Extra{Name: q.TypedData.Domain.Name, Version: q.TypedData.Domain.Version, RequestID: q.RequestID},
		}},
		Extensions: map[string]any{"bazaar": bazaar},
	}
}

// required is the payment answer a PAYMENT_REQUIRED error carries, if any.
func required(e *tools.Error) *payments.Required {
	if e == nil || e.Code != tools.CodePaymentRequired {
		return nil
	}
	r, _ := e.Details[payments.RequiredKey].(*payments.Required)
	return r
}

// Render is e as the error model shows it on every door: a PAYMENT_REQUIRED's payment answer
// becomes details.x402, the PaymentRequired of HTTP, and details.x402Mcp, that of MCP (both
// doors show both, as they always have). e itself is left as it is; any other error is
// returned as it is.
func Render(e *tools.Error) *tools.Error {
	r := required(e)
	if r == nil {
		return e
	}
	shown := *e
	shown.Details = maps.Clone(e.Details)
	shown.Details[payments.RequiredKey] = PaymentRequiredOf(r, HTTP)
	shown.Details["x402Mcp"] = PaymentRequiredOf(r, MCP)
	return &shown
}

// SettlementResponse is x402's SettlementResponse, with what Switchboard adds when it took
// the payment (Taken).
type SettlementResponse struct {
	ErrorReason string `json:"errorReason,omitempty"`
	Network     string `json:"network"`
	*Taken
	Success     bool   `json:"success"`
	Transaction string `json:"transaction"`
}

// Taken describes a payment that was taken into escrow: its state, the payer, the escrow's
// transaction, and the refund's when it was refunded.
type Taken struct {
	PayTransaction    string  `json:"payTransaction"`
	Payer             string  `json:"payer"`
	RefundTransaction *string `json:"refundTransaction,omitempty"` // set (maybe empty) when refunded
	State             string  `json:"state"`
}

// Settlement is the SettlementResponse of a flat-fee payment: success with the settlement's
// transaction, or (refunded) success false with the refund's, the payment's transaction
// beside it; held (the outcome not known yet) is success false with the payment's.
func Settlement(p *payments.Receipt) SettlementResponse {
	sr := SettlementResponse{Success: p.State == "settled", Transaction: p.SettleTx, Network: p.Network,
		Taken: &Taken{Payer: p.Payer, State: p.State, PayTransaction: p.PayTx}}
	switch p.State {
	case "refunded":
		refund := p.RefundTx
		sr.Transaction, sr.ErrorReason, sr.RefundTransaction = p.RefundTx, "refunded: the partner call failed, the payment was returned to the payer", &refund
	case "held":
		sr.Transaction, sr.ErrorReason = p.PayTx, "held in escrow: the outcome is not known yet"
	}
	return sr
}

// Refusal is the SettlementResponse of a flat-fee call that failed: the refund when the
// payment was taken and returned (details.payment), x402's errorReason when it was refused
// before anything was taken (details.invalidReason); ok false when e is neither.
func Refusal(e *tools.Error) (SettlementResponse, bool) {
	if e == nil {
		return SettlementResponse{}, false
	}
	if r, ok := e.Details["payment"].(*payments.Receipt); ok && r != nil {
		return Settlement(r), true
	}
	if reason, ok := e.Details["invalidReason"].(string); ok {
		return SettlementResponse{ErrorReason: reason}, true
	}
	return SettlementResponse{}, false
}

// paid is an answer that may carry a flat-fee payment (dispatch.InvokeOutput).
type paid interface {
	X402Payment() *payments.Receipt
}

// receiptOf is the flat-fee payment an answer carries, if any.
func receiptOf(out any) *payments.Receipt {
	if p, ok := out.(paid); ok {
		return p.X402Payment()
	}
	return nil
}

func marshal(v any) []byte {
	raw, _ := json.Marshal(v) // the wire types hold strings, numbers and maps of them
	return raw
}

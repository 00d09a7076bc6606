package x402

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-hq/switchboard/tools"
)

// The headers and _meta keys of x402's transports.
const (
	HeaderRequired      = "PAYMENT-REQUIRED"      // PaymentRequired, base64 JSON
	HeaderSignature     = "PAYMENT-SIGNATURE"     // PaymentPayload, base64 JSON
	HeaderSignatureV1   = "X-PAYMENT"             // version 1's PaymentPayload header
	HeaderResponse      = "PAYMENT-RESPONSE"      // SettlementResponse, base64 JSON
	MetaPayment         = "x402/payment"          // PaymentPayload
	MetaPaymentResponse = "x402/payment-response" // SettlementResponse
)

// paymentPayload is the part of x402's PaymentPayload that invoke takes: the requirement the
// client chose, echoed as offered, and the scheme's payload {signature, authorization}. Both
// stay as sent, for invoke's input schema to check.
type paymentPayload struct {
	Accepted map[string]any `json:"accepted"`
	Payload  map[string]any `json:"payload"`
}

// FromHeaders puts the payment of an x402 request header into invoke's input args:
// PAYMENT-SIGNATURE (version 2), else X-PAYMENT (version 1's header, which stock clients fill
// with the same PaymentPayload; a version 1 payload echoes no requirement, names no quote and
// is answered with a new one). The header is base64 JSON, held to the limits and checks of
// every JSON from outside (tools.CheckJSON) before it is decoded. Fields the body names win.
func FromHeaders(h http.Header, args json.RawMessage) (json.RawMessage, *tools.Error) {
	v := h.Get(HeaderSignature)
	if v == "" {
		v = h.Get(HeaderSignatureV1)
	}
	if v == "" {
		return args, nil
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v))
	if err != nil {
		return nil, tools.Errorf(tools.CodeBadInput, "the PAYMENT-SIGNATURE header is not base64: %v", err)
	}
	if e := tools.CheckJSON("the PAYMENT-SIGNATURE header", raw); e != nil {
		return nil, e
	}
	var pp paymentPayload
	if err := json.Unmarshal(raw, &pp); err != nil || pp.Payload == nil {
		return nil, tools.Errorf(tools.CodeBadInput, "the PAYMENT-SIGNATURE header is not an x402 PaymentPayload with a payload {signature, authorization}")
	}
	var m map[string]any
	if err := json.Unmarshal(args, &m); err != nil {
		return nil, tools.Errorf(tools.CodeBadInput, "arguments: %v", err)
	}
	into(m, pp)
	out, _ := json.Marshal(m)
	return out, nil
}

// FromMeta puts the payment of _meta["x402/payment"] (a PaymentPayload) into invoke's input
// args, as FromHeaders does with the header. The message carrying it was held to the limits
// and checks of every JSON from outside before it was decoded (mcpserver.CheckMessage), and
// the input it makes is checked again as arguments. A _meta payment that is not a
// PaymentPayload, or args that are not an object, leave args as they are: the tool then
// answers PaymentRequired again (x402's MCP transport answers an invalid payment so) or
// refuses the arguments.
func FromMeta(meta mcp.Meta, args json.RawMessage) json.RawMessage {
	v, ok := meta[MetaPayment]
	if !ok {
		return args
	}
	raw, _ := json.Marshal(v)
	var pp paymentPayload
	m := map[string]any{}
	if json.Unmarshal(raw, &pp) != nil || pp.Payload == nil || (len(args) > 0 && json.Unmarshal(args, &m) != nil) {
		return args
	}
	into(m, pp)
	out, _ := json.Marshal(m)
	return out
}

// into puts a PaymentPayload's parts into invoke's input m, unless m has its own: the payload
// becomes `payment` (x402's exact scheme signs TransferWithAuthorization unless extra names
// another primaryType), the echoed requirement rides along to be checked against the quote,
// and its extra.requestId names the quote paid (`confirmRequestId`), so the paid retry is the
// same request.
func into(m map[string]any, pp paymentPayload) {
	accepted, payload := pp.Accepted, pp.Payload
	extra, _ := accepted["extra"].(map[string]any)
	if _, ok := m["payment"]; !ok {
		if _, ok := payload["primaryType"]; !ok {
			payload["primaryType"] = "TransferWithAuthorization"
			if pt, _ := extra["primaryType"].(string); pt != "" {
				payload["primaryType"] = pt
			}
		}
		if accepted != nil {
			payload["accepted"] = accepted
		}
		m["payment"] = payload
	}
	if rid, _ := extra["requestId"].(string); rid != "" {
		if _, ok := m["confirmRequestId"]; !ok {
			m["confirmRequestId"] = rid
		}
	}
}

package x402

import (
	"encoding/base64"
	"encoding/json"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-hq/switchboard/tools"
)

// HTTPError sets x402's headers on the answer to a failed call: PAYMENT-REQUIRED (base64
// PaymentRequired) when it asks for a payment; PAYMENT-RESPONSE (base64 SettlementResponse)
// when the payment was refused (x402's errorReason) or taken and refunded. The body is
// Render(e).
func HTTPError(h http.Header, e *tools.Error) {
	if r := required(e); r != nil {
		h.Set(HeaderRequired, base64.StdEncoding.EncodeToString(marshal(PaymentRequiredOf(r, HTTP))))
	}
	if sr, ok := Refusal(e); ok {
		h.Set(HeaderResponse, base64.StdEncoding.EncodeToString(marshal(sr)))
	}
}

// HTTPAnswer sets PAYMENT-RESPONSE on an answer that carries a flat-fee payment; other
// answers are left alone.
func HTTPAnswer(h http.Header, out any) {
	if p := receiptOf(out); p != nil {
		h.Set(HeaderResponse, base64.StdEncoding.EncodeToString(marshal(Settlement(p))))
	}
}

// MCPError completes res, the tool error result of e (Render(e) as its text), for x402's MCP
// transport: a PaymentRequired becomes structuredContent and the first text (the error
// model's body follows it); a refused or refunded payment's SettlementResponse goes in
// _meta["x402/payment-response"].
func MCPError(res *mcp.CallToolResult, e *tools.Error) {
	if r := required(e); r != nil {
		raw := marshal(PaymentRequiredOf(r, MCP))
		res.StructuredContent = json.RawMessage(raw)
		res.Content = append([]mcp.Content{&mcp.TextContent{Text: string(raw)}}, res.Content...)
	}
	if sr, ok := Refusal(e); ok {
		res.Meta = mcp.Meta{MetaPaymentResponse: json.RawMessage(marshal(sr))}
	}
}

// MCPAnswer puts the SettlementResponse of an answer that carries a flat-fee payment in
// res's _meta["x402/payment-response"].
func MCPAnswer(res *mcp.CallToolResult, out any) {
	if p := receiptOf(out); p != nil {
		res.Meta = mcp.Meta{MetaPaymentResponse: json.RawMessage(marshal(Settlement(p)))}
	}
}

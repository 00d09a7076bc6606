package x402

import (
	"encoding/base64"
	"net/http"

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

package payments

import (
	"encoding/json"

	"github.com/switchboard-hq/switchboard/tools"
)

// The x402 transports' shared parts: REST (PAYMENT-SIGNATURE, PAYMENT-RESPONSE) and MCP
// (_meta["x402/payment"], _meta["x402/payment-response"]) carry the same objects.

// X402Into puts an x402 PaymentPayload's parts into invoke's input, unless the input has its
// own: payload becomes `payment` (x402's exact scheme signs TransferWithAuthorization), the
// echoed requirement rides along to be checked against the quote, and its extra.requestId
// names the quote paid (`confirmRequestId`), so the paid retry is the same request.
func X402Into(m, accepted, payload map[string]any) {
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

// SettlementResponse is x402's SettlementResponse of a flat-fee payment: success with the
// settlement's transaction, or (refunded) success false with the refund's, the payment's
// transaction beside it.
func SettlementResponse(p *Receipt) []byte {
	sr := map[string]any{"success": p.State == "settled", "transaction": p.SettleTx, "network": p.Network, "payer": p.Payer,
		"state": p.State, "payTransaction": p.PayTx}
	switch p.State {
	case "refunded":
		sr["transaction"], sr["errorReason"], sr["refundTransaction"] = p.RefundTx, "refunded: the partner call failed, the payment was returned to the payer", p.RefundTx
	case "held":
		sr["transaction"], sr["errorReason"] = p.PayTx, "held in escrow: the outcome is not known yet"
	}
	raw, _ := json.Marshal(sr)
	return raw
}

// Refused is x402's SettlementResponse of a flat-fee call refused or refunded: the refund's
// transaction when the payment was taken and returned, x402's errorReason when it was refused
// before anything was taken; nil when e is neither.
func Refused(e *tools.Error) []byte {
	if r, ok := e.Details["payment"].(*Receipt); ok && r != nil {
		return SettlementResponse(r)
	}
	if reason, ok := e.Details["invalidReason"].(string); ok {
		raw, _ := json.Marshal(map[string]any{"success": false, "errorReason": reason, "transaction": "", "network": ""})
		return raw
	}
	return nil
}

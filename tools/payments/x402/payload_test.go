package x402_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/payments/x402"
)

// The exact EVM scheme's payload, as x402's specification shows it.
const signedPayload = `{"signature":"0x2d6a7588d6acca505cbf0d9a4a227e0c52c6c34008c8e8986a1283259764173608a2ce6496642e377d6da8dbbf5836e9bd15092f9ecab05ded3d6293af148b571c",` +
	`"authorization":{"from":"0x857b06519E91e3A54538791bDbb0E22373e36b66","to":"0x209693Bc6afc0C5328bA36FaF03C514EF312287C","value":"10000",` +
	`"validAfter":"1740672089","validBefore":"1740672154","nonce":"0xf3746613c2d920b5fdabc0856f2aeb2d4f88ee6037b8cc5d04a71a4462f13480"}}`

// v2Payload is a version 2 PaymentPayload echoing a requirement whose extra names quote rid.
func v2Payload(extra string) string {
	return `{"x402Version":2,"resource":{"url":"https://sb.example/v1/invoke","description":"d","mimeType":"application/json"},` +
		`"accepted":{"scheme":"exact","network":"eip155:84532","amount":"10000","asset":"0x036CbD53842c5426634e7929541eC2318f3dCF7e",` +
		`"payTo":"0x209693Bc6afc0C5328bA36FaF03C514EF312287C","maxTimeoutSeconds":60,"extra":` + extra + `},"payload":` + signedPayload + `}`
}

// v1Payload is version 1's PaymentPayload (specs/transports-v1/http.md): no echoed requirement.
const v1Payload = `{"x402Version":1,"scheme":"exact","network":"base-sepolia","payload":` + signedPayload + `}`

const rid = "0190f3a4-7d2e-7c3b-9a51-1f2e3d4c5b6a"

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func decode(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("input %s: %v", raw, err)
	}
	return m
}

// A payment header becomes invoke's payment (the scheme's payload, its primaryType, the echoed
// requirement) and the quote it names becomes confirmRequestId; fields the body names win.
func TestFromHeaders(t *testing.T) {
	accepted := map[string]any{"scheme": "exact", "network": "eip155:84532", "amount": "10000", "asset": "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
		"payTo": "0x209693Bc6afc0C5328bA36FaF03C514EF312287C", "maxTimeoutSeconds": 60.0, "extra": map[string]any{"name": "USDC", "version": "2", "requestId": rid}}
	for _, tc := range []struct {
		name        string
		headers     map[string]string
		body        string
		primaryType string // of the payment; "" when no payment is expected
		accepted    bool   // the payment carries the echoed requirement
		confirm     string // confirmRequestId
	}{
		{name: "version 2 in PAYMENT-SIGNATURE", headers: map[string]string{"PAYMENT-SIGNATURE": b64(v2Payload(`{"name":"USDC","version":"2","requestId":"` + rid + `"}`))},
			primaryType: "TransferWithAuthorization", accepted: true, confirm: rid},
		{name: "version 2 in X-PAYMENT", headers: map[string]string{"X-PAYMENT": b64(v2Payload(`{"name":"USDC","version":"2","requestId":"` + rid + `"}`))},
			primaryType: "TransferWithAuthorization", accepted: true, confirm: rid},
		{name: "version 1 in X-PAYMENT names no quote", headers: map[string]string{"X-PAYMENT": b64(v1Payload)},
			primaryType: "TransferWithAuthorization"},
		{name: "PAYMENT-SIGNATURE wins over X-PAYMENT", headers: map[string]string{"PAYMENT-SIGNATURE": b64(v2Payload(`{"name":"USDC","version":"2","requestId":"` + rid + `"}`)), "X-PAYMENT": b64(v1Payload)},
			primaryType: "TransferWithAuthorization", accepted: true, confirm: rid},
		{name: "padded with spaces", headers: map[string]string{"PAYMENT-SIGNATURE": "  " + b64(v1Payload) + " "}, primaryType: "TransferWithAuthorization"},
		{name: "extra names the primaryType", headers: map[string]string{"PAYMENT-SIGNATURE": b64(v2Payload(`{"primaryType":"ReceiveWithAuthorization","requestId":"` + rid + `"}`))},
			primaryType: "ReceiveWithAuthorization", accepted: true, confirm: rid},
		{name: "the body's confirmRequestId wins", headers: map[string]string{"PAYMENT-SIGNATURE": b64(v2Payload(`{"requestId":"` + rid + `"}`))},
			body: `{"message":"@x hi","confirmRequestId":"mine"}`, primaryType: "TransferWithAuthorization", accepted: true, confirm: "mine"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.headers {
				h.Set(k, v)
			}
			body := tc.body
			if body == "" {
				body = `{"message":"@x hi"}`
			}
			out, e := x402.FromHeaders(h, json.RawMessage(body))
			if e != nil {
				t.Fatal(e)
			}
			m := decode(t, out)
			if m["message"] != "@x hi" {
				t.Fatalf("message lost: %s", out)
			}
			pay, _ := m["payment"].(map[string]any)
			if pay["primaryType"] != tc.primaryType || pay["signature"] == nil || pay["authorization"].(map[string]any)["value"] != "10000" {
				t.Fatalf("payment: %s", out)
			}
			if got, _ := pay["accepted"].(map[string]any); tc.accepted && !reflect.DeepEqual(got["payTo"], accepted["payTo"]) || !tc.accepted && got != nil {
				t.Fatalf("accepted %v, want it echoed: %v", got, tc.accepted)
			}
			if got, _ := m["confirmRequestId"].(string); got != tc.confirm {
				t.Fatalf("confirmRequestId %q, want %q", got, tc.confirm)
			}
		})
	}

	t.Run("the body's payment wins", func(t *testing.T) {
		h := http.Header{"Payment-Signature": {b64(v2Payload(`{"requestId":"` + rid + `"}`))}}
		out, e := x402.FromHeaders(h, json.RawMessage(`{"message":"@x hi","payment":{"signature":"mine"}}`))
		if e != nil {
			t.Fatal(e)
		}
		if m := decode(t, out); m["payment"].(map[string]any)["signature"] != "mine" || m["confirmRequestId"] != rid {
			t.Fatalf("input: %s", out)
		}
	})
	t.Run("no header", func(t *testing.T) {
		in := json.RawMessage(`{"message": "@x hi"}`)
		out, e := x402.FromHeaders(http.Header{}, in)
		if e != nil || string(out) != string(in) {
			t.Fatalf("%s %v, want the input as it was", out, e)
		}
	})
}

// A header that is not a bounded, unambiguous, base64 JSON PaymentPayload is refused with
// BAD_INPUT saying what is wrong, before anything is decoded from it.
func TestFromHeadersRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, header, want string
		details            map[string]any
	}{
		{"bad base64", "%%%not base64", "the PAYMENT-SIGNATURE header is not base64", nil},
		{"base64url", "-_8=", "is not base64", nil},
		{"no payload", b64(`{"x402Version":2,"accepted":{}}`), "is not an x402 PaymentPayload with a payload {signature, authorization}", nil},
		{"payload not an object", b64(`{"x402Version":2,"payload":"0xsig"}`), "is not an x402 PaymentPayload", nil},
		{"accepted not an object", b64(`{"accepted":"exact","payload":{}}`), "is not an x402 PaymentPayload", nil},
		{"an array", b64(`[1,2]`), "is not an x402 PaymentPayload", nil},
		{"not JSON", b64(`{"payload":`), "is not an x402 PaymentPayload", nil},
		{"nested too deep", b64(`{"payload":{"a":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}}`),
			"the PAYMENT-SIGNATURE header is nested deeper than 64 levels", map[string]any{"maxDepth": 64}},
		{"a key twice", b64(`{"payload":{},"payload":{"signature":"0x"}}`), `the PAYMENT-SIGNATURE header: / has the key "payload" twice`, map[string]any{"at": "/"}},
		{"a NUL", b64(`{"payload":{"signature":"0x\u0000"}}`), "NUL", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			h.Set("PAYMENT-SIGNATURE", tc.header)
			out, e := x402.FromHeaders(h, json.RawMessage(`{"message":"@x hi"}`))
			if e == nil || e.Code != tools.CodeBadInput || !strings.Contains(e.Message, tc.want) || out != nil {
				t.Fatalf("%s %v, want BAD_INPUT saying %q", out, e, tc.want)
			}
			for k, v := range tc.details {
				if e.Details[k] != v {
					t.Fatalf("details %v, want %s %v", e.Details, k, v)
				}
			}
		})
	}
}

// _meta["x402/payment"] is read as the header is; what is not a PaymentPayload leaves the
// input as it was, so the tool asks for the payment again.
func TestFromMeta(t *testing.T) {
	var payload map[string]any
	if err := json.Unmarshal([]byte(v2Payload(`{"name":"USDC","version":"2","requestId":"`+rid+`"}`)), &payload); err != nil {
		t.Fatal(err)
	}
	in := json.RawMessage(`{"message":"@x hi"}`)
	out := x402.FromMeta(mcp.Meta{"x402/payment": payload}, in)
	m := decode(t, out)
	pay, _ := m["payment"].(map[string]any)
	if m["message"] != "@x hi" || m["confirmRequestId"] != rid || pay["primaryType"] != "TransferWithAuthorization" ||
		pay["accepted"].(map[string]any)["network"] != "eip155:84532" || pay["authorization"].(map[string]any)["nonce"] == nil {
		t.Fatalf("input: %s", out)
	}
	if out := decode(t, x402.FromMeta(mcp.Meta{"x402/payment": payload}, nil)); out["payment"] == nil || out["confirmRequestId"] != rid {
		t.Fatalf("no arguments: %v", out)
	}
	for name, meta := range map[string]mcp.Meta{
		"no _meta":      nil,
		"another key":   {"progressToken": 1},
		"a string":      {"x402/payment": "0xsig"},
		"no payload":    {"x402/payment": map[string]any{"x402Version": 2}},
		"payload array": {"x402/payment": map[string]any{"payload": []any{1}}},
	} {
		if out := x402.FromMeta(meta, in); string(out) != string(in) {
			t.Errorf("%s: input %s, want it as it was", name, out)
		}
	}
	if out := x402.FromMeta(mcp.Meta{"x402/payment": payload}, json.RawMessage(`[1]`)); string(out) != `[1]` {
		t.Errorf("arguments not an object became %s; the kernel refuses them as they are", out)
	}
}

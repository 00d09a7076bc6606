package x402_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/payments"
	"github.com/switchboard-hq/switchboard/tools/payments/x402"
)

// required is the payment answer of a quote, as the tool gives it.
func required() *payments.Required {
	q := payments.Quote{RequestID: rid, ChainID: 84532, Network: "eip155:84532", Token: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
		PayTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C", Amount: "210000", AmountUsd: 210000,
		TypedData: payments.TypedData{Domain: payments.TypedDomain{Name: "USD Coin", Version: "2", ChainID: 84532}}}
	return &payments.Required{Quote: q, Message: "@weather hello", Description: "@weather through Switchboard: forecasts",
		Reason: "@weather is paid by a flat fee of 0.21 USD before it is called", BaseURL: "https://sb.example", MaxTimeoutSeconds: 600}
}

func paymentRequiredError() *tools.Error {
	return tools.Errorf(tools.CodePaymentRequired, "pay first").
		WithDetails(map[string]any{"requestId": rid, payments.RequiredKey: required()})
}

// The PaymentRequired of each transport, byte for byte as clients have always read it.
const (
	accepts = `"accepts":[{"amount":"210000","asset":"0x036CbD53842c5426634e7929541eC2318f3dCF7e","extra":{"name":"USD Coin","requestId":"` + rid + `","version":"2"},` +
		`"maxTimeoutSeconds":600,"network":"eip155:84532","payTo":"0x209693Bc6afc0C5328bA36FaF03C514EF312287C","scheme":"exact"}],` +
		`"error":"@weather is paid by a flat fee of 0.21 USD before it is called",`
	outputSchema = `"output":{"properties":{"example":{"type":"object"},"type":{"type":"string"}},"required":["type"],"type":"object"}},"required":["input"],"type":"object"}}}`
	wantHTTP     = `{` + accepts + `"extensions":{"bazaar":{"info":{"input":{"body":{"message":"@weather hello"},"bodyType":"json","method":"POST","type":"http"},"output":{"type":"json"}},` +
		`"schema":{"$schema":"https://json-schema.org/draft/2020-12/schema","properties":{"input":{"additionalProperties":false,"properties":{` +
		`"body":{"properties":{"message":{"description":"the request, naming the partner by its @handle","type":"string"}},"required":["message"],"type":"object"},` +
		`"bodyType":{"enum":["json"],"type":"string"},"headers":{"additionalProperties":{"type":"string"},"type":"object"},"method":{"enum":["POST"],"type":"string"},` +
		`"type":{"const":"http","type":"string"}},"required":["type","method","bodyType","body"],"type":"object"},` + outputSchema + `,` +
		`"resource":{"description":"@weather through Switchboard: forecasts","mimeType":"application/json","url":"https://sb.example/v1/invoke"},"x402Version":2}`
	wantMCP = `{` + accepts + `"extensions":{"bazaar":{"info":{"input":{"description":"@weather through Switchboard: forecasts","example":{"message":"@weather hello"},` +
		`"inputSchema":{"properties":{"message":{"description":"the request, naming the partner by its @handle","type":"string"}},"required":["message"],"type":"object"},` +
		`"tool":"invoke_partner_message","transport":"streamable-http","type":"mcp"},"output":{"type":"json"}},` +
		`"schema":{"$schema":"https://json-schema.org/draft/2020-12/schema","properties":{"input":{"additionalProperties":false,"properties":{` +
		`"description":{"type":"string"},"example":{"type":"object"},"inputSchema":{"type":"object"},"tool":{"type":"string"},"transport":{"enum":["streamable-http","sse"],"type":"string"},` +
		`"type":{"const":"mcp","type":"string"}},"required":["type","tool","inputSchema"],"type":"object"},` + outputSchema + `,` +
		`"resource":{"description":"@weather through Switchboard: forecasts","mimeType":"application/json","url":"https://sb.example/mcp"},"x402Version":2}`
)

func marshal(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func TestPaymentRequiredOf(t *testing.T) {
	if got := marshal(t, x402.PaymentRequiredOf(required(), x402.HTTP)); got != wantHTTP {
		t.Errorf("HTTP:\n got %s\nwant %s", got, wantHTTP)
	}
	if got := marshal(t, x402.PaymentRequiredOf(required(), x402.MCP)); got != wantMCP {
		t.Errorf("MCP:\n got %s\nwant %s", got, wantMCP)
	}
}

// A stock client pays by echoing the offered requirement: read back, it names the quote and
// carries the requirement as offered, for the tool to check against the quote.
func TestPaymentRequiredRoundTrip(t *testing.T) {
	var pr struct {
		Resource map[string]any   `json:"resource"`
		Accepts  []map[string]any `json:"accepts"`
	}
	if err := json.Unmarshal([]byte(marshal(t, x402.PaymentRequiredOf(required(), x402.HTTP))), &pr); err != nil {
		t.Fatal(err)
	}
	var payload map[string]any
	json.Unmarshal([]byte(signedPayload), &payload)
	h := http.Header{}
	h.Set("PAYMENT-SIGNATURE", base64.StdEncoding.EncodeToString([]byte(marshal(t, map[string]any{"x402Version": 2, "resource": pr.Resource, "accepted": pr.Accepts[0], "payload": payload}))))
	out, e := x402.FromHeaders(h, json.RawMessage(`{"message":"@weather hello"}`))
	if e != nil {
		t.Fatal(e)
	}
	m := decode(t, out)
	if got := marshal(t, m["payment"].(map[string]any)["accepted"]); got != marshal(t, pr.Accepts[0]) || m["confirmRequestId"] != rid {
		t.Fatalf("echoed %s, confirmRequestId %v; offered %s", got, m["confirmRequestId"], marshal(t, pr.Accepts[0]))
	}
}

// Render shows the payment answer as the error model always has (details.x402 for HTTP,
// details.x402Mcp for MCP) and leaves the tool's error as it was.
func TestRender(t *testing.T) {
	e := paymentRequiredError()
	shown := x402.Render(e)
	want := `{"error":{"code":"PAYMENT_REQUIRED","message":"pay first","details":{"requestId":"` + rid + `","x402":` + wantHTTP + `,"x402Mcp":` + wantMCP + `}}}`
	if got := marshal(t, tools.Body{Error: shown}); got != want {
		t.Fatalf("rendered:\n got %s\nwant %s", got, want)
	}
	if _, ok := e.Details[payments.RequiredKey].(*payments.Required); !ok || e.Details["x402Mcp"] != nil || len(e.Details) != 2 {
		t.Fatalf("the tool's error changed: %v", e.Details)
	}
	for _, other := range []*tools.Error{
		tools.Errorf(tools.CodeBadInput, "no").WithDetails(map[string]any{"invalidReason": "invalid_network"}),
		tools.Errorf(tools.CodeConflict, "a payment answer under another code").WithDetails(map[string]any{payments.RequiredKey: required()}),
	} {
		if x402.Render(other) != other {
			t.Errorf("%v rendered anew", other)
		}
	}
}

func TestSettlement(t *testing.T) {
	const h1, h2 = "0x1111111111111111111111111111111111111111111111111111111111111111", "0x2222222222222222222222222222222222222222222222222222222222222222"
	const payer = "0x857b06519E91e3A54538791bDbb0E22373e36b66"
	receipt := func(state, settle, refund string) *payments.Receipt {
		return &payments.Receipt{State: state, Network: "eip155:84532", Payer: payer, Amount: "210000", PayTx: h1, SettleTx: settle, RefundTx: refund}
	}
	for _, tc := range []struct {
		name string
		r    *payments.Receipt
		want string
	}{
		{"settled", receipt("settled", h2, ""),
			`{"network":"eip155:84532","payTransaction":"` + h1 + `","payer":"` + payer + `","state":"settled","success":true,"transaction":"` + h2 + `"}`},
		{"refunded", receipt("refunded", "", h2),
			`{"errorReason":"refunded: the partner call failed, the payment was returned to the payer","network":"eip155:84532","payTransaction":"` + h1 + `","payer":"` + payer +
				`","refundTransaction":"` + h2 + `","state":"refunded","success":false,"transaction":"` + h2 + `"}`},
		{"refunded by another process", receipt("refunded", "", ""),
			`{"errorReason":"refunded: the partner call failed, the payment was returned to the payer","network":"eip155:84532","payTransaction":"` + h1 + `","payer":"` + payer +
				`","refundTransaction":"","state":"refunded","success":false,"transaction":""}`},
		{"held", receipt("held", "", ""),
			`{"errorReason":"held in escrow: the outcome is not known yet","network":"eip155:84532","payTransaction":"` + h1 + `","payer":"` + payer + `","state":"held","success":false,"transaction":"` + h1 + `"}`},
	} {
		if got := marshal(t, x402.Settlement(tc.r)); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}

	refused := tools.Errorf(tools.CodeBadInput, "amount").WithDetails(map[string]any{"invalidReason": "invalid_exact_evm_payload_authorization_value_mismatch"})
	if sr, ok := x402.Refusal(refused); !ok || marshal(t, sr) != `{"errorReason":"invalid_exact_evm_payload_authorization_value_mismatch","network":"","success":false,"transaction":""}` {
		t.Errorf("refused before anything was taken: %s %v", marshal(t, sr), ok)
	}
	refunded := tools.Errorf(tools.CodeUpstream, "partner down").WithDetails(map[string]any{"payment": receipt("refunded", "", h2)})
	if sr, ok := x402.Refusal(refunded); !ok || sr.Transaction != h2 || sr.Success || sr.Taken == nil || sr.State != "refunded" {
		t.Errorf("refunded: %s %v", marshal(t, sr), ok)
	}
	for _, e := range []*tools.Error{nil, tools.Errorf(tools.CodeNotFound, "no"), paymentRequiredError()} {
		if sr, ok := x402.Refusal(e); ok {
			t.Errorf("%v: a SettlementResponse %s", e, marshal(t, sr))
		}
	}
}

// answer is an answer carrying a flat-fee payment, as dispatch.InvokeOutput does.
type answer struct{ p *payments.Receipt }

func (a answer) X402Payment() *payments.Receipt { return a.p }

func header(t *testing.T, h http.Header, name string) string {
	t.Helper()
	v := h.Get(name)
	if v == "" {
		return ""
	}
	raw, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		t.Fatalf("%s is not base64: %q", name, v)
	}
	return string(raw)
}

func TestHTTP(t *testing.T) {
	h := http.Header{}
	x402.HTTPError(h, paymentRequiredError())
	if got := header(t, h, "PAYMENT-REQUIRED"); got != wantHTTP || h.Get("PAYMENT-RESPONSE") != "" {
		t.Fatalf("PAYMENT-REQUIRED %s, PAYMENT-RESPONSE %q", got, h.Get("PAYMENT-RESPONSE"))
	}
	h = http.Header{}
	x402.HTTPError(h, tools.Errorf(tools.CodePaymentRequired, "balance").WithDetails(map[string]any{"invalidReason": "insufficient_funds"}))
	if got := header(t, h, "PAYMENT-RESPONSE"); got != `{"errorReason":"insufficient_funds","network":"","success":false,"transaction":""}` || h.Get("PAYMENT-REQUIRED") != "" {
		t.Fatalf("refused: PAYMENT-RESPONSE %s, PAYMENT-REQUIRED %q", got, h.Get("PAYMENT-REQUIRED"))
	}
	h = http.Header{}
	x402.HTTPError(h, tools.Errorf(tools.CodeNotFound, "no"))
	if len(h) != 0 {
		t.Fatalf("headers on an unpaid error: %v", h)
	}

	r := &payments.Receipt{State: "settled", Network: "eip155:84532", PayTx: "0x1", SettleTx: "0x2"}
	h = http.Header{}
	x402.HTTPAnswer(h, answer{r})
	if got := header(t, h, "PAYMENT-RESPONSE"); got != marshal(t, x402.Settlement(r)) {
		t.Fatalf("PAYMENT-RESPONSE %s", got)
	}
	for _, out := range []any{answer{}, map[string]any{"ok": true}, nil} {
		h = http.Header{}
		x402.HTTPAnswer(h, out)
		if len(h) != 0 {
			t.Fatalf("%v: headers %v", out, h)
		}
	}
}

// Over MCP the wrapper puts a PaymentRequired in the reply's structuredContent (the door shows
// it as the first text too) and a refused, refunded or settled payment's SettlementResponse in
// _meta["x402/payment-response"]; the error model's body is Render(e).
func TestMCP(t *testing.T) {
	out := func(o any, e *tools.Error) (*tools.Exchange, *tools.Error) {
		x := &tools.Exchange{Door: tools.DoorMCP, Tool: payable()}
		return x, x402.Wrap{}.Out(x, o, e)
	}
	e := paymentRequiredError()
	x, shown := out(nil, e)
	if got := string(x.Reply.Structured); got != wantMCP || x.Reply.Meta != nil || x.Reply.Header != nil {
		t.Fatalf("structuredContent %s, _meta %v, headers %v", got, x.Reply.Meta, x.Reply.Header)
	}
	if marshal(t, shown) != marshal(t, x402.Render(e)) {
		t.Fatalf("shown %s, want Render(e)", marshal(t, shown))
	}

	x, _ = out(nil, tools.Errorf(tools.CodeBadInput, "network").WithDetails(map[string]any{"invalidReason": "invalid_network"}))
	if got := marshal(t, x.Reply.Meta["x402/payment-response"]); got != `{"errorReason":"invalid_network","network":"","success":false,"transaction":""}` || x.Reply.Structured != nil {
		t.Fatalf("refused: _meta %s, structuredContent %s", got, x.Reply.Structured)
	}
	plain := tools.Errorf(tools.CodeNotFound, "no")
	if x, shown = out(nil, plain); x.Reply.Meta != nil || x.Reply.Structured != nil || shown != plain {
		t.Fatalf("an unpaid error changed: %+v, %v", x.Reply, shown)
	}

	r := &payments.Receipt{State: "refunded", Network: "eip155:84532", PayTx: "0x1", RefundTx: "0x3"}
	x, _ = out(answer{r}, nil)
	if got := marshal(t, x.Reply.Meta["x402/payment-response"]); got != marshal(t, x402.Settlement(r)) || !strings.Contains(got, `"refundTransaction":"0x3"`) {
		t.Fatalf("_meta %s", got)
	}
	if x, _ = out(answer{}, nil); x.Reply.Meta != nil {
		t.Fatalf("_meta without a payment: %v", x.Reply.Meta)
	}
}

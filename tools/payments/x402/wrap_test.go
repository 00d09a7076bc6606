package x402_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/payments"
	"github.com/switchboard-hq/switchboard/tools/payments/x402"
)

type payIn struct {
	Message string `json:"message"`
}

type payOut struct{}

func tool(name string, takesPayment bool) *tools.Tool {
	return tools.New(tools.Def{Name: name, Title: name, Description: name, Access: tools.AnyKey, TakesPayment: takesPayment,
		Annotations: tools.Annotations{ReadOnly: tools.Bool(false), Destructive: tools.Bool(false), OpenWorld: tools.Bool(true)}},
		func(context.Context, *tools.Caller, payIn) (payOut, error) { return payOut{}, nil })
}

// payable is a tool that declares TakesPayment, as invoke_partner_message and credit_topup do.
func payable() *tools.Tool { return tool("pay", true) }

// On REST the wrapper reads PAYMENT-SIGNATURE into the input of a tool that takes payment and
// answers with x402's headers; on MCP it reads _meta["x402/payment"].
func TestWrapIn(t *testing.T) {
	h := http.Header{}
	h.Set("PAYMENT-SIGNATURE", b64(v2Payload(`{"name":"USDC","version":"2","requestId":"`+rid+`"}`)))
	req := &tools.Request{Tool: "pay", Args: json.RawMessage(`{"message":"@weather hi"}`)}
	if e := (x402.Wrap{}).In(&tools.Exchange{Door: tools.DoorREST, Tool: payable(), Header: h}, req); e != nil {
		t.Fatal(e)
	}
	if m := decode(t, req.Args); m["payment"] == nil || m["confirmRequestId"] != rid || m["message"] != "@weather hi" {
		t.Fatalf("REST input %s", req.Args)
	}

	var payload map[string]any
	json.Unmarshal([]byte(v2Payload(`{"requestId":"`+rid+`"}`)), &payload)
	req = &tools.Request{Tool: "pay", Args: json.RawMessage(`{"message":"@weather hi"}`)}
	if e := (x402.Wrap{}).In(&tools.Exchange{Door: tools.DoorMCP, Tool: payable(), Meta: mcp.Meta{"x402/payment": payload}}, req); e != nil {
		t.Fatal(e)
	}
	if m := decode(t, req.Args); m["payment"] == nil || m["confirmRequestId"] != rid {
		t.Fatalf("MCP input %s", req.Args)
	}

	h.Set("PAYMENT-SIGNATURE", "not base64!")
	req = &tools.Request{Tool: "pay", Args: json.RawMessage(`{}`)}
	if e := (x402.Wrap{}).In(&tools.Exchange{Door: tools.DoorREST, Tool: payable(), Header: h}, req); e == nil || e.Code != tools.CodeBadInput {
		t.Fatalf("a header that is not base64: %v", e)
	}
}

// A tool that does not declare TakesPayment passes untouched: its headers and _meta are not
// read, and a payment answer it gave (none does) is left as it is.
func TestWrapLeavesOtherTools(t *testing.T) {
	other := tool("other", false)
	h := http.Header{}
	h.Set("PAYMENT-SIGNATURE", b64(v2Payload(`{"requestId":"`+rid+`"}`)))
	in := json.RawMessage(`{"message":"hi"}`)
	for _, x := range []*tools.Exchange{
		{Door: tools.DoorREST, Tool: other, Header: h, Reply: tools.Reply{Header: http.Header{}}},
		{Door: tools.DoorMCP, Tool: other, Meta: mcp.Meta{"x402/payment": map[string]any{"payload": map[string]any{}}}},
	} {
		req := &tools.Request{Tool: "other", Args: in}
		if e := (x402.Wrap{}).In(x, req); e != nil || string(req.Args) != string(in) {
			t.Fatalf("%s: input %s, %v", x.Door, req.Args, e)
		}
		e := paymentRequiredError()
		if shown := (x402.Wrap{}).Out(x, nil, e); shown != e || len(x.Reply.Header) != 0 || x.Reply.Meta != nil || x.Reply.Structured != nil {
			t.Fatalf("%s: shown %v, reply %+v", x.Door, shown, x.Reply)
		}
	}
}

// On REST the wrapper's Out sets PAYMENT-REQUIRED and PAYMENT-RESPONSE on the answer's
// headers and shows Render(e).
func TestWrapOutREST(t *testing.T) {
	x := &tools.Exchange{Door: tools.DoorREST, Tool: payable(), Reply: tools.Reply{Header: http.Header{}}}
	e := paymentRequiredError()
	shown := x402.Wrap{}.Out(x, nil, e)
	if got := header(t, x.Reply.Header, "PAYMENT-REQUIRED"); got != wantHTTP || marshal(t, shown) != marshal(t, x402.Render(e)) || x.Reply.Structured != nil {
		t.Fatalf("PAYMENT-REQUIRED %s, shown %s", got, marshal(t, shown))
	}
	r := &payments.Receipt{State: "settled", Network: "eip155:84532", PayTx: "0x1", SettleTx: "0x2"}
	x = &tools.Exchange{Door: tools.DoorREST, Tool: payable(), Reply: tools.Reply{Header: http.Header{}}}
	if shown := (x402.Wrap{}).Out(x, answer{r}, nil); shown != nil || header(t, x.Reply.Header, "PAYMENT-RESPONSE") != marshal(t, x402.Settlement(r)) {
		t.Fatalf("settled: %v, PAYMENT-RESPONSE %q", shown, x.Reply.Header.Get("PAYMENT-RESPONSE"))
	}
}

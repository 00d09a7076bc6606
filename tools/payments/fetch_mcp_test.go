package payments_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/ledger"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

// paidMCP is a paid MCP server (x402's MCP transport) over TLS: its tool "forecast" answers,
// without _meta["x402/payment"], an error result whose structuredContent is the seller's
// PaymentRequired; with one, the seller checks and settles it on anvil and answers the
// forecast with _meta["x402/payment-response"]. The free tool "ping" asks for nothing.
func paidMCP(t *testing.T, s *seller) (url string, calls *atomic.Int32) {
	t.Helper()
	calls = new(atomic.Int32)
	server := mcp.NewServer(&mcp.Implementation{Name: "paid", Version: "test"}, nil)
	server.AddTool(&mcp.Tool{Name: "ping", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}}, nil
		})
	server.AddTool(&mcp.Tool{Name: "forecast", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			calls.Add(1)
			var args map[string]any
			_ = json.Unmarshal(req.Params.Arguments, &args)
			pay, ok := req.Params.Meta["x402/payment"]
			if !ok {
				pr := map[string]any{"x402Version": 2, "error": "payment required", "resource": map[string]any{"url": "mcp://paid/forecast"}, "accepts": []any{s.offer()}}
				text, _ := json.Marshal(pr)
				res := &mcp.CallToolResult{IsError: true, StructuredContent: pr, Content: []mcp.Content{&mcp.TextContent{Text: string(text)}}}
				if args["textOnly"] == true { // the PaymentRequired in the text content only
					res.StructuredContent = nil
				}
				return res, nil
			}
			raw, _ := json.Marshal(pay)
			s.mu.Lock()
			s.asked++
			s.mu.Unlock()
			tx, err := s.settle(ctx, base64.StdEncoding.EncodeToString(raw))
			if err != nil {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}},
					Meta: mcp.Meta{"x402/payment-response": map[string]any{"success": false, "errorReason": err.Error(), "network": "eip155:31337"}}}, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("sunny in %v", args["city"])}},
				Meta: mcp.Meta{"x402/payment-response": map[string]any{"success": true, "transaction": tx, "network": "eip155:31337"}}}, nil
		})
	srv := httptest.NewTLSServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp", calls
}

// TestX402FetchPaysAnMCPTool: x402_fetch with mcpTool calls a paid MCP server's tool, takes
// the PaymentRequired of its error result, judges it as any x402 price (maxUsd, the owner's
// policies), records and signs it with the same ticket, pays it in _meta["x402/payment"] and
// answers the tool's result with the settlement; once per Idempotency-Key. A free tool is
// answered unpaid; a price above maxUsd is refused with nothing signed. Both databases.
func TestX402FetchPaysAnMCPTool(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newFetchWorld(t, dialect)
			url, calls := paidMCP(t, w.seller)
			a := w.agent(t, "mcp@example.com", true, map[string]any{"caps": []any{map[string]any{"window": "day", "usd": "5"}}})

			status, out := w.fetch(t, a, map[string]any{"url": url, "mcpTool": map[string]any{"name": "ping"}}, nil)
			if status != 200 || out["paidUsd"] != float64(0) || !strings.Contains(fmt.Sprint(out["body"]), "pong") || out["payment"] != nil {
				t.Fatalf("a free MCP tool: %d %v", status, out)
			}
			status, out = w.fetch(t, a, map[string]any{"url": url, "mcpTool": map[string]any{"name": "forecast", "arguments": map[string]any{"city": "Faro"}}, "maxUsd": 0.1}, nil)
			if e, _ := out["error"].(map[string]any); status != 403 || e["code"] != "POLICY_DENIED" {
				t.Fatalf("an MCP tool above maxUsd: %d %v", status, out)
			}
			if asked, _ := w.seller.counts(); asked != 0 {
				t.Fatal("a refused MCP payment was sent")
			}

			hdr := map[string]string{"Idempotency-Key": "mcp-1"}
			body := map[string]any{"url": url, "mcpTool": map[string]any{"name": "forecast", "arguments": map[string]any{"city": "Faro"}}, "maxUsd": 0.5}
			status, out = w.fetch(t, a, body, hdr)
			if status != 200 || out["status"] != float64(200) || out["paidUsd"] != 0.25 || !strings.Contains(fmt.Sprint(out["body"]), "sunny in Faro") {
				t.Fatalf("a paid MCP tool: %d %v", status, out)
			}
			pay, _ := out["payment"].(map[string]any)
			tx, _ := pay["txHash"].(string)
			if pay["payer"] != a.wallet.Hex() || pay["payTo"] != w.seller.payTo.Hex() || len(tx) != 66 {
				t.Fatalf("payment %v", pay)
			}
			before := calls.Load()
			status, again := w.fetch(t, a, body, hdr)
			if status != 200 || fmt.Sprint(again["payment"]) != fmt.Sprint(out["payment"]) || calls.Load() != before {
				t.Fatalf("the retry: %d %v (the tool was called %d times more)", status, again, calls.Load()-before)
			}
			if _, paid := w.seller.counts(); paid != 1 || w.chain.Balance(t, w.seller.payTo) != 250_000 {
				t.Fatalf("%d payments settled, the seller holds %d; want one of 250000", paid, w.chain.Balance(t, w.seller.payTo))
			}
			rows := w.movements(t, a.userID)
			if len(rows) != 1 || rows[0].State != store.InvSucceeded || rows[0].TxHash == nil || *rows[0].TxHash != tx || rows[0].Handle != "127.0.0.1" {
				t.Fatalf("records %+v", rows)
			}
			if au := authOf(t, rows[0]); au.From != a.wallet.Hex() || au.Value != "250000" {
				t.Fatalf("the recorded authorization %+v", au)
			}
			// A server that puts its PaymentRequired in the text content only is paid the same way.
			body["mcpTool"] = map[string]any{"name": "forecast", "arguments": map[string]any{"city": "Porto", "textOnly": true}}
			if status, out := w.fetch(t, a, body, nil); status != 200 || out["paidUsd"] != 0.25 || !strings.Contains(fmt.Sprint(out["body"]), "sunny in Porto") {
				t.Fatalf("a text-only PaymentRequired: %d %v", status, out)
			}
			if _, paid := w.seller.counts(); paid != 2 || len(w.movements(t, a.userID)) != 2 {
				t.Fatalf("%d payments settled; want 2", paid)
			}
			if err := ledger.Check(context.Background(), w.env.App.Store); err != nil {
				t.Fatalf("ledger-check: %v", err)
			}
		})
	}
}

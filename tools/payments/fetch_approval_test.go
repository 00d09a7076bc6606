package payments_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/ledger"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
)

// TestX402FetchApprovalRoundTrip: an approval rule (category X402, or aboveUsd) makes
// x402_fetch answer APPROVAL_REQUIRED with nothing signed and e-mails the owner; while pending
// the retry with confirmRequestId is APPROVAL_PENDING; the owner approves (approval_decide, the
// portal's session tool); the retry pays once, relays the answer and records the authorization;
// a second retry answers the same, paying nothing. A declined one pays nothing. Both databases.
func TestX402FetchApprovalRoundTrip(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			w := newFetchWorld(t, dialect)
			decide := func(t *testing.T, a agent, requestID string, approve bool) {
				t.Helper()
				owner := &tools.Principal{AccountID: a.userID, Method: tools.AuthSession, SessionID: "the owner's", RateLimitPerMinute: 600, SpendLimitMicro: 1 << 40}
				args, _ := json.Marshal(map[string]any{"requestId": requestID, "approve": approve})
				if _, err := w.env.App.Parts().Kernel.Call(ctx, tools.Request{Tool: "approval_decide", Args: args, Principal: owner}); err != nil {
					t.Fatalf("approval_decide: %v", err)
				}
			}
			ask := func(t *testing.T, a agent, rule string) string {
				t.Helper()
				before := w.chain.Balance(t, a.wallet)
				asked, _ := w.seller.counts()
				status, out := w.fetch(t, a, map[string]any{}, nil)
				e, _ := out["error"].(map[string]any)
				d, _ := e["details"].(map[string]any)
				if status != 409 || e["code"] != "APPROVAL_REQUIRED" || d["rule"] != rule || d["requestId"] == nil {
					t.Fatalf("a payment the policy sends to the owner: %d %v", status, out)
				}
				if now, _ := w.seller.counts(); now != asked || w.chain.Balance(t, a.wallet) != before {
					t.Fatal("a payment waiting for approval was signed")
				}
				id := d["requestId"].(string)
				msgs := w.env.Inbox.Messages()
				if len(msgs) == 0 || !strings.Contains(msgs[len(msgs)-1].Subject, "127.0.0.1") || !strings.Contains(msgs[len(msgs)-1].Text, id) {
					t.Fatalf("the owner's e-mail: %+v", msgs)
				}
				return id
			}
			for _, c := range []struct {
				name, rule string
				approval   map[string]any
			}{
				{"categories", "approval.categories", map[string]any{"categories": []any{"X402"}}},
				{"aboveUsd", "approval.aboveUsd", map[string]any{"aboveUsd": "0.1"}},
			} {
				t.Run(c.name, func(t *testing.T) {
					a := w.agent(t, c.name+"@example.com", true, map[string]any{"approval": c.approval})
					_, paidBefore := w.seller.counts()
					id := ask(t, a, c.rule)
					confirm := map[string]any{"confirmRequestId": id}
					if status, out := w.fetch(t, a, confirm, nil); status != 409 || out["error"].(map[string]any)["code"] != "APPROVAL_PENDING" {
						t.Fatalf("before the decision: %d %v", status, out)
					}
					decide(t, a, id, true)
					status, out := w.fetch(t, a, confirm, nil)
					if status != 200 || out["paidUsd"] != 0.25 || out["requestId"] != id || !strings.Contains(fmt.Sprint(out["body"]), "sunny") {
						t.Fatalf("the approved payment: %d %v", status, out)
					}
					status, again := w.fetch(t, a, confirm, nil)
					if status != 200 || fmt.Sprint(again["payment"]) != fmt.Sprint(out["payment"]) {
						t.Fatalf("the approved payment asked again: %d %v", status, again)
					}
					if _, paid := w.seller.counts(); paid != paidBefore+1 || w.chain.Balance(t, a.wallet) != 9_750_000 {
						t.Fatalf("the seller settled %d payments for it, the wallet holds %d; want one of 250000", paid-paidBefore, w.chain.Balance(t, a.wallet))
					}
					rows := w.movements(t, a.userID)
					if len(rows) != 1 || rows[0].RequestID != id || rows[0].State != store.InvSucceeded {
						t.Fatalf("records %+v", rows)
					}
					if au := authOf(t, rows[0]); au.From != a.wallet.Hex() || au.Value != "250000" {
						t.Fatalf("the approved payment's recorded authorization %+v", au)
					}
				})
			}
			t.Run("declined", func(t *testing.T) {
				a := w.agent(t, "declined@example.com", true, map[string]any{"approval": map[string]any{"categories": []any{"X402"}}})
				id := ask(t, a, "approval.categories")
				decide(t, a, id, false)
				asked, _ := w.seller.counts()
				status, out := w.fetch(t, a, map[string]any{"confirmRequestId": id}, nil)
				e, _ := out["error"].(map[string]any)
				if status != 409 || e["code"] != "CONFLICT" || !strings.Contains(fmt.Sprint(e["message"]), "declined") || w.chain.Balance(t, a.wallet) != 10_000_000 {
					t.Fatalf("a declined payment: %d %v", status, out)
				}
				if now, _ := w.seller.counts(); now != asked {
					t.Fatal("a declined payment was sent")
				}
			})
			if err := ledger.Check(ctx, w.env.App.Store); err != nil {
				t.Fatalf("ledger-check: %v", err)
			}
		})
	}
}

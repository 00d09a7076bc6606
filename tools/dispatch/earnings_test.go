package dispatch_test

import (
	"testing"

	"github.com/switchboard-hq/switchboard/store/storetest"
)

// partner_earnings sums what the Partner earned per intent and per payout address from the
// real invocations and ledger, and lists an intent's latest calls with their outcomes.
func TestPartnerEarnings(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newWorld(t, dialect, nil)
			w.publish(t, "@earner", "/cost", nil)  // providerCostMicro 1500, capped at the listed 1000
			w.publish(t, "@failing", "/fail", nil) // success false: no fee
			for range 3 {
				w.invoke(t, w.caller, map[string]any{"message": "@earner go"})
			}
			w.invoke(t, w.caller, map[string]any{"message": "@failing go"})

			st, out := w.env.REST(t, "GET", "/v1/partner/earnings", w.publisher, nil)
			if st != 200 || out["totalUsd"] != 0.003 {
				t.Fatalf("earnings: %d %v", st, out)
			}
			by := map[string]map[string]any{}
			for _, e := range out["byIntent"].([]any) {
				m := e.(map[string]any)
				by[m["handle"].(string)] = m
			}
			if e := by["@earner"]; e["partnerFeeUsd"] != 0.003 || e["calls"] != float64(3) || e["succeeded"] != float64(3) {
				t.Fatalf("@earner: %v", e)
			}
			if e := by["@failing"]; e["partnerFeeUsd"] != float64(0) || e["calls"] != float64(1) || e["succeeded"] != float64(0) {
				t.Fatalf("@failing: %v", e)
			}
			payouts := out["byPayout"].([]any)
			if len(payouts) != 1 || payouts[0].(map[string]any)["partnerFeeUsd"] != 0.003 || payouts[0].(map[string]any)["payout"] != "evm:"+payout {
				t.Fatalf("byPayout: %v", payouts)
			}
			id := by["@earner"]["intentId"].(string)
			_, out = w.env.REST(t, "GET", "/v1/partner/earnings?intentId="+id, w.publisher, nil)
			recent := out["recent"].([]any)
			if len(recent) != 3 || recent[0].(map[string]any)["state"] != "succeeded" || recent[0].(map[string]any)["httpStatus"] != float64(200) {
				t.Fatalf("recent: %v", recent)
			}
			// Another account's intent is not yours to inspect.
			if st, _ := w.env.REST(t, "GET", "/v1/partner/earnings?intentId="+id, w.caller, nil); st != 404 && st != 403 {
				t.Fatalf("another account's intent: %d", st)
			}
			w.ledgerOK(t)
		})
	}
}

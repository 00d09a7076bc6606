package dispatch_test

import (
	"testing"

	"github.com/switchboard-hq/switchboard/store/storetest"
)

// Every dispatched call reaches the app's metrics once: its outcome by the partner's answer,
// and its time split into the partner's and Switchboard's own; the platform's fee shows in the
// ledger totals.
func TestObservedOutcomes(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newWorld(t, dialect, nil)
			w.publish(t, "@answers", "/cost", nil)
			w.publish(t, "@refuses", "/fail", nil)
			w.publish(t, "@broken", "/down", nil) // 503 twice: one dispatch, two tries
			var platformFee float64
			for _, c := range []struct {
				message string
				status  int
			}{{"@answers go", 200}, {"@refuses go", 200}, {"@broken go", 503}} {
				status, out := w.invoke(t, w.caller, map[string]any{"message": c.message})
				if status != c.status {
					t.Fatalf("%s: %d %v, want %d", c.message, status, out, c.status)
				}
				platformFee += charge(out)["platformFeeMicro"].(float64)
			}
			if platformFee <= 0 {
				t.Fatal("no platform fee was charged")
			}

			w.settledStore(t) // ledger totals are read from the database, after the batch writer
			m := w.env.Scrape(t)
			for outcome, want := range map[string]float64{"OK": 1, "PARTNER_FAILURE": 1, "SERVER_ERROR": 1, "TIMEOUT": 0} {
				got, _ := m.Value("switchboard_invoke_outcomes_total", map[string]string{"outcome": outcome})
				if got != want {
					t.Errorf("invoke_outcomes_total{outcome=%q} = %v, want %v", outcome, got, want)
				}
			}
			for _, name := range []string{"switchboard_invoke_partner_duration_seconds", "switchboard_invoke_overhead_duration_seconds"} {
				h := m[name].GetMetric()
				if len(h) != 1 || h[0].GetHistogram().GetSampleCount() != 3 || h[0].GetHistogram().GetSampleSum() <= 0 {
					t.Errorf("%s: %v, want 3 observations taking some time", name, h)
				}
			}
			if got, _ := m.Value("switchboard_ledger_balance_micro_usd", map[string]string{"kind": "platform_fees"}); got != platformFee {
				t.Errorf("ledger platform_fees = %v, want the %v charged", got, platformFee)
			}
			if labels := m.LabelValues("switchboard_invoke_outcomes_total", "handle"); len(labels) != 0 {
				t.Errorf("outcomes are labelled by handle: %v", labels)
			}
		})
	}
}

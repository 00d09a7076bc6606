package signing_test

import (
	"encoding/json"
	"testing"

	"github.com/switchboard-hq/switchboard/signing"
)

// A published feeRate reads as the providerCostMicro that charges it whole, rounded down as
// Switchboard rounds it; what is not a decimal USD amount is refused. The answer always
// carries providerCostMicro: omitted, the partner is paid nothing.
func TestFeeRateMicroAndCharging(t *testing.T) {
	for in, want := range map[string]int64{"0.05": 50_000, "0": 0, "1": 1_000_000, "0.0000019": 1, ".5": 500_000, "12.345678": 12_345_678} {
		if got, err := signing.FeeRateMicro(in); err != nil || got != want {
			t.Errorf("%q: %d %v, want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-0.05", "abc", "1e3", "0.0x", "+1"} {
		if _, err := signing.FeeRateMicro(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	b, _ := json.Marshal(signing.Charging(map[string]string{"a": "b"}, 0))
	if string(b) != `{"success":true,"result":{"a":"b"},"providerCostMicro":0}` {
		t.Fatalf("answer: %s", b)
	}
}

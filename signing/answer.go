package signing

import (
	"fmt"
	"strconv"
	"strings"
)

// Answer is a partner's success response envelope. Switchboard pays a partner exactly what
// it reports in ProviderCostMicro, capped by the feeRate it published, and nothing when the
// field is omitted (the spec's billing): so an Answer always carries it, and a partner that
// charges its quoted rate reports FeeRateMicro of that rate.
type Answer struct {
	Success           bool  `json:"success"`
	Result            any   `json:"result"`
	ProviderCostMicro int64 `json:"providerCostMicro"`
}

// Charging is the success answer of result that charges costMicro micro-USD.
func Charging(result any, costMicro int64) Answer {
	return Answer{Success: true, Result: result, ProviderCostMicro: costMicro}
}

// FeeRateMicro is a usd_per_call feeRate as published (decimal USD, e.g. "0.05") in
// micro-USD: the providerCostMicro that charges the whole quoted rate. Digits past the
// sixth decimal are dropped, as Switchboard rounds a rate down.
func FeeRateMicro(feeRate string) (int64, error) {
	s := strings.TrimSpace(feeRate)
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" {
		whole = "0"
	}
	if len(frac) > 6 {
		frac = frac[:6]
	}
	frac += strings.Repeat("0", 6-len(frac))
	w, err1 := strconv.ParseUint(whole, 10, 32)
	f, err2 := strconv.ParseUint(frac, 10, 32)
	if err1 != nil || err2 != nil || s == "" || strings.HasPrefix(whole, "+") {
		return 0, fmt.Errorf("fee rate %q is not a decimal USD amount such as 0.05", feeRate)
	}
	return int64(w)*1_000_000 + int64(f), nil
}

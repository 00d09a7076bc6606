package onboarding_test

import (
	"testing"

	"github.com/switchboard-hq/switchboard/tools/onboarding"
)

// An IPv6 host commonly holds a whole /64: it must count as one address, or it would have
// 2^64 guess budgets.
func TestSourceCountsAnIPv6SlashSixtyFourAsOneAddress(t *testing.T) {
	for addr, want := range map[string]string{
		"203.0.113.7":                   "203.0.113.7",
		"::ffff:203.0.113.7":            "203.0.113.7",
		"2001:db8:1:2:aaaa::1":          "2001:db8:1:2::/64",
		"2001:db8:1:2:ffff:ffff:ffff:1": "2001:db8:1:2::/64",
		"fe80::1%eth0":                  "fe80::/64",
		"2001:db8:1:3::1":               "2001:db8:1:3::/64",
		"stdio":                         "stdio",
	} {
		if got := onboarding.Source(addr); got != want {
			t.Errorf("Source(%q) = %q, want %q", addr, got, want)
		}
	}
}

// The bound docs/limits.md states: an attacker with 1,000 IPv4 addresses and one IPv6 /48
// finds a live code with probability at most 1 in 10^4 over its life under the default budgets.
func TestGuessBoundForTheDocumentedAttacker(t *testing.T) {
	cfg := onboarding.DefaultConfig(nil)
	guesses := 1000*cfg.GuessesPerCode + cfg.GuessesPerCodeNet
	if p := float64(guesses) / 1e8; guesses != 5025 || p > 1e-4 {
		t.Fatalf("1,000 IPv4 addresses and a /48 make %d guesses at a code: P = %g; docs/limits.md says 5,025 and at most 1e-4", guesses, p)
	}
}

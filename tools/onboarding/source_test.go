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

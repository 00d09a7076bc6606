package httpx

import (
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 18, 11, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"120":                           2 * time.Minute,
		"":                              0,
		"-5":                            0,
		"soon":                          0,
		"Wed, 18 Nov 2026 11:01:30 GMT": 90 * time.Second,
		"Wed, 18 Nov 2026 10:59:00 GMT": 0,
	} {
		if got := ParseRetryAfter(v, now); got != want {
			t.Errorf("ParseRetryAfter(%q) = %v, want %v", v, got, want)
		}
	}
}

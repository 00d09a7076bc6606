package discover_test

import (
	"reflect"
	"testing"

	"github.com/switchboard-hq/switchboard/tools/discover"
)

// Every fee unit reads as words, with the decimal as published: a rate charged from credit
// reads "up to" (the partner is paid what it reports), and a listing free of partner fees
// names the infrastructure fee a call still costs.
func TestPriceWords(t *testing.T) {
	for _, c := range []struct {
		rate, unit string
		core       bool
		want       string
	}{
		{"0", "usd_per_call", false, "Free of partner fees: a call still costs the 0.001 USD infrastructure fee and Switchboard's platform fee"},
		{"0", "bps", false, "Free of partner fees: a call still costs the 0.001 USD infrastructure fee and Switchboard's platform fee"},
		{"0", "usd_per_call", true, "Free: a built-in tool, called directly, with no charge"},
		{"0.0025", "usd_per_call", false, "Up to 0.0025 USD per call (the partner is paid what it reports, at most this), charged only when the call succeeds"},
		{"30", "bps", false, "Up to 30 basis points (0.3%) of the value routed (the partner is paid what it reports, at most this), charged only when the call succeeds"},
		{"0.5", "flat_usdc", false, "Flat fee of 0.5 USDC, paid on chain before the call (x402), refunded if it fails"},
		{"1.25", "flat_stablecoin", false, "Flat fee of 1.25 USD in a stablecoin, paid on chain before the call (x402), refunded if it fails"},
		{"x", "usd_per_call", false, "x usd_per_call"},
	} {
		if got := discover.PriceWords(c.rate, c.unit, 1000, c.core); got != c.want {
			t.Errorf("%s %s: %q, want %q", c.rate, c.unit, got, c.want)
		}
	}
}

// The parameters table and the Try it form read the schema's top level: required first, then
// by name; nested and untyped values are JSON; enums and defaults as text.
func TestParams(t *testing.T) {
	got := discover.Params(`{"type":"object","required":["to","amount"],"properties":{
		"to":{"type":"string","description":"recipient"},"amount":{"type":"number"},
		"speed":{"type":"string","enum":["slow","fast"],"default":"slow"},"opts":{"type":"object"},"any":{},"n":{"type":"integer"},"dry":{"type":"boolean"}}}`)
	want := []discover.Param{
		{Name: "amount", Type: "number", Required: true},
		{Name: "to", Type: "string", Required: true, Description: "recipient"},
		{Name: "any", Type: "json"}, {Name: "dry", Type: "boolean"}, {Name: "n", Type: "integer"}, {Name: "opts", Type: "json"},
		{Name: "speed", Type: "string", Enum: []string{"slow", "fast"}, Default: "slow"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("params:\n got %+v\nwant %+v", got, want)
	}
	if discover.Params("not json") != nil {
		t.Fatal("an unreadable schema has parameters")
	}
}

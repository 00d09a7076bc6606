package tools

import (
	"encoding/json"
	"fmt"

	"github.com/invopop/jsonschema"
	"github.com/shopspring/decimal"
)

// MaxUSDMicro bounds every USD amount the service reads (1,000,000,000 USD): far above any
// real limit or balance, far below where sums of amounts could overflow int64.
const MaxUSDMicro = 1_000_000_000 * 1_000_000

// USD is an amount of US dollars held as integer micro-USD. On the wire it is a JSON number
// (the spec's spendLimitUsd is a number), written and read as an exact decimal: it never
// passes through float64.
type USD int64

// Micro returns the amount in micro-USD.
func (u USD) Micro() int64 { return int64(u) }

func (u USD) String() string { return decimal.New(int64(u), -6).String() }

// MarshalJSON writes the exact decimal number, e.g. 50 or 0.25.
func (u USD) MarshalJSON() ([]byte, error) { return []byte(u.String()), nil }

// UnmarshalJSON reads a JSON number with at most 6 decimal places.
func (u *USD) UnmarshalJSON(b []byte) error {
	var n json.Number
	if len(b) > 0 && b[0] == '"' {
		return fmt.Errorf("USD amount must be a JSON number, not a string")
	}
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("USD amount must be a number: %w", err)
	}
	d, err := decimal.NewFromString(n.String())
	if err != nil {
		return fmt.Errorf("USD amount %s: %w", n, err)
	}
	micro := d.Shift(6)
	if !micro.IsInteger() {
		return fmt.Errorf("USD amount %s has more than 6 decimal places", n)
	}
	if micro.Abs().GreaterThan(decimal.New(MaxUSDMicro, 0)) {
		return fmt.Errorf("USD amount %s is over the maximum of %s", n, USD(MaxUSDMicro))
	}
	*u = USD(micro.IntPart())
	return nil
}

// JSONSchema describes USD as a non-negative number.
func (USD) JSONSchema() *jsonschema.Schema {
	min := json.Number("0")
	max := json.Number(USD(MaxUSDMicro).String())
	return &jsonschema.Schema{Type: "number", Minimum: min, Maximum: max, Description: "US dollars"}
}

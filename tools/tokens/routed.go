package tokens

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"

	"github.com/shopspring/decimal"
	"github.com/switchboard-hq/switchboard/tools"
)

// AmountMarker is the parametersSchema keyword on the property that carries the amount a
// write moves, naming the token property it counts:
//
//	"amount": {"type": "string", "x-amount": "fromToken"}                        // whole tokens, e.g. "2.5"
//	"amount": {"type": "string", "x-amount": {"token": "fromToken", "atomic": true}} // smallest units
//
// Without any x-amount, a schema with exactly one x-token property and a property named
// "amount" pairs the two. The routed value of a call is that amount at the token's live price.
const AmountMarker = "x-amount"

// AmountProperty is how a schema says what a call routes.
type AmountProperty struct {
	Amount string // the property holding the amount
	Token  string // the x-token property it counts
	Atomic bool   // the amount is in the token's smallest units
}

// RoutedProperty finds the amount property of a parametersSchema; ok is false when the schema
// names none (the intent routes no value, or does not say which).
func RoutedProperty(schema json.RawMessage) (AmountProperty, bool, error) {
	toks, err := tokenProperties(schema)
	if err != nil || len(toks) == 0 {
		return AmountProperty{}, false, err
	}
	var s struct {
		Properties map[string]map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		return AmountProperty{}, false, fmt.Errorf("parametersSchema: %w", err)
	}
	var found []AmountProperty
	for name, prop := range s.Properties {
		raw, ok := prop[AmountMarker]
		if !ok {
			continue
		}
		ap := AmountProperty{Amount: name}
		var tok string
		var obj struct {
			Token  string `json:"token"`
			Atomic bool   `json:"atomic"`
		}
		switch {
		case json.Unmarshal(raw, &tok) == nil:
			ap.Token = tok
		case json.Unmarshal(raw, &obj) == nil:
			ap.Token, ap.Atomic = obj.Token, obj.Atomic
		default:
			return AmountProperty{}, false, fmt.Errorf(`parametersSchema: property %s: %s must name a token property, e.g. "fromToken" or {"token": "fromToken", "atomic": true}`, name, AmountMarker)
		}
		if _, ok := toks[ap.Token]; !ok {
			return AmountProperty{}, false, fmt.Errorf("parametersSchema: property %s: %s names %q, which is not a property marked %s", name, AmountMarker, ap.Token, TokenMarker)
		}
		found = append(found, ap)
	}
	switch {
	case len(found) > 1:
		return AmountProperty{}, false, fmt.Errorf("parametersSchema: %d properties carry %s; mark only the amount the call routes", len(found), AmountMarker)
	case len(found) == 1:
		return found[0], true, nil
	}
	if _, ok := s.Properties["amount"]; ok && len(toks) == 1 {
		for tok := range toks {
			return AmountProperty{Amount: "amount", Token: tok}, true, nil
		}
	}
	return AmountProperty{}, false, nil
}

// Routed is the value a write call moves.
type Routed struct {
	Micro  *int64 // micro-USD; nil when it cannot be quoted (Reason says why)
	Token  *Token
	Amount string
	Reason string
}

// RoutedValue prices what a call's args move: the amount property (RoutedProperty) of the
// resolved token at its live price. A call without such an amount routes nothing (zero
// Routed, no Reason); one whose value cannot be quoted says why in Reason. Bad amounts are
// BAD_INPUT.
func (s *Service) RoutedValue(ctx context.Context, schema json.RawMessage, args map[string]any, resolved []ResolvedArg) (Routed, error) {
	ap, ok, err := RoutedProperty(schema)
	if err != nil || !ok {
		return Routed{}, err
	}
	raw, present := args[ap.Amount]
	if !present || raw == nil {
		return Routed{}, nil
	}
	var amount decimal.Decimal
	switch v := raw.(type) {
	case string:
		amount, err = decimal.NewFromString(strings.TrimSpace(v))
	case json.Number:
		amount, err = decimal.NewFromString(v.String())
	default:
		err = fmt.Errorf("not a number")
	}
	if err != nil || amount.IsNegative() {
		return Routed{}, tools.Errorf(tools.CodeBadInput, "args.%s is the amount this call moves: give a non-negative decimal number, e.g. \"2.5\"", ap.Amount)
	}
	var e *entry
	for _, r := range resolved {
		if r.Property == ap.Token {
			e = r.entry
		}
	}
	if e == nil {
		return Routed{Amount: amount.String(), Reason: fmt.Sprintf("args.%s names no token", ap.Token)}, nil
	}
	if ap.Atomic {
		amount = amount.Shift(-int32(e.Decimals))
	}
	tok := e.Token
	q, fails := s.Price(ctx, e)
	if fails != nil {
		return Routed{Token: &tok, Amount: amount.String(), Reason: cannotQuote(e, fails).Message}, nil
	}
	usd := amount.Mul(q.Price).Shift(6).Round(0)
	if usd.GreaterThan(decimal.New(1, 18)) {
		return Routed{}, tools.Errorf(tools.CodeBadInput, "args.%s: %s %s is worth more than any call may route", ap.Amount, amount, e.Ticker)
	}
	micro := usd.IntPart()
	return Routed{Micro: &micro, Token: &tok, Amount: amount.String()}, nil
}

// solanaFeeLamports is Solana's base fee of a one-signature transaction.
const solanaFeeLamports = 5_000

// GasEstimate is the network fee, in micro-USD, of an on-chain step using gasUnits on chain:
// the node's gas price times gasUnits, at the native coin's live price (Solana: the base fee
// of a one-signature transaction).
func (s *Service) GasEstimate(ctx context.Context, chain string, gasUnits int64) (int64, error) {
	c := chainOf(chain)
	if c.Name == "" {
		return 0, fmt.Errorf("unknown chain %q", chain)
	}
	native := s.reg.Native(c.Name)
	var wei *big.Int
	if c.Family == FamilySVM {
		wei = big.NewInt(solanaFeeLamports)
	} else {
		client := s.evm[c.Name]
		if client == nil {
			return 0, tools.Errorf(tools.CodeUnavailable, "cannot estimate gas on %s: no RPC endpoint is configured for it", c.Name)
		}
		gp, err := client.GasPrice(ctx)
		if err != nil {
			return 0, tools.Errorf(tools.CodeUnavailable, "cannot estimate gas on %s (%v); nothing was sent or charged. Try again later", c.Name, err)
		}
		wei = new(big.Int).Mul(gp, big.NewInt(gasUnits))
	}
	q, fails := s.Price(ctx, native)
	if fails != nil {
		return 0, tools.Errorf(tools.CodeUnavailable, "cannot price gas on %s: %s", c.Name, cannotQuote(native, fails).Message)
	}
	usd := decimal.NewFromBigInt(wei, -int32(native.Decimals)).Mul(q.Price).Shift(6).Ceil()
	return usd.IntPart(), nil
}

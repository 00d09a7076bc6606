package tokens

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/switchboard-hq/switchboard/tools"
)

// TokenMarker is the JSON Schema keyword a partner puts on a parametersSchema property whose
// value names a token, e.g.
//
//	"fromToken": {"type": "string", "x-token": true}
//	"toToken":   {"type": "string", "x-token": {"chainProperty": "toChain"}}
//
// With true, the token's chain is read from the sibling property "chain" when the args carry
// one; with {"chainProperty": name}, from that property. Only top-level properties are read.
const TokenMarker = "x-token"

// ResolvedArg is one token argument and the token it names.
type ResolvedArg struct {
	Property string `json:"property"`
	Value    string `json:"value"`
	Token    Token  `json:"token"`
	entry    *entry
}

type marker struct {
	ChainProperty string `json:"chainProperty"`
}

// TokenProperties reads the marked properties of a parametersSchema: property -> chain property.
func TokenProperties(schema json.RawMessage) (map[string]string, error) {
	return tokenProperties(schema)
}

// tokenProperties reads the marked properties of a parametersSchema: property -> chain property.
func tokenProperties(schema json.RawMessage) (map[string]string, error) {
	var s struct {
		Properties map[string]map[string]json.RawMessage `json:"properties"`
	}
	if len(schema) == 0 {
		return nil, nil
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, fmt.Errorf("parametersSchema: %w", err)
	}
	out := map[string]string{}
	for name, prop := range s.Properties {
		raw, ok := prop[TokenMarker]
		if !ok {
			continue
		}
		var flag bool
		if json.Unmarshal(raw, &flag) == nil {
			if flag {
				out[name] = "chain"
			}
			continue
		}
		var m marker
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("parametersSchema: property %s: %s must be true or {\"chainProperty\": \"...\"}", name, TokenMarker)
		}
		if m.ChainProperty == "" {
			m.ChainProperty = "chain"
		}
		out[name] = m.ChainProperty
	}
	return out, nil
}

// ResolveArgs runs before dispatching an intent that moves tokens (the intent model says which
// categories do): every argument whose parametersSchema property carries TokenMarker is
// resolved like resolve_token. A token flagged as spam, a name that matches nothing, or one that stays
// ambiguous (several equally trusted tokens, e.g. USDC without a chain) stops the call with
// BAD_INPUT before anything is dispatched or charged. Args are not rewritten: the partner receives exactly what the caller sent.
func (s *Service) ResolveArgs(ctx context.Context, category string, parametersSchema json.RawMessage, args map[string]any) ([]ResolvedArg, error) {
	props, err := tokenProperties(parametersSchema)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []ResolvedArg
	for _, name := range names {
		v, present := args[name]
		if !present || v == nil {
			continue
		}
		value, ok := v.(string)
		if !ok {
			return nil, tools.Errorf(tools.CodeBadInput, "args.%s names a token and must be a string (ticker, name or address)", name)
		}
		chain, _ := args[props[name]].(string)
		es, err := s.resolveMatches(ctx, value, chain)
		if err != nil {
			return nil, err
		}
		verb := strings.ToLower(category)
		if len(es) == 0 {
			return nil, tools.Errorf(tools.CodeBadInput, "args.%s: no token matches %q%s; call resolve_token to find it, then pass its address. Nothing was sent or charged",
				name, value, onChain(chain)).WithDetails(map[string]any{"property": name})
		}
		top := es[0]
		if top.IsSpam {
			return nil, tools.Errorf(tools.CodeBadInput, "args.%s: %q is %s at %s on %s, a token flagged as spam (%s); refusing to %s it. Nothing was sent or charged",
				name, value, top.Ticker, top.Address, top.Chain, top.SpamReason, verb).
				WithDetails(map[string]any{"property": name, "token": top.Token})
		}
		var tied []Token
		for _, e := range es {
			if e.tier == top.tier && e.quality == top.quality {
				tied = append(tied, e.Token)
			}
		}
		if len(tied) > 1 {
			return nil, tools.Errorf(tools.CodeBadInput, "args.%s: %q matches %d tokens equally (%s); name the chain or pass the contract address. Nothing was sent or charged",
				name, value, len(tied), describe(tied)).WithDetails(map[string]any{"property": name, "candidates": tied})
		}
		out = append(out, ResolvedArg{Property: name, Value: value, Token: top.Token, entry: top.entry})
	}
	return out, nil
}

func onChain(chain string) string {
	if chain == "" {
		return ""
	}
	return " on " + chain
}

func describe(ts []Token) string {
	var parts []string
	for i, t := range ts {
		if i == 6 {
			parts = append(parts, "...")
			break
		}
		parts = append(parts, t.Ticker+" on "+t.Chain)
	}
	return strings.Join(parts, ", ")
}

// WriteCost is what a write's args move and what its on-chain step costs: its quote's
// routed value and gas.
type WriteCost struct {
	Routed   Routed
	GasChain string // where the on-chain step happens; "" when no gas is quoted
	GasMicro int64  // the gas estimate on GasChain, in micro-USD
}

// PriceWrite is what a write of category costs beyond its fees: the tokens its args name
// resolved (a spam or ambiguous token refuses the call), the value its amount routes at
// live prices, and the gas of gasUnits (0: none) on the chain of the token it routes, else
// of the first token it names.
func (s *Service) PriceWrite(ctx context.Context, category string, schema json.RawMessage, args map[string]any, gasUnits int64) (WriteCost, error) {
	resolved, err := s.ResolveArgs(ctx, category, schema, args)
	if err != nil {
		return WriteCost{}, err
	}
	var w WriteCost
	if w.Routed, err = s.RoutedValue(ctx, schema, args, resolved); err != nil {
		return WriteCost{}, err
	}
	switch {
	case w.Routed.Token != nil:
		w.GasChain = w.Routed.Token.Chain
	case len(resolved) > 0:
		w.GasChain = resolved[0].Token.Chain
	}
	if w.GasChain == "" || gasUnits <= 0 {
		return WriteCost{Routed: w.Routed}, nil
	}
	if w.GasMicro, err = s.GasEstimate(ctx, w.GasChain, gasUnits); err != nil {
		return WriteCost{}, err
	}
	return w, nil
}

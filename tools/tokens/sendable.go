package tokens

import (
	"context"
	"math/big"

	"github.com/shopspring/decimal"
	"github.com/switchboard-hq/switchboard/tools"
)

// Sendable is a token resolved for a wallet send: the most trusted match of the caller's
// ticker, name, address or mint on one chain, never spam and never ambiguous.
type Sendable struct {
	Token
	Native bool // the chain's own coin (ETH, POL, SOL, ...), not a contract or mint
	entry  *entry
}

// Sendable resolves text on chain for a send: no match, several equally trusted matches, or
// a token flagged as spam refuse it (BAD_INPUT) before anything is quoted or signed.
func (s *Service) Sendable(ctx context.Context, text, chain string) (Sendable, error) {
	ms, err := s.resolveMatches(ctx, text, chain)
	if err != nil {
		return Sendable{}, err
	}
	if len(ms) == 0 {
		return Sendable{}, tools.Errorf(tools.CodeBadInput, "token: no token matches %q on %s; call resolve_token to find it, then pass its address. Nothing was signed or sent", text, chain)
	}
	top := ms[0]
	if top.IsSpam {
		return Sendable{}, tools.Errorf(tools.CodeBadInput, "token: %q is %s at %s on %s, a token flagged as spam (%s); refusing to send it. Nothing was signed or sent",
			text, top.Ticker, top.Address, top.Chain, top.SpamReason).WithDetails(map[string]any{"token": top.Token})
	}
	var tied []Token
	for _, m := range ms {
		if m.tier == top.tier && m.quality == top.quality {
			tied = append(tied, m.Token)
		}
	}
	if len(tied) > 1 {
		return Sendable{}, tools.Errorf(tools.CodeBadInput, "token: %q matches %d tokens equally on %s (%s); pass the contract address or mint. Nothing was signed or sent",
			text, len(tied), chain, describe(tied)).WithDetails(map[string]any{"candidates": tied})
	}
	return Sendable{Token: top.Token, Native: top.native, entry: top.entry}, nil
}

// ValueMicro is what amount (in the token's units: 1.5 for 1.5 USDC) of t is worth now, in
// micro-USD, rounded up; reason says why it cannot be known ("" when it is).
func (s *Service) ValueMicro(ctx context.Context, t Sendable, amount decimal.Decimal) (micro int64, reason string) {
	q, fails := s.Price(ctx, t.entry)
	if fails != nil {
		return 0, cannotQuote(t.entry, fails).Message
	}
	usd := amount.Mul(q.Price).Shift(6).Ceil()
	if usd.GreaterThan(decimal.New(1, 15)) {
		return 0, "its value is beyond what a send may move"
	}
	return usd.IntPart(), ""
}

// NativeMicro is what units of chain's native coin (wei, lamports) are worth now, in
// micro-USD rounded up: a send's fee.
func (s *Service) NativeMicro(ctx context.Context, chain string, units *big.Int) (int64, error) {
	c := chainOf(chain)
	if c.Name == "" {
		return 0, tools.Errorf(tools.CodeBadInput, "unknown chain %q", chain)
	}
	native := s.reg.Native(c.Name)
	q, fails := s.Price(ctx, native)
	if fails != nil {
		return 0, tools.Errorf(tools.CodeUnavailable, "cannot price the fee on %s: %s", c.Name, cannotQuote(native, fails).Message)
	}
	return decimal.NewFromBigInt(units, -int32(native.Decimals)).Mul(q.Price).Shift(6).Ceil().IntPart(), nil
}

package tokens

import (
	"context"
	"math/big"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/switchboard-hq/switchboard/tools"
)

// Valued is an on-chain amount priced: Micro its USD value in micro-USD (rounded up, so a
// policy never judges less than moves), nil with Reason when it cannot be priced.
type Valued struct {
	Token  Token
	Micro  *int64
	Reason string
}

// ValueOf prices units (the token's smallest units) of the token at address on chain (an
// ERC-20 address or SPL mint; "" or "native" for the chain's own coin), as a decoded
// on-chain movement is judged (issue 49 item 2). A spam token is BAD_INPUT: it is never moved;
// one with no current price answers its Reason, never a guess.
func (s *Service) ValueOf(ctx context.Context, chain, address string, units *big.Int) (Valued, error) {
	c := chainOf(chain)
	if c.Name == "" {
		return Valued{}, tools.Errorf(tools.CodeBadInput, "unknown chain %q", chain)
	}
	var e *entry
	if address == "" || address == "native" {
		e = s.reg.Native(c.Name)
	} else {
		es, err := s.Resolve(ctx, address, c.Name)
		if err != nil {
			return Valued{}, err
		}
		for _, x := range es {
			if strings.EqualFold(x.Address, address) && x.Chain == c.Name {
				e = x
				break
			}
		}
		if e == nil {
			return Valued{Reason: "the token " + address + " on " + c.Name + " is not known"}, nil
		}
	}
	if e.IsSpam {
		return Valued{}, tools.Errorf(tools.CodeBadInput, "%s (%s on %s) looks like spam (%s): it is never moved", e.Ticker, e.Address, e.Chain, e.SpamReason)
	}
	q, fails := s.Price(ctx, e)
	if fails != nil {
		return Valued{Token: e.Token, Reason: cannotQuote(e, fails).Message}, nil
	}
	usd := decimal.NewFromBigInt(units, -int32(e.Decimals)).Mul(q.Price).Shift(6).Ceil()
	if usd.GreaterThan(decimal.New(1, 18)) {
		return Valued{}, tools.Errorf(tools.CodeBadInput, "%s %s is worth more than any movement may move", units, e.Ticker)
	}
	micro := usd.IntPart()
	return Valued{Token: e.Token, Micro: &micro}, nil
}

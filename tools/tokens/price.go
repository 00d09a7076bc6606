package tokens

import (
	"context"

	"strings"
	"time"

	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/tokens/prices"
)

// PriceOutput is get_price's answer: the spec's Price result plus the token priced.
type PriceOutput struct {
	Status    string `json:"status" jsonschema:"enum=OK"`
	Ticker    string `json:"ticker"`
	PriceUsd  string `json:"priceUsd" jsonschema_description:"USD price as an exact decimal string"`
	Source    string `json:"source" jsonschema:"enum=coingecko,enum=defillama,enum=jupiter" jsonschema_description:"price provider used"`
	FetchedAt string `json:"fetchedAt" jsonschema:"format=date-time" jsonschema_description:"when the price was fetched from the provider, ISO 8601 UTC"`
	Token     Token  `json:"token" jsonschema_description:"the token priced (the most trusted match of the query)"`
}

func (s *Service) priceTool(ctx context.Context, _ *tools.Caller, in ResolveInput) (PriceOutput, error) {
	es, err := s.Resolve(ctx, in.Query, in.Chain)
	if err != nil {
		return PriceOutput{}, err
	}
	if len(es) == 0 {
		return PriceOutput{}, tools.Errorf(tools.CodeNotFound, "no token matches %q; check the ticker, or give the contract address and chain (resolve_token helps)", in.Query)
	}
	e := es[0]
	q, fails := s.Price(ctx, e)
	if fails != nil {
		return PriceOutput{}, cannotQuote(e, fails)
	}
	return PriceOutput{Status: "OK", Ticker: e.Ticker, PriceUsd: q.Price.String(), Source: q.Source,
		FetchedAt: q.FetchedAt.UTC().Format(time.RFC3339), Token: e.Token}, nil
}

// Price quotes one token; fails lists every provider's reason when none could.
func (s *Service) Price(ctx context.Context, e *entry) (prices.Quote, []prices.Failure) {
	a := assetOf(e)
	qs, fs := s.quoter.Quote(ctx, []prices.Asset{a})
	if q, ok := qs[a.Key()]; ok {
		return q, nil
	}
	f := fs[a.Key()]
	if len(f) == 0 {
		f = []prices.Failure{{Source: "none", Reason: "no provider can look this token up"}}
	}
	return prices.Quote{}, f
}

// cannotQuote is the answer when every provider failed: UNAVAILABLE, each provider's reason,
// and no number.
func cannotQuote(e *entry, fails []prices.Failure) *tools.Error {
	parts := make([]string, len(fails))
	for i, f := range fails {
		parts[i] = f.Source + ": " + f.Reason
	}
	return tools.Errorf(tools.CodeUnavailable, "cannot quote %s on %s: no price provider gave a current price (%s). No price is given rather than a stale or guessed one; say so, and try again later",
		e.Ticker, e.Chain, strings.Join(parts, "; ")).
		WithDetails(map[string]any{"ticker": e.Ticker, "chain": e.Chain, "address": e.Address, "providers": fails})
}

// assetOf is how price providers find a token.
func assetOf(e *entry) prices.Asset {
	c := chainOf(e.Chain)
	a := prices.Asset{Chain: c.Name, Solana: c.Family == FamilySVM, Platform: c.CoinGecko, Llama: c.Llama, MarketDataID: e.MarketDataID}
	if !(e.native && c.Family == FamilyEVM) {
		a.Address = e.Address
	}
	return a
}

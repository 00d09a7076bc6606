package tokens

import (
	"context"
	"errors"
	"fmt"

	"github.com/switchboard-hq/switchboard/chain/httpx"
	"github.com/switchboard-hq/switchboard/store"
)

// SourceReport is how one public list fared in a refresh.
type SourceReport struct {
	Source string
	Tokens int
	Err    string
}

// Refresh pulls the public token lists (CoinGecko's per-platform lists and coins list,
// Jupiter's verified tokens) into the learned tokens, marked listed. A source that fails is
// reported and skipped; the error is non-nil only when every source failed.
func (s *Service) Refresh(ctx context.Context) ([]SourceReport, error) {
	var reports []SourceReport
	ids := map[string]string{} // platform + "/" + address key -> CoinGecko id
	coins, err := s.cgList.CoinsList(ctx)
	rep := SourceReport{Source: "coingecko coins list", Tokens: len(coins)}
	if err != nil {
		rep.Err = httpx.Reason(err)
	}
	reports = append(reports, rep)
	for _, c := range coins {
		for platform, addr := range c.Platforms {
			if addr == "" || c.ID == "" {
				continue
			}
			for _, ch := range Chains {
				if ch.CoinGecko == platform {
					ids[platform+"/"+AddressKey(ch, addr)] = c.ID
				}
			}
		}
	}
	var all []*store.Token
	now := s.now()
	for _, ch := range Chains {
		list, err := s.cgList.TokenList(ctx, ch.CoinGecko)
		rep := SourceReport{Source: "coingecko token list " + ch.CoinGecko}
		if err != nil {
			rep.Err = httpx.Reason(err)
			reports = append(reports, rep)
			continue
		}
		for _, t := range list {
			dec, err := t.Decimals.Int64()
			if err != nil || dec < 0 || dec > 36 || t.Symbol == "" || !validAddress(ch, DisplayAddress(ch, t.Address)) {
				continue
			}
			key := AddressKey(ch, t.Address)
			all = append(all, &store.Token{Chain: ch.Name, AddressKey: key, Address: DisplayAddress(ch, t.Address),
				Ticker: clip(t.Symbol, 32), Name: clip(t.Name, 100), Decimals: int(dec), MarketDataID: ids[ch.CoinGecko+"/"+key],
				Listed: true, Source: "coingecko-list", UpdatedAt: now})
			rep.Tokens++
		}
		reports = append(reports, rep)
	}
	sol := chainOf("solana")
	verified, err := s.jupList.Verified(ctx)
	rep = SourceReport{Source: "jupiter verified"}
	if err != nil {
		rep.Err = httpx.Reason(err)
	}
	for _, t := range verified {
		dec, err := t.Decimals.Int64()
		if err != nil || dec < 0 || dec > 36 || t.Symbol == "" || !validAddress(sol, t.ID) {
			continue
		}
		all = append(all, &store.Token{Chain: sol.Name, AddressKey: t.ID, Address: t.ID, Ticker: clip(t.Symbol, 32),
			Name: clip(t.Name, 100), Decimals: int(dec), MarketDataID: ids[sol.CoinGecko+"/"+t.ID],
			Listed: true, Source: "jupiter-verified", UpdatedAt: now})
		rep.Tokens++
	}
	reports = append(reports, rep)
	failed := 0
	for _, r := range reports {
		if r.Err != "" {
			failed++
		}
	}
	if failed == len(reports) {
		return reports, errors.New("every token list failed; nothing refreshed")
	}
	if err := s.store.UpsertTokens(ctx, dedupe(all)); err != nil {
		return reports, fmt.Errorf("store tokens: %w", err)
	}
	s.forgetSearches()
	return reports, nil
}

// dedupe keeps the first token per chain and address (one batch must not touch a row twice).
func dedupe(ts []*store.Token) []*store.Token {
	seen := map[string]bool{}
	out := ts[:0]
	for _, t := range ts {
		k := t.Chain + "/" + t.AddressKey
		if !seen[k] {
			seen[k] = true
			out = append(out, t)
		}
	}
	return out
}

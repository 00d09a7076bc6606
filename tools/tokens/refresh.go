package tokens

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/switchboard-hq/switchboard/chain/httpx"
	"github.com/switchboard-hq/switchboard/store/learned"
	"github.com/switchboard-hq/switchboard/tools/tokens/lists"
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
	coins, err := s.cgList.CoinsList(ctx)
	rep := SourceReport{Source: "coingecko coins list", Tokens: len(coins)}
	if err != nil {
		rep.Err = httpx.Reason(err)
	}
	reports = append(reports, rep)
	ids := coinGeckoIDs(coins)
	var all []*learned.Token
	now := s.now()
	for _, ch := range Chains {
		list, rep := s.coinGeckoTokens(ctx, ch, ids, now)
		all = append(all, list...)
		reports = append(reports, rep)
	}
	verified, rep := s.jupiterTokens(ctx, ids, now)
	all = append(all, verified...)
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
	if err := s.learned.UpsertTokens(ctx, dedupe(all)); err != nil {
		return reports, fmt.Errorf("store tokens: %w", err)
	}
	s.forgetSearches()
	return reports, nil
}

// coinGeckoIDs maps platform + "/" + address key to the CoinGecko id, for the coins on the
// supported chains.
func coinGeckoIDs(coins []lists.Coin) map[string]string {
	ids := map[string]string{}
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
	return ids
}

// coinGeckoTokens reads CoinGecko's token list of ch, keeping the entries with a symbol, sane
// decimals and a valid address.
func (s *Service) coinGeckoTokens(ctx context.Context, ch Chain, ids map[string]string, now time.Time) ([]*learned.Token, SourceReport) {
	list, err := s.cgList.TokenList(ctx, ch.CoinGecko)
	rep := SourceReport{Source: "coingecko token list " + ch.CoinGecko}
	if err != nil {
		rep.Err = httpx.Reason(err)
		return nil, rep
	}
	var out []*learned.Token
	for _, t := range list {
		dec, err := t.Decimals.Int64()
		if err != nil || dec < 0 || dec > 36 || t.Symbol == "" || !validAddress(ch, DisplayAddress(ch, t.Address)) {
			continue
		}
		key := AddressKey(ch, t.Address)
		out = append(out, &learned.Token{Chain: ch.Name, AddressKey: key, Address: DisplayAddress(ch, t.Address),
			Ticker: clip(t.Symbol, 32), Name: clip(t.Name, 100), Decimals: int(dec), MarketDataID: ids[ch.CoinGecko+"/"+key],
			Listed: true, Source: "coingecko-list", UpdatedAt: now})
		rep.Tokens++
	}
	return out, rep
}

// jupiterTokens reads Jupiter's verified Solana tokens, keeping the entries with a symbol,
// sane decimals and a valid address.
func (s *Service) jupiterTokens(ctx context.Context, ids map[string]string, now time.Time) ([]*learned.Token, SourceReport) {
	sol := chainOf("solana")
	verified, err := s.jupList.Verified(ctx)
	rep := SourceReport{Source: "jupiter verified"}
	if err != nil {
		rep.Err = httpx.Reason(err)
	}
	var out []*learned.Token
	for _, t := range verified {
		dec, err := t.Decimals.Int64()
		if err != nil || dec < 0 || dec > 36 || t.Symbol == "" || !validAddress(sol, t.ID) {
			continue
		}
		out = append(out, &learned.Token{Chain: sol.Name, AddressKey: t.ID, Address: t.ID, Ticker: clip(t.Symbol, 32),
			Name: clip(t.Name, 100), Decimals: int(dec), MarketDataID: ids[sol.CoinGecko+"/"+t.ID],
			Listed: true, Source: "jupiter-verified", UpdatedAt: now})
		rep.Tokens++
	}
	return out, rep
}

// dedupe keeps the first token per chain and address (one batch must not touch a row twice).
func dedupe(ts []*learned.Token) []*learned.Token {
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

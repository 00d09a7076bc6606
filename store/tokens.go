package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"
)

// Token is a token learned beyond the embedded registry: from a public token list (Listed),
// from on-chain metadata, or from a provider's token API. Addresses are compared by
// AddressKey (lowercase hex on EVM chains, the mint as is on Solana).
type Token struct {
	bun.BaseModel `bun:"table:tokens"`

	Chain        string    `bun:"chain,pk"`
	AddressKey   string    `bun:"address_key,pk"`
	Address      string    `bun:"address,notnull"`
	Ticker       string    `bun:"ticker,notnull"`
	Name         string    `bun:"name,notnull"`
	TickerKey    string    `bun:"ticker_key,notnull"`
	NameKey      string    `bun:"name_key,notnull"`
	BaseKey      string    `bun:"base_key,notnull"`
	Decimals     int       `bun:"decimals,notnull"`
	MarketDataID string    `bun:"market_data_id,notnull"`
	Listed       bool      `bun:"listed,notnull"`
	IsSpam       bool      `bun:"is_spam,notnull"`
	SpamReason   string    `bun:"spam_reason,notnull"`
	Source       string    `bun:"source,notnull"`
	UpdatedAt    time.Time `bun:"updated_at,notnull"`
}

// TokenSearchKey is the form tickers and names are matched by: trimmed, lowercase.
func TokenSearchKey(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// TokenBaseKey is a ticker's search key without a bridge suffix: "USDC.e" -> "usdc".
func TokenBaseKey(ticker string) string {
	k := TokenSearchKey(ticker)
	if i := strings.IndexByte(k, '.'); i > 0 {
		return k[:i]
	}
	return k
}

const tokenBatch = 500

// UpsertTokens inserts or refreshes tokens, in batches. A listed row is never overwritten by
// an unlisted one, and a known marketDataId is kept when the newcomer has none.
func (s *Store) UpsertTokens(ctx context.Context, toks []*Token) error {
	for _, t := range toks {
		t.TickerKey, t.NameKey, t.BaseKey = TokenSearchKey(t.Ticker), TokenSearchKey(t.Name), TokenBaseKey(t.Ticker)
		t.UpdatedAt = t.UpdatedAt.UTC().Truncate(time.Microsecond)
	}
	for start := 0; start < len(toks); start += tokenBatch {
		batch := toks[start:min(start+tokenBatch, len(toks))]
		_, err := s.db.NewInsert().Model(&batch).
			On("CONFLICT (chain, address_key) DO UPDATE").
			Set("address = EXCLUDED.address").
			Set("ticker = EXCLUDED.ticker").
			Set("name = EXCLUDED.name").
			Set("ticker_key = EXCLUDED.ticker_key").
			Set("name_key = EXCLUDED.name_key").
			Set("base_key = EXCLUDED.base_key").
			Set("decimals = EXCLUDED.decimals").
			Set("market_data_id = CASE WHEN EXCLUDED.market_data_id <> '' THEN EXCLUDED.market_data_id ELSE ?TableAlias.market_data_id END").
			Set("listed = EXCLUDED.listed").
			Set("is_spam = EXCLUDED.is_spam").
			Set("spam_reason = EXCLUDED.spam_reason").
			Set("source = EXCLUDED.source").
			Set("updated_at = EXCLUDED.updated_at").
			Where("?TableAlias.listed = FALSE OR EXCLUDED.listed = TRUE").
			Exec(ctx)
		if err != nil {
			return fmt.Errorf("upsert tokens: %w", normalize(err))
		}
	}
	return nil
}

// TokenAt returns the learned token at addressKey on chain.
func (s *Store) TokenAt(ctx context.Context, chain, addressKey string) (*Token, error) {
	t := new(Token)
	err := s.db.NewSelect().Model(t).Where("chain = ? AND address_key = ?", chain, addressKey).Scan(ctx)
	if err != nil {
		return nil, normalize(err)
	}
	return t, nil
}

// TokensAt returns the learned tokens at addressKey on any of chains (all chains when empty).
func (s *Store) TokensAt(ctx context.Context, addressKey string, chains ...string) ([]*Token, error) {
	var out []*Token
	q := s.db.NewSelect().Model(&out).Where("address_key = ?", addressKey)
	if len(chains) > 0 {
		q = q.Where("chain IN (?)", bun.List(chains))
	}
	err := q.OrderExpr("chain ASC").Scan(ctx)
	return out, normalize(err)
}

// TokensByKeys returns the learned tokens whose address keys are in keys, on chain.
func (s *Store) TokensByKeys(ctx context.Context, chain string, keys []string) ([]*Token, error) {
	var out []*Token
	if len(keys) == 0 {
		return out, nil
	}
	err := s.db.NewSelect().Model(&out).Where("chain = ? AND address_key IN (?)", chain, bun.List(keys)).Scan(ctx)
	return out, normalize(err)
}

// SearchTokens finds learned tokens whose ticker, name or bridge-less ticker equals term
// (compared by TokenSearchKey), on chain when chain is not empty. Spam comes last, listed
// tokens and tokens with market data first; at most limit rows.
func (s *Store) SearchTokens(ctx context.Context, term, chain string, limit int) ([]*Token, error) {
	key := TokenSearchKey(term)
	var out []*Token
	q := s.db.NewSelect().Model(&out).
		Where("(ticker_key = ? OR name_key = ? OR base_key = ?)", key, key, key)
	if chain != "" {
		q = q.Where("chain = ?", chain)
	}
	err := q.OrderExpr("CASE WHEN is_spam THEN 1 ELSE 0 END ASC").
		OrderExpr("CASE WHEN listed THEN 0 ELSE 1 END ASC").
		OrderExpr("CASE WHEN market_data_id = '' THEN 1 ELSE 0 END ASC").
		OrderExpr("chain ASC, ticker ASC, address_key ASC").
		Limit(int64(limit)).Scan(ctx)
	return out, normalize(err)
}

// CountTokens counts learned tokens (all, and listed ones).
func (s *Store) CountTokens(ctx context.Context) (all, listed int64, err error) {
	if all, err = s.db.NewSelect().Model((*Token)(nil)).Count(ctx); err != nil {
		return 0, 0, normalize(err)
	}
	listed, err = s.db.NewSelect().Model((*Token)(nil)).Where("listed = TRUE").Count(ctx)
	return all, listed, normalize(err)
}

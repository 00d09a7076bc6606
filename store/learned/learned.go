// Package learned keeps the tokens learned beyond the embedded registry (public token lists,
// market data, on-chain reads), by chain and address and by what they are called.
package learned

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/dberr"
	"github.com/uptrace/bun"
)

// Tokens is the queries of learned tokens.
type Tokens interface {
	// UpsertTokens inserts or refreshes tokens, in batches. A listed row is never overwritten by
	// an unlisted one, and a known marketDataId is kept when the newcomer has none.
	UpsertTokens(ctx context.Context, toks []*Token) error
	// TokenAt returns the learned token at addressKey on chain.
	TokenAt(ctx context.Context, chain, addressKey string) (*Token, error)
	// TokensAt returns the learned tokens at addressKey on any of chains (all chains when empty).
	TokensAt(ctx context.Context, addressKey string, chains ...string) ([]*Token, error)
	// TokensByKeys returns the learned tokens whose address keys are in keys, on chain.
	TokensByKeys(ctx context.Context, chain string, keys []string) ([]*Token, error)
	// SearchTokens finds learned tokens whose ticker, name or bridge-less ticker equals term
	// (compared by SearchKey), on chain when chain is not empty. Spam comes last, listed
	// tokens and tokens with market data first; at most limit rows.
	SearchTokens(ctx context.Context, term, chain string, limit int) ([]*Token, error)
	// CountTokens counts learned tokens (all, and listed ones).
	CountTokens(ctx context.Context) (all, listed int64, err error)
}

// New returns the learned-token queries of st.
func New(st *store.Store) Tokens { return &queries{st: st, db: st.DB(), postgres: st.Postgres()} }

type queries struct {
	st       *store.Store
	db       *bun.DB
	postgres bool
}

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

// SearchKey is the form tickers and names are matched by: trimmed, lowercase.
func SearchKey(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// BaseKey is a ticker's search key without a bridge suffix: "USDC.e" -> "usdc".
func BaseKey(ticker string) string {
	k := SearchKey(ticker)
	if i := strings.IndexByte(k, '.'); i > 0 {
		return k[:i]
	}
	return k
}

const tokenBatch = 500

// UpsertTokens inserts or refreshes tokens, in batches. A listed row is never overwritten by
// an unlisted one, and a known marketDataId is kept when the newcomer has none.
func (s *queries) UpsertTokens(ctx context.Context, toks []*Token) error {
	for _, t := range toks {
		t.TickerKey, t.NameKey, t.BaseKey = SearchKey(t.Ticker), SearchKey(t.Name), BaseKey(t.Ticker)
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
			return fmt.Errorf("upsert tokens: %w", dberr.Normalize(err))
		}
	}
	return nil
}

// TokenAt returns the learned token at addressKey on chain.
func (s *queries) TokenAt(ctx context.Context, chain, addressKey string) (*Token, error) {
	t := new(Token)
	err := s.db.NewSelect().Model(t).Where("chain = ? AND address_key = ?", chain, addressKey).Scan(ctx)
	if err != nil {
		return nil, dberr.Normalize(err)
	}
	return t, nil
}

// TokensAt returns the learned tokens at addressKey on any of chains (all chains when empty).
func (s *queries) TokensAt(ctx context.Context, addressKey string, chains ...string) ([]*Token, error) {
	var out []*Token
	q := s.db.NewSelect().Model(&out).Where("address_key = ?", addressKey)
	if len(chains) > 0 {
		q = q.Where("chain IN (?)", bun.List(chains))
	}
	err := q.OrderExpr("chain ASC").Scan(ctx)
	return out, dberr.Normalize(err)
}

// TokensByKeys returns the learned tokens whose address keys are in keys, on chain.
func (s *queries) TokensByKeys(ctx context.Context, chain string, keys []string) ([]*Token, error) {
	var out []*Token
	if len(keys) == 0 {
		return out, nil
	}
	err := s.db.NewSelect().Model(&out).Where("chain = ? AND address_key IN (?)", chain, bun.List(keys)).Scan(ctx)
	return out, dberr.Normalize(err)
}

// SearchTokens finds learned tokens whose ticker, name or bridge-less ticker equals term
// (compared by SearchKey), on chain when chain is not empty. Spam comes last, listed
// tokens and tokens with market data first; at most limit rows.
func (s *queries) SearchTokens(ctx context.Context, term, chain string, limit int) ([]*Token, error) {
	key := SearchKey(term)
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
	return out, dberr.Normalize(err)
}

// CountTokens counts learned tokens (all, and listed ones).
func (s *queries) CountTokens(ctx context.Context) (all, listed int64, err error) {
	if all, err = s.db.NewSelect().Model((*Token)(nil)).Count(ctx); err != nil {
		return 0, 0, dberr.Normalize(err)
	}
	listed, err = s.db.NewSelect().Model((*Token)(nil)).Where("listed = TRUE").Count(ctx)
	return all, listed, dberr.Normalize(err)
}

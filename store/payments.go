package store

import (
	"context"
)

// BookBalance is a ledger book and its sum.
type BookBalance struct {
	Book  string `bun:"book"`
	Micro int64  `bun:"micro"`
}

// BookBalances sums every book whose name starts with prefix.
func (s *Store) BookBalances(ctx context.Context, prefix string) ([]BookBalance, error) {
	var out []BookBalance
	err := s.db.NewRaw(`SELECT book, SUM(amount_micro) AS micro FROM ledger_entries WHERE book LIKE ? GROUP BY book HAVING SUM(amount_micro) <> 0 ORDER BY book`,
		prefix+"%").Scan(ctx, &out)
	return out, normalize(err)
}

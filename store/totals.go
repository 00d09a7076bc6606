package store

import (
	"context"

	"github.com/uptrace/bun"
)

// Totals is the money the service holds for monitoring: every account's credit summed, and
// the balances of named ledger books (micro-USD).
type Totals struct {
	AvailableMicro int64
	ReservedMicro  int64
	Books          map[string]int64 // each book asked for; 0 when it has no entries
}

// LedgerTotals reads the totals (read-only). The credit sums scan one row per account, the
// book sums use the ledger's book index, so it is cheap enough to read at a metrics scrape.
func (s *Store) LedgerTotals(ctx context.Context, books ...string) (Totals, error) {
	t := Totals{Books: make(map[string]int64, len(books))}
	if err := s.db.NewSelect().Model((*CreditAccount)(nil)).
		ColumnExpr("COALESCE(SUM(available_micro), 0), COALESCE(SUM(reserved_micro), 0)").
		Scan(ctx, &t.AvailableMicro, &t.ReservedMicro); err != nil {
		return t, normalize(err)
	}
	for _, b := range books {
		t.Books[b] = 0
	}
	if len(books) == 0 {
		return t, nil
	}
	var sums []BookBalance
	if err := s.db.NewSelect().Model((*LedgerEntry)(nil)).ColumnExpr("book, SUM(amount_micro) AS micro").
		Where("book IN (?)", bun.List(books)).Group("book").Scan(ctx, &sums); err != nil {
		return t, normalize(err)
	}
	for _, b := range sums {
		t.Books[b.Book] = b.Micro
	}
	return t, nil
}

package store

import (
	"context"
	"time"

	"github.com/uptrace/bun"
)

// Payout states.
const (
	PayoutPending = "pending" // its amount left the partner's book; the transfer may be on its way (tx set once signed)
	PayoutDone    = "done"
	PayoutFailed  = "failed" // never reached the chain; the amount went back to the partner's book
)

// Payout is one stablecoin transfer of a partner's accrued fees.
type Payout struct {
	bun.BaseModel `bun:"table:payouts"`

	ID           string    `bun:"id,pk"`
	Book         string    `bun:"book,notnull"`
	ChainID      int64     `bun:"chain_id,notnull"`
	Address      string    `bun:"address,notnull"`
	AmountAtomic int64     `bun:"amount_atomic,notnull"`
	State        string    `bun:"state,notnull"`
	Tx           string    `bun:"tx,notnull"`
	Reason       string    `bun:"reason,notnull"`
	CreatedAt    time.Time `bun:"created_at,notnull"`
	UpdatedAt    time.Time `bun:"updated_at,notnull"`
}

// InsertPayout writes a payout inside q's transaction.
func (q *Q) InsertPayout(ctx context.Context, p *Payout) error {
	if err := q.flush(ctx); err != nil {
		return err
	}
	_, err := q.tx.NewInsert().Model(p).Exec(ctx)
	return err
}

// UpdatePayout writes a payout's state, tx and reason.
func (s *Store) UpdatePayout(ctx context.Context, p *Payout) error {
	_, err := s.db.NewUpdate().Model(p).Column("state", "tx", "reason", "updated_at").WherePK().Exec(ctx)
	return normalize(err)
}

// MovePayout moves a payout from state `from` to p.State, writing its tx and reason, inside
// q's transaction; moved is false when it was not in `from` (another run moved it first).
func (q *Q) MovePayout(ctx context.Context, p *Payout, from string) (moved bool, _ error) {
	res, err := q.execNow(ctx, q.tx.NewUpdate().Model(p).Column("state", "tx", "reason", "updated_at").
		WherePK().Where("state = ?", from))
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// Payouts lists payouts in a state.
func (s *Store) Payouts(ctx context.Context, state string) ([]*Payout, error) {
	var out []*Payout
	err := s.db.NewSelect().Model(&out).Where("state = ?", state).OrderExpr("created_at ASC").Scan(ctx)
	return out, normalize(err)
}

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

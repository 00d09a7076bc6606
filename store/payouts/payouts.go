// Package payouts keeps the partner payouts (payouts): each stablecoin transfer of a
// partner's accrued per-call fees, from the amount leaving the partner's book to the transfer
// done or failed. Its table's model and statements are its own; what runs inside a caller's
// transaction (Insert, Move) takes the caller's *store.Q.
package payouts

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/dberr"
)

// Payout states.
const (
	Pending = "pending" // its amount left the partner's book; the transfer may be on its way (tx set once signed)
	Done    = "done"
	Failed  = "failed" // never reached the chain; the amount went back to the partner's book
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

// Payouts are the queries of payouts outside a caller's transaction.
type Payouts interface {
	// Update writes a payout's state, tx and reason.
	Update(ctx context.Context, p *Payout) error
	// In lists payouts in a state, oldest first.
	In(ctx context.Context, state string) ([]*Payout, error)
}

// New is the payouts of st.
func New(st *store.Store) Payouts { return payouts{db: st.DB()} }

type payouts struct{ db *bun.DB }

func (s payouts) Update(ctx context.Context, p *Payout) error {
	_, err := s.db.NewUpdate().Model(p).Column("state", "tx", "reason", "updated_at").WherePK().Exec(ctx)
	return dberr.Normalize(err)
}

func (s payouts) In(ctx context.Context, state string) ([]*Payout, error) {
	var out []*Payout
	err := s.db.NewSelect().Model(&out).Where("state = ?", state).OrderExpr("created_at ASC").Scan(ctx)
	return out, dberr.Normalize(err)
}

// Insert writes a payout inside the caller's transaction q.
func Insert(ctx context.Context, q *store.Q, p *Payout) error {
	tx, err := q.Tx(ctx)
	if err != nil {
		return err
	}
	_, err = tx.NewInsert().Model(p).Exec(ctx)
	return err
}

// Move moves a payout from state `from` to p.State, writing its tx and reason, inside the
// caller's transaction q; moved is false when it was not in `from` (another run moved it
// first).
func Move(ctx context.Context, q *store.Q, p *Payout, from string) (moved bool, _ error) {
	tx, err := q.Tx(ctx)
	if err != nil {
		return false, err
	}
	res, err := tx.NewUpdate().Model(p).Column("state", "tx", "reason", "updated_at").
		WherePK().Where("state = ?", from).Exec(ctx)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// Package flatpay keeps flat-fee calls' on-chain payments (flat_payments): each one's
// EIP-3009 authorization from its quote through escrow to its settlement or refund. Its
// table's model and statements are its own; what runs inside a caller's transaction (Insert,
// Move) takes the caller's *store.Q.
package flatpay

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/dberr"
)

// Flat-fee payment states: quoted (the caller has a quote), submitted (the relayer is putting
// the authorization on chain), held (in escrow), settled (split to partner and treasury),
// refunded (returned to the payer), failed (never reached the chain: nothing was taken).
const (
	Quoted    = "quoted"
	Submitted = "submitted"
	Held      = "held"
	Settled   = "settled"
	Refunded  = "refunded"
	Failed    = "failed"
)

// FlatPayment is one flat-fee call's on-chain payment.
type FlatPayment struct {
	bun.BaseModel `bun:"table:flat_payments"`

	RequestID      string    `bun:"request_id,pk"`
	AccountID      string    `bun:"account_id,notnull"`
	IntentID       string    `bun:"intent_id,notnull"`
	ChainID        int64     `bun:"chain_id,notnull"`
	Token          string    `bun:"token,notnull"`
	PayerContract  string    `bun:"payer_contract,notnull"`
	PartnerAddress string    `bun:"partner_address,notnull"`
	AmountAtomic   int64     `bun:"amount_atomic,notnull"`
	PartnerAtomic  int64     `bun:"partner_atomic,notnull"`
	PlatformAtomic int64     `bun:"platform_atomic,notnull"`
	Nonce          string    `bun:"nonce,notnull"`
	ValidAfter     int64     `bun:"valid_after,notnull"`
	ValidBefore    int64     `bun:"valid_before,notnull"`
	State          string    `bun:"state,notnull"`
	PayerAddress   string    `bun:"payer_address,notnull"`
	PayTx          string    `bun:"pay_tx,notnull"`
	CloseTx        string    `bun:"close_tx,notnull"`
	Reason         string    `bun:"reason,notnull"`
	CreatedAt      time.Time `bun:"created_at,notnull"`
	UpdatedAt      time.Time `bun:"updated_at,notnull"`
}

// Payments are the queries of flat-fee payments outside a caller's transaction.
type Payments interface {
	// Get returns the payment of a request (store.ErrNotFound: none).
	Get(ctx context.Context, requestID string) (*FlatPayment, error)
	// In lists payments in a state last changed before `before`, oldest first.
	In(ctx context.Context, state string, before time.Time, limit int) ([]*FlatPayment, error)
}

// New is the flat-fee payments of st.
func New(st *store.Store) Payments { return payments{db: st.DB()} }

type payments struct{ db *bun.DB }

func (s payments) Get(ctx context.Context, requestID string) (*FlatPayment, error) {
	p := new(FlatPayment)
	if err := s.db.NewSelect().Model(p).Where("request_id = ?", requestID).Scan(ctx); err != nil {
		return nil, dberr.Normalize(err)
	}
	return p, nil
}

func (s payments) In(ctx context.Context, state string, before time.Time, limit int) ([]*FlatPayment, error) {
	var out []*FlatPayment
	err := s.db.NewSelect().Model(&out).Where("state = ? AND updated_at < ?", state, before).
		OrderExpr("updated_at ASC").Limit(int64(limit)).Scan(ctx)
	return out, dberr.Normalize(err)
}

// Insert writes a quoted payment inside the caller's transaction q.
func Insert(ctx context.Context, q *store.Q, p *FlatPayment) error {
	tx, err := q.Tx(ctx)
	if err != nil {
		return err
	}
	_, err = tx.NewInsert().Model(p).Exec(ctx)
	return err
}

// Move moves a payment from one of `from` to p.State, writing p's chain fields, inside the
// caller's transaction q; moved is false when it was in none of them (another process moved it
// first).
func Move(ctx context.Context, q *store.Q, p *FlatPayment, from ...string) (moved bool, _ error) {
	tx, err := q.Tx(ctx)
	if err != nil {
		return false, err
	}
	res, err := tx.NewUpdate().Model(p).Column("state", "payer_address", "nonce", "pay_tx", "close_tx", "reason", "updated_at").
		WherePK().Where("state IN (?)", bun.List(from)).Exec(ctx)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// Package topups keeps the credit top-ups (credit_topup): each purchase of credit with an
// EIP-3009 transfer to the treasury, from its quote to its credit. Its table's model and
// statements are its own; what runs inside a caller's transaction (Move) takes the caller's
// *store.Q.
package topups

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/dberr"
)

// Top-up states: quoted (the caller has a requirement to pay), submitted (an authorization is
// claimed for it and on its way to the chain), credited (the transfer has its confirmations
// and the credit is booked), failed (the authorization never reached the chain: nothing was
// taken).
const (
	Quoted    = "quoted"
	Submitted = "submitted"
	Credited  = "credited"
	Failed    = "failed"
)

// CreditTopup is one purchase of credit with an EIP-3009 transfer to the treasury.
type CreditTopup struct {
	bun.BaseModel `bun:"table:credit_topups"`

	RequestID    string    `bun:"request_id,pk"`
	AccountID    string    `bun:"account_id,notnull"`
	KeyID        string    `bun:"key_id,notnull"` // the key that asked, then the one that paid ("" for a portal session)
	ChainID      int64     `bun:"chain_id,notnull"`
	Token        string    `bun:"token,notnull"`
	PayTo        string    `bun:"pay_to,notnull"`
	AmountAtomic int64     `bun:"amount_atomic,notnull"` // = micro-USD: the stablecoin has 6 decimals
	ValidBefore  int64     `bun:"valid_before,notnull"`  // the quote's expiry (unix seconds)
	State        string    `bun:"state,notnull"`
	PayerAddress string    `bun:"payer_address,notnull"`
	Nonce        string    `bun:"nonce,notnull"`
	PayTx        string    `bun:"pay_tx,notnull"`
	AuthBefore   int64     `bun:"auth_before,notnull"` // the claimed authorization's validBefore: unused after it, it can never land
	Reason       string    `bun:"reason,notnull"`
	CreatedAt    time.Time `bun:"created_at,notnull"`
	UpdatedAt    time.Time `bun:"updated_at,notnull"`
}

// Topups are the queries of credit top-ups outside a caller's transaction.
type Topups interface {
	// Insert writes a quoted top-up (store.ErrConflict: its request id is taken).
	Insert(ctx context.Context, t *CreditTopup) error
	// Get returns a top-up by its request id (store.ErrNotFound: none).
	Get(ctx context.Context, requestID string) (*CreditTopup, error)
	// ByAuthorization returns the top-up that claimed the authorization (payer, nonce) on
	// chainID (store.ErrNotFound: none did).
	ByAuthorization(ctx context.Context, chainID int64, payer, nonce string) (*CreditTopup, error)
	// In lists top-ups in a state last changed before `before`, oldest first.
	In(ctx context.Context, state string, before time.Time, limit int) ([]*CreditTopup, error)
}

// New is the top-ups of st.
func New(st *store.Store) Topups { return topups{db: st.DB()} }

type topups struct{ db *bun.DB }

func (s topups) Insert(ctx context.Context, t *CreditTopup) error {
	_, err := s.db.NewInsert().Model(t).Exec(ctx)
	return dberr.Normalize(err)
}

func (s topups) Get(ctx context.Context, requestID string) (*CreditTopup, error) {
	t := new(CreditTopup)
	if err := s.db.NewSelect().Model(t).Where("request_id = ?", requestID).Scan(ctx); err != nil {
		return nil, dberr.Normalize(err)
	}
	return t, nil
}

func (s topups) ByAuthorization(ctx context.Context, chainID int64, payer, nonce string) (*CreditTopup, error) {
	t := new(CreditTopup)
	if err := s.db.NewSelect().Model(t).Where("chain_id = ? AND payer_address = ? AND nonce = ?", chainID, payer, nonce).Scan(ctx); err != nil {
		return nil, dberr.Normalize(err)
	}
	return t, nil
}

func (s topups) In(ctx context.Context, state string, before time.Time, limit int) ([]*CreditTopup, error) {
	var out []*CreditTopup
	err := s.db.NewSelect().Model(&out).Where("state = ? AND updated_at < ?", state, before).
		OrderExpr("updated_at ASC").Limit(int64(limit)).Scan(ctx)
	return out, dberr.Normalize(err)
}

// Move moves a top-up from one of `from` to t.State, writing its chain fields, in the caller's
// transaction q; moved is false when it was in none of them (another process moved it first).
// A second top-up claiming an authorization already claimed is store.ErrConflict.
func Move(ctx context.Context, q *store.Q, t *CreditTopup, from ...string) (moved bool, _ error) {
	tx, err := q.Tx(ctx)
	if err != nil {
		return false, err
	}
	res, err := tx.NewUpdate().Model(t).Column("state", "key_id", "payer_address", "nonce", "pay_tx", "auth_before", "reason", "updated_at").
		WherePK().Where("state IN (?)", bun.List(from)).Exec(ctx)
	if err != nil {
		return false, dberr.Normalize(err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// Package connected keeps the watch-only wallets an account connects by address: they count
// in its balances, and Switchboard holds no key for them.
package connected

import (
	"context"
	"errors"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/dberr"
	"github.com/uptrace/bun"
)

// ErrLimitReached is returned when an account already holds as many connected wallets as allowed.
var ErrLimitReached = errors.New("limit reached")

// Wallets are the queries of connected wallets.
type Wallets interface {
	// AddConnectedWallet stores w unless the account already has max connected wallets
	// (ErrLimitReached) or this one (ErrConflict).
	AddConnectedWallet(ctx context.Context, w *Wallet, max int) error
	// ConnectedWallets lists an account's connected wallets, oldest first.
	ConnectedWallets(ctx context.Context, accountID string) ([]*Wallet, error)
	// ConnectedWalletAt returns the account's connected wallet at addressKey, or ErrNotFound.
	ConnectedWalletAt(ctx context.Context, accountID, addressKey string) (*Wallet, error)
	// RemoveConnectedWallet deletes the account's connected wallet at addressKey and returns
	// it; ErrNotFound when there is none (another account's wallet is none).
	RemoveConnectedWallet(ctx context.Context, accountID, addressKey string) (*Wallet, error)
}

// New returns the connected-wallet queries of st.
func New(st *store.Store) Wallets { return &queries{st: st, db: st.DB()} }

// queries is Wallets on the store's database.
type queries struct {
	st *store.Store
	db *bun.DB
}

// Wallet is a watch-only wallet an account added by address: it counts in the
// account's balances, and Switchboard holds no key for it.
type Wallet struct {
	bun.BaseModel `bun:"table:connected_wallets"`

	ID         string    `bun:"id,pk"`
	AccountID  string    `bun:"account_id,notnull"`
	Family     string    `bun:"family,notnull"`
	Address    string    `bun:"address,notnull"`
	AddressKey string    `bun:"address_key,notnull"`
	Label      string    `bun:"label,notnull"`
	CreatedAt  time.Time `bun:"created_at,notnull"`
}

func (s *queries) AddConnectedWallet(ctx context.Context, w *Wallet, max int) error {
	w.CreatedAt = w.CreatedAt.UTC().Truncate(time.Microsecond)
	return s.st.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		n, err := tx.NewSelect().Model((*Wallet)(nil)).Where("account_id = ?", w.AccountID).Count(ctx)
		if err != nil {
			return err
		}
		if n >= int64(max) {
			return ErrLimitReached
		}
		_, err = tx.NewInsert().Model(w).Exec(ctx)
		return dberr.Normalize(err)
	})
}

func (s *queries) ConnectedWallets(ctx context.Context, accountID string) ([]*Wallet, error) {
	out := []*Wallet{}
	err := s.db.NewSelect().Model(&out).Where("account_id = ?", accountID).
		OrderExpr("created_at ASC, id ASC").Scan(ctx)
	return out, dberr.Normalize(err)
}

func (s *queries) ConnectedWalletAt(ctx context.Context, accountID, addressKey string) (*Wallet, error) {
	w := new(Wallet)
	err := s.db.NewSelect().Model(w).Where("account_id = ? AND address_key = ?", accountID, addressKey).Scan(ctx)
	if err != nil {
		return nil, dberr.Normalize(err)
	}
	return w, nil
}

func (s *queries) RemoveConnectedWallet(ctx context.Context, accountID, addressKey string) (*Wallet, error) {
	w := new(Wallet)
	err := s.st.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if err := tx.NewSelect().Model(w).Where("account_id = ? AND address_key = ?", accountID, addressKey).Scan(ctx); err != nil {
			return err
		}
		_, err := tx.NewDelete().Model((*Wallet)(nil)).Where("id = ?", w.ID).Exec(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	return w, nil
}

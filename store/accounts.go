package store

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/switchboard-hq/switchboard/store/watch"
)

// Account is an agent's account, created at e-mail verification.
type Account struct {
	bun.BaseModel `bun:"table:accounts"`

	ID             string    `bun:"id,pk"`
	Email          string    `bun:"email,notnull"`
	SigningEnabled bool      `bun:"signing_enabled,notnull"`
	Tier           string    `bun:"tier,notnull,default:'standard'"` // the fee tier the operator set (billing's platform basis points)
	CreatedAt      time.Time `bun:"created_at,notnull"`
}

// DefaultTier is the fee tier of a new account (the migration's column default).
const DefaultTier = "standard"

// SetTier sets an account's fee tier; ErrNotFound when there is no such account.
func (s *Store) SetTier(ctx context.Context, accountID, tier string) error {
	err := s.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewUpdate().Model((*Account)(nil)).Set("tier = ?", tier).Where("id = ?", accountID).Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return ErrNotFound
		}
		return s.watch.Announce(ctx, tx, watch.TierChange, accountID)
	})
	if err != nil {
		return normalize(err)
	}
	s.changed(watch.TierChange, accountID)
	return nil
}

// Wallet families.
const (
	FamilyEVM = "evm"
	FamilySVM = "svm"
)

// Wallet is an embedded self-custody wallet. SealedKey is the private key encrypted under the
// master key named by MasterKeyID; the plaintext never reaches the database.
type Wallet struct {
	bun.BaseModel `bun:"table:wallets"`

	ID          string    `bun:"id,pk"`
	AccountID   string    `bun:"account_id,notnull"`
	Family      string    `bun:"family,notnull"`
	Address     string    `bun:"address,notnull"`
	SealedKey   []byte    `bun:"sealed_key,notnull"`
	MasterKeyID string    `bun:"master_key_id,notnull"`
	CreatedAt   time.Time `bun:"created_at,notnull"`
}

// CreateOption adds to the account-creating transaction (e.g. billing's starting credit).
type CreateOption func(ctx context.Context, q *Q, acct *Account) error

// CreateAccount writes an account, its wallets and its first key (nil: none) in one transaction.
func (s *Store) CreateAccount(ctx context.Context, acct *Account, wallets []*Wallet, key *APIKey, opts ...CreateOption) error {
	if acct.Tier == "" {
		acct.Tier = DefaultTier
	}
	return s.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewInsert().Model(acct).Exec(ctx); err != nil {
			return fmt.Errorf("insert account: %w", err)
		}
		for _, w := range wallets {
			if _, err := tx.NewInsert().Model(w).Exec(ctx); err != nil {
				return fmt.Errorf("insert %s wallet: %w", w.Family, err)
			}
		}
		if key != nil { // a human signing in to the portal gets an account but no key
			if _, err := tx.NewInsert().Model(key).Exec(ctx); err != nil {
				return fmt.Errorf("insert api key: %w", err)
			}
		}
		for _, opt := range opts {
			if opt == nil {
				continue
			}
			q := &Q{tx: tx, store: s}
			if err := opt(ctx, q, acct); err != nil {
				return err
			}
			if err := q.flush(ctx); err != nil {
				return err
			}
		}
		return nil
	})
}

// AccountByEmail finds an account by its normalized e-mail address.
func (s *Store) AccountByEmail(ctx context.Context, email string) (*Account, error) {
	acct := new(Account)
	err := s.db.NewSelect().Model(acct).Where("email = ?", email).Scan(ctx)
	if err != nil {
		return nil, normalize(err)
	}
	return acct, nil
}

// AccountByID finds an account by id.
func (s *Store) AccountByID(ctx context.Context, id string) (*Account, error) {
	acct := new(Account)
	if err := s.db.NewSelect().Model(acct).Where("id = ?", id).Scan(ctx); err != nil {
		return nil, normalize(err)
	}
	return acct, nil
}

// TierOf returns an account's fee tier.
func (s *Store) TierOf(ctx context.Context, accountID string) (string, error) {
	var tier string
	if err := s.db.NewSelect().Model((*Account)(nil)).Column("tier").Where("id = ?", accountID).Scan(ctx, &tier); err != nil {
		return "", normalize(err)
	}
	return tier, nil
}

// Wallets lists an account's wallets, EVM first.
func (s *Store) Wallets(ctx context.Context, accountID string) ([]*Wallet, error) {
	var ws []*Wallet
	err := s.db.NewSelect().Model(&ws).Where("account_id = ?", accountID).OrderExpr("family ASC").Scan(ctx)
	return ws, normalize(err)
}

// SetSigning turns signing on the account's behalf on or off.
func (s *Store) SetSigning(ctx context.Context, accountID string, on bool) error {
	res, err := s.db.NewUpdate().Model((*Account)(nil)).Set("signing_enabled = ?", on).Where("id = ?", accountID).Exec(ctx)
	if err != nil {
		return normalize(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return ErrNotFound
	}
	return nil
}

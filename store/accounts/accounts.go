// Package accounts keeps the agents' accounts (accounts), their embedded wallets (wallets) and
// their API keys (api_keys): each account from its creation at e-mail verification, its fee
// tier and signing switch, its wallets and their re-seal under a new master key, and its keys'
// trees from mint to revocation. Its tables' models and statements are its own; what runs
// inside a caller's transaction (RevokeTree, a CreateOption) takes the caller's *store.Q.
package accounts

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/dberr"
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
type CreateOption func(ctx context.Context, q *store.Q, acct *Account) error

// Accounts are the queries of accounts, their wallets and their keys outside a caller's
// transaction (each write that needs one runs its own).
type Accounts interface {
	// Create writes an account, its wallets and its first key (nil: none) in one transaction.
	Create(ctx context.Context, acct *Account, wallets []*Wallet, key *APIKey, opts ...CreateOption) error
	// ByEmail finds an account by its normalized e-mail address.
	ByEmail(ctx context.Context, email string) (*Account, error)
	// ByID finds an account by id.
	ByID(ctx context.Context, id string) (*Account, error)
	// TierOf returns an account's fee tier.
	TierOf(ctx context.Context, accountID string) (string, error)
	// SetTier sets an account's fee tier; store.ErrNotFound when there is no such account.
	SetTier(ctx context.Context, accountID, tier string) error
	// SetSigning turns signing on the account's behalf on or off.
	SetSigning(ctx context.Context, accountID string, on bool) error
	// Wallets lists an account's wallets, EVM first.
	Wallets(ctx context.Context, accountID string) ([]*Wallet, error)

	// CreateKey inserts a key, with the events it causes (the webhook outbox) in its transaction.
	CreateKey(ctx context.Context, key *APIKey, events ...*store.WebhookEvent) error
	// MintKey inserts a key unless its account already holds maxLive live keys (ErrTooManyKeys)
	// or its parent is revoked (ErrParentRevoked), with the events it causes in its transaction.
	MintKey(ctx context.Context, key *APIKey, maxLive int, events ...*store.WebhookEvent) error
	// KeyByID returns a key.
	KeyByID(ctx context.Context, id string) (*APIKey, error)
	// KeyByHash finds a key (revoked or not) by the hash of its secret.
	KeyByHash(ctx context.Context, hash string) (*APIKey, error)
	// Keys lists an account's keys, oldest first.
	Keys(ctx context.Context, accountID string) ([]*APIKey, error)
	// KeyAncestors returns the keys above a key in its tree, nearest first (none for a root).
	KeyAncestors(ctx context.Context, key *APIKey) ([]*APIKey, error)
	// KeyUnder reports whether the account's key keyID is root or was minted under it, at any
	// depth.
	KeyUnder(ctx context.Context, accountID, keyID, root string) (bool, error)
	// RevokeKey marks an account's key revoked at now, with every live key minted under it,
	// and returns it (store.ErrNotFound: another account's key).
	RevokeKey(ctx context.Context, accountID, keyID string, now time.Time, events func(revoked []string) ([]*store.WebhookEvent, error)) (*APIKey, error)
	// TouchKeys records when keys were last used, in one statement.
	TouchKeys(ctx context.Context, uses map[string]time.Time) error

	// WalletsSealedElsewhere returns up to limit wallets sealed under a master key other than
	// current, ids after `after` in id order.
	WalletsSealedElsewhere(ctx context.Context, current, after string, limit int) ([]*Wallet, error)
	// ResealWallet stores a wallet's key sealed again under master key `to`, if the row is
	// still sealed under `from`.
	ResealWallet(ctx context.Context, id, from string, sealed []byte, to string) (bool, error)
	// SealedElsewhere counts the wallets and service keys still sealed under a master key
	// other than current.
	SealedElsewhere(ctx context.Context, current string) (wallets, serviceKeys int, err error)
}

// New is the accounts of st. It reads nothing of st until a query runs (as spending.New):
// billing's price tests build their service on no store.
func New(st *store.Store) Accounts { return &queries{st: st} }

// queries is Accounts on the store's database.
type queries struct{ st *store.Store }

func (s *queries) db() *bun.DB { return s.st.DB() }

// SetTier sets an account's fee tier; ErrNotFound when there is no such account.
func (s *queries) SetTier(ctx context.Context, accountID, tier string) error {
	err := s.st.InTx(ctx, func(ctx context.Context, q *store.Q) error {
		tx, err := q.Tx(ctx)
		if err != nil {
			return err
		}
		res, err := tx.NewUpdate().Model((*Account)(nil)).Set("tier = ?", tier).Where("id = ?", accountID).Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return dberr.ErrNotFound
		}
		return q.Announce(ctx, watch.TierChange, accountID)
	})
	return dberr.Normalize(err)
}

// Create writes an account, its wallets and its first key (nil: none) in one transaction.
// Each option runs on the transaction's Q and what it queued is sent before the next one runs
// (q.Tx sends it).
func (s *queries) Create(ctx context.Context, acct *Account, wallets []*Wallet, key *APIKey, opts ...CreateOption) error {
	if acct.Tier == "" {
		acct.Tier = DefaultTier
	}
	return s.st.InTx(ctx, func(ctx context.Context, q *store.Q) error {
		tx, err := q.Tx(ctx)
		if err != nil {
			return err
		}
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
			if err := opt(ctx, q, acct); err != nil {
				return err
			}
			if _, err := q.Tx(ctx); err != nil {
				return err
			}
		}
		return nil
	})
}

// ByEmail finds an account by its normalized e-mail address.
func (s *queries) ByEmail(ctx context.Context, email string) (*Account, error) {
	acct := new(Account)
	err := s.db().NewSelect().Model(acct).Where("email = ?", email).Scan(ctx)
	if err != nil {
		return nil, dberr.Normalize(err)
	}
	return acct, nil
}

// ByID finds an account by id.
func (s *queries) ByID(ctx context.Context, id string) (*Account, error) {
	acct := new(Account)
	if err := s.db().NewSelect().Model(acct).Where("id = ?", id).Scan(ctx); err != nil {
		return nil, dberr.Normalize(err)
	}
	return acct, nil
}

// TierOf returns an account's fee tier.
func (s *queries) TierOf(ctx context.Context, accountID string) (string, error) {
	var tier string
	if err := s.db().NewSelect().Model((*Account)(nil)).Column("tier").Where("id = ?", accountID).Scan(ctx, &tier); err != nil {
		return "", dberr.Normalize(err)
	}
	return tier, nil
}

// Wallets lists an account's wallets, EVM first.
func (s *queries) Wallets(ctx context.Context, accountID string) ([]*Wallet, error) {
	var ws []*Wallet
	err := s.db().NewSelect().Model(&ws).Where("account_id = ?", accountID).OrderExpr("family ASC").Scan(ctx)
	return ws, dberr.Normalize(err)
}

// SetSigning turns signing on the account's behalf on or off.
func (s *queries) SetSigning(ctx context.Context, accountID string, on bool) error {
	res, err := s.db().NewUpdate().Model((*Account)(nil)).Set("signing_enabled = ?", on).Where("id = ?", accountID).Exec(ctx)
	if err != nil {
		return dberr.Normalize(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return dberr.ErrNotFound
	}
	return nil
}

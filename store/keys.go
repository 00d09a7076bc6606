package store

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// APIKey is a key's metadata. Only the SHA-256 hash of the secret is stored.
type APIKey struct {
	bun.BaseModel `bun:"table:api_keys"`

	ID                 string     `bun:"id,pk"`
	AccountID          string     `bun:"account_id,notnull"`
	Name               string     `bun:"name,notnull"`
	Prefix             string     `bun:"prefix,notnull"`
	Hash               string     `bun:"hash,notnull"`
	Scopes             []string   `bun:"scopes,notnull,type:text"`
	SpendLimitMicro    int64      `bun:"spend_limit_micro,notnull"`
	RateLimitPerMinute int        `bun:"rate_limit_per_minute,notnull"`
	CreatedAt          time.Time  `bun:"created_at,notnull"`
	LastUsedAt         *time.Time `bun:"last_used_at"`
	RevokedAt          *time.Time `bun:"revoked_at"`
	IntegrationID      *string    `bun:"integration_id"` // issued on an integration's /connect page
}

// HasScope reports whether the key carries scope.
func (k *APIKey) HasScope(scope string) bool {
	for _, s := range k.Scopes {
		if s == scope {
			return true
		}
	}
	return false
}

// CreateKey inserts a key.
func (s *Store) CreateKey(ctx context.Context, key *APIKey) error {
	_, err := s.db.NewInsert().Model(key).Exec(ctx)
	return normalize(err)
}

// KeyByHash finds a key (revoked or not) by the hash of its secret.
func (s *Store) KeyByHash(ctx context.Context, hash string) (*APIKey, error) {
	key := new(APIKey)
	if err := s.db.NewSelect().Model(key).Where("hash = ?", hash).Scan(ctx); err != nil {
		return nil, normalize(err)
	}
	return key, nil
}

// Keys lists an account's keys, oldest first.
func (s *Store) Keys(ctx context.Context, accountID string) ([]*APIKey, error) {
	var keys []*APIKey
	err := s.db.NewSelect().Model(&keys).Where("account_id = ?", accountID).
		OrderExpr("created_at ASC, id ASC").Scan(ctx)
	return keys, normalize(err)
}

// RevokeKey marks an account's key revoked at now and returns it. Revoking a revoked key
// keeps its first revocation time. Another account's key is ErrNotFound.
func (s *Store) RevokeKey(ctx context.Context, accountID, keyID string, now time.Time) (*APIKey, error) {
	key := new(APIKey)
	err := s.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewUpdate().Model((*APIKey)(nil)).
			Set("revoked_at = ?", now).
			Where("id = ? AND account_id = ? AND revoked_at IS NULL", keyID, accountID).
			Exec(ctx); err != nil {
			return fmt.Errorf("revoke key: %w", err)
		}
		return tx.NewSelect().Model(key).Where("id = ? AND account_id = ?", keyID, accountID).Scan(ctx)
	})
	if err != nil {
		return nil, err
	}
	return key, nil
}

// TouchKey records that a key was used. Callers throttle it; it is a write per call otherwise.
func (s *Store) TouchKey(ctx context.Context, keyID string, now time.Time) error {
	_, err := s.db.NewUpdate().Model((*APIKey)(nil)).Set("last_used_at = ?", now).
		Where("id = ?", keyID).Exec(ctx)
	return normalize(err)
}

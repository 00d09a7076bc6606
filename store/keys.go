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
		if err := s.announce(ctx, tx, KeyChange, keyID); err != nil {
			return err
		}
		return tx.NewSelect().Model(key).Where("id = ? AND account_id = ?", keyID, accountID).Scan(ctx)
	})
	if err != nil {
		return nil, err
	}
	s.changed(KeyChange, keyID)
	return key, nil
}

// TouchKeys records when keys were last used, in one statement: each key gets the latest
// time of the batch (callers batch a few seconds of uses), never an earlier one than it has.
func (s *Store) TouchKeys(ctx context.Context, uses map[string]time.Time) error {
	if len(uses) == 0 {
		return nil
	}
	ids := make([]string, 0, len(uses))
	var latest time.Time
	for id, at := range uses {
		ids = append(ids, id)
		if at.After(latest) {
			latest = at
		}
	}
	_, err := s.db.NewUpdate().Model((*APIKey)(nil)).Set("last_used_at = ?", latest).
		Where("id IN (?)", bun.List(ids)).Where("(last_used_at IS NULL OR last_used_at < ?)", latest).Exec(ctx)
	return normalize(err)
}

package accounts

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/dberr"
	"github.com/switchboard-hq/switchboard/store/watch"
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
	ParentID           *string    `bun:"parent_id"`      // the key it was minted from; nil: a root
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

// CreateKey inserts a key, with the events it causes (the webhook outbox) in its transaction.
func (s *queries) CreateKey(ctx context.Context, key *APIKey, events ...*store.WebhookEvent) error {
	return s.st.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewInsert().Model(key).Exec(ctx); err != nil {
			return err
		}
		return store.InsertWebhookEvents(ctx, tx, events)
	})
}

// Why MintKey refuses a key.
var (
	ErrTooManyKeys   = errors.New("the account holds the most live keys it may")
	ErrParentRevoked = errors.New("the key it would be minted from is revoked")
)

// MintKey inserts a key unless its account already holds maxLive live keys (ErrTooManyKeys)
// or its parent is revoked (ErrParentRevoked). The account's row is locked first, as
// RevokeKey locks it, so concurrent mints and revocations of one account's keys queue: no
// count is passed, and no key is minted under a revoked one. The events it causes (the webhook
// outbox) are written in its transaction.
func (s *queries) MintKey(ctx context.Context, key *APIKey, maxLive int, events ...*store.WebhookEvent) error {
	return s.st.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if err := lockAccountKeys(ctx, tx, key.AccountID); err != nil {
			return err
		}
		live, err := tx.NewSelect().Model((*APIKey)(nil)).Where("account_id = ? AND revoked_at IS NULL", key.AccountID).Count(ctx)
		if err != nil {
			return err
		}
		if live >= int64(maxLive) {
			return ErrTooManyKeys
		}
		if key.ParentID != nil {
			n, err := tx.NewSelect().Model((*APIKey)(nil)).Where("id = ? AND account_id = ? AND revoked_at IS NULL", *key.ParentID, key.AccountID).Count(ctx)
			if err != nil {
				return err
			}
			if n == 0 {
				return ErrParentRevoked
			}
		}
		if _, err = tx.NewInsert().Model(key).Exec(ctx); err != nil {
			return err
		}
		return store.InsertWebhookEvents(ctx, tx, events)
	})
}

// lockAccountKeys locks the account's row, which every change to the set of its live keys
// takes first (SQLite's write transactions are exclusive already). FOR NO KEY UPDATE
// serialises mints and revocations as well as FOR UPDATE would, without blocking the KEY
// SHARE locks every insert referencing the account takes (its calls' rows). Which database
// it runs on is the transaction's dialect (RevokeTree has only the caller's Q).
func lockAccountKeys(ctx context.Context, tx bun.Tx, accountID string) error {
	if tx.Dialect().Name() != dialect.PG {
		return nil
	}
	_, err := tx.ExecContext(ctx, "SELECT 1 FROM accounts WHERE id = ? FOR NO KEY UPDATE", accountID)
	return err
}

// KeyAncestors returns the keys above a key in its tree, nearest first (none for a root), in
// one query.
func (s *queries) KeyAncestors(ctx context.Context, key *APIKey) ([]*APIKey, error) {
	if key.ParentID == nil {
		return nil, nil
	}
	var up []*APIKey
	// The model's own columns, never *: a later release may add columns this one cannot scan.
	err := s.db().NewSelect().WithRecursive("up", s.db().NewRaw(`SELECT parent_id AS id, 1 AS depth FROM api_keys WHERE id = ?
			UNION ALL SELECT k.parent_id, up.depth + 1 FROM api_keys k JOIN up ON k.id = up.id WHERE k.parent_id IS NOT NULL`, key.ID)).
		Model(&up).Join("JOIN up ON up.id = api_key.id").OrderExpr("up.depth").Scan(ctx)
	return up, dberr.Normalize(err)
}

// KeyByHash finds a key (revoked or not) by the hash of its secret.
func (s *queries) KeyByHash(ctx context.Context, hash string) (*APIKey, error) {
	key := new(APIKey)
	if err := s.db().NewSelect().Model(key).Where("hash = ?", hash).Scan(ctx); err != nil {
		return nil, dberr.Normalize(err)
	}
	return key, nil
}

// Keys lists an account's keys, oldest first.
func (s *queries) Keys(ctx context.Context, accountID string) ([]*APIKey, error) {
	var keys []*APIKey
	err := s.db().NewSelect().Model(&keys).Where("account_id = ?", accountID).
		OrderExpr("created_at ASC, id ASC").Scan(ctx)
	return keys, dberr.Normalize(err)
}

// RevokeKey marks an account's key revoked at now, with every live key minted under it, and
// returns it. Revoking a revoked key keeps its first revocation time. Another account's key
// is ErrNotFound. events, when set, gives the events the revocation causes (the webhook
// outbox), from the ids it revoked (none when the key was revoked already), written in its
// transaction.
func (s *queries) RevokeKey(ctx context.Context, accountID, keyID string, now time.Time, events func(revoked []string) ([]*store.WebhookEvent, error)) (*APIKey, error) {
	key := new(APIKey)
	err := s.st.InTx(ctx, func(ctx context.Context, q *store.Q) error {
		revoked, err := RevokeTree(ctx, q, accountID, keyID, now)
		if err != nil {
			return fmt.Errorf("revoke key: %w", err)
		}
		if events != nil && len(revoked) > 0 {
			evs, err := events(revoked)
			if err != nil {
				return err
			}
			for _, ev := range evs {
				if err := q.InsertWebhookEvent(ctx, ev); err != nil {
					return err
				}
			}
		}
		tx, err := q.Tx(ctx)
		if err != nil {
			return err
		}
		return tx.NewSelect().Model(key).Where("id = ? AND account_id = ?", keyID, accountID).Scan(ctx)
	})
	if err != nil {
		return nil, err
	}
	return key, nil
}

// RevokeTree revokes an account's key and every live key minted under it at now, inside
// q's transaction and under the account's lock, as every change to its live keys; it returns
// the ids it revoked (none when the key was revoked already), announced to every replica when
// the transaction commits (q.Announce).
func RevokeTree(ctx context.Context, q *store.Q, accountID, keyID string, now time.Time) ([]string, error) {
	tx, err := q.Tx(ctx)
	if err != nil {
		return nil, err
	}
	if err := lockAccountKeys(ctx, tx, accountID); err != nil {
		return nil, err
	}
	revoked, err := revokeTree(ctx, tx, accountID, keyID, now)
	if err != nil {
		return nil, err
	}
	return revoked, q.Announce(ctx, watch.KeyChange, revoked...)
}

// KeyUnder reports whether the account's key keyID is root or was minted under it, at any
// depth.
func (s *queries) KeyUnder(ctx context.Context, accountID, keyID, root string) (bool, error) {
	var n int
	err := s.db().NewRaw(`WITH RECURSIVE sub(id) AS (SELECT CAST(? AS TEXT) UNION ALL
		SELECT k.id FROM api_keys k JOIN sub ON k.parent_id = sub.id WHERE k.account_id = ?)
		SELECT COUNT(*) FROM sub WHERE id = ?`, root, accountID, keyID).Scan(ctx, &n)
	return n > 0, dberr.Normalize(err)
}

// revokeTree revokes an account's key and its live descendants at now, returning their ids.
func revokeTree(ctx context.Context, tx bun.Tx, accountID, keyID string, now time.Time) ([]string, error) {
	var ids []string
	if err := tx.NewRaw(`WITH RECURSIVE sub(id) AS (
			SELECT id FROM api_keys WHERE id = ? AND account_id = ?
			UNION ALL SELECT k.id FROM api_keys k JOIN sub ON k.parent_id = sub.id)
		SELECT k.id FROM api_keys k JOIN sub ON k.id = sub.id WHERE k.revoked_at IS NULL`, keyID, accountID).Scan(ctx, &ids); err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, nil
	}
	_, err := tx.NewUpdate().Model((*APIKey)(nil)).Set("revoked_at = ?", now).
		Where("id IN (?) AND revoked_at IS NULL", bun.List(ids)).Exec(ctx)
	return ids, err
}

// TouchKeys records when keys were last used, in one statement: each key gets the latest
// time of the batch (callers batch a few seconds of uses), never an earlier one than it has.
func (s *queries) TouchKeys(ctx context.Context, uses map[string]time.Time) error {
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
	_, err := s.db().NewUpdate().Model((*APIKey)(nil)).Set("last_used_at = ?", latest).
		Where("id IN (?)", bun.List(ids)).Where("(last_used_at IS NULL OR last_used_at < ?)", latest).Exec(ctx)
	return dberr.Normalize(err)
}

// KeyByID returns a key.
func (s *queries) KeyByID(ctx context.Context, id string) (*APIKey, error) {
	k := new(APIKey)
	if err := s.db().NewSelect().Model(k).Where("id = ?", id).Scan(ctx); err != nil {
		return nil, dberr.Normalize(err)
	}
	return k, nil
}

package store

import (
	"context"
	"time"

	"github.com/uptrace/bun"
)

// Service key statuses.
const (
	KeyCurrent  = "current"
	KeyNext     = "next"
	KeyPrevious = "previous"
	KeyRetired  = "retired"
)

// ServiceKey is one of the service's signing keys.
type ServiceKey struct {
	bun.BaseModel `bun:"table:service_keys"`

	KID           string     `bun:"kid,pk"`
	Status        string     `bun:"status,notnull"`
	SealedPrivate []byte     `bun:"sealed_private,notnull"`
	MasterKeyID   string     `bun:"master_key_id,notnull"`
	PublicPEM     string     `bun:"public_pem,notnull"`
	CreatedAt     time.Time  `bun:"created_at,notnull"`
	ActivatedAt   *time.Time `bun:"activated_at"`
}

// ServiceKeys lists the keys that are not retired, current first.
func (s *Store) ServiceKeys(ctx context.Context) ([]*ServiceKey, error) {
	var out []*ServiceKey
	err := s.db.NewSelect().Model(&out).Where("status <> ?", KeyRetired).
		OrderExpr("CASE status WHEN 'current' THEN 0 WHEN 'next' THEN 1 ELSE 2 END, created_at DESC").Scan(ctx)
	return out, normalize(err)
}

// InsertServiceKey writes a key (ErrConflict when its status is taken by a concurrent writer
// is the caller's to avoid: one current, one next).
func (s *Store) InsertServiceKey(ctx context.Context, k *ServiceKey) error {
	_, err := s.db.NewInsert().Model(k).Exec(ctx)
	return normalize(err)
}

// PromoteServiceKey makes next the current key and the current one previous (the former
// previous retires), in one transaction.
func (s *Store) PromoteServiceKey(ctx context.Context, next string, now time.Time) error {
	return s.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		for _, step := range []struct{ from, to string }{{KeyPrevious, KeyRetired}, {KeyCurrent, KeyPrevious}} {
			if _, err := tx.NewUpdate().Model((*ServiceKey)(nil)).Set("status = ?", step.to).Where("status = ?", step.from).Exec(ctx); err != nil {
				return err
			}
		}
		res, err := tx.NewUpdate().Model((*ServiceKey)(nil)).Set("status = ?", KeyCurrent).Set("activated_at = ?", now).
			Where("kid = ? AND status = ?", next, KeyNext).Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return ErrConflict
		}
		return nil
	})
}

// RetireServiceKeys retires the previous key (it stops verifying receipts).
func (s *Store) RetireServiceKeys(ctx context.Context) (int, error) {
	res, err := s.db.NewUpdate().Model((*ServiceKey)(nil)).Set("status = ?", KeyRetired).Where("status = ?", KeyPrevious).Exec(ctx)
	if err != nil {
		return 0, normalize(err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

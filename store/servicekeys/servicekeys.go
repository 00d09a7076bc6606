// Package servicekeys keeps the service's signing keys: their rotation (current, next,
// previous, retired) and their re-seal under a new master key.
package servicekeys

import (
	"context"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/dberr"
	"github.com/uptrace/bun"
)

// ServiceKeys are the queries of the service's signing keys.
type ServiceKeys interface {
	// ServiceKeys lists the keys that are not retired, current first.
	ServiceKeys(ctx context.Context) ([]*ServiceKey, error)
	// InsertServiceKey writes a key (ErrConflict when its status is taken by a concurrent
	// writer is the caller's to avoid: one current, one next).
	InsertServiceKey(ctx context.Context, k *ServiceKey) error
	// PromoteServiceKey makes next the current key and the current one previous (the former
	// previous retires), in one transaction; ErrConflict when next is not the next key.
	PromoteServiceKey(ctx context.Context, next string, now time.Time) error
	// RetireServiceKeys retires the previous key (it stops verifying receipts).
	RetireServiceKeys(ctx context.Context) (int, error)
	// ServiceKeysSealedElsewhere returns every service key (retired ones too) sealed under a
	// master key other than current.
	ServiceKeysSealedElsewhere(ctx context.Context, current string) ([]*ServiceKey, error)
	// ResealServiceKey stores a key's private half sealed again under master key `to`, if the
	// row is still sealed under `from`: a concurrent re-seal of the same row changes it once
	// (false for the other).
	ResealServiceKey(ctx context.Context, kid, from string, sealed []byte, to string) (bool, error)
}

// New returns the service-key queries of st.
func New(st *store.Store) ServiceKeys { return &queries{st: st, db: st.DB()} }

// queries is ServiceKeys on the store's database.
type queries struct {
	st *store.Store
	db *bun.DB
}

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

func (s *queries) ServiceKeys(ctx context.Context) ([]*ServiceKey, error) {
	var out []*ServiceKey
	err := s.db.NewSelect().Model(&out).Where("status <> ?", KeyRetired).
		OrderExpr("CASE status WHEN 'current' THEN 0 WHEN 'next' THEN 1 ELSE 2 END, created_at DESC").Scan(ctx)
	return out, dberr.Normalize(err)
}

func (s *queries) InsertServiceKey(ctx context.Context, k *ServiceKey) error {
	_, err := s.db.NewInsert().Model(k).Exec(ctx)
	return dberr.Normalize(err)
}

func (s *queries) PromoteServiceKey(ctx context.Context, next string, now time.Time) error {
	return s.st.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
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
			return dberr.ErrConflict
		}
		return nil
	})
}

func (s *queries) RetireServiceKeys(ctx context.Context) (int, error) {
	res, err := s.db.NewUpdate().Model((*ServiceKey)(nil)).Set("status = ?", KeyRetired).Where("status = ?", KeyPrevious).Exec(ctx)
	if err != nil {
		return 0, dberr.Normalize(err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

func (s *queries) ServiceKeysSealedElsewhere(ctx context.Context, current string) ([]*ServiceKey, error) {
	var out []*ServiceKey
	err := s.db.NewSelect().Model(&out).Where("master_key_id <> ?", current).OrderExpr("kid ASC").Scan(ctx)
	return out, dberr.Normalize(err)
}

func (s *queries) ResealServiceKey(ctx context.Context, kid, from string, sealed []byte, to string) (bool, error) {
	res, err := s.db.NewUpdate().Model((*ServiceKey)(nil)).Set("sealed_private = ?", sealed).Set("master_key_id = ?", to).
		Where("kid = ? AND master_key_id = ?", kid, from).Exec(ctx)
	if err != nil {
		return false, dberr.Normalize(err)
	}
	n, err := res.RowsAffected()
	return n == 1, dberr.Normalize(err)
}

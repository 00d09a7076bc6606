package store

import (
	"context"
	"time"

	"github.com/uptrace/bun"
)

// Integration is a partner integration's connect page: the scopes its keys get and the
// onboarding methods it offers.
type Integration struct {
	bun.BaseModel `bun:"table:integrations"`

	ID        string    `bun:"id,pk"`
	AccountID string    `bun:"account_id,notnull"` // the partner that created it
	Slug      string    `bun:"slug,notnull"`
	Name      string    `bun:"name,notnull"`
	Scopes    []string  `bun:"scopes,notnull,type:text"`
	Methods   []string  `bun:"methods,notnull,type:text"`
	CreatedAt time.Time `bun:"created_at,notnull"`
}

// CreateIntegration inserts an integration; a taken slug is ErrConflict.
func (s *Store) CreateIntegration(ctx context.Context, in *Integration) error {
	_, err := s.db.NewInsert().Model(in).Exec(ctx)
	return normalize(err)
}

// Integrations lists an account's integrations, newest first.
func (s *Store) Integrations(ctx context.Context, accountID string) ([]*Integration, error) {
	var out []*Integration
	err := s.db.NewSelect().Model(&out).Where("account_id = ?", accountID).OrderExpr("created_at DESC").Scan(ctx)
	return out, normalize(err)
}

// IntegrationBy finds an integration by id or slug, or ErrNotFound.
func (s *Store) IntegrationBy(ctx context.Context, column, value string) (*Integration, error) {
	in := new(Integration)
	q := s.db.NewSelect().Model(in)
	if column == "slug" {
		q = q.Where("slug = ?", value)
	} else {
		q = q.Where("id = ?", value)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, normalize(err)
	}
	return in, nil
}

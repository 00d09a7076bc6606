// Package integrations keeps partner integrations: the connect pages that give keys their
// scopes and offer onboarding methods.
package integrations

import (
	"context"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/dberr"
	"github.com/uptrace/bun"
)

// Integrations are the queries of partner integrations.
type Integrations interface {
	// CreateIntegration inserts an integration; a taken slug is ErrConflict.
	CreateIntegration(ctx context.Context, in *Integration) error
	// Integrations lists an account's integrations, newest first.
	Integrations(ctx context.Context, accountID string) ([]*Integration, error)
	// IntegrationBy finds an integration by id or slug (column "id" or "slug"), or ErrNotFound.
	IntegrationBy(ctx context.Context, column, value string) (*Integration, error)
}

// New returns the integration queries of st.
func New(st *store.Store) Integrations { return &queries{db: st.DB()} }

// queries is Integrations on the store's database.
type queries struct {
	db *bun.DB
}

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

func (s *queries) CreateIntegration(ctx context.Context, in *Integration) error {
	_, err := s.db.NewInsert().Model(in).Exec(ctx)
	return dberr.Normalize(err)
}

func (s *queries) Integrations(ctx context.Context, accountID string) ([]*Integration, error) {
	var out []*Integration
	err := s.db.NewSelect().Model(&out).Where("account_id = ?", accountID).OrderExpr("created_at DESC").Scan(ctx)
	return out, dberr.Normalize(err)
}

func (s *queries) IntegrationBy(ctx context.Context, column, value string) (*Integration, error) {
	in := new(Integration)
	q := s.db.NewSelect().Model(in)
	if column == "slug" {
		q = q.Where("slug = ?", value)
	} else {
		q = q.Where("id = ?", value)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, dberr.Normalize(err)
	}
	return in, nil
}

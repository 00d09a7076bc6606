package integrations_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/integrations"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

func TestIntegrationsBySlugAndID(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s, ctx := integrations.New(st), context.Background()
		now := time.Now().UTC().Truncate(time.Second)
		if err := accounts.New(st).Create(ctx, &accounts.Account{ID: "p1", Email: "p1@example.com", CreatedAt: now}, nil, nil); err != nil {
			t.Fatal(err)
		}
		in := func(id, slug string, at time.Time) *integrations.Integration {
			return &integrations.Integration{ID: id, AccountID: "p1", Slug: slug, Name: "Acme " + slug, Scopes: []string{"read", "invoke"}, Methods: []string{"email"}, CreatedAt: at}
		}
		if err := s.CreateIntegration(ctx, in("i1", "acme", now)); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateIntegration(ctx, in("i2", "acme", now)); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("a taken slug: %v, want ErrConflict", err)
		}
		if err := s.CreateIntegration(ctx, in("i3", "other", now.Add(time.Second))); err != nil {
			t.Fatal(err)
		}
		got, err := s.IntegrationBy(ctx, "slug", "acme")
		if err != nil || got.ID != "i1" || len(got.Scopes) != 2 || got.Scopes[1] != "invoke" || got.Methods[0] != "email" {
			t.Fatalf("by slug: %+v %v", got, err)
		}
		if got, err := s.IntegrationBy(ctx, "id", "i3"); err != nil || got.Slug != "other" {
			t.Fatalf("by id: %+v %v", got, err)
		}
		// A slug is not looked up as an id.
		if _, err := s.IntegrationBy(ctx, "id", "acme"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("slug as id: %v, want ErrNotFound", err)
		}
		if all, err := s.Integrations(ctx, "p1"); err != nil || len(all) != 2 || all[0].ID != "i3" {
			t.Fatalf("newest first: %+v %v", all, err)
		}
		if all, err := s.Integrations(ctx, "nobody"); err != nil || len(all) != 0 {
			t.Fatalf("another account: %+v %v", all, err)
		}
	})
}

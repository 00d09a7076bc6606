package integrations_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/integrations"
	"github.com/switchboard-hq/switchboard/tools/service"
)

// An integration is validated field by field, found by its slug, listed for its partner, and
// its slug is unique across partners.
func TestCreateFindList(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		for _, id := range []string{"p1", "p2"} {
			if err := accounts.New(s).Create(ctx, &accounts.Account{ID: id, Email: id + "@example.com", CreatedAt: time.Now().UTC()}, nil, nil); err != nil {
				t.Fatal(err)
			}
		}
		svc := integrations.NewService(service.Deps{Store: s})
		code := func(err error) (tools.Code, any) {
			var te *tools.Error
			if !errors.As(err, &te) {
				t.Fatalf("not a tools error: %v", err)
			}
			return te.Code, te.Details["field"]
		}
		for _, tc := range []struct {
			slug, name      string
			scopes, methods []string
			field           string
		}{
			{"A", "n", []string{"read"}, []string{integrations.MethodPasteKey}, "slug"},
			{"ok-slug", " ", []string{"read"}, []string{integrations.MethodPasteKey}, "name"},
			{"ok-slug", "n", nil, []string{integrations.MethodPasteKey}, "scopes"},
			{"ok-slug", "n", []string{"nope"}, []string{integrations.MethodPasteKey}, "scopes"},
			{"ok-slug", "n", []string{"read"}, nil, "methods"},
			{"ok-slug", "n", []string{"read"}, []string{"carrier_pigeon"}, "methods"},
		} {
			_, err := svc.Create(ctx, "p1", tc.slug, tc.name, tc.scopes, tc.methods)
			if c, f := code(err); c != tools.CodeBadInput || f != tc.field {
				t.Errorf("%+v: %s on %v, want BAD_INPUT on %s", tc, c, f, tc.field)
			}
		}
		in, err := svc.Create(ctx, "p1", " my-app ", "My app", []string{"read"}, []string{integrations.MethodEmailCode})
		if err != nil {
			t.Fatal(err)
		}
		if in.Slug != "my-app" || in.AccountID != "p1" || !in.Offers(integrations.MethodEmailCode) || in.Offers(integrations.MethodPasteKey) {
			t.Fatalf("created %+v", in)
		}
		if _, err := svc.Create(ctx, "p2", "my-app", "Other", []string{"read"}, []string{integrations.MethodPasteKey}); err == nil {
			t.Fatal("a taken slug was accepted")
		} else if c, f := code(err); c != tools.CodeConflict || f != "slug" {
			t.Fatalf("taken slug: %s %v", c, f)
		}
		got, err := svc.BySlug(ctx, "my-app")
		if err != nil || got.ID != in.ID || got.Name != "My app" {
			t.Fatalf("by slug %+v %v", got, err)
		}
		if _, err := svc.BySlug(ctx, "none-such"); err == nil {
			t.Fatal("found a missing slug")
		} else if c, _ := code(err); c != tools.CodeNotFound {
			t.Fatalf("missing slug: %s", c)
		}
		l1, err := svc.List(ctx, "p1")
		if err != nil || len(l1) != 1 || l1[0].ID != in.ID {
			t.Fatalf("p1's list %+v %v", l1, err)
		}
		if l2, err := svc.List(ctx, "p2"); err != nil || len(l2) != 0 {
			t.Fatalf("p2's list %+v %v", l2, err)
		}
	})
}

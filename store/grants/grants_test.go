package grants_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/grants"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

// TestGrantFromCodeToRevocation follows one grant through the queries tools/oauth runs: a
// client registered, a grant and its code written, the code used once (a replay is told so),
// tokens issued and read, the grant listed live, then revoked with its tokens and every key it
// created, in one transaction.
func TestGrantFromCodeToRevocation(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		g := grants.New(st)
		now := time.Now().UTC().Truncate(time.Millisecond)
		key := func(id string, parent *string) *accounts.APIKey {
			return &accounts.APIKey{ID: id, AccountID: "a1", Name: id, Prefix: id, Hash: "h-" + id, Scopes: []string{"read"}, CreatedAt: now, ParentID: parent}
		}
		if err := accounts.New(st).Create(ctx, &accounts.Account{ID: "a1", Email: "a1@example.com", CreatedAt: now}, nil, key("root", nil)); err != nil {
			t.Fatal(err)
		}
		backing := "grant-key"
		for _, k := range []*accounts.APIKey{key(backing, nil), key("minted", &backing)} {
			if err := accounts.New(st).CreateKey(ctx, k); err != nil {
				t.Fatal(err)
			}
		}
		if err := g.CreateClient(ctx, &grants.Client{ID: "c1", Name: "Host", RedirectURIs: []string{"https://host.example/cb"}, CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
		if _, err := g.Client(ctx, "c2"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("unknown client: %v, want ErrNotFound", err)
		}

		err := st.InTx(ctx, func(ctx context.Context, q *store.Q) error {
			if err := grants.Insert(ctx, q, &grants.Grant{ID: "g1", ClientID: "c1", AccountID: "a1", KeyID: backing, CreatedAt: now}); err != nil {
				return err
			}
			return grants.Insert(ctx, q, &grants.Code{Hash: "code", ClientID: "c1", GrantID: "g1", ExpiresAt: now.Add(time.Minute)})
		})
		if err != nil {
			t.Fatal(err)
		}
		// Not live until its code is exchanged for tokens.
		if live, err := g.Live(ctx, "a1"); err != nil || len(live) != 0 {
			t.Fatalf("live before any token: %v %v", live, err)
		}
		for i, want := range []bool{true, false} {
			err := st.InTx(ctx, func(ctx context.Context, q *store.Q) error {
				c, first, err := grants.UseCode(ctx, q, "code", now)
				if err != nil || first != want || c.GrantID != "g1" {
					t.Fatalf("use %d: %+v first %v %v, want first %v", i, c, first, err, want)
				}
				if !first {
					return nil
				}
				for _, kind := range []string{"access", "refresh"} {
					if err := grants.Insert(ctx, q, &grants.Token{Hash: kind, GrantID: "g1", Kind: kind, ExpiresAt: now.Add(time.Hour), CreatedAt: now}); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		if tok, gr, err := g.Access(ctx, "access"); err != nil || tok.GrantID != "g1" || gr.KeyID != backing {
			t.Fatalf("access: %+v %+v %v", tok, gr, err)
		}
		if _, _, err := g.Access(ctx, "refresh"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a refresh token read as an access token: %v", err)
		}
		if err := g.Touch(ctx, "g1", now); err != nil {
			t.Fatal(err)
		}
		live, err := g.Live(ctx, "a1")
		if err != nil || len(live) != 1 || live[0].Client == nil || live[0].Client.Name != "Host" || live[0].LastUsedAt == nil {
			t.Fatalf("live: %+v %v", live, err)
		}

		var revoked []string
		err = st.InTx(ctx, func(ctx context.Context, q *store.Q) error {
			if err := grants.MarkTokenUsed(ctx, q, "refresh", now); err != nil {
				return err
			}
			tok, err := grants.LockToken(ctx, q, "refresh")
			if err != nil || tok.UsedAt == nil {
				t.Fatalf("refresh token after its rotation: %+v %v", tok, err)
			}
			_, revoked, err = grants.Revoke(ctx, q, "g1", "the user ended it", now)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(revoked)
		if !slices.Equal(revoked, []string{backing, "minted"}) {
			t.Fatalf("revoked keys %v, want the grant's key and the one minted under it", revoked)
		}
		if _, _, err := g.Access(ctx, "access"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a revoked grant's token still reads: %v", err)
		}
		if live, err := g.Live(ctx, "a1"); err != nil || len(live) != 0 {
			t.Fatalf("live after revocation: %v %v", live, err)
		}
		for _, id := range []string{backing, "minted", "root"} {
			k, err := accounts.New(st).KeyByID(ctx, id)
			if err != nil || (k.RevokedAt != nil) != (id != "root") {
				t.Fatalf("key %s after the revocation: %+v %v", id, k, err)
			}
		}
		// Revoking again revokes nothing more.
		err = st.InTx(ctx, func(ctx context.Context, q *store.Q) error {
			gr, again, err := grants.Revoke(ctx, q, "g1", "again", now.Add(time.Minute))
			if err == nil && (len(again) != 0 || gr.RevokedWhy != "the user ended it") {
				t.Fatalf("second revocation: %+v %v", gr, again)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

package keys_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/keys"
)

// What a principal sees of its account's keys: a key itself and its descendants at any
// depth, whatever their creation times say (a replica's clock may be behind: here a child
// is stamped before its parent); the portal's human, every key.
func TestVisibleIsTheKeysSubtree(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Microsecond)
		svc := keys.NewService(keys.Config{Env: "test", Defaults: keys.Limits{SpendMicro: 1, RatePerMinute: 1}}, tools.Deps{Store: s})
		key := func(id string, parent *string, at time.Duration) *store.APIKey {
			return &store.APIKey{ID: id, AccountID: "acct", Name: id, Prefix: id, Hash: "h-" + id, Scopes: []string{"read"},
				SpendLimitMicro: 1, RateLimitPerMinute: 1, CreatedAt: now.Add(at), ParentID: parent}
		}
		str := func(s string) *string { return &s }
		if err := s.CreateAccount(ctx, &store.Account{ID: "acct", Email: "v@example.com", CreatedAt: now}, nil, key("root", nil, 0)); err != nil {
			t.Fatal(err)
		}
		for _, k := range []*store.APIKey{key("a", str("root"), time.Second), key("b", str("root"), 2*time.Second),
			key("a1", str("a"), -time.Hour), key("a1x", str("a1"), 3*time.Second), key("other", nil, 4*time.Second)} {
			if err := s.MintKey(ctx, k, keys.MaxLiveKeys); err != nil {
				t.Fatal(err)
			}
		}
		for _, tc := range []struct {
			p    *tools.Principal
			want []string
		}{
			{&tools.Principal{AccountID: "acct", Method: tools.AuthAPIKey, KeyID: "a"}, []string{"a", "a1", "a1x"}},
			{&tools.Principal{AccountID: "acct", Method: tools.AuthAPIKey, KeyID: "a1x"}, []string{"a1x"}},
			{&tools.Principal{AccountID: "acct", Method: tools.AuthOAuth, KeyID: "b"}, []string{"b"}},
			{&tools.Principal{AccountID: "acct", Method: tools.AuthSession}, []string{"a", "a1", "a1x", "b", "other", "root"}},
		} {
			ks, err := svc.Visible(ctx, tc.p)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, k := range ks {
				got = append(got, k.ID)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("%s %s sees %v, want %v", tc.p.Method, tc.p.KeyID, got, tc.want)
			}
		}
		// Revoking a key revokes its subtree, and no key is minted under a revoked one.
		if _, err := s.RevokeKey(ctx, "acct", "a", now); err != nil {
			t.Fatal(err)
		}
		all, _ := s.Keys(ctx, "acct")
		for _, k := range all {
			if revoked := k.RevokedAt != nil; revoked != slices.Contains([]string{"a", "a1", "a1x"}, k.ID) {
				t.Errorf("%s revoked: %v", k.ID, revoked)
			}
		}
		if err := s.MintKey(ctx, key("late", str("a1"), 5*time.Second), keys.MaxLiveKeys); !errors.Is(err, store.ErrParentRevoked) {
			t.Fatalf("a key minted under a revoked one: %v", err)
		}
	})
}

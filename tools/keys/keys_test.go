package keys_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/keys"
	"github.com/switchboard-hq/switchboard/tools/service"
)

// What a principal sees of its account's keys: a key itself and its descendants at any
// depth, whatever their creation times say (a replica's clock may be behind: here a child
// is stamped before its parent); the portal's human, every key.
func TestVisibleIsTheKeysSubtree(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Microsecond)
		svc := keys.NewService(keys.Config{Env: "test", Defaults: keys.Limits{SpendMicro: 1, RatePerMinute: 1}}, service.Deps{Store: s})
		key := func(id string, parent *string, at time.Duration) *accounts.APIKey {
			return &accounts.APIKey{ID: id, AccountID: "acct", Name: id, Prefix: id, Hash: "h-" + id, Scopes: []string{"read"},
				SpendLimitMicro: 1, RateLimitPerMinute: 1, CreatedAt: now.Add(at), ParentID: parent}
		}
		str := func(s string) *string { return &s }
		if err := accounts.New(s).Create(ctx, &accounts.Account{ID: "acct", Email: "v@example.com", CreatedAt: now}, nil, key("root", nil, 0)); err != nil {
			t.Fatal(err)
		}
		for _, k := range []*accounts.APIKey{key("a", str("root"), time.Second), key("b", str("root"), 2*time.Second),
			key("a1", str("a"), -time.Hour), key("a1x", str("a1"), 3*time.Second), key("other", nil, 4*time.Second)} {
			if err := accounts.New(s).MintKey(ctx, k, keys.MaxLiveKeys); err != nil {
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
		if _, err := accounts.New(s).RevokeKey(ctx, "acct", "a", now, nil); err != nil {
			t.Fatal(err)
		}
		all, _ := accounts.New(s).Keys(ctx, "acct")
		for _, k := range all {
			if revoked := k.RevokedAt != nil; revoked != slices.Contains([]string{"a", "a1", "a1x"}, k.ID) {
				t.Errorf("%s revoked: %v", k.ID, revoked)
			}
		}
		if err := accounts.New(s).MintKey(ctx, key("late", str("a1"), 5*time.Second), keys.MaxLiveKeys); !errors.Is(err, accounts.ErrParentRevoked) {
			t.Fatalf("a key minted under a revoked one: %v", err)
		}
	})
}

// A portal session's Try it calls are made on a key with exactly the scopes the call needs,
// made on the first call that needs them and reused after, its use recorded each time; a
// write scope gets a key of its own; only a session has one.
func TestTryItKeyHasOnlyTheScopesACallNeeds(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := t.Context()
		now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
		svc := keys.NewService(keys.Config{Env: "test", Defaults: keys.Limits{SpendMicro: 50_000_000, RatePerMinute: 30}},
			service.Deps{Store: st, Now: func() time.Time { return now }})
		acct := &accounts.Account{ID: uuid.NewString(), Email: "try@example.com", CreatedAt: now}
		if err := accounts.New(st).Create(ctx, acct, nil, nil); err != nil {
			t.Fatal(err)
		}
		session := &tools.Principal{AccountID: acct.ID, Method: tools.AuthSession, SessionID: "s", Scopes: tools.ScopeNames()}
		live := func() []*accounts.APIKey {
			t.Helper()
			list, err := accounts.New(st).Keys(ctx, acct.ID)
			if err != nil {
				t.Fatal(err)
			}
			return list
		}
		if n := len(live()); n != 0 {
			t.Fatalf("%d keys before any call", n)
		}

		read, err := svc.ForSession(ctx, session, []string{"partner"})
		if err != nil || !slices.Equal(read.Scopes, []string{"partner"}) || read.KeyID == "" {
			t.Fatalf("a query's caller: %+v %v", read, err)
		}
		if ks := live(); len(ks) != 1 || ks[0].Name != keys.TryItKeyName || ks[0].LastUsedAt == nil || !ks[0].LastUsedAt.Equal(now) {
			t.Fatalf("after the first call: %+v", ks[0])
		}
		first := now
		now = now.Add(30 * time.Second) // within a minute of the last recorded use: not written again
		if _, err := svc.ForSession(ctx, session, []string{"partner"}); err != nil {
			t.Fatal(err)
		}
		if ks := live(); !ks[0].LastUsedAt.Equal(first) {
			t.Fatalf("a use within a minute was written: %v, want %v", ks[0].LastUsedAt, first)
		}
		now = now.Add(time.Minute)
		again, err := svc.ForSession(ctx, session, []string{"partner", "partner"})
		if err != nil || again.KeyID != read.KeyID {
			t.Fatalf("the second query's key: %+v %v, want %s again", again, err, read.KeyID)
		}
		if ks := live(); len(ks) != 1 || !ks[0].LastUsedAt.Equal(now) {
			t.Fatalf("its use is not recorded: %+v", ks[0].LastUsedAt)
		}

		swap, err := svc.ForSession(ctx, session, []string{"swap", "partner"})
		if err != nil || swap.KeyID == read.KeyID || !slices.Equal(swap.Scopes, []string{"partner", "swap"}) {
			t.Fatalf("a swap's caller: %+v %v", swap, err)
		}
		names := []string{}
		for _, k := range live() {
			names = append(names, k.Name)
		}
		slices.Sort(names)
		if !slices.Equal(names, []string{keys.TryItKeyName, keys.TryItKeyName + " (swap)"}) {
			t.Fatalf("keys: %v", names)
		}

		agent := &tools.Principal{AccountID: acct.ID, Method: tools.AuthAPIKey, KeyID: read.KeyID, Scopes: []string{"partner"}}
		if _, err := svc.ForSession(ctx, agent, []string{"partner"}); tools.Translate(err).Code != tools.CodeForbidden {
			t.Fatalf("an API key asked for the Try it key: %v", err)
		}
	})
}

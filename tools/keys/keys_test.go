package keys_test

import (
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/keys"
)

// A portal session's Try it calls are made on a key with exactly the scopes the call needs,
// made on the first call that needs them and reused after, its use recorded each time; a
// write scope gets a key of its own; only a session has one.
func TestTryItKeyHasOnlyTheScopesACallNeeds(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := t.Context()
		now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
		svc := keys.NewService(keys.Config{Env: "test", Defaults: keys.Limits{SpendMicro: 50_000_000, RatePerMinute: 30}},
			tools.Deps{Store: st, Now: func() time.Time { return now }})
		acct := &store.Account{ID: uuid.NewString(), Email: "try@example.com", CreatedAt: now}
		if err := st.CreateAccount(ctx, acct, nil, nil); err != nil {
			t.Fatal(err)
		}
		session := &tools.Principal{AccountID: acct.ID, Method: tools.AuthSession, SessionID: "s", Scopes: tools.ScopeNames()}
		live := func() []*store.APIKey {
			t.Helper()
			list, err := st.Keys(ctx, acct.ID)
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

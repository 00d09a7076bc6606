package keys_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/keys"
	"github.com/switchboard-hq/switchboard/tools/service"
)

// Issue is the operator's key: known scopes only (deduplicated), limits within the maxima,
// the defaults when none are named, and a secret whose hash alone is stored.
func TestIssue(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		now := time.Now().UTC()
		if err := accounts.New(st).Create(ctx, &accounts.Account{ID: "acct", Email: "ops@example.com", CreatedAt: now}, nil, nil, nil); err != nil {
			t.Fatal(err)
		}
		svc := keys.NewService(keys.Config{Env: "production", Defaults: keys.Limits{SpendMicro: 50_000_000, RatePerMinute: 30}}, service.Deps{Store: st})
		for _, in := range []keys.IssueInput{
			{AccountID: "acct"},
			{AccountID: "acct", Scopes: []string{"read", "admin"}},
			{AccountID: "acct", Scopes: []string{"read"}, Limits: &keys.Limits{SpendMicro: -1, RatePerMinute: 30}},
			{AccountID: "acct", Scopes: []string{"read"}, Limits: &keys.Limits{SpendMicro: 1, RatePerMinute: 0}},
			{AccountID: "acct", Scopes: []string{"read"}, Name: strings.Repeat("k", 101)},
		} {
			if _, err := svc.Issue(ctx, in); tools.Translate(err).Code != tools.CodeBadInput {
				t.Errorf("Issue(%+v): %v, want BAD_INPUT", in, err)
			}
		}
		out, err := svc.Issue(ctx, keys.IssueInput{AccountID: "acct", Scopes: []string{"read", " partner", "read"}})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(out.Secret, "sb_live_") || strings.Join(out.Scopes, ",") != "read,partner" || out.SpendLimitUsd.Micro() != 50_000_000 ||
			out.RateLimitPerMinute != 30 || out.Name != "issued by the operator" {
			t.Fatalf("issued: %+v", out)
		}
		stored, err := accounts.New(st).KeyByHash(ctx, tools.HashKey(out.Secret))
		if err != nil || stored.AccountID != "acct" || stored.Hash == out.Secret {
			t.Fatalf("stored: %+v %v", stored, err)
		}
		// The operator's keys count against the account's cap like every minted key.
		for range keys.MaxLiveKeys - 1 {
			if _, err := svc.Issue(ctx, keys.IssueInput{AccountID: "acct", Scopes: []string{"read"}}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := svc.Issue(ctx, keys.IssueInput{AccountID: "acct", Scopes: []string{"read"}}); tools.Translate(err).Code != tools.CodeConflict {
			t.Fatalf("key %d issued past the cap: %v, want CONFLICT", keys.MaxLiveKeys+1, err)
		}
	})
}

package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/partners"
)

// Account creates account id with one key, k-<id> (scopes read and publish).
func Account(t testing.TB, s *store.Store, id string) {
	t.Helper()
	now := time.Now().UTC()
	key := &accounts.APIKey{ID: "k-" + id, AccountID: id, Name: "k", Prefix: "sb_test_abc", Hash: "h-" + id,
		Scopes: []string{"read", "publish"}, SpendLimitMicro: 50_000_000, RateLimitPerMinute: 30, CreatedAt: now}
	if err := accounts.New(s).Create(context.Background(), &accounts.Account{ID: id, Email: id + "@example.com", CreatedAt: now}, nil, key); err != nil {
		t.Fatal(err)
	}
}

// IntentRow is an inactive intent, handle @handle, for the store's own tests.
func IntentRow(id, handle string, now time.Time) *partners.Intent {
	return &partners.Intent{
		ID: id, PublicIdentifier: handle, Name: "N", Description: "D", Category: "QUERY",
		Capabilities: []string{}, BindingType: "REST", ToolEndpoint: "https://partner.example/x", TimeoutMs: 30000,
		ParametersSchema: `{"type":"object","properties":{"q":{"type":"string"}}}`, FeeRate: "0", FeeRateUnit: "usd_per_call",
		Tier: "one_shot", SampleQueries: []string{}, VerificationStatus: "UNVERIFIED", Revision: 1,
		CreatedAt: now, UpdatedAt: now,
	}
}

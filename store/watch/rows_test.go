package watch_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
)

// mustAccount creates account id with one key, k-<id>.
func mustAccount(t *testing.T, s *store.Store, id string) {
	t.Helper()
	now := time.Now().UTC()
	key := &store.APIKey{ID: "k-" + id, AccountID: id, Name: "k", Prefix: "sb_test_abc", Hash: "h-" + id,
		Scopes: []string{"read", "publish"}, SpendLimitMicro: 50_000_000, RateLimitPerMinute: 30, CreatedAt: now}
	if err := s.CreateAccount(context.Background(), &store.Account{ID: id, Email: id + "@example.com", CreatedAt: now}, nil, key); err != nil {
		t.Fatal(err)
	}
}

// intentRow is an inactive intent of the account, handle @handle.
func intentRow(id, handle string, now time.Time) *store.PartnerIntent {
	return &store.PartnerIntent{
		ID: id, PublicIdentifier: handle, Name: "N", Description: "D", Category: "QUERY",
		Capabilities: []string{}, BindingType: "REST", ToolEndpoint: "https://partner.example/x", TimeoutMs: 30000,
		ParametersSchema: `{"type":"object","properties":{"q":{"type":"string"}}}`, FeeRate: "0", FeeRateUnit: "usd_per_call",
		Tier: "one_shot", SampleQueries: []string{}, VerificationStatus: "UNVERIFIED", Revision: 1,
		CreatedAt: now, UpdatedAt: now,
	}
}

package commit_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
)

// billingAccount creates account id with one key, key-<id>, whose spend rows the jobs move.
func billingAccount(t testing.TB, s *store.Store, id string) {
	t.Helper()
	now := time.Now().UTC()
	key := &accounts.APIKey{ID: "key-" + id, AccountID: id, Name: "k", Prefix: "sb_test_abc", Hash: "hash-" + id,
		Scopes: []string{"read", "publish"}, SpendLimitMicro: 50_000_000, RateLimitPerMinute: 30, CreatedAt: now}
	if err := accounts.New(s).Create(context.Background(), &accounts.Account{ID: id, Email: id + "@example.com", CreatedAt: now}, nil, key); err != nil {
		t.Fatal(err)
	}
}

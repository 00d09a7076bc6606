package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
)

func billingAccount(t testing.TB, s *store.Store, id string) {
	t.Helper()
	now := time.Now().UTC()
	if err := accounts.New(s).Create(context.Background(), &accounts.Account{ID: id, Email: id + "@example.com", CreatedAt: now}, nil, newKey("key-"+id, id, "hash-"+id)); err != nil {
		t.Fatal(err)
	}
}

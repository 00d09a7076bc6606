package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

// The store keeps the ledger's shape: a transaction whose legs do not sum to zero is refused
// and nothing of it is written.
func TestPostRefusesAnUnbalancedTransaction(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Now().UTC()
		err := s.InTx(ctx, func(ctx context.Context, q *store.Q) error {
			if err := q.Post(ctx, "r-ok", "", now, store.Posting{Book: "a", Micro: 5, Kind: "t"}, store.Posting{Book: "b", Micro: -5, Kind: "t"}); err != nil {
				return err
			}
			return q.Post(ctx, "r-bad", "", now, store.Posting{Book: "a", Micro: 5, Kind: "t"}, store.Posting{Book: "b", Micro: -4, Kind: "t"})
		})
		if err == nil || !strings.Contains(err.Error(), "unbalanced") {
			t.Fatalf("unbalanced post: %v", err)
		}
		if rows, _ := s.LedgerEntries(ctx, "r-ok"); len(rows) != 0 {
			t.Fatalf("the balanced half of a failed transaction landed: %d rows", len(rows))
		}
	})
}

func billingAccount(t testing.TB, s *store.Store, id string) {
	t.Helper()
	now := time.Now().UTC()
	if err := s.CreateAccount(context.Background(), &store.Account{ID: id, Email: id + "@example.com", CreatedAt: now}, nil, newKey("key-"+id, id, "hash-"+id)); err != nil {
		t.Fatal(err)
	}
}

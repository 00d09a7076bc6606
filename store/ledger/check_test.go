package ledger_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/ledger"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

// Check finds a balance that its books do not explain, and a hold no reservation
// explains: what `switchboard admin ledger-check` exits non-zero on.
func TestCheckFindsABreak(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Now().UTC()
		if err := accounts.New(s).Create(ctx, &accounts.Account{ID: "a", Email: "a@example.com", CreatedAt: now}, nil, nil); err != nil {
			t.Fatal(err)
		}
		grant := func(ctx context.Context, q *store.Q) error {
			if _, err := q.LockCredit(ctx, "a", now); err != nil {
				return err
			}
			if err := q.AdjustCredit(ctx, "a", store.CreditDelta{Available: 700}, now); err != nil {
				return err
			}
			return ledger.Post(ctx, q, "", "grant", now, ledger.Posting{Book: "external:grants", Micro: -700, Kind: "grant"},
				ledger.Posting{Book: ledger.UserAvailable("a"), Micro: 700, Kind: "grant"})
		}
		if err := s.InTx(ctx, grant); err != nil {
			t.Fatal(err)
		}
		if err := ledger.Check(ctx, s); err != nil {
			t.Fatalf("a consistent ledger: %v", err)
		}
		// A balance moved without its ledger rows.
		if err := s.InTx(ctx, func(ctx context.Context, q *store.Q) error {
			return q.AdjustCredit(ctx, "a", store.CreditDelta{Available: 1}, now)
		}); err != nil {
			t.Fatal(err)
		}
		if err := ledger.Check(ctx, s); err == nil || !strings.Contains(err.Error(), ledger.UserAvailable("a")) {
			t.Fatalf("ledger check after a silent balance change: %v", err)
		}
		// Put it back; then a hold no open reservation explains.
		if err := s.InTx(ctx, func(ctx context.Context, q *store.Q) error {
			return q.AdjustCredit(ctx, "a", store.CreditDelta{Available: -1, Held: 50}, now)
		}); err != nil {
			t.Fatal(err)
		}
		if err := ledger.Check(ctx, s); err == nil || !strings.Contains(err.Error(), "held") {
			t.Fatalf("ledger check after a stray hold: %v", err)
		}
	})
}

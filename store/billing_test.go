package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

func billingAccount(t *testing.T, s *store.Store, id string) {
	t.Helper()
	now := time.Now().UTC()
	if err := s.CreateAccount(context.Background(), &store.Account{ID: id, Email: id + "@example.com", CreatedAt: now}, nil, newKey("key-"+id, id, "hash-"+id)); err != nil {
		t.Fatal(err)
	}
}

func mustCheck(t *testing.T, s *store.Store) {
	t.Helper()
	if err := s.LedgerCheck(context.Background()); err != nil {
		t.Fatalf("ledger invariant: %v", err)
	}
}

func reservation(id, acct string, reserved, worst int64, now time.Time) *store.Reservation {
	return &store.Reservation{RequestID: id, AccountID: acct, KeyID: "key-" + acct, ReservedMicro: reserved,
		WorstMicro: worst, ExpiresAt: now.Add(time.Minute), CreatedAt: now}
}

func TestLedgerLifecycle(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Now().UTC()
		billingAccount(t, s, "a")
		if err := s.Grant(ctx, "a", 10_000, 1<<40, "test grant", now); err != nil {
			t.Fatal(err)
		}
		mustCheck(t, s)

		// Success with a partner fee: infra consumed, fees charged, spend recorded.
		if err := s.Reserve(ctx, reservation("r1", "a", 100, 1_000, now), 1_000_000); err != nil {
			t.Fatal(err)
		}
		mustCheck(t, s)
		ca, _ := s.Credit(ctx, "a")
		if ca.AvailableMicro != 9_900 || ca.ReservedMicro != 100 || ca.HeldMicro != 900 {
			t.Fatalf("after reserve: %+v", ca)
		}
		ok, err := s.Settle(ctx, "r1", store.Settlement{PartnerFeeMicro: 500, PlatformFeeMicro: 50, PartnerBook: store.PartnerPayable("p1", "evm:0xabc")}, now)
		if err != nil || !ok {
			t.Fatalf("settle: %v %v", ok, err)
		}
		mustCheck(t, s)
		ca, _ = s.Credit(ctx, "a")
		if ca.AvailableMicro != 9_350 || ca.ReservedMicro != 0 || ca.HeldMicro != 0 {
			t.Fatalf("after settle: %+v", ca)
		}
		if spent, _ := s.Spent(ctx, "key-a"); spent != 650 {
			t.Fatalf("spent %d, want 650", spent)
		}
		// Settling or refunding a closed reservation changes nothing.
		if ok, err := s.Settle(ctx, "r1", store.Settlement{PlatformFeeMicro: 1}, now); ok || err != nil {
			t.Fatalf("second settle: %v %v", ok, err)
		}
		if ok, err := s.Refund(ctx, "r1", "late", now); ok || err != nil {
			t.Fatalf("refund after settle: %v %v", ok, err)
		}
		entries, _ := s.LedgerEntries(ctx, "r1")
		var perInvocation int64
		for _, e := range entries {
			perInvocation += e.AmountMicro
		}
		if len(entries) != 8 || perInvocation != 0 {
			t.Fatalf("r1 ledger: %d rows summing to %d", len(entries), perInvocation)
		}

		// Failure: the reservation comes back whole.
		if err := s.Reserve(ctx, reservation("r2", "a", 100, 1_000, now), 1_000_000); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.Refund(ctx, "r2", "partner failed", now); !ok || err != nil {
			t.Fatalf("refund: %v %v", ok, err)
		}
		mustCheck(t, s)
		ca, _ = s.Credit(ctx, "a")
		if ca.AvailableMicro != 9_350 || ca.ReservedMicro != 0 || ca.HeldMicro != 0 {
			t.Fatalf("after refund: %+v", ca)
		}

		// Refusals write nothing.
		err = s.Reserve(ctx, reservation("r3", "a", 100, 9_351, now), 1_000_000)
		if !errors.Is(err, store.ErrInsufficientCredits) {
			t.Fatalf("over credit: %v", err)
		}
		err = s.Reserve(ctx, reservation("r4", "a", 100, 1_000, now), 1_500)
		if !errors.Is(err, store.ErrSpendLimit) {
			t.Fatalf("over spend limit (650 spent + 1000 > 1500): %v", err)
		}
		if e, _ := s.LedgerEntries(ctx, "r3"); len(e) != 0 {
			t.Fatal("a refused reservation wrote ledger rows")
		}
		mustCheck(t, s)

		// An abandoned reservation is found by the sweeper after its deadline.
		if err := s.Reserve(ctx, reservation("r5", "a", 100, 200, now), 1_000_000); err != nil {
			t.Fatal(err)
		}
		if ids, _ := s.ExpiredReservations(ctx, now.Add(30*time.Second), 10); len(ids) != 0 {
			t.Fatalf("expired too early: %v", ids)
		}
		ids, err := s.ExpiredReservations(ctx, now.Add(2*time.Minute), 10)
		if err != nil || len(ids) != 1 || ids[0] != "r5" {
			t.Fatalf("expired: %v %v", ids, err)
		}
	})
}

// Concurrent reservations may not together exceed the credit.
func TestReserveConcurrentHolds(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Now().UTC()
		billingAccount(t, s, "c")
		s.Grant(ctx, "c", 1_000, 1<<40, "grant", now)
		var wg sync.WaitGroup
		var mu sync.Mutex
		won := 0
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				err := s.Reserve(ctx, reservation("rc"+string(rune('a'+i)), "c", 10, 300, now), 1_000_000)
				if err == nil {
					mu.Lock()
					won++
					mu.Unlock()
				} else if !errors.Is(err, store.ErrInsufficientCredits) {
					t.Error(err)
				}
			}(i)
		}
		wg.Wait()
		if won != 3 {
			t.Fatalf("%d reservations of worst case 300 fit in 1000 credit, want 3", won)
		}
		mustCheck(t, s)
	})
}

// A grant that would lift the balance over its cap is refused under the balance lock, and
// nothing of it is written.
func TestGrantRespectsTheBalanceCap(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Now().UTC()
		if err := s.CreateAccount(ctx, &store.Account{ID: "capped", Email: "cap@example.com", CreatedAt: now}, nil,
			&store.APIKey{ID: "kc", AccountID: "capped", Name: "k", Prefix: "p", Hash: "hc", Scopes: []string{"read"}, CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
		if err := s.Grant(ctx, "capped", 600, 1000, "first", now); err != nil {
			t.Fatal(err)
		}
		if err := s.Grant(ctx, "capped", 500, 1000, "over", now); !errors.Is(err, store.ErrBalanceCap) {
			t.Fatalf("grant over the cap: %v, want ErrBalanceCap", err)
		}
		if err := s.Grant(ctx, "capped", 400, 1000, "to the cap", now); err != nil {
			t.Fatalf("grant up to the cap: %v", err)
		}
		ca, _ := s.Credit(ctx, "capped")
		if ca.AvailableMicro != 1000 {
			t.Fatalf("balance %d, want 1000", ca.AvailableMicro)
		}
		if err := s.LedgerCheck(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

package store_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/uptrace/bun"
)

// Two transactions that lock the same rows in opposite orders deadlock; PostgreSQL aborts
// one, and Tx runs it again instead of failing the caller.
func TestTxRetriesADeadlockLoser(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		if dialect != "postgres" {
			continue // SQLite takes the write lock up front (immediate transactions): no deadlock to lose
		}
		t.Run(dialect, func(t *testing.T) {
			s := storetest.Open(t, dialect)
			ctx := context.Background()
			db := s.DB()
			if _, err := db.ExecContext(ctx, "CREATE TABLE tx_probe (id INT PRIMARY KEY, n INT)"); err != nil {
				t.Fatal(err)
			}
			if _, err := db.ExecContext(ctx, "INSERT INTO tx_probe VALUES (1, 0), (2, 0)"); err != nil {
				t.Fatal(err)
			}
			var runs atomic.Int32
			var firstLocks sync.WaitGroup
			firstLocks.Add(2)
			lockBoth := func(a, b int) error {
				first := true
				return s.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
					runs.Add(1)
					if _, err := tx.ExecContext(ctx, "UPDATE tx_probe SET n = n + 1 WHERE id = ?", a); err != nil {
						return err
					}
					if first { // both hold their first row before either asks for the second
						first = false
						firstLocks.Done()
						firstLocks.Wait()
					}
					_, err := tx.ExecContext(ctx, "UPDATE tx_probe SET n = n + 1 WHERE id = ?", b)
					return err
				})
			}
			errs := make(chan error, 2)
			go func() { errs <- lockBoth(1, 2) }()
			go func() { errs <- lockBoth(2, 1) }()
			for range 2 {
				if err := <-errs; err != nil {
					t.Fatalf("a transaction failed instead of being retried: %v (unavailable: %v)", err, errors.Is(err, store.ErrUnavailable))
				}
			}
			if runs.Load() < 3 {
				t.Fatalf("%d runs: no transaction was retried, so no deadlock happened", runs.Load())
			}
			var sum int
			if err := db.NewRaw("SELECT SUM(n) FROM tx_probe").Scan(ctx, &sum); err != nil || sum != 4 {
				t.Fatalf("sum %d %v, want 4 (both transactions applied once)", sum, err)
			}
		})
	}
}

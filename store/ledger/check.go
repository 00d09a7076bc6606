package ledger

import (
	"context"
	"fmt"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/dberr"
	"github.com/uptrace/bun"
)

// Check verifies the ledger's invariants: every transaction sums to zero, every account's
// available and reserved balances equal the sums of its books, and each credited top-up has
// its record and its postings, which agree. It returns the first violation found.
func Check(ctx context.Context, st *store.Store) error {
	db := st.DB()
	var bad []struct {
		TxnID string `bun:"txn_id"`
		Sum   int64  `bun:"s"`
	}
	if err := db.NewSelect().Model((*Entry)(nil)).ColumnExpr("txn_id, SUM(amount_micro) AS s").
		Group("txn_id").Having("SUM(amount_micro) <> 0").Limit(5).Scan(ctx, &bad); err != nil {
		return dberr.Normalize(err)
	}
	if len(bad) > 0 {
		return fmt.Errorf("ledger transaction %s sums to %d, not 0", bad[0].TxnID, bad[0].Sum)
	}
	var total int64
	if err := db.NewSelect().Model((*Entry)(nil)).ColumnExpr("COALESCE(SUM(amount_micro), 0)").Scan(ctx, &total); err != nil {
		return dberr.Normalize(err)
	}
	if total != 0 {
		return fmt.Errorf("the ledger sums to %d, not 0", total)
	}
	if err := checkBatches(ctx, db); err != nil {
		return err
	}
	if err := checkTopups(ctx, db); err != nil {
		return err
	}
	var accounts []store.CreditAccount
	if err := db.NewSelect().Model(&accounts).Scan(ctx); err != nil {
		return dberr.Normalize(err)
	}
	for _, ca := range accounts {
		for book, want := range map[string]int64{UserAvailable(ca.AccountID): ca.AvailableMicro, UserReserved(ca.AccountID): ca.ReservedMicro} {
			var got int64
			if err := db.NewSelect().Model((*Entry)(nil)).ColumnExpr("COALESCE(SUM(amount_micro), 0)").
				Where("book = ?", book).Scan(ctx, &got); err != nil {
				return dberr.Normalize(err)
			}
			if got != want {
				return fmt.Errorf("book %s sums to %d but the balance says %d", book, got, want)
			}
		}
		if ca.HeldMicro < 0 || ca.ReservedMicro < 0 || ca.AvailableMicro < 0 {
			return fmt.Errorf("account %s has a negative balance: available %d, reserved %d, held %d", ca.AccountID, ca.AvailableMicro, ca.ReservedMicro, ca.HeldMicro)
		}
	}
	var open int64
	if err := db.NewSelect().Model((*store.Reservation)(nil)).ColumnExpr("COALESCE(SUM(reserved_micro), 0)").
		Where("state = ?", store.ReservationOpen).Scan(ctx, &open); err != nil {
		return dberr.Normalize(err)
	}
	var reserved int64
	if err := db.NewSelect().Model((*store.CreditAccount)(nil)).ColumnExpr("COALESCE(SUM(reserved_micro), 0)").Scan(ctx, &reserved); err != nil {
		return dberr.Normalize(err)
	}
	if open != reserved {
		return fmt.Errorf("open reservations total %d but reserved balances total %d", open, reserved)
	}
	// Holds are not money, but each must be explained by open reservations: an account holds
	// their worst cases beyond what they reserved, a key the whole worst cases of its own and
	// its descendants' (whose key_chain names it).
	var badHold []struct {
		ID   string `bun:"id"`
		Held int64  `bun:"held"`
		Want int64  `bun:"want"`
	}
	if err := db.NewRaw(`SELECT c.account_id AS id, c.held_micro AS held,
		COALESCE((SELECT SUM(r.worst_micro - r.reserved_micro) FROM reservations r WHERE r.account_id = c.account_id AND r.state = ?), 0) AS want
		FROM credit_accounts c`, store.ReservationOpen).Scan(ctx, &badHold); err != nil {
		return dberr.Normalize(err)
	}
	for _, h := range badHold {
		if h.Held != h.Want {
			return fmt.Errorf("account %s has %d held but its open reservations explain %d", h.ID, h.Held, h.Want)
		}
	}
	badHold = badHold[:0]
	if err := db.NewRaw(`SELECT k.key_id AS id, k.held_micro AS held,
		COALESCE((SELECT SUM(r.worst_micro) FROM reservations r WHERE r.state = ?
			AND (r.key_id = k.key_id OR ',' || r.key_chain || ',' LIKE '%,' || k.key_id || ',%')), 0) AS want
		FROM key_spend k`, store.ReservationOpen).Scan(ctx, &badHold); err != nil {
		return dberr.Normalize(err)
	}
	for _, h := range badHold {
		if h.Held != h.Want {
			return fmt.Errorf("key %s has %d held but its open reservations explain %d", h.ID, h.Held, h.Want)
		}
	}
	return nil
}

// checkBatches proves that every transaction posted for many calls (a budget lease's
// settlement, named by its calls' rows from their records on) is the sum of the breakdowns
// of the invocations that name it: per book and kind, its legs less what those calls' rows
// say (the total charged to each account, infrastructure, partner fee to its payout book,
// platform fee, gas) leave nothing. Such a transaction is named by its calls or found by its
// charge legs (only it charges with no request), so one whose calls' rows are gone is a
// break too; an open lease's is not posted yet, and waits.
func checkBatches(ctx context.Context, db *bun.DB) error {
	var bad []struct {
		Txn  string `bun:"t"`
		Book string `bun:"book"`
		Kind string `bun:"kind"`
		Off  int64  `bun:"off"`
	}
	// A budget lease's calls name its transaction (store.LeaseTxn) from their record on, and it
	// is posted when the lease is settled: while it is open they wait.
	calls := fmt.Sprintf(`FROM invocations WHERE ledger_txn IS NOT NULL AND ledger_txn NOT IN
		(SELECT substr(request_id, %d) FROM reservations WHERE state = 'open' AND request_id LIKE '%s%%')`,
		len(store.LeasePrefix)+1, store.LeasePrefix)
	err := db.NewRaw(`SELECT t, book, kind, SUM(a) AS off FROM (
		SELECT txn_id AS t, book, kind, amount_micro AS a FROM ledger_entries
			WHERE request_id IS NULL AND (txn_id IN (SELECT ledger_txn `+calls+`)
				OR txn_id IN (SELECT txn_id FROM ledger_entries WHERE request_id IS NULL AND kind = 'charge'))
		UNION ALL SELECT ledger_txn, 'user:' || account_id || ':available', 'charge',
			reserve_micro + partner_fee_micro + platform_fee_micro + gas_micro `+calls+`
		UNION ALL SELECT ledger_txn, ?, 'consume', -reserve_micro `+calls+`
		UNION ALL SELECT ledger_txn, payout_book, 'partner_fee', -partner_fee_micro `+calls+`
		UNION ALL SELECT ledger_txn, ?, 'platform_fee', -platform_fee_micro `+calls+`
		UNION ALL SELECT ledger_txn, ?, 'gas', -gas_micro `+calls+`
	) AS x GROUP BY t, book, kind HAVING SUM(a) <> 0 ORDER BY t LIMIT 5`,
		BookPlatformInfra, BookPlatformFees, BookGas).Scan(ctx, &bad)
	if err != nil {
		return dberr.Normalize(err)
	}
	if len(bad) > 0 {
		b := bad[0]
		return fmt.Errorf("batch ledger transaction %s: its %s legs on %s differ by %d micro-USD from the sum of its calls' breakdowns", b.Txn, b.Kind, b.Book, b.Off)
	}
	return nil
}

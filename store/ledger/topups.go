package ledger

import (
	"context"
	"fmt"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/dberr"
	"github.com/switchboard-hq/switchboard/store/topups"
	"github.com/uptrace/bun"
)

// BookTreasury is where credit bought on chain (credit_topup) comes from: the stablecoin paid
// into the treasury.
const BookTreasury = "chain:treasury"

// checkTopups proves every credited top-up is on the record and in the books alike, and
// nothing else claims to be one: its invocations row (same requestId, kind topup, the
// account's, succeeded) says the amount, network and transaction the top-up says, and its
// postings move exactly that amount from chain:treasury to the account's available credit.
// A topup row with no credited top-up behind it is a break too.
func checkTopups(ctx context.Context, db *bun.DB) error {
	var bad []struct {
		ID  string `bun:"id"`
		Why string `bun:"why"`
	}
	// Legs of each top-up's own ledger transaction (posted with its requestId, kind topup).
	legs := `(SELECT COALESCE(SUM(e.amount_micro), 0) FROM ledger_entries e WHERE e.request_id = t.request_id AND e.kind = 'topup' AND e.book = %s)`
	credit := fmt.Sprintf(legs, `'user:' || t.account_id || ':available'`)
	treasury := fmt.Sprintf(legs, "?")
	err := db.NewRaw(`SELECT id, why FROM (
		SELECT t.request_id AS id, CASE
			WHEN i.request_id IS NULL THEN 'has no record (no invocations row)'
			WHEN i.kind <> ? THEN 'is recorded as kind ' || i.kind
			WHEN i.account_id <> t.account_id THEN 'is recorded for another account'
			WHEN i.state <> ? THEN 'is recorded as ' || i.state
			WHEN i.value_micro <> t.amount_atomic THEN 'is recorded at another value'
			WHEN COALESCE(i.tx_hash, '') <> t.pay_tx THEN 'is recorded with another transaction'
			WHEN COALESCE(i.network, '') <> 'eip155:' || CAST(t.chain_id AS TEXT) THEN 'is recorded on another network'
			WHEN `+credit+` <> t.amount_atomic THEN 'credited another amount in the ledger'
			WHEN `+treasury+` <> -t.amount_atomic THEN 'took another amount from the treasury in the ledger'
			ELSE '' END AS why
		FROM credit_topups t LEFT JOIN invocations i ON i.request_id = t.request_id
		WHERE t.state = ?
		UNION ALL
		SELECT i.request_id, 'is a top-up record with no credited top-up' FROM invocations i
		WHERE i.kind = ? AND NOT EXISTS (SELECT 1 FROM credit_topups t WHERE t.request_id = i.request_id AND t.state = ?)
	) AS x WHERE why <> '' ORDER BY id LIMIT 5`,
		store.KindTopup, store.InvSucceeded, BookTreasury, topups.Credited, store.KindTopup, topups.Credited).Scan(ctx, &bad)
	if err != nil {
		return dberr.Normalize(err)
	}
	if len(bad) > 0 {
		return fmt.Errorf("top-up %s %s", bad[0].ID, bad[0].Why)
	}
	return nil
}

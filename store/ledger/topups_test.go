package ledger_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/ledger"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/store/topups"
)

// TestCheckMatchesEachTopupToItsRecord: a credited top-up with its record and its postings
// passes; a top-up whose record is missing, whose record says another value or transaction,
// or a top-up record with no credited top-up behind it, is a break ledger-check names.
func TestCheckMatchesEachTopupToItsRecord(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Second)
		storetest.Account(t, s, "a")
		const rid, tx = "00000000-0000-4000-8000-000000000001", "0xfeed"
		if err := topups.New(s).Insert(ctx, &topups.CreditTopup{RequestID: rid, AccountID: "a", KeyID: "k-a", ChainID: 31337, Token: "0xt", PayTo: "0xp",
			AmountAtomic: 2_000_000, ValidBefore: now.Unix() + 600, State: topups.Credited, PayerAddress: "0xfrom", Nonce: "0x01",
			PayTx: tx, CreatedAt: now, UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
		network, hash := "eip155:31337", tx
		record := &store.Invocation{RequestID: rid, AccountID: "a", KeyID: "k-a", Handle: "credit_topup", Args: "{}", Kind: store.KindTopup,
			Network: &network, TxHash: &hash, ValueMicro: 2_000_000, Outcome: store.Outcome{State: store.InvSucceeded, FinishedAt: &now}, CreatedAt: now}
		err := s.InTx(ctx, func(ctx context.Context, q *store.Q) error {
			if _, err := q.LockCredit(ctx, "a", now); err != nil {
				return err
			}
			if err := q.AdjustCredit(ctx, "a", store.CreditDelta{Available: 2_000_000}, now); err != nil {
				return err
			}
			if err := ledger.Post(ctx, q, rid, "top-up", now, ledger.Posting{Book: ledger.BookTreasury, Micro: -2_000_000, Kind: "topup"},
				ledger.Posting{Book: ledger.UserAvailable("a"), Micro: 2_000_000, Kind: "topup"}); err != nil {
				return err
			}
			return q.InsertInvocation(ctx, record)
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := ledger.Check(ctx, s); err != nil {
			t.Fatalf("a top-up with its record and postings: %v", err)
		}
		exec := func(sql string, args ...any) {
			t.Helper()
			if _, err := s.DB().ExecContext(ctx, sql, args...); err != nil {
				t.Fatal(err)
			}
		}
		breaks := func(want string) {
			t.Helper()
			if err := ledger.Check(ctx, s); err == nil || !strings.Contains(err.Error(), rid) || !strings.Contains(err.Error(), want) {
				t.Fatalf("ledger-check: %v; want top-up %s %s", err, rid, want)
			}
		}
		exec("UPDATE invocations SET value_micro = 1 WHERE request_id = ?", rid)
		breaks("another value")
		exec("UPDATE invocations SET value_micro = 2000000, tx_hash = '0xother' WHERE request_id = ?", rid)
		breaks("another transaction")
		exec("UPDATE invocations SET tx_hash = ? WHERE request_id = ?", tx, rid)
		exec("UPDATE credit_topups SET state = ? WHERE request_id = ?", topups.Submitted, rid)
		breaks("no credited top-up")
		exec("UPDATE credit_topups SET state = ? WHERE request_id = ?", topups.Credited, rid)
		exec("DELETE FROM invocation_events WHERE request_id = ?", rid)
		exec("DELETE FROM invocations WHERE request_id = ?", rid)
		breaks("has no record")
	})
}

package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/ledger"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

// The ledger keeps its shape: a transaction whose legs do not sum to zero is refused
// and nothing of it is written.
func TestPostRefusesAnUnbalancedTransaction(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Now().UTC()
		err := s.InTx(ctx, func(ctx context.Context, q *store.Q) error {
			if err := ledger.Post(ctx, q, "r-ok", "", now, ledger.Posting{Book: "a", Micro: 5, Kind: "t"}, ledger.Posting{Book: "b", Micro: -5, Kind: "t"}); err != nil {
				return err
			}
			return ledger.Post(ctx, q, "r-bad", "", now, ledger.Posting{Book: "a", Micro: 5, Kind: "t"}, ledger.Posting{Book: "b", Micro: -4, Kind: "t"})
		})
		if err == nil || !strings.Contains(err.Error(), "unbalanced") {
			t.Fatalf("unbalanced post: %v", err)
		}
		if rows, _ := ledger.Entries(ctx, s, "r-ok"); len(rows) != 0 {
			t.Fatalf("the balanced half of a failed transaction landed: %d rows", len(rows))
		}
	})
}

// A write-only job's postings go to the commit engine's recorder, which takes them as the
// ledger's Recorder; a recorder that cannot take ledger rows refuses them, so nothing of the
// job is lost silently.
func TestPostOnARecordingQ(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx, now := context.Background(), time.Now().UTC()
		legs := []ledger.Posting{{Book: "a", Micro: 3, Kind: "t"}, {Book: "b", Micro: -3, Kind: "t"}}
		took := &rowsRecorder{}
		if err := ledger.Post(ctx, s.Recording(took), "r-rec", "memo", now, legs...); err != nil {
			t.Fatal(err)
		}
		if len(took.rows) != 2 || took.rows[0].TxnID != took.rows[1].TxnID || *took.rows[0].RequestID != "r-rec" || took.rows[0].AmountMicro+took.rows[1].AmountMicro != 0 {
			t.Fatalf("recorded rows: %+v", took.rows)
		}
		if rows, _ := ledger.Entries(ctx, s, "r-rec"); len(rows) != 0 {
			t.Fatalf("a recorded posting was written by the Q itself: %d rows", len(rows))
		}
		err := ledger.Post(ctx, s.Recording(noLedger{}), "r-no", "memo", now, legs...)
		if !errors.Is(err, store.ErrNotRecorded) {
			t.Fatalf("a recorder without ledger rows: %v", err)
		}
	})
}

type noLedger struct{}

func (noLedger) Invocation(store.Invocation)                       {}
func (noLedger) WebhookEvent(store.WebhookEvent)                   {}
func (noLedger) AdjustCredit(string, store.CreditDelta, time.Time) {}
func (noLedger) AdjustKeySpend(string, int64, int64)               {}
func (noLedger) DrawReservation(string, int64)                     {}

type rowsRecorder struct {
	noLedger
	rows []ledger.Entry
}

func (r *rowsRecorder) LedgerRows(rows ...ledger.Entry) { r.rows = append(r.rows, rows...) }

// BookBalances sums the books whose name starts with a prefix, leaves out those that sum to
// zero, and orders them by name; on both databases.
func TestBookBalances(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx, now := context.Background(), time.Now().UTC()
		if err := s.InTx(ctx, func(ctx context.Context, q *store.Q) error {
			if err := ledger.Post(ctx, q, "", "fees", now, ledger.Posting{Book: "external:calls", Micro: -5_000, Kind: "fee"},
				ledger.Posting{Book: "partner:p2:evm:0xb", Micro: 2_000, Kind: "fee"}, ledger.Posting{Book: "partner:p1:evm:0xa", Micro: 3_000, Kind: "fee"}); err != nil {
				return err
			}
			return ledger.Post(ctx, q, "", "paid", now, ledger.Posting{Book: "partner:p2:evm:0xb", Micro: -2_000, Kind: "payout"},
				ledger.Posting{Book: "payouts:pending", Micro: 2_000, Kind: "payout"})
		}); err != nil {
			t.Fatal(err)
		}
		got, err := ledger.BookBalances(ctx, s, "partner:")
		if err != nil || len(got) != 1 || got[0] != (ledger.BookBalance{Book: "partner:p1:evm:0xa", Micro: 3_000}) {
			t.Fatalf("partner books: %+v %v", got, err)
		}
		all, err := ledger.BookBalances(ctx, s, "")
		want := []ledger.BookBalance{{Book: "external:calls", Micro: -5_000}, {Book: "partner:p1:evm:0xa", Micro: 3_000}, {Book: "payouts:pending", Micro: 2_000}}
		if err != nil || fmt.Sprint(all) != fmt.Sprint(want) {
			t.Fatalf("every book: %+v %v, want %+v", all, err, want)
		}
	})
}

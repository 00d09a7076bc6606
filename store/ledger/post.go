package ledger

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/dberr"
)

// The ledger's rows and the statements that write and read them. Writes run in a caller's
// transaction (a *store.Q: the call's record, its balances and its postings land together);
// a write-only job's Q hands its rows to the commit engine's Recorder instead.

// Entry is one row of a balanced ledger transaction.
type Entry struct {
	bun.BaseModel `bun:"table:ledger_entries"`

	ID          string    `bun:"id,pk"`
	TxnID       string    `bun:"txn_id,notnull"`
	RequestID   *string   `bun:"request_id"`
	Book        string    `bun:"book,notnull"`
	AmountMicro int64     `bun:"amount_micro,notnull"`
	Kind        string    `bun:"kind,notnull"`
	Memo        string    `bun:"memo,notnull"`
	CreatedAt   time.Time `bun:"created_at,notnull"`
}

// Posting is one leg of a ledger transaction: Micro (signed) on Book, of a kind
// ("reserve", "consume", "partner_fee", "platform_fee", "gas", "refund", "grant", and
// "charge": a call's total taken from available credit in one leg, when it was drawn from a
// budget lease and concluded in the same write).
type Posting struct {
	Book  string
	Micro int64
	Kind  string
}

// Txn is one balanced ledger transaction of PostAll.
type Txn struct {
	Memo string
	At   time.Time // zero: PostAll's now
	Legs []Posting
}

// Recorder takes a write-only job's ledger rows, for a commit engine to write many jobs'
// together (store.Recording).
type Recorder interface {
	LedgerRows(rows ...Entry)
}

// Post writes one balanced ledger transaction: its legs sum to zero or nothing is written.
func Post(ctx context.Context, q *store.Q, requestID, memo string, now time.Time, legs ...Posting) error {
	return PostAll(ctx, q, requestID, now, Txn{Memo: memo, Legs: legs})
}

// PostAll writes balanced ledger transactions of one request in one statement: each sums to
// zero or nothing is written.
func PostAll(ctx context.Context, q *store.Q, requestID string, now time.Time, txns ...Txn) error {
	rows, err := Rows(requestID, now, txns...)
	if err != nil {
		return err
	}
	return insert(ctx, q, rows)
}

// Rows are the rows PostAll writes of txns (a leg of zero has none): an error, and no rows,
// when one does not sum to zero. A writer that sends them with others (store.Closing) inserts
// them in one statement, as PostAll does.
func Rows(requestID string, now time.Time, txns ...Txn) ([]Entry, error) {
	var rid *string
	if requestID != "" {
		rid = &requestID
	}
	var rows []Entry
	for _, t := range txns {
		if err := t.balanced(); err != nil {
			return nil, err
		}
		txn, at := store.RowID(), now
		if !t.At.IsZero() {
			at = t.At
		}
		for _, l := range t.Legs {
			if l.Micro == 0 {
				continue
			}
			rows = append(rows, Entry{ID: store.RowID(), TxnID: txn, RequestID: rid, Book: l.Book,
				AmountMicro: l.Micro, Kind: l.Kind, Memo: t.Memo, CreatedAt: at})
		}
	}
	return rows, nil
}

// PostBatch writes t as the balanced ledger transaction txnID of no one request: the summed
// legs of the calls whose rows name it (Invocation.LedgerTxn), posted together when a budget
// lease they were drawn on is settled. ledger-check proves the legs equal those calls'
// breakdowns.
func PostBatch(ctx context.Context, q *store.Q, txnID string, now time.Time, t Txn) error {
	if err := t.balanced(); err != nil {
		return err
	}
	var rows []Entry
	for _, l := range t.Legs {
		if l.Micro != 0 {
			rows = append(rows, Entry{ID: store.RowID(), TxnID: txnID, Book: l.Book, AmountMicro: l.Micro, Kind: l.Kind, Memo: t.Memo, CreatedAt: now})
		}
	}
	return insert(ctx, q, rows)
}

// insert writes rows in q's transaction, or hands them to its recorder.
func insert(ctx context.Context, q *store.Q, rows []Entry) error {
	if len(rows) == 0 {
		return nil
	}
	if rec := q.Recorder(); rec != nil {
		r, ok := rec.(Recorder)
		if !ok {
			return fmt.Errorf("%w: ledger rows", store.ErrNotRecorded)
		}
		r.LedgerRows(rows...)
		return nil
	}
	return q.Insert(ctx, &rows)
}

// balanced refuses a transaction whose legs do not sum to zero.
func (t Txn) balanced() error {
	var sum int64
	for _, l := range t.Legs {
		sum += l.Micro
	}
	if sum != 0 {
		return fmt.Errorf("unbalanced ledger transaction: legs sum to %d", sum)
	}
	return nil
}

// CallCharges is what calls naming one ledger transaction charged, for one payout book.
type CallCharges struct {
	PayoutBook  string `bun:"payout_book"`
	Reserve     int64  `bun:"reserve"`
	PartnerFee  int64  `bun:"partner_fee"`
	PlatformFee int64  `bun:"platform_fee"`
	Gas         int64  `bun:"gas"`
}

// ChargesNaming sums, by payout book, the breakdowns of accountID's calls whose rows name
// the ledger transaction txnID (a budget lease's calls, posted when it is settled).
func ChargesNaming(ctx context.Context, q *store.Q, accountID, txnID string) ([]CallCharges, error) {
	tx, err := q.Tx(ctx)
	if err != nil {
		return nil, err
	}
	var out []CallCharges
	err = tx.NewRaw(`SELECT payout_book, SUM(reserve_micro) AS reserve, SUM(partner_fee_micro) AS partner_fee,
		SUM(platform_fee_micro) AS platform_fee, SUM(gas_micro) AS gas
		FROM invocations WHERE ledger_txn = ? AND account_id = ? GROUP BY payout_book ORDER BY payout_book`, txnID, accountID).Scan(ctx, &out)
	return out, dberr.Normalize(err)
}

// Entries returns the ledger rows of one request.
func Entries(ctx context.Context, st *store.Store, requestID string) ([]Entry, error) {
	var rows []Entry
	err := st.DB().NewSelect().Model(&rows).Where("request_id = ?", requestID).OrderExpr("created_at, id").Scan(ctx)
	return rows, dberr.Normalize(err)
}

// BatchEntries returns the rows of the batch transaction txnID (Invocation.LedgerTxn): the
// sums of its calls' postings, a leg per book and kind.
func BatchEntries(ctx context.Context, st *store.Store, txnID string) ([]Entry, error) {
	var rows []Entry
	err := st.DB().NewSelect().Model(&rows).Where("request_id IS NULL AND txn_id = ?", txnID).OrderExpr("kind, book").Scan(ctx)
	return rows, dberr.Normalize(err)
}

// BookBalance is a ledger book and its sum.
type BookBalance struct {
	Book  string `bun:"book"`
	Micro int64  `bun:"micro"`
}

// BookBalances sums every book whose name starts with prefix.
func BookBalances(ctx context.Context, st *store.Store, prefix string) ([]BookBalance, error) {
	var out []BookBalance
	err := st.DB().NewRaw(`SELECT book, SUM(amount_micro) AS micro FROM ledger_entries WHERE book LIKE ? GROUP BY book HAVING SUM(amount_micro) <> 0 ORDER BY book`,
		prefix+"%").Scan(ctx, &out)
	return out, dberr.Normalize(err)
}

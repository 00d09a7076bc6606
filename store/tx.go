package store

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/driver/pgdriver"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/switchboard-hq/switchboard/store/dberr"
	"github.com/switchboard-hq/switchboard/store/watch"
)

// How a transaction runs, in one place: Tx (one transaction, run again when it loses a
// conflict), InTx and its Q (the handle every query of a transaction takes), and the
// statements Q queues for one round trip or runs now. The queries themselves live with their
// tables (invocations.go, balances.go, ..., and the domain packages: store/ledger); record.go
// is the batch writer's side of Q.

// txAttempts bounds how often a transaction that lost a serialization conflict or a deadlock
// is run again before the caller is told to retry.
const txAttempts = 3

// Tx runs fn in one transaction: everything fn writes lands together or not at all. A
// transaction that loses a serialization conflict or a deadlock is run again (fn must only
// touch the database), up to txAttempts times.
func (s *Store) Tx(ctx context.Context, fn func(ctx context.Context, tx bun.Tx) error) error {
	if !s.postgres {
		s.writer.Lock()
		defer s.writer.Unlock()
	}
	var err error
	for attempt := 1; ; attempt++ {
		err = s.db.RunInTx(ctx, nil, fn)
		if err == nil || !retryable(err) || attempt == txAttempts || ctx.Err() != nil {
			return normalize(err)
		}
		time.Sleep(time.Duration(attempt*attempt) * 5 * time.Millisecond)
	}
}

// retryable reports a transaction that failed only because another won a conflict.
func retryable(err error) bool {
	var pgErr pgdriver.Error
	if errors.As(err, &pgErr) {
		code := pgErr.Field('C')
		return code == "40001" || code == "40P01"
	}
	var liteErr *sqlite.Error
	return errors.As(err, &liteErr) && liteErr.Code()&0xff == sqlite3.SQLITE_BUSY
}

// normalize maps driver errors onto the store's sentinels, keeping the original wrapped: what
// a driver's error means is decided here, beside whether it is retried (retryable).
func normalize(err error) error { return dberr.Normalize(err) }

// Q is a transaction-scoped handle: every method runs inside the one transaction that
// Store.InTx opened, so a caller composes row locks, checks and writes that land together.
// Store keeps the SQL, the locks and the ledger's shape; the decisions (limits, fees, states)
// belong to the callers (tools/billing, tools/dispatch).
//
// On PostgreSQL, writes whose result nobody reads (inserts, unconditional updates) are queued
// and sent together, in one round trip, before the next read, conditional write or commit:
// an invocation's transaction then costs a few round trips instead of one per statement.
type Q struct {
	tx      bun.Tx // zero for a Q that records (Recording)
	store   *Store
	changed []watch.Change // what the transaction changed, fanned out after it commits
	pending []string       // PostgreSQL: queued writes, in order
	rec     Recorder       // non-nil: a write-only job's writes go to it instead (record.go)
}

// InTx runs fn in one transaction with a Q (see Tx for retries: fn must only touch the
// database).
func (s *Store) InTx(ctx context.Context, fn func(ctx context.Context, q *Q) error) error {
	var last *Q
	err := s.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		last = &Q{tx: tx, store: s}
		if err := fn(ctx, last); err != nil {
			return err
		}
		return last.flush(ctx)
	})
	if err == nil {
		s.watch.Changed(last.changed...)
	}
	return err
}

// statement is a bun query that can run now or be rendered for later.
type statement interface {
	bun.Query
	Exec(ctx context.Context, dest ...any) (sql.Result, error)
}

// render turns a query into its SQL text (pgdriver sends queries as text with their arguments
// inlined, so queued statements can go as one simple query).
func (q *Q) render(query statement) (string, error) {
	text, err := query.AppendQuery(q.store.db.QueryGen(), nil)
	return string(text), err
}

// write runs a statement whose result is not needed: on PostgreSQL it is queued for the next
// round trip; elsewhere it runs now.
func (q *Q) write(ctx context.Context, query statement) error {
	if q.rec != nil {
		return notRecorded("a statement")
	}
	if !q.store.postgres {
		_, err := query.Exec(ctx)
		return err
	}
	text, err := q.render(query)
	if err != nil {
		return err
	}
	q.pending = append(q.pending, text)
	return nil
}

// writeAll writes statements in their order (write), stopping at the first that fails.
func (q *Q) writeAll(ctx context.Context, statements ...statement) error {
	for _, st := range statements {
		if err := q.write(ctx, st); err != nil {
			return err
		}
	}
	return nil
}

// flush sends the queued writes. Every method that runs a statement now (a read, a write whose
// result it needs, any method not written with write) calls it first, so a transaction always
// sees its own writes in order.
func (q *Q) flush(ctx context.Context) error {
	if len(q.pending) == 0 {
		return nil
	}
	batch := strings.Join(q.pending, ";\n")
	q.pending = q.pending[:0]
	_, err := q.tx.ExecContext(ctx, batch)
	return err
}

// execNow runs a statement whose result is needed now (a conditional write): on PostgreSQL
// the queued writes go ahead of it in the same round trip, and the result is the statement's.
func (q *Q) execNow(ctx context.Context, query statement) (sql.Result, error) {
	if q.rec != nil {
		return nil, notRecorded("a conditional write")
	}
	if !q.store.postgres || len(q.pending) == 0 {
		return query.Exec(ctx)
	}
	text, err := q.render(query)
	if err != nil {
		return nil, err
	}
	batch := strings.Join(append(q.pending, text), ";\n")
	q.pending = q.pending[:0]
	return q.tx.ExecContext(ctx, batch)
}

// now returns the transaction for a read or a conditional write, after the queued writes.
func (q *Q) now(ctx context.Context) (bun.Tx, error) {
	if q.rec != nil {
		return bun.Tx{}, notRecorded("a read")
	}
	return q.tx, q.flush(ctx)
}

// Tx is q's transaction itself, for statements of the store's domain packages (store/grants)
// whose results are read at once, after what q queued has been sent.
func (q *Q) Tx(ctx context.Context) (bun.Tx, error) { return q.now(ctx) }

// Insert writes model's rows (a pointer to a model or to a slice of them) in one statement
// whose result nobody reads: queued for the next round trip like every such write (write).
// For the store's domain packages' tables (store/ledger).
func (q *Q) Insert(ctx context.Context, model any) error {
	if q.rec != nil {
		return notRecorded("an insert")
	}
	return q.write(ctx, q.insertStmt(model))
}

// insertStmt is Insert's statement.
func (q *Q) insertStmt(model any) statement { return q.tx.NewInsert().Model(model).Returning("NULL") }

// Announce tells, inside q's transaction, that cached rows of kind changed (ids): on
// PostgreSQL the watch notifies every replica when the transaction commits (watch.Announce),
// and InTx fans the changes out in this process once it has. For the store's domain packages
// whose rows processes cache (store/partners' intents); what q queued is sent first.
func (q *Q) Announce(ctx context.Context, kind watch.Kind, ids ...string) error {
	tx, err := q.now(ctx)
	if err != nil {
		return err
	}
	for _, id := range ids {
		q.changed = append(q.changed, watch.Change{Kind: kind, ID: id})
	}
	return q.store.watch.Announce(ctx, tx, kind, ids...)
}

// Recorder is the Recorder a Q from Recording hands its writes to; nil in a transaction. A
// domain package whose rows a commit engine merges asks it for its own recorder interface
// (ledger.Recorder).
func (q *Q) Recorder() Recorder { return q.rec }

// ForUpdate locks the rows sq reads until q's transaction ends (PostgreSQL; SQLite's write
// transaction is exclusive already).
func (q *Q) ForUpdate(sq *bun.SelectQuery) *bun.SelectQuery { return q.forUpdate(sq) }

func (q *Q) forUpdate(sq *bun.SelectQuery) *bun.SelectQuery {
	if q.store.postgres {
		return sq.For("UPDATE")
	}
	return sq // SQLite: the write transaction is exclusive already
}

// affectsOne runs a conditional write now and reports whether it changed one row.
func (q *Q) affectsOne(ctx context.Context, query statement) (bool, error) {
	res, err := q.execNow(ctx, query)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

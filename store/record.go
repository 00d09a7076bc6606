package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uptrace/bun"
)

// The seam a commit engine (store/commit: the batch writer) builds on. It runs many jobs,
// each a func(ctx, *Q), in one transaction, each under a savepoint of its own (Savepoint);
// and it has the writes of write-only jobs recorded instead of run (Recording), to write many
// jobs' together, a statement per table. The SQL of the store's tables stays here: the
// engine renders only its merged forms.

// A Recorder takes, in the order a Q is given them, the writes of a job that only writes:
// new rows (a call's record and its webhook events among them), balance and key spend
// deltas, and draws from leases (a zero draw: the check that a lease is still open). The
// ledger's rows go to it through store/ledger's Recorder, which a commit engine implements too.
type Recorder interface {
	Invocation(inv Invocation)
	WebhookEvent(ev WebhookEvent)
	AdjustCredit(accountID string, d CreditDelta, at time.Time)
	AdjustKeySpend(keyID string, spent, held int64)
	DrawReservation(requestID string, worst int64) // the recorder checks it when it writes it
}

// ErrNotRecorded is a recording Q asked for what a Recorder cannot take (a read, a
// conditional write, any other statement): the job must run in a transaction instead.
var ErrNotRecorded = errors.New("this write cannot be recorded to be merged with others")

func notRecorded(what string) error { return fmt.Errorf("%w: %s", ErrNotRecorded, what) }

// Recording returns a Q, in no transaction, that hands the writes it is given to r; anything
// else fails with ErrNotRecorded.
func (s *Store) Recording(r Recorder) *Q { return &Q{store: s, rec: r} }

// Savepoint runs fn with a Q in tx under savepoint name, so that fn's failure rolls back its
// own writes alone: jobErr is that failure, err a failure of the database (unavailable, or
// the savepoint itself) that sinks the transaction. On PostgreSQL the savepoint's statements
// travel with fn's first and last round trips. The Q's changes are not fanned out (Watch).
func (s *Store) Savepoint(ctx context.Context, tx bun.Tx, name string, fn func(ctx context.Context, q *Q) error) (jobErr, err error) {
	sp := "SAVEPOINT " + name
	q := &Q{tx: tx, store: s}
	if s.postgres {
		q.pending = append(q.pending, sp)
	} else if _, err := tx.ExecContext(ctx, sp); err != nil {
		return nil, err
	}
	jobErr = fn(ctx, q)
	if jobErr == nil {
		if !s.postgres {
			_, err = tx.ExecContext(ctx, "RELEASE "+sp)
			return nil, err
		}
		q.pending = append(q.pending, "RELEASE "+sp)
		if jobErr = q.flush(ctx); jobErr == nil {
			return nil, nil
		}
	}
	if IsUnavailable(jobErr) {
		return nil, jobErr // the database, not the job
	}
	if len(q.pending) > 0 && q.pending[0] == sp {
		return jobErr, nil // it failed before anything reached the database
	}
	if _, err := tx.ExecContext(ctx, "ROLLBACK TO "+sp); err != nil {
		return nil, err
	}
	return jobErr, nil
}

// prepared holds the statements ExecPrepared prepared, and counts their runs.
type prepared struct {
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
	runs  atomic.Int64
}

// ExecPrepared runs text with args inside tx, prepared once (database/sql prepares it again
// on each connection that runs it, once). SQLite parses every statement it is sent: the
// batch writer's statements, alike from batch to batch, cost it less to run prepared.
func (s *Store) ExecPrepared(ctx context.Context, tx bun.Tx, text string, args ...any) (sql.Result, error) {
	st, err := s.statement(ctx, text)
	if err != nil {
		return nil, err
	}
	s.prep.runs.Add(1)
	return tx.Tx.StmtContext(ctx, st).ExecContext(ctx, args...)
}

// PreparedRuns is how many statements ExecPrepared has run (which bun's query hooks do not
// see): the benchmarks' statement counts add it.
func (s *Store) PreparedRuns() int64 { return s.prep.runs.Load() }

func (s *Store) statement(ctx context.Context, text string) (*sql.Stmt, error) {
	s.prep.mu.Lock()
	defer s.prep.mu.Unlock()
	if st := s.prep.stmts[text]; st != nil {
		return st, nil
	}
	st, err := s.db.DB.PrepareContext(ctx, text)
	if err != nil {
		return nil, err
	}
	if s.prep.stmts == nil {
		s.prep.stmts = map[string]*sql.Stmt{}
	}
	s.prep.stmts[text] = st
	return st, nil
}

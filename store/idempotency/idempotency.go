// Package idempotency keeps the Idempotency-Key rows of tool calls: written in flight before
// the tool runs, each in a short transaction of its own, and holding the answer once there is
// one (tools/idempotency decides what they mean).
package idempotency

import (
	"context"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/dberr"
	"github.com/uptrace/bun"
)

// Row states.
const (
	InFlight = "in_flight"
	Done     = "done"
)

// Key is one caller's key for one tool.
type Key struct {
	bun.BaseModel `bun:"table:idempotency_keys,alias:idempotency_key"`

	Scope       string    `bun:"scope,pk"`
	Tool        string    `bun:"tool,pk"`
	IdemKey     string    `bun:"idem_key,pk"`
	RequestHash string    `bun:"request_hash"`
	CallID      string    `bun:"call_id"`
	RunID       string    `bun:"run_id"`
	State       string    `bun:"state"`
	Code        string    `bun:"code"`
	Answer      []byte    `bun:"answer"`
	MasterKeyID string    `bun:"master_key_id"` // the master key that sealed Answer; "": the server secret's (earlier releases)
	CreatedAt   time.Time `bun:"created_at"`
	StartedAt   time.Time `bun:"started_at"`
	ExpiresAt   time.Time `bun:"expires_at"`
}

// Keys is the queries of idempotency keys.
type Keys interface {
	// Begin inserts k in flight unless a row of its (scope, tool, key) that has not expired at
	// k.CreatedAt exists (an expired one is replaced); it returns the row that holds the key
	// and whether it is k.
	Begin(ctx context.Context, k *Key) (held *Key, inserted bool, _ error)
	// TakeOver restarts a row in flight as run (its RunID, CallID and StartedAt), if it is
	// still as was read (its run): of two retries taking over one row, one does.
	TakeOver(ctx context.Context, was *Key, run *Key) (bool, error)
	// Finish records a run's answer, sealed under master key masterKeyID, if the row is still
	// that run's.
	Finish(ctx context.Context, run *Key, code string, answer []byte, masterKeyID string) error
	// Release forgets a run's row (its answer is not one to replay), if it is still that run's.
	Release(ctx context.Context, run *Key) error
	// Sweep deletes the rows expired at now and returns how many.
	Sweep(ctx context.Context, now time.Time) (int, error)
	// SealedElsewhere returns up to limit answers not expired at now and sealed under a master
	// key other than current, in key order after `after` (nil: from the first): a re-seal's
	// next batch.
	SealedElsewhere(ctx context.Context, current string, now time.Time, after *Key, limit int) ([]*Key, error)
	// Reseal stores k's answer sealed again under master key `to`, if the row still holds the
	// answer k read (its run, under its master key): false when another re-seal or a new run
	// changed it first.
	Reseal(ctx context.Context, k *Key, sealed []byte, to string) (bool, error)
	// CountSealedElsewhere counts the answers not expired at now under a master key other
	// than current.
	CountSealedElsewhere(ctx context.Context, current string, now time.Time) (int, error)
}

// New returns the idempotency queries of st.
func New(st *store.Store) Keys { return &queries{st: st, db: st.DB()} }

type queries struct {
	st *store.Store
	db *bun.DB
}

func (q *queries) Begin(ctx context.Context, k *Key) (*Key, bool, error) {
	held := new(Key)
	inserted := false
	err := q.st.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewDelete().Model((*Key)(nil)).
			Where("scope = ? AND tool = ? AND idem_key = ? AND expires_at <= ?", k.Scope, k.Tool, k.IdemKey, k.CreatedAt).Exec(ctx); err != nil {
			return err
		}
		res, err := tx.NewInsert().Model(k).On("CONFLICT (scope, tool, idem_key) DO NOTHING").Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 1 {
			inserted = true
			*held = *k
			return nil
		}
		return tx.NewSelect().Model(held).Where("scope = ? AND tool = ? AND idem_key = ?", k.Scope, k.Tool, k.IdemKey).Scan(ctx)
	})
	if err != nil {
		return nil, false, dberr.Normalize(err)
	}
	return held, inserted, nil
}

func (q *queries) TakeOver(ctx context.Context, was *Key, run *Key) (bool, error) {
	res, err := q.db.NewUpdate().Model((*Key)(nil)).
		Set("state = ?", InFlight).Set("run_id = ?", run.RunID).Set("call_id = ?", run.CallID).Set("started_at = ?", run.StartedAt).
		Where("scope = ? AND tool = ? AND idem_key = ?", was.Scope, was.Tool, was.IdemKey).
		Where("run_id = ?", was.RunID).Exec(ctx)
	if err != nil {
		return false, dberr.Normalize(err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

func (q *queries) Finish(ctx context.Context, run *Key, code string, answer []byte, masterKeyID string) error {
	_, err := q.db.NewUpdate().Model((*Key)(nil)).
		Set("state = ?", Done).Set("code = ?", code).Set("answer = ?", answer).Set("master_key_id = ?", masterKeyID).
		Where("scope = ? AND tool = ? AND idem_key = ?", run.Scope, run.Tool, run.IdemKey).
		Where("state = ? AND run_id = ?", InFlight, run.RunID).Exec(ctx)
	return dberr.Normalize(err)
}

func (q *queries) Release(ctx context.Context, run *Key) error {
	_, err := q.db.NewDelete().Model((*Key)(nil)).
		Where("scope = ? AND tool = ? AND idem_key = ?", run.Scope, run.Tool, run.IdemKey).
		Where("state = ? AND run_id = ?", InFlight, run.RunID).Exec(ctx)
	return dberr.Normalize(err)
}

func (q *queries) Sweep(ctx context.Context, now time.Time) (int, error) {
	res, err := q.db.NewDelete().Model((*Key)(nil)).Where("expires_at <= ?", now).Exec(ctx)
	if err != nil {
		return 0, dberr.Normalize(err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

func (q *queries) SealedElsewhere(ctx context.Context, current string, now time.Time, after *Key, limit int) ([]*Key, error) {
	var ks []*Key
	sel := q.db.NewSelect().Model(&ks).
		Where("state = ? AND answer IS NOT NULL AND master_key_id <> ? AND expires_at > ?", Done, current, now)
	if after != nil {
		sel = sel.Where("(scope, tool, idem_key) > (?, ?, ?)", after.Scope, after.Tool, after.IdemKey)
	}
	err := sel.OrderExpr("scope, tool, idem_key").Limit(int64(limit)).Scan(ctx)
	return ks, dberr.Normalize(err)
}

func (q *queries) Reseal(ctx context.Context, k *Key, sealed []byte, to string) (bool, error) {
	res, err := q.db.NewUpdate().Model((*Key)(nil)).Set("answer = ?", sealed).Set("master_key_id = ?", to).
		Where("scope = ? AND tool = ? AND idem_key = ?", k.Scope, k.Tool, k.IdemKey).
		Where("state = ? AND run_id = ? AND master_key_id = ?", Done, k.RunID, k.MasterKeyID).Exec(ctx)
	if err != nil {
		return false, dberr.Normalize(err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

func (q *queries) CountSealedElsewhere(ctx context.Context, current string, now time.Time) (int, error) {
	n, err := q.db.NewSelect().Model((*Key)(nil)).
		Where("state = ? AND answer IS NOT NULL AND master_key_id <> ? AND expires_at > ?", Done, current, now).Count(ctx)
	return int(n), dberr.Normalize(err)
}

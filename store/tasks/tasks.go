// Package tasks keeps the tasks long-running calls are answered with (the MCP Tasks extension,
// REST's Prefer: respond-async): a task is written before it is returned, so any replica
// answers for it, and it outlives the replica that runs it (the sweeper concludes it).
package tasks

import (
	"context"
	"errors"
	"time"

	"github.com/uptrace/bun"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/dberr"
)

// A task's statuses, as the extension names them.
const (
	Working   = "working"
	Completed = "completed" // the call answered: a result, or an error in the error model
	Failed    = "failed"    // a protocol error (none of ours today; kept for the wire)
	Cancelled = "cancelled"
)

// MaxResult bounds a task's stored result and error, in bytes: larger is refused by Finish.
const MaxResult = 4 << 20

// ErrTooLarge is a result over MaxResult.
var ErrTooLarge = errors.New("the task's result is larger than a task keeps")

// ErrNotWorking is a conclusion of a task that is already concluded (or unknown).
var ErrNotWorking = errors.New("the task is not working")

// Task is one task.
type Task struct {
	bun.BaseModel `bun:"table:tasks"`

	ID              string    `bun:"id,pk"`
	AccountID       string    `bun:"account_id,notnull"`
	KeyID           string    `bun:"key_id,notnull"`
	RequestID       string    `bun:"request_id,notnull"` // the invocation it runs
	Tool            string    `bun:"tool,notnull"`
	Status          string    `bun:"status,notnull"`
	StatusMessage   string    `bun:"status_message,notnull"`
	Result          *string   `bun:"result"` // the tool's answer, JSON
	Error           *string   `bun:"error"`  // the error model body of an answer that is an error, JSON
	CancelRequested bool      `bun:"cancel_requested,notnull"`
	Replica         string    `bun:"replica,notnull"`
	TTLMs           int64     `bun:"ttl_ms,notnull"`
	CreatedAt       time.Time `bun:"created_at,notnull"`
	UpdatedAt       time.Time `bun:"updated_at,notnull"`
	ExpiresAt       time.Time `bun:"expires_at,nullzero"` // CreatedAt + TTLMs (Create sets it)
}

// Done reports a task in a terminal status.
func (t *Task) Done() bool { return t.Status != Working }

// Expired reports a task past its ttlMs at now.
func (t *Task) Expired(now time.Time) bool { return !now.Before(t.ExpiresAt) }

// ExpiredKept is how long an expired task's row stays (its answer dropped) so that tasks/get
// can say it expired rather than that there is none; Expire deletes it then.
const ExpiredKept = 24 * time.Hour

// Ending is how a task ends: its status, message, and its answer or error (JSON).
type Ending struct {
	Status, Message string
	Result, Error   []byte
}

// Tasks are the queries of tasks.
type Tasks interface {
	// Create writes t (working); it is durable when Create returns.
	Create(ctx context.Context, t *Task) error
	// Get is the account's task id, or dberr.ErrNotFound (another account's task included).
	Get(ctx context.Context, accountID, id string) (*Task, error)
	// ByRequest is the task that runs the invocation requestID, or dberr.ErrNotFound.
	ByRequest(ctx context.Context, requestID string) (*Task, error)
	// RequestCancel marks the account's working task id for cancelling; ErrNotWorking when it
	// is concluded already, dberr.ErrNotFound when there is none.
	RequestCancel(ctx context.Context, accountID, id string, now time.Time) error
	// CancelRequested reports whether task id was asked to cancel.
	CancelRequested(ctx context.Context, id string) (bool, error)
	// Finish concludes the working task id; ErrNotWorking when another conclusion came first.
	Finish(ctx context.Context, id string, e Ending, now time.Time) error
	// Expire drops the answers of concluded tasks past their expiry and deletes those expired
	// more than ExpiredKept ago, at most limit rows of each; a working task is left to the
	// sweeper, which concludes its call first. Safe on several replicas at once.
	Expire(ctx context.Context, now time.Time, limit int) (cleared, deleted int, err error)
	// Working are the account's working tasks, newest first, at most limit.
	Working(ctx context.Context, accountID string, limit int) ([]*Task, error)
	// Orphans are working tasks whose invocation is concluded (their runner went before it
	// could conclude the task), oldest first, at most limit.
	Orphans(ctx context.Context, limit int) ([]*Task, error)
}

// New returns the tasks of st.
func New(st *store.Store) Tasks { return &queries{db: st.DB()} }

type queries struct{ db *bun.DB }

func (q *queries) Create(ctx context.Context, t *Task) error {
	if t.ExpiresAt.IsZero() {
		t.ExpiresAt = t.CreatedAt.Add(time.Duration(t.TTLMs) * time.Millisecond)
	}
	_, err := q.db.NewInsert().Model(t).Exec(ctx)
	return dberr.Normalize(err)
}

func (q *queries) Get(ctx context.Context, accountID, id string) (*Task, error) {
	t := new(Task)
	err := q.db.NewSelect().Model(t).Where("id = ? AND account_id = ?", id, accountID).Scan(ctx)
	return t, dberr.Normalize(err)
}

func (q *queries) ByRequest(ctx context.Context, requestID string) (*Task, error) {
	t := new(Task)
	err := q.db.NewSelect().Model(t).Where("request_id = ?", requestID).Scan(ctx)
	return t, dberr.Normalize(err)
}

func (q *queries) RequestCancel(ctx context.Context, accountID, id string, now time.Time) error {
	res, err := q.db.NewUpdate().Model((*Task)(nil)).Set("cancel_requested = ?", true).Set("updated_at = ?", now).
		Where("id = ? AND account_id = ? AND status = ?", id, accountID, Working).Exec(ctx)
	if err != nil {
		return dberr.Normalize(err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil
	}
	if _, err := q.Get(ctx, accountID, id); err != nil {
		return err
	}
	return ErrNotWorking
}

func (q *queries) CancelRequested(ctx context.Context, id string) (bool, error) {
	var yes bool
	err := q.db.NewSelect().Model((*Task)(nil)).Column("cancel_requested").Where("id = ?", id).Scan(ctx, &yes)
	return yes, dberr.Normalize(err)
}

func (q *queries) Finish(ctx context.Context, id string, e Ending, now time.Time) error {
	if len(e.Result) > MaxResult || len(e.Error) > MaxResult {
		return ErrTooLarge
	}
	up := q.db.NewUpdate().Model((*Task)(nil)).Set("status = ?", e.Status).Set("status_message = ?", e.Message).
		Set("updated_at = ?", now).Where("id = ? AND status = ?", id, Working)
	if e.Result != nil {
		up.Set("result = ?", string(e.Result))
	}
	if e.Error != nil {
		up.Set("error = ?", string(e.Error))
	}
	res, err := up.Exec(ctx)
	if err != nil {
		return dberr.Normalize(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return ErrNotWorking
	}
	return nil
}

func (q *queries) Orphans(ctx context.Context, limit int) ([]*Task, error) {
	var ts []*Task
	err := q.db.NewSelect().Model(&ts).
		Where("status = ?", Working).
		Where("EXISTS (SELECT 1 FROM invocations i WHERE i.request_id = task.request_id AND i.finished_at IS NOT NULL)").
		OrderExpr("created_at ASC").Limit(int64(limit)).Scan(ctx)
	return ts, dberr.Normalize(err)
}

func (q *queries) Expire(ctx context.Context, now time.Time, limit int) (cleared, deleted int, err error) {
	some := func(where string, args ...any) *bun.SelectQuery {
		return q.db.NewSelect().Model((*Task)(nil)).Column("id").Where("status <> ?", Working).
			Where(where, args...).OrderExpr("expires_at ASC").Limit(int64(limit))
	}
	res, err := q.db.NewUpdate().Model((*Task)(nil)).Set("result = NULL").Set("error = NULL").Set("status_message = ?", "expired").
		Where("id IN (?)", some("expires_at <= ? AND (result IS NOT NULL OR error IS NOT NULL)", now)).Exec(ctx)
	if err != nil {
		return 0, 0, dberr.Normalize(err)
	}
	c, _ := res.RowsAffected()
	res, err = q.db.NewDelete().Model((*Task)(nil)).Where("id IN (?)", some("expires_at <= ?", now.Add(-ExpiredKept))).Exec(ctx)
	if err != nil {
		return int(c), 0, dberr.Normalize(err)
	}
	d, _ := res.RowsAffected()
	return int(c), int(d), nil
}

func (q *queries) Working(ctx context.Context, accountID string, limit int) ([]*Task, error) {
	var ts []*Task
	err := q.db.NewSelect().Model(&ts).Where("account_id = ? AND status = ?", accountID, Working).
		OrderExpr("created_at DESC, id DESC").Limit(int64(limit)).Scan(ctx)
	return ts, dberr.Normalize(err)
}

package switchboard

// Long-running calls answered as tasks: Prefer: respond-async, then GET /v1/tasks/{id} until
// the task leaves working (DELETE cancels it).

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Task is a call running in the background: its status and, once completed, the call's
// answer (Result) or its error (Error), as the call would have answered.
type Task struct {
	TaskID         string          `json:"taskId"`
	Status         string          `json:"status"` // working, completed, failed, cancelled
	StatusMessage  string          `json:"statusMessage,omitempty"`
	CreatedAt      time.Time       `json:"createdAt"`
	LastUpdatedAt  time.Time       `json:"lastUpdatedAt"`
	TTLMs          int64           `json:"ttlMs"`
	PollIntervalMs int64           `json:"pollIntervalMs"`
	RequestID      string          `json:"requestId"`
	Result         json.RawMessage `json:"result,omitempty"`
	Error          *struct {
		Code    string         `json:"code"`
		Message string         `json:"message"`
		Details map[string]any `json:"details,omitempty"`
	} `json:"error,omitempty"`
}

// Done reports a task that has left working.
func (t *Task) Done() bool { return t.Status != "working" }

// Err is a concluded task's error as the call would have answered it (nil without one).
func (t *Task) Err() error {
	if t.Error == nil {
		return nil
	}
	return &Error{Code: ErrorCode(t.Error.Code), Message: t.Error.Message, Details: t.Error.Details, Operation: "task_get", RequestID: t.RequestID}
}

// Task reads one of the account's tasks.
func (c *Client) Task(ctx context.Context, taskID string) (*Task, error) {
	return callT[Task](ctx, c, "task_get", map[string]string{"task_id": taskID}, nil, nil)
}

// CancelTask cancels a working task: its partner call is stopped and its hold refunded. It
// answers the task as it stands (still working until the cancel lands: WaitTask for it).
func (c *Client) CancelTask(ctx context.Context, taskID string) (*Task, error) {
	return callT[Task](ctx, c, "task_cancel", map[string]string{"task_id": taskID}, nil, nil)
}

// WaitTask polls a task at its pollIntervalMs until it leaves working or ctx ends, telling
// progress (when set) each state it reads.
func (c *Client) WaitTask(ctx context.Context, taskID string, progress func(*Task)) (*Task, error) {
	for {
		t, err := c.Task(ctx, taskID)
		if err != nil {
			return nil, err
		}
		if progress != nil {
			progress(t)
		}
		if t.Done() {
			return t, nil
		}
		wait := time.Duration(max(t.PollIntervalMs, 100)) * time.Millisecond
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return t, fmt.Errorf("switchboard: waiting for task %s: %w", taskID, ctx.Err())
		case <-timer.C:
		}
	}
}

type preferAsyncKey struct{}

// InvokeAndWait invokes with Prefer: respond-async: a long-running intent's call comes back
// at once as a task, which it waits for (WaitTask, telling progress), answering what Invoke
// would have; any other call answers as Invoke does.
func (c *Client) InvokeAndWait(ctx context.Context, in InvokeInput, progress func(*Task)) (*Invocation, error) {
	var raw json.RawMessage
	if err := c.call(context.WithValue(ctx, preferAsyncKey{}, true), "invoke_partner_message", nil, nil, in, &raw); err != nil {
		return nil, err
	}
	var started Task
	if json.Unmarshal(raw, &started) == nil && started.TaskID != "" && started.Status != "" {
		t, err := c.WaitTask(ctx, started.TaskID, progress)
		if err != nil {
			return nil, err
		}
		if err := t.Err(); err != nil {
			return nil, err
		}
		raw = t.Result
	}
	var out Invocation
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("switchboard: invoke_partner_message: decode answer: %w", err)
	}
	return &out, nil
}

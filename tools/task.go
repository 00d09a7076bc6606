package tools

import (
	"encoding/json"
	"time"

	invopop "github.com/invopop/jsonschema"
)

// A task's statuses (MCP Tasks extension).
const (
	TaskWorking   = "working"
	TaskCompleted = "completed"
	TaskFailed    = "failed"
	TaskCancelled = "cancelled"
)

// Task is a call answered later: what a door renders as the Tasks extension's task (MCP) or
// a 202's body (REST). A completed task carries the tool's answer: Result, or Error when the
// answer is an error (the task completed all the same: the call ran and answered).
type Task struct {
	TaskID         string    `json:"taskId"`
	Status         string    `json:"status" jsonschema:"enum=working,enum=completed,enum=failed,enum=cancelled"`
	StatusMessage  string    `json:"statusMessage,omitempty"`
	CreatedAt      time.Time `json:"createdAt"`
	LastUpdatedAt  time.Time `json:"lastUpdatedAt"`
	TTLMs          int64     `json:"ttlMs"`
	PollIntervalMs int64     `json:"pollIntervalMs"`
	RequestID      string    `json:"requestId" jsonschema_description:"the call the task runs (its invocation)"`
	Result         RawJSON   `json:"result,omitempty" jsonschema_description:"when completed with an answer: the tool's answer, as the call would have given it"`
	Error          *Error    `json:"error,omitempty" jsonschema_description:"when completed with an error: the error model object the call would have answered"`
}

// RawJSON is JSON kept as it is (a task's stored answer).
type RawJSON json.RawMessage

// MarshalJSON writes the JSON as kept, null when there is none.
func (r RawJSON) MarshalJSON() ([]byte, error) {
	if len(r) == 0 {
		return []byte("null"), nil
	}
	return r, nil
}

// UnmarshalJSON keeps the bytes.
func (r *RawJSON) UnmarshalJSON(b []byte) error {
	*r = append((*r)[:0], b...)
	return nil
}

// JSONSchema: any JSON value.
func (RawJSON) JSONSchema() *invopop.Schema {
	return AnyValue("a tool's answer, as it would have been given")
}

// Tasked is an answer that may be a task started in its place.
type Tasked interface{ StartedTask() *Task }

// StartedTask is the task an answer started in its place, nil when the answer is the answer.
func StartedTask(answer any) *Task {
	if t, ok := answer.(Tasked); ok {
		return t.StartedTask()
	}
	return nil
}

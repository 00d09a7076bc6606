package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/tasks"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/billing"
)

// Long-running calls answered as tasks (issue 50). A call of an intent whose timeoutMs is
// above Config.TaskAfter, by a caller that takes a task (tools.Caller.AcceptsTask), is
// answered at once with a task: its hold taken and its task written before the answer, the
// partner called in the background on the same path as any call (run), and its conclusion
// (settled on success, refunded otherwise) kept in the task for tasks/get. A task is a
// ticket whose conclusion comes later: there is no second money path.

// Task defaults.
const (
	// DefaultTaskAfter: an intent that may take longer than this runs as a task for a caller
	// that takes one; shorter ones answer in their request, as before.
	DefaultTaskAfter = 30 * time.Second
	// TaskPollInterval is the pollIntervalMs a task suggests, and how often its runner looks
	// for a cancel asked on another replica.
	TaskPollInterval = time.Second
	// TaskTTL is a task's ttlMs: how long after its creation it is kept for tasks/get.
	TaskTTL = 24 * time.Hour
)

var (
	errTaskCancelled = errors.New("the task was cancelled by its caller")
	errReplicaGone   = errors.New("the replica running the task stopped")
)

// taskRunners are this replica's running tasks: their cancels, and the context that ends
// with the replica (its tasks are then left where they stand, to the sweeper, as after a
// crash).
type taskRunners struct {
	mu      sync.Mutex
	cancels map[string]context.CancelCauseFunc // by task id
	wg      sync.WaitGroup
	life    context.Context
	stop    context.CancelFunc
}

func newTaskRunners() *taskRunners {
	life, stop := context.WithCancel(context.Background())
	return &taskRunners{cancels: map[string]context.CancelCauseFunc{}, life: life, stop: stop}
}

// StopTasks stops this replica's task runners where they stand, as if the replica died: no
// conclusion is written; the sweeper concludes each task (a refund) once its call's deadline
// has passed. It returns when every runner has stopped.
func (s *Service) StopTasks() {
	s.runners.stop()
	s.runners.wg.Wait()
}

// WaitTasks waits for this replica's running tasks to conclude, until ctx ends (a drain);
// it reports how many were still running then (the caller stops them with StopTasks: the
// sweeper concludes each, refunded, once its call's deadline has passed).
func (s *Service) WaitTasks(ctx context.Context) (left int) {
	done := make(chan struct{})
	go func() {
		s.runners.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return 0
	case <-ctx.Done():
		s.runners.mu.Lock()
		defer s.runners.mu.Unlock()
		return len(s.runners.cancels)
	}
}

// tasked is the way of a new call answered as a task: admitted, then started (startTask).
type tasked struct{ s *Service }

func (w tasked) take(ctx context.Context, c *tools.Caller, cl *call, in InvokeInput) (InvokeOutput, error) {
	inv, err := w.s.admitted(ctx, c, cl, in)
	if err != nil {
		return InvokeOutput{}, err
	}
	return w.s.startTask(ctx, cl, inv)
}

// runsAsTask: the caller takes a task and the intent may run longer than a request waits.
func (s *Service) runsAsTask(c *tools.Caller, cl *call) bool {
	return c.AcceptsTask && s.tasks != nil && time.Duration(cl.intent.TimeoutMs)*time.Millisecond > s.cfg.TaskAfter
}

// startTask writes the task, opens the call's ticket (its hold) and returns the task, the
// partner call running in the background. A ticket that cannot open (no credit) ends the
// task with the same error, which is the answer.
func (s *Service) startTask(ctx context.Context, cl *call, inv *store.Invocation) (InvokeOutput, error) {
	bg := context.WithoutCancel(ctx)
	now := s.now().UTC()
	t := &tasks.Task{ID: uuid.NewString(), AccountID: inv.AccountID, KeyID: inv.KeyID, RequestID: inv.RequestID,
		Tool: "invoke_partner_message", Status: tasks.Working, StatusMessage: "calling " + cl.intent.PublicIdentifier,
		Replica: s.cfg.Replica, TTLMs: TaskTTL.Milliseconds(), CreatedAt: now, UpdatedAt: now}
	if err := s.tasks.Create(bg, t); err != nil {
		return InvokeOutput{}, fmt.Errorf("record the task: %w", err)
	}
	cl.taskID = t.ID
	// Durable as a write is: its hold and record commit before the task is returned (the
	// sweeper can see them), its outcome before the task concludes.
	cl.money.Durability = billing.DurabilityOf(true, cl.flat)
	if err := s.open(ctx, cl, inv, ""); err != nil {
		s.finishTask(bg, t.ID, InvokeOutput{}, err)
		return InvokeOutput{}, err
	}
	runCtx, cancel := context.WithCancelCause(bg)
	r := s.runners
	r.mu.Lock()
	r.cancels[t.ID] = cancel
	r.mu.Unlock()
	r.wg.Add(1)
	go s.runTask(runCtx, cancel, cl, inv, t.ID)
	return InvokeOutput{Handle: cl.intent.PublicIdentifier, RequestID: inv.RequestID, Result: Anything("null"),
		Charge: cl.quote.Refunded(), Task: taskOf(t)}, nil
}

// runTask runs a task's call and keeps its answer in the task, unless the replica stops
// first (the sweeper concludes it then).
func (s *Service) runTask(ctx context.Context, cancel context.CancelCauseFunc, cl *call, inv *store.Invocation, id string) {
	r := s.runners
	defer r.wg.Done()
	defer func() {
		r.mu.Lock()
		delete(r.cancels, id)
		r.mu.Unlock()
		cancel(nil)
	}()
	stopGone := context.AfterFunc(r.life, func() { cancel(errReplicaGone) })
	defer stopGone()
	go s.watchCancel(ctx, cancel, id)
	out, err := s.run(ctx, cl, inv, time.Now())
	if errors.Is(err, errReplicaGone) {
		return
	}
	s.finishTask(context.WithoutCancel(ctx), id, out, err)
}

// watchCancel cancels a task asked to cancel on another replica (CancelTask on this one
// cancels at once).
func (s *Service) watchCancel(ctx context.Context, cancel context.CancelCauseFunc, id string) {
	tick := time.NewTicker(TaskPollInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if yes, err := s.tasks.CancelRequested(ctx, id); err == nil && yes {
				cancel(errTaskCancelled)
				return
			}
		}
	}
}

// finishTask keeps a task's answer: out, or err in the error model; cancelled when err says
// the caller cancelled it.
func (s *Service) finishTask(ctx context.Context, id string, out InvokeOutput, err error) {
	e := tasks.Ending{Status: tasks.Completed, Message: "answered"}
	if err != nil {
		te := tools.Translate(err)
		e.Error, _ = json.Marshal(tools.Body{Error: te})
		e.Message = te.Message
		if errors.Is(err, errTaskCancelled) {
			e.Status = tasks.Cancelled
		}
	} else {
		e.Result, _ = json.Marshal(out)
	}
	if ferr := s.tasks.Finish(ctx, id, e, s.now().UTC()); ferr != nil {
		if errors.Is(ferr, tasks.ErrTooLarge) { // the call's record holds it; the task says so
			te := tools.Errorf(tools.CodeUpstream, "the answer is larger than a task keeps (%d bytes); it is recorded with request %s", tasks.MaxResult, out.RequestID)
			e = tasks.Ending{Status: tasks.Completed, Message: te.Message}
			e.Error, _ = json.Marshal(tools.Body{Error: te})
			ferr = s.tasks.Finish(ctx, id, e, s.now().UTC())
		}
		if ferr != nil && !errors.Is(ferr, tasks.ErrNotWorking) {
			s.log.ErrorContext(ctx, "conclude a task", "task_id", id, "err", ferr)
		}
	}
}

// finishFromRecord concludes a working task whose call has concluded without it (its runner
// went first, or the sweeper concluded the call) from the call's record: the answer it gave.
func (s *Service) finishFromRecord(ctx context.Context, t *tasks.Task, inv *store.Invocation) error {
	if inv.Answer == nil || !store.StateOf(inv.State).Final {
		return nil
	}
	raw := []byte(*inv.Answer)
	e := tasks.Ending{Status: tasks.Completed, Message: "answered"}
	var body tools.Body
	if json.Unmarshal(raw, &body) == nil && body.Error != nil {
		e.Error, e.Message = raw, body.Error.Message
		if inv.State == store.InvCancelled {
			e.Status = tasks.Cancelled
		}
	} else {
		e.Result = raw
	}
	err := s.tasks.Finish(ctx, t.ID, e, s.now().UTC())
	if errors.Is(err, tasks.ErrNotWorking) {
		return nil
	}
	return err
}

// RecoverTasks concludes the working tasks whose calls have concluded (by the sweeper, or by
// a runner that stopped before it wrote the task), at most 100 a sweep, then expires the
// concluded tasks past their ttlMs (their answers dropped; their rows deleted a day later).
func (s *Service) RecoverTasks(ctx context.Context) (int, error) {
	orphans, err := s.tasks.Orphans(ctx, 100)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, t := range orphans {
		inv, err := s.invocations.Get(ctx, t.AccountID, t.RequestID)
		if err != nil {
			return n, err
		}
		if err := s.finishFromRecord(ctx, t, inv); err != nil {
			return n, fmt.Errorf("conclude task %s: %w", t.ID, err)
		}
		n++
	}
	if _, _, err := s.tasks.Expire(ctx, s.now().UTC(), 500); err != nil {
		return n, fmt.Errorf("expire tasks: %w", err)
	}
	return n, nil
}

func taskOf(t *tasks.Task) *tools.Task {
	out := &tools.Task{TaskID: t.ID, Status: t.Status, StatusMessage: t.StatusMessage, CreatedAt: t.CreatedAt.UTC(), LastUpdatedAt: t.UpdatedAt.UTC(),
		TTLMs: t.TTLMs, PollIntervalMs: TaskPollInterval.Milliseconds(), RequestID: t.RequestID}
	if t.Result != nil {
		out.Result = tools.RawJSON(*t.Result)
	}
	if t.Error != nil {
		var body tools.Body
		if json.Unmarshal([]byte(*t.Error), &body) == nil {
			out.Error = body.Error
		}
	}
	return out
}

// TaskInput names one of the caller's tasks.
type TaskInput struct {
	TaskID string `json:"taskId" jsonschema:"minLength=1,maxLength=64" jsonschema_description:"the task's taskId, from the answer that started it"`
}

// taskTools are task_get and task_cancel: the doors' tasks/get and tasks/cancel (MCP) and
// GET and DELETE /v1/tasks/{id} (REST), listed as no tool; and task_list, the portal's.
func (s *Service) taskTools() []*tools.Tool {
	notFound := func(id string) error {
		return tools.Errorf(tools.CodeNotFound, "no task %s for this account (a task is kept %d hours after it starts)", id, int(TaskTTL.Hours()))
	}
	// find is the account's task, an expired one answered as the extension's "Task has expired".
	find := func(ctx context.Context, c *tools.Caller, id string) (*tasks.Task, error) {
		t, err := s.tasks.Get(ctx, c.AccountID(), id)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return nil, notFound(id)
		case err != nil:
			return nil, err
		case t.Expired(s.now()):
			e := tools.Errorf(tools.CodeNotFound, "Task has expired: task %s passed its ttlMs at %s; its call's record stays in the usage log (requestId %s)",
				id, t.ExpiresAt.UTC().Format(time.RFC3339), t.RequestID)
			e.Details = map[string]any{"taskId": id, "expired": true, "expiredAt": t.ExpiresAt.UTC().Format(time.RFC3339Nano), "requestId": t.RequestID}
			return nil, e
		}
		return t, nil
	}
	get := tools.New(tools.Def{
		Name: "task_get", Title: "A task's status and answer",
		Description: "The status of a task a long-running call answered with and, once it has completed, the answer the call would have given.",
		Access:      tools.RequireScope(tools.ScopePartner), Unlisted: true,
		Annotations: tools.Annotations{ReadOnly: tools.Bool(true), Idempotent: true, OpenWorld: tools.Bool(false)},
	}, func(ctx context.Context, c *tools.Caller, in TaskInput) (tools.Task, error) {
		t, err := find(ctx, c, in.TaskID)
		if err != nil {
			return tools.Task{}, err
		}
		if !t.Done() { // its call may have concluded without it (the sweeper, a stopped runner)
			if inv, err := s.invocations.Get(ctx, t.AccountID, t.RequestID); err == nil && store.StateOf(inv.State).Final {
				if err := s.finishFromRecord(ctx, t, inv); err != nil {
					return tools.Task{}, err
				}
				if t, err = s.tasks.Get(ctx, c.AccountID(), in.TaskID); err != nil {
					return tools.Task{}, err
				}
			}
		}
		return *taskOf(t), nil
	})
	cancel := tools.New(tools.Def{
		Name: "task_cancel", Title: "Cancel a task",
		Description: "Cancel a working task: its partner call is stopped and its hold refunded; nothing is charged. A task that has concluded is left as it is.",
		Access:      tools.RequireScope(tools.ScopePartner), Unlisted: true,
		Annotations: tools.Annotations{ReadOnly: tools.Bool(false), Destructive: tools.Bool(false), Idempotent: true, OpenWorld: tools.Bool(true)},
	}, func(ctx context.Context, c *tools.Caller, in TaskInput) (tools.Task, error) {
		if _, err := find(ctx, c, in.TaskID); err != nil {
			return tools.Task{}, err
		}
		err := s.tasks.RequestCancel(ctx, c.AccountID(), in.TaskID, s.now().UTC())
		switch {
		case errors.Is(err, store.ErrNotFound):
			return tools.Task{}, notFound(in.TaskID)
		case errors.Is(err, tasks.ErrNotWorking):
		case err != nil:
			return tools.Task{}, err
		default:
			s.runners.mu.Lock()
			if cancel := s.runners.cancels[in.TaskID]; cancel != nil {
				cancel(errTaskCancelled)
			}
			s.runners.mu.Unlock()
		}
		t, err := s.tasks.Get(ctx, c.AccountID(), in.TaskID)
		if err != nil {
			return tools.Task{}, err
		}
		return *taskOf(t), nil
	})
	list := tools.New(tools.Def{
		Name: "task_list", Title: "Running tasks", Access: tools.SessionOnly,
		Description: "The account's working tasks (long-running calls answered with a task), newest first, at most 50: when each started, the intent it calls and its status.",
		Annotations: tools.Annotations{ReadOnly: tools.Bool(true), Idempotent: true, OpenWorld: tools.Bool(false)},
	}, func(ctx context.Context, c *tools.Caller, _ struct{}) (TaskList, error) {
		return s.running(ctx, c.AccountID())
	})
	return []*tools.Tool{get, cancel, list}
}

// RunningTask is a working task as the portal's call log shows it.
type RunningTask struct {
	TaskID        string    `json:"taskId"`
	Status        string    `json:"status" jsonschema:"enum=working"`
	StatusMessage string    `json:"statusMessage"`
	CreatedAt     time.Time `json:"createdAt"`
	RequestID     string    `json:"requestId" jsonschema_description:"the call the task runs"`
	Handle        string    `json:"handle" jsonschema_description:"the intent it calls"`
	KeyID         string    `json:"keyId" jsonschema_description:"the key that started it"`
}

// TaskList is task_list's answer.
type TaskList struct {
	Tasks []RunningTask `json:"tasks"`
}

// maxRunning bounds task_list.
const maxRunning = 50

func (s *Service) running(ctx context.Context, accountID string) (TaskList, error) {
	ts, err := s.tasks.Working(ctx, accountID, maxRunning)
	if err != nil {
		return TaskList{}, err
	}
	out := TaskList{Tasks: make([]RunningTask, 0, len(ts))}
	for _, t := range ts {
		rt := RunningTask{TaskID: t.ID, Status: t.Status, StatusMessage: t.StatusMessage, CreatedAt: t.CreatedAt.UTC(), RequestID: t.RequestID, KeyID: t.KeyID}
		if inv, err := s.invocations.Get(ctx, accountID, t.RequestID); err == nil {
			rt.Handle = inv.Handle
		} else if !errors.Is(err, store.ErrNotFound) {
			return TaskList{}, err
		}
		out.Tasks = append(out.Tasks, rt)
	}
	return out, nil
}

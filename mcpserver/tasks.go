package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-hq/switchboard/tools"
)

// MCP Tasks (the io.modelcontextprotocol/tasks extension, ext-tasks' draft at e434597): a
// tools/call by a host that declares the extension on that request may be answered with a
// task (resultType "task"), which the host polls with tasks/get and stops with tasks/cancel.
// Which calls become tasks is the tool's decision (tools.Caller.AcceptsTask, tools.Task); the
// door only renders them. The go-sdk knows no tasks/* method (it refuses them before any
// middleware), so this door answers them itself, ahead of the go-sdk, through the kernel's
// unlisted task_get and task_cancel: authenticated as any call, from any replica.

// TasksExtension is the extension's identifier, in the capabilities of both sides.
const TasksExtension = "io.modelcontextprotocol/tasks"

// codeMissingCapability is the extension's -32021 (Missing Required Client Capability).
const codeMissingCapability = -32021

// declaresTasks reports whether a request's client capabilities include the extension.
func declaresTasks(c *mcp.ClientCapabilities) bool {
	if c == nil {
		return false
	}
	_, ok := c.Extensions[TasksExtension]
	return ok
}

// serverCapabilities are the go-sdk's defaults with the extension declared.
func serverCapabilities() *mcp.ServerCapabilities {
	//lint:ignore SA1019 the go-sdk's default capabilities, kept as they were before the extension
	c := &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}}
	c.AddExtension(TasksExtension, nil)
	return c
}

// taskResult is a CreateTaskResult (a tools/call answered with a task) and a GetTaskResult
// (tasks/get): the task, with its answer once completed.
type taskResult struct {
	mcp.ResultBase
	ResultType     string          `json:"resultType,omitempty"` // none in a notifications/tasks
	TaskID         string          `json:"taskId"`
	Status         string          `json:"status"`
	StatusMessage  string          `json:"statusMessage,omitempty"`
	CreatedAt      string          `json:"createdAt"`
	LastUpdatedAt  string          `json:"lastUpdatedAt"`
	TTLMs          int64           `json:"ttlMs"`
	PollIntervalMs int64           `json:"pollIntervalMs"`
	Result         json.RawMessage `json:"result,omitempty"`
}

// renderTask is t on the wire, resultType rt: a completed task carries the CallToolResult the
// call would have given (an error in the error model is a result with isError, as the
// extension says of tool errors).
func renderTask(t *tools.Task, rt string) *taskResult {
	out := &taskResult{ResultType: rt, TaskID: t.TaskID, Status: t.Status, StatusMessage: t.StatusMessage,
		CreatedAt: t.CreatedAt.UTC().Format(time.RFC3339Nano), LastUpdatedAt: t.LastUpdatedAt.UTC().Format(time.RFC3339Nano),
		TTLMs: t.TTLMs, PollIntervalMs: t.PollIntervalMs}
	if t.Status != tools.TaskCompleted {
		return out
	}
	var res *mcp.CallToolResult
	if t.Error != nil {
		res = errorResult(t.Error)
	} else {
		res = &mcp.CallToolResult{StructuredContent: json.RawMessage(t.Result), Content: []mcp.Content{&mcp.TextContent{Text: string(t.Result)}}}
	}
	out.Result, _ = json.Marshal(res)
	return out
}

// taskSlot carries a task from a tool's handler out to taskMiddleware, which answers it in
// the CallToolResult's place (a tool handler can only return a CallToolResult).
type taskSlot struct{ task *tools.Task }

type taskSlotKey struct{}

// taskMiddleware answers a tools/call whose handler started a task with the task.
func taskMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		slot := &taskSlot{}
		res, err := next(context.WithValue(ctx, taskSlotKey{}, slot), method, req)
		if err == nil && slot.task != nil {
			return renderTask(slot.task, "task"), nil
		}
		return res, err
	}
}

// startedTask hands a started task to taskMiddleware; false when there is no slot (stdio's
// server has the middleware too, so there always is one).
func startedTask(ctx context.Context, t *tools.Task) bool {
	slot, _ := ctx.Value(taskSlotKey{}).(*taskSlot)
	if slot == nil {
		return false
	}
	slot.task = t
	return true
}

// maxTaskRequest bounds the read of a POST to see whether it is a tasks/* request; a longer
// body is none (the go-sdk gets it).
const maxTaskRequest = 64 << 10

// taskRequest is a JSON-RPC tasks/* request.
type taskRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  struct {
		TaskID        string `json:"taskId"`
		Notifications *struct {
			TaskIDs []string `json:"taskIds"`
		} `json:"notifications"` // subscriptions/listen
		Meta struct {
			Caps *struct {
				Extensions map[string]json.RawMessage `json:"extensions"`
			} `json:"io.modelcontextprotocol/clientCapabilities"`
		} `json:"_meta"`
	} `json:"params"`
}

// serveTasks answers a POST that is a tasks/get, tasks/update or tasks/cancel request, and
// reports whether it was one (else r goes on to the go-sdk, its body as it was).
func (d *Door) serveTasks(w http.ResponseWriter, r *http.Request) bool {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxTaskRequest+1))
	r.Body = readCloser{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
	if err != nil || len(body) > maxTaskRequest || (!bytes.Contains(body, []byte(`"tasks/`)) && !bytes.Contains(body, []byte(`"subscriptions/listen"`))) {
		return false
	}
	var req taskRequest
	if json.Unmarshal(body, &req) != nil || len(req.ID) == 0 {
		return false
	}
	var tool string
	switch req.Method {
	case "tasks/get", "tasks/update":
		tool = "task_get"
	case "tasks/cancel":
		tool = "task_cancel"
	case "subscriptions/listen": // ours only when it names tasks; the go-sdk answers the rest
		if n := req.Params.Notifications; n == nil || len(n.TaskIDs) == 0 {
			return false
		}
	default:
		return false
	}
	// A host on a session declared its capabilities once, at initialize (a session this
	// replica does not hold is the session door's 404); any other declares them on each
	// request. One that did not is told what it lacks.
	declared := false
	if sid := r.Header.Get(sessionHeader); sid != "" {
		live, tasks := d.sessionTasks(sid)
		if !live {
			return false
		}
		declared = tasks
	} else if c := req.Params.Meta.Caps; c != nil && c.Extensions[TasksExtension] != nil {
		declared = true
	}
	if !declared {
		data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{TasksExtension: map[string]any{}}}})
		writeRPC(w, req.ID, nil, &taskRPCError{Code: codeMissingCapability, Message: "Missing required client capability: declare " + TasksExtension + " in the request's _meta clientCapabilities", Data: data})
		return true
	}
	if req.Method == "subscriptions/listen" {
		d.listenTasks(w, r, req.ID, req.Params.Notifications.TaskIDs)
		return true
	}
	if req.Params.TaskID == "" {
		writeRPC(w, req.ID, nil, &taskRPCError{Code: -32602, Message: "params.taskId is required: the taskId of the task the tools/call answered"})
		return true
	}
	t, e := d.taskCall(r, tool, req.Params.TaskID)
	if e != nil {
		writeRPC(w, req.ID, nil, taskError(e))
		return true
	}
	if req.Method == "tasks/get" {
		writeRPC(w, req.ID, renderTask(&t, "complete"), nil)
	} else { // an acknowledgement: nothing is ever asked of the host mid-task, so an update has nothing to answer
		writeRPC(w, req.ID, map[string]string{"resultType": "complete"}, nil)
	}
	return true
}

// taskCall calls the kernel's task tool for task id with r's credential.
func (d *Door) taskCall(r *http.Request, tool, id string) (tools.Task, *tools.Error) {
	call := tools.Request{Tool: tool, ClientAddr: r.Header.Get(tools.HeaderClientAddr), RequestID: r.Header.Get(tools.HeaderRequestID)}
	key, e := tools.KeyFromHeader(r.Header)
	if e != nil {
		return tools.Task{}, e
	}
	call.APIKey = key
	call.Args, _ = json.Marshal(map[string]string{"taskId": id})
	out, e := d.kernel.Call(r.Context(), call)
	if e != nil {
		return tools.Task{}, e
	}
	t, _ := out.(tools.Task)
	return t, nil
}

// taskError is a task tool's error as the extension's JSON-RPC error: -32602 for a task
// there is none of (or that has expired), -32603 otherwise.
func taskError(e *tools.Error) *taskRPCError {
	code := -32603
	switch e.Code {
	case tools.CodeNotFound, tools.CodeBadInput:
		code = -32602 // the extension's answer for an unknown task
	}
	data, _ := json.Marshal(tools.Body{Error: e})
	return &taskRPCError{Code: code, Message: "Failed to retrieve task: " + e.Message, Data: data}
}

type taskRPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func writeRPC(w http.ResponseWriter, id json.RawMessage, result any, e *taskRPCError) {
	msg := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result,omitempty"`
		Error   *taskRPCError   `json:"error,omitempty"`
	}{JSONRPC: "2.0", ID: id, Result: result, Error: e}
	raw, _ := json.Marshal(msg)
	w.Header().Set("Content-Type", "application/json")
	w.Write(raw)
}

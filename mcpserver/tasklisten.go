package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/switchboard-hq/switchboard/tools"
)

// Task status notifications (the extension's notifications/tasks): a host that declares the
// extension sends subscriptions/listen naming tasks (params.notifications.taskIds) and gets a
// stream (server-sent events) that starts with notifications/subscriptions/acknowledged (the
// tasks it may read), then carries a notifications/tasks with each task's state when the
// stream opens and at every change, each what tasks/get would answer then. The stream ends
// with the request's result once every task it follows has concluded, when the replica
// drains, or after MaxListen (the host listens again, on any replica). Changes are seen by
// reading each task every pollIntervalMs, through the kernel's task_get as tasks/get is: a
// task that runs on another replica is followed the same way. A subscriptions/listen that
// names no task goes to the go-sdk (list changes).

const (
	// MaxListenTasks bounds the tasks one stream follows.
	MaxListenTasks = 100
	// MaxListen bounds a stream's life.
	MaxListen = 10 * time.Minute
)

type listenedTask struct {
	id, seen string // seen: the status and lastUpdatedAt last notified
	done     bool
}

// listenTasks serves a subscriptions/listen for ids (the capability checked).
func (d *Door) listenTasks(w http.ResponseWriter, r *http.Request, rpcID json.RawMessage, ids []string) {
	if len(ids) > MaxListenTasks {
		writeRPC(w, rpcID, nil, &taskRPCError{Code: -32602, Message: fmt.Sprintf("params.notifications.taskIds names %d tasks; a stream follows at most %d", len(ids), MaxListenTasks)})
		return
	}
	var follow []*listenedTask
	var first []tools.Task
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		t, e := d.taskCall(r, "task_get", id)
		if e != nil {
			if e.Code == tools.CodeUnauthenticated || e.Code == tools.CodeForbidden {
				writeRPC(w, rpcID, nil, taskError(e))
				return
			}
			continue // not this account's, or expired: not acknowledged
		}
		follow = append(follow, &listenedTask{id: id})
		first = append(first, t)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	rc := http.NewResponseController(w)
	send := func(msg any) bool {
		raw, _ := json.Marshal(msg)
		_ = rc.SetWriteDeadline(time.Now().Add(time.Minute)) // past the server's WriteTimeout, write by write
		if _, err := fmt.Fprintf(w, "event: message\ndata: %s\n\n", raw); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	acked := make([]string, len(follow))
	for i, f := range follow {
		acked[i] = f.id
	}
	if !send(notification("notifications/subscriptions/acknowledged", map[string]any{"notifications": map[string]any{"taskIds": acked}})) {
		return
	}
	notify := func(f *listenedTask, t *tools.Task) bool {
		f.done = t.Status != tools.TaskWorking
		state := t.Status + " " + t.LastUpdatedAt.UTC().Format(time.RFC3339Nano)
		if state == f.seen {
			return true
		}
		f.seen = state
		return send(notification("notifications/tasks", renderTask(t, "")))
	}
	for i, f := range follow {
		if !notify(f, &first[i]) {
			return
		}
	}
	d.followTasks(r, follow, notify)
	send(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result"`
	}{"2.0", rpcID, map[string]any{"resultType": "complete", "_meta": map[string]any{}}})
}

// followTasks reads the working tasks of follow every poll interval and notifies each change,
// until all have concluded, the host goes, the replica drains or MaxListen has passed.
func (d *Door) followTasks(r *http.Request, follow []*listenedTask, notify func(*listenedTask, *tools.Task) bool) {
	ctx, cancel := context.WithTimeout(r.Context(), MaxListen)
	defer cancel()
	tick := time.NewTicker(taskPoll)
	defer tick.Stop()
	for {
		working := 0
		for _, f := range follow {
			if !f.done {
				working++
			}
		}
		if working == 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-d.draining:
			return
		case <-d.stop:
			return
		case <-tick.C:
		}
		for _, f := range follow {
			if f.done {
				continue
			}
			t, e := d.taskCall(r.WithContext(ctx), "task_get", f.id)
			if e != nil {
				f.done = true // gone (expired) or the key revoked: no more to say of it
				continue
			}
			if !notify(f, &t) {
				return
			}
		}
	}
}

// taskPoll is how often a stream reads the tasks it follows (the pollIntervalMs tasks suggest).
const taskPoll = time.Second

func notification(method string, params any) any {
	return struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}{"2.0", method, params}
}

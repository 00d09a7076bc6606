package dispatch_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/store/tasks"
	"github.com/switchboard-hq/switchboard/tools/dispatch"
)

const tasksExt = "io.modelcontextprotocol/tasks"

// rpc posts one JSON-RPC request to /mcp as a 2026-07-28 host does (stateless, its
// capabilities in _meta), declaring the Tasks extension when tasks is set, and returns the
// response message.
func rpc(t *testing.T, env *apptest.Env, key, method string, params map[string]any, tasks bool) map[string]any {
	t.Helper()
	caps := map[string]any{}
	if tasks {
		caps["extensions"] = map[string]any{tasksExt: map[string]any{}}
	}
	params["_meta"] = map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
		"io.modelcontextprotocol/clientInfo": map[string]any{"name": "raw", "version": "1"}, "io.modelcontextprotocol/clientCapabilities": caps}
	raw, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
	req, _ := http.NewRequest("POST", env.URL+"/mcp", bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if id, ok := params["taskId"].(string); ok {
		req.Header.Set("Mcp-Name", id)
	} else if name, ok := params["name"].(string); ok {
		req.Header.Set("Mcp-Name", name)
	}
	req.Header.Set("x-api-key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var msg map[string]any
	if err := json.Unmarshal(body, &msg); err != nil {
		t.Fatalf("%s: %d %q is not a JSON-RPC answer", method, resp.StatusCode, body)
	}
	return msg
}

func callLong(t *testing.T, w *world, handle string, tasks bool) map[string]any {
	t.Helper()
	return rpc(t, w.env, w.caller, "tools/call", map[string]any{"name": "invoke_partner_message",
		"arguments": map[string]any{"message": handle + " quarterly report"}}, tasks)
}

// pollTask polls tasks/get until the task leaves working, and returns its last answer.
func pollTask(t *testing.T, w *world, id string) map[string]any {
	t.Helper()
	for range 300 {
		msg := rpc(t, w.env, w.caller, "tasks/get", map[string]any{"taskId": id}, true)
		res, ok := msg["result"].(map[string]any)
		if !ok {
			t.Fatalf("tasks/get: %v", msg)
		}
		if res["resultType"] != "complete" || res["taskId"] != id {
			t.Fatalf("tasks/get answer: %v", res)
		}
		if res["status"] != "working" {
			return res
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("task %s still working after 15 s", id)
	return nil
}

// structured is a completed task's CallToolResult: its structuredContent, or its error
// model object when it is isError.
func structured(t *testing.T, task map[string]any) (out map[string]any, isError bool) {
	t.Helper()
	res, _ := task["result"].(map[string]any)
	content, _ := res["content"].([]any)
	if len(content) != 1 {
		t.Fatalf("a completed task's result is a CallToolResult: %v", task)
	}
	text := content[0].(map[string]any)["text"].(string)
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		t.Fatalf("result text %q: %v", text, err)
	}
	return out, res["isError"] == true
}

// A long partner call by a host that declares MCP Tasks: the task comes back at once (the
// hold taken, the task durable), polling it ends with the answer the call would have given,
// charged once when it succeeds; a cancel refunds; a replica that stops mid-task leaves it
// to the sweeper, which refunds; a host that does not declare Tasks gets the ordinary answer.
func TestLongCallsAsTasks(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newWorld(t, dialect, func(c *apptest.Config) { c.TaskAfter = "1s" })
			w.hold = 2 * time.Second
			w.publish(t, "@longjob", "/long", map[string]any{"timeoutMs": 5000})
			w.publish(t, "@hangjob", "/hang", map[string]any{"timeoutMs": 5000})
			w.publish(t, "@quickjob", "/cost", nil) // timeoutMs 1000: never a task
			start := w.credit(t)

			// The server declares the extension.
			disc := rpc(t, w.env, w.caller, "server/discover", map[string]any{}, true)
			if caps := fmt.Sprint(disc["result"].(map[string]any)["capabilities"]); !strings.Contains(caps, tasksExt) {
				t.Fatalf("server/discover capabilities %s: the Tasks extension is not declared", caps)
			}

			// A host that does not declare Tasks waits for the ordinary answer.
			plain := callLong(t, w, "@longjob", false)
			res := plain["result"].(map[string]any)
			if res["resultType"] == "task" || res["isError"] == true || res["structuredContent"].(map[string]any)["success"] != true {
				t.Fatalf("undeclared host: %v, want the ordinary answer", plain)
			}
			afterPlain := w.credit(t)
			paid := start - afterPlain
			if paid <= 0 {
				t.Fatalf("the ordinary call charged %d", paid)
			}
			// A short intent is never a task, whatever the host declares.
			if res := callLong(t, w, "@quickjob", true)["result"].(map[string]any); res["resultType"] == "task" || res["structuredContent"] == nil {
				t.Fatalf("short intent: %v, want its answer", res)
			}
			afterQuick := w.credit(t)

			// Declared: a task at once, its hold taken.
			began := time.Now()
			msg := callLong(t, w, "@longjob", true)
			took := time.Since(began)
			task := msg["result"].(map[string]any)
			id, _ := task["taskId"].(string)
			if task["resultType"] != "task" || task["status"] != "working" || id == "" || task["ttlMs"] == nil || task["pollIntervalMs"] == nil {
				t.Fatalf("declared host: %v, want a working task", msg)
			}
			t.Logf("the task came back in %v (the partner works %v)", took, w.hold)
			if held := w.credit(t); held >= afterQuick {
				t.Fatalf("credit while the task works: %d, want the hold taken from %d", held, afterQuick)
			}
			// Only its own account sees it; a host that does not declare Tasks is told what it lacks.
			if e := rpc(t, w.env, w.publisher, "tasks/get", map[string]any{"taskId": id}, true)["error"].(map[string]any); e["code"] != -32602.0 {
				t.Fatalf("another account's tasks/get: %v, want -32602", e)
			}
			if e := rpc(t, w.env, w.caller, "tasks/get", map[string]any{"taskId": id}, false)["error"].(map[string]any); e["code"] != -32021.0 ||
				!strings.Contains(fmt.Sprint(e["data"]), tasksExt) {
				t.Fatalf("undeclared tasks/get: %v, want -32021 naming the extension", e)
			}
			if e := rpc(t, w.env, w.caller, "tasks/get", map[string]any{"taskId": "no-such-task"}, true)["error"].(map[string]any); e["code"] != -32602.0 {
				t.Fatalf("unknown task: %v, want -32602", e)
			}
			done := pollTask(t, w, id)
			out, isErr := structured(t, done)
			receipt, _ := out["receipt"].(map[string]any)
			if done["status"] != "completed" || isErr || out["success"] != true || fmt.Sprint(out["result"]) != "map[report:done]" {
				t.Fatalf("completed task: %v", done)
			}
			if r, _ := receipt["receipt"].(map[string]any); r["taskId"] != id {
				t.Fatalf("the signed receipt names no task: %v", receipt)
			}
			if got := afterQuick - w.credit(t); got != paid || int64(charge(out)["totalMicro"].(float64)) != paid {
				t.Fatalf("the task charged %d (answer says %v), want %d as the same call answered in its request", got, charge(out), paid)
			}
			if again := pollTask(t, w, id); fmt.Sprint(again) != fmt.Sprint(done) {
				t.Fatalf("a second tasks/get: %v, want the same answer", again)
			}
			w.ledgerOK(t)
			base := w.credit(t)

			// Cancelled: the partner call stops, the hold is refunded.
			hang := callLong(t, w, "@hangjob", true)["result"].(map[string]any)
			hid := hang["taskId"].(string)
			if ack := rpc(t, w.env, w.caller, "tasks/cancel", map[string]any{"taskId": hid}, true); fmt.Sprint(ack["result"]) != "map[resultType:complete]" {
				t.Fatalf("tasks/cancel: %v", ack)
			}
			cancelled := pollTask(t, w, hid)
			if cancelled["status"] != "cancelled" || cancelled["result"] != nil {
				t.Fatalf("cancelled task: %v", cancelled)
			}
			if got := w.credit(t); got != base {
				t.Fatalf("credit after a cancel: %d, want %d (refunded)", got, base)
			}
			if state := callState(t, w, hid); state != store.InvCancelled {
				t.Fatalf("the cancelled task's call: %q, want %s", state, store.InvCancelled)
			}
			w.ledgerOK(t)

			// The replica stops mid-task: nothing concludes it until the sweeper, which refunds.
			lost := callLong(t, w, "@hangjob", true)["result"].(map[string]any)
			lid := lost["taskId"].(string)
			w.env.App.App.Parts().Dispatch.StopTasks()
			if got := rpc(t, w.env, w.caller, "tasks/get", map[string]any{"taskId": lid}, true)["result"].(map[string]any); got["status"] != "working" {
				t.Fatalf("a task whose replica stopped: %v, want working until the sweeper", got)
			}
			w.env.Clock.Advance(time.Minute) // past its call's deadline
			if _, _, err := w.env.App.Sweep(context.Background()); err != nil {
				t.Fatal(err)
			}
			swept := pollTask(t, w, lid)
			body, isErr := structured(t, swept)
			if swept["status"] != "completed" || !isErr || !strings.Contains(fmt.Sprint(body), "nothing was charged") {
				t.Fatalf("swept task: %v, want completed with the refund's error", swept)
			}
			if got := w.credit(t); got != base {
				t.Fatalf("credit after the sweep: %d, want %d (refunded)", got, base)
			}
			if state := callState(t, w, lid); state != store.InvOutcomeUnknown {
				t.Fatalf("the swept task's call: %q, want %s", state, store.InvOutcomeUnknown)
			}
			w.ledgerOK(t)
		})
	}
}

// callState is the state of the call task id runs.
func callState(t *testing.T, w *world, id string) string {
	t.Helper()
	var state string
	if err := w.settledStore(t).DB().NewSelect().Table("invocations").Column("state").
		Where("request_id = (SELECT request_id FROM tasks WHERE id = ?)", id).Scan(context.Background(), &state); err != nil {
		t.Fatal(err)
	}
	return state
}

// REST: Prefer: respond-async answers 202 with the task and its Location, polled with GET to
// the answer POST /v1/invoke would have given; DELETE cancels it, refunded. Without the
// preference the call answers in its request.
func TestLongCallsAsTasksOverREST(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newWorld(t, dialect, func(c *apptest.Config) { c.TaskAfter = "1s" })
			w.hold = 2 * time.Second
			w.publish(t, "@longjob", "/long", map[string]any{"timeoutMs": 5000})
			w.publish(t, "@hangjob", "/hang", map[string]any{"timeoutMs": 5000})
			start := w.credit(t)
			async := map[string]string{"Prefer": "wait=0, respond-async"}
			invoke := func(handle string) (int, http.Header, map[string]any) {
				return apptest.DoWith(t, "POST", w.env.URL+"/v1/invoke", w.caller, map[string]any{"message": handle + " quarterly report"}, async)
			}
			poll := func(loc string) map[string]any {
				for range 300 {
					status, task := w.env.REST(t, "GET", loc, w.caller, nil)
					if status != 200 {
						t.Fatalf("GET %s: %d %v", loc, status, task)
					}
					if task["status"] != "working" {
						return task
					}
					time.Sleep(50 * time.Millisecond)
				}
				t.Fatalf("%s still working after 15 s", loc)
				return nil
			}

			status, h, task := invoke("@longjob")
			loc := h.Get("Location")
			if status != 202 || task["status"] != "working" || loc != "/v1/tasks/"+task["taskId"].(string) || h.Get("Preference-Applied") != "respond-async" {
				t.Fatalf("respond-async: %d %v %v", status, h, task)
			}
			if status, out := w.env.REST(t, "GET", loc, w.publisher, nil); status != 404 {
				t.Fatalf("another account's task: %d %v", status, out)
			}
			done := poll(loc)
			result, _ := done["result"].(map[string]any)
			if done["status"] != "completed" || result["success"] != true || done["error"] != nil {
				t.Fatalf("completed task: %v", done)
			}
			paid := start - w.credit(t)
			if paid <= 0 || int64(charge(result)["totalMicro"].(float64)) != paid {
				t.Fatalf("the task charged %d, its answer says %v", paid, charge(result))
			}
			base := w.credit(t)

			status, h, _ = invoke("@hangjob")
			if status != 202 {
				t.Fatalf("respond-async: %d", status)
			}
			if status, out := w.env.REST(t, "DELETE", h.Get("Location"), w.caller, nil); status != 200 || (out["status"] != "working" && out["status"] != "cancelled") {
				t.Fatalf("DELETE: %d %v", status, out)
			}
			cancelled := poll(h.Get("Location"))
			if cancelled["status"] != "cancelled" || cancelled["error"].(map[string]any)["code"] != "UNAVAILABLE" {
				t.Fatalf("cancelled task: %v", cancelled)
			}
			if got := w.credit(t); got != base {
				t.Fatalf("credit after the cancel: %d, want %d", got, base)
			}
			if status, out := w.env.REST(t, "GET", "/v1/tasks/no-such-task", w.caller, nil); status != 404 {
				t.Fatalf("unknown task: %d %v", status, out)
			}
			// Without the preference: the ordinary answer.
			if status, out := w.invoke(t, w.caller, map[string]any{"message": "@longjob quarterly report"}); status != 200 || out["success"] != true {
				t.Fatalf("without Prefer: %d %v", status, out)
			}
			w.ledgerOK(t)
		})
	}
}

// A task past its ttlMs: tasks/get and tasks/cancel answer the extension's "Task has expired"
// (-32602; REST 404 saying so), the sweep every replica runs drops its answer, and a day
// later deletes it (then it is a task there is none of).
func TestExpiredTasks(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newWorld(t, dialect, func(c *apptest.Config) { c.TaskAfter = "1s" })
			w.hold = 10 * time.Millisecond
			w.publish(t, "@longjob", "/long", map[string]any{"timeoutMs": 5000})
			task := callLong(t, w, "@longjob", true)["result"].(map[string]any)
			id := task["taskId"].(string)
			if done := pollTask(t, w, id); done["status"] != "completed" {
				t.Fatalf("task: %v", done)
			}
			w.env.Clock.Advance(dispatch.TaskTTL + time.Second)
			for _, method := range []string{"tasks/get", "tasks/cancel"} {
				e, _ := rpc(t, w.env, w.caller, method, map[string]any{"taskId": id}, true)["error"].(map[string]any)
				if e["code"] != -32602.0 || !strings.HasPrefix(fmt.Sprint(e["message"]), "Failed to retrieve task: Task has expired") {
					t.Fatalf("%s of an expired task: %v, want -32602 Task has expired", method, e)
				}
			}
			status, out := w.env.REST(t, "GET", "/v1/tasks/"+id, w.caller, nil)
			if e, _ := out["error"].(map[string]any); status != 404 || !strings.HasPrefix(fmt.Sprint(e["message"]), "Task has expired") ||
				fmt.Sprint(e["details"].(map[string]any)["expired"]) != "true" {
				t.Fatalf("GET an expired task: %d %v", status, out)
			}
			kept := func() (n, answered int64) {
				t.Helper()
				db := w.settledStore(t).DB()
				n, err := db.NewSelect().Table("tasks").Where("id = ?", id).Count(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				answered, err = db.NewSelect().Table("tasks").Where("id = ? AND result IS NOT NULL", id).Count(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				return n, answered
			}
			if n, answered := kept(); n != 1 || answered != 1 {
				t.Fatalf("before the sweep: %d rows, %d answered", n, answered)
			}
			if _, _, err := w.env.App.Sweep(context.Background()); err != nil {
				t.Fatal(err)
			}
			if n, answered := kept(); n != 1 || answered != 0 {
				t.Fatalf("after the sweep: %d rows, %d answered; want the row without its answer", n, answered)
			}
			w.env.Clock.Advance(tasks.ExpiredKept)
			if _, _, err := w.env.App.Sweep(context.Background()); err != nil {
				t.Fatal(err)
			}
			if n, _ := kept(); n != 0 {
				t.Fatalf("a day after its expiry: %d rows, want deleted", n)
			}
			e, _ := rpc(t, w.env, w.caller, "tasks/get", map[string]any{"taskId": id}, true)["error"].(map[string]any)
			if e["code"] != -32602.0 || !strings.Contains(fmt.Sprint(e["message"]), "no task") {
				t.Fatalf("tasks/get of a deleted task: %v", e)
			}
		})
	}
}

// listen posts a subscriptions/listen for ids and returns every message of its stream, up to
// and with the request's final result.
func listen(t *testing.T, w *world, ids []string, declared bool) []map[string]any {
	t.Helper()
	caps := map[string]any{}
	if declared {
		caps["extensions"] = map[string]any{tasksExt: map[string]any{}}
	}
	raw, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 9, "method": "subscriptions/listen", "params": map[string]any{
		"notifications": map[string]any{"taskIds": ids},
		"_meta": map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
			"io.modelcontextprotocol/clientInfo": map[string]any{"name": "raw", "version": "1"}, "io.modelcontextprotocol/clientCapabilities": caps}}})
	req, _ := http.NewRequest("POST", w.env.URL+"/mcp", bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	req.Header.Set("x-api-key", w.caller)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var msgs []map[string]any
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if resp.Header.Get("Content-Type") != "text/event-stream" {
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("not JSON-RPC: %q", line)
			}
			return append(msgs, m)
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		msgs = append(msgs, m)
		if m["id"] != nil {
			break
		}
	}
	return msgs
}

// notifications/tasks: a host that declares Tasks and listens for its task (and one that is
// not its own) is acknowledged for its own only, told the task's state at once and at each
// change, the last one with the result tasks/get gives, then the stream ends with its
// result; a host that does not declare the extension is told what it lacks.
func TestTaskNotifications(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newWorld(t, dialect, func(c *apptest.Config) { c.TaskAfter = "1s" })
			w.hold = 1500 * time.Millisecond
			w.publish(t, "@longjob", "/long", map[string]any{"timeoutMs": 5000})
			id := callLong(t, w, "@longjob", true)["result"].(map[string]any)["taskId"].(string)

			if msgs := listen(t, w, []string{id}, false); len(msgs) != 1 || msgs[0]["error"].(map[string]any)["code"] != -32021.0 {
				t.Fatalf("undeclared listen: %v, want -32021", msgs)
			}
			msgs := listen(t, w, []string{id, "no-such-task"}, true)
			if len(msgs) < 4 {
				t.Fatalf("stream: %v, want the ack, working, completed and the result", msgs)
			}
			ack, last := msgs[0], msgs[len(msgs)-1]
			if ack["method"] != "notifications/subscriptions/acknowledged" || fmt.Sprint(ack["params"]) != fmt.Sprintf("map[notifications:map[taskIds:[%s]]]", id) {
				t.Fatalf("first message: %v, want the acknowledgement of %s alone", ack, id)
			}
			if last["id"] != 9.0 || fmt.Sprint(last["result"]) != "map[_meta:map[] resultType:complete]" {
				t.Fatalf("last message: %v, want the listen's result", last)
			}
			var statuses []string
			for _, m := range msgs[1 : len(msgs)-1] {
				p := m["params"].(map[string]any)
				if m["method"] != "notifications/tasks" || p["taskId"] != id || p["resultType"] != nil {
					t.Fatalf("notification: %v", m)
				}
				statuses = append(statuses, p["status"].(string))
			}
			if statuses[0] != "working" || statuses[len(statuses)-1] != "completed" || len(statuses) > 2 {
				t.Fatalf("statuses notified: %v, want working then completed, each once", statuses)
			}
			final := msgs[len(msgs)-2]["params"].(map[string]any)
			got := pollTask(t, w, id)
			delete(got, "resultType")
			if fmt.Sprint(final) != fmt.Sprint(got) {
				t.Fatalf("the last notification %v is not what tasks/get answers %v", final, got)
			}
			if out, isErr := structured(t, final); isErr || out["success"] != true {
				t.Fatalf("notified result: %v", final)
			}
			// A stream for a concluded task: its state, then the end.
			if again := listen(t, w, []string{id}, true); len(again) != 3 || again[1]["params"].(map[string]any)["status"] != "completed" {
				t.Fatalf("listen to a concluded task: %v", again)
			}
		})
	}
}

// sessionPost posts one JSON-RPC message on a 2025-11-25 session (sid "" for initialize) and
// returns the response's headers and its JSON-RPC messages (a JSON body or server-sent
// events), up to the one answering the request.
func sessionPost(t *testing.T, w *world, sid string, msg map[string]any) (http.Header, []map[string]any) {
	t.Helper()
	raw, _ := json.Marshal(msg)
	req, _ := http.NewRequest("POST", w.env.URL+"/mcp", bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("x-api-key", w.caller)
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []map[string]any
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimPrefix(sc.Text(), "data: ")
		var m map[string]any
		if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		out = append(out, m)
		if m["id"] != nil && m["method"] == nil {
			break
		}
	}
	return resp.Header, out
}

// A session-bearing host (2025-11-25, elicitation and the Tasks extension declared at
// initialize, so it is served a session): its long call is a task, and subscriptions/listen on
// its session (no per-request capabilities: the session declared them) notifies the task's
// status changes to its completion. A session opened without the extension is -32021 for
// tasks/*, and an unknown session 404 (a session id alone declares nothing).
func TestTaskNotificationsOnASession(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newWorld(t, dialect, func(c *apptest.Config) { c.TaskAfter = "1s" })
			w.hold = 1500 * time.Millisecond
			w.publish(t, "@longjob", "/long", map[string]any{"timeoutMs": 5000})
			h, init := sessionPost(t, w, "", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
				"protocolVersion": "2025-11-25", "clientInfo": map[string]any{"name": "session-host", "version": "1"},
				"capabilities": map[string]any{"elicitation": map[string]any{}, "extensions": map[string]any{tasksExt: map[string]any{}}}}})
			sid := h.Get("Mcp-Session-Id")
			if sid == "" || len(init) != 1 || init[0]["result"] == nil {
				t.Fatalf("initialize: session %q, %v", sid, init)
			}
			sessionPost(t, w, sid, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
			_, called := sessionPost(t, w, sid, map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": map[string]any{
				"name": "invoke_partner_message", "arguments": map[string]any{"message": "@longjob quarterly report"}}})
			task, _ := called[len(called)-1]["result"].(map[string]any)
			id, _ := task["taskId"].(string)
			if task["resultType"] != "task" || id == "" {
				t.Fatalf("a long call on the session: %v, want a task", called)
			}
			_, msgs := sessionPost(t, w, sid, map[string]any{"jsonrpc": "2.0", "id": 3, "method": "subscriptions/listen",
				"params": map[string]any{"notifications": map[string]any{"taskIds": []string{id}}}})
			if len(msgs) < 3 || msgs[0]["method"] != "notifications/subscriptions/acknowledged" || msgs[len(msgs)-1]["id"] != 3.0 {
				t.Fatalf("listen on the session: %v", msgs)
			}
			var statuses []string
			for _, m := range msgs[1 : len(msgs)-1] {
				statuses = append(statuses, m["params"].(map[string]any)["status"].(string))
			}
			if statuses[0] != "working" || statuses[len(statuses)-1] != "completed" {
				t.Fatalf("statuses notified on the session: %v, want working to completed", statuses)
			}
			if out, isErr := structured(t, msgs[len(msgs)-2]["params"].(map[string]any)); isErr || out["success"] != true {
				t.Fatalf("the notified result: %v", msgs[len(msgs)-2])
			}

			// A session whose host did not declare Tasks is told what it lacks; a session this
			// replica does not hold is not found (the host initializes again).
			h, _ = sessionPost(t, w, "", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
				"protocolVersion": "2025-11-25", "clientInfo": map[string]any{"name": "plain-host", "version": "1"},
				"capabilities": map[string]any{"elicitation": map[string]any{}}}})
			plain := h.Get("Mcp-Session-Id")
			if plain == "" {
				t.Fatal("no session for the host without Tasks")
			}
			for _, method := range []string{"tasks/get", "subscriptions/listen"} {
				params := map[string]any{"taskId": id, "notifications": map[string]any{"taskIds": []string{id}}}
				if _, got := sessionPost(t, w, plain, map[string]any{"jsonrpc": "2.0", "id": 4, "method": method, "params": params}); len(got) != 1 ||
					got[0]["error"] == nil || got[0]["error"].(map[string]any)["code"] != -32021.0 {
					t.Fatalf("%s on a session without Tasks: %v, want -32021", method, got)
				}
			}
			raw, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 5, "method": "tasks/get", "params": map[string]any{"taskId": id}})
			req, _ := http.NewRequest("POST", w.env.URL+"/mcp", bytes.NewReader(raw))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
			req.Header.Set("Mcp-Session-Id", "elsewhere.NOSUCHSESSION")
			req.Header.Set("x-api-key", w.caller)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound {
				t.Fatalf("tasks/get on a session this replica does not hold: %d, want 404", resp.StatusCode)
			}
		})
	}
}

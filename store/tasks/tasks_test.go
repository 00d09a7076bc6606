package tasks_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/store/tasks"
)

// A task is read only by its account, cancelled only while working, concluded once, and a
// result over the bound is refused with the task left working.
func TestTasks(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		q := tasks.New(st)
		now := time.Now().UTC().Truncate(time.Millisecond)
		storetest.Account(t, st, "a1")
		storetest.Account(t, st, "a2")
		task := &tasks.Task{ID: "t1", AccountID: "a1", RequestID: "r1", Tool: "invoke_partner_message", Status: tasks.Working,
			Replica: "replica-1", TTLMs: 60000, CreatedAt: now, UpdatedAt: now}
		if err := q.Create(ctx, task); err != nil {
			t.Fatal(err)
		}
		got, err := q.Get(ctx, "a1", "t1")
		if err != nil || got.Status != tasks.Working || got.Replica != "replica-1" || got.TTLMs != 60000 || !got.CreatedAt.Equal(now) {
			t.Fatalf("get: %+v %v", got, err)
		}
		if _, err := q.Get(ctx, "a2", "t1"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("another account's task: %v, want not found", err)
		}
		if err := q.RequestCancel(ctx, "a2", "t1", now); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("another account cancels: %v, want not found", err)
		}
		if yes, err := q.CancelRequested(ctx, "t1"); err != nil || yes {
			t.Fatalf("cancel requested before any: %v %v", yes, err)
		}
		if err := q.RequestCancel(ctx, "a1", "t1", now); err != nil {
			t.Fatal(err)
		}
		if yes, err := q.CancelRequested(ctx, "t1"); err != nil || !yes {
			t.Fatalf("cancel requested: %v %v", yes, err)
		}
		big := []byte(`"` + strings.Repeat("x", tasks.MaxResult) + `"`)
		if err := q.Finish(ctx, "t1", tasks.Ending{Status: tasks.Completed, Result: big}, now); !errors.Is(err, tasks.ErrTooLarge) {
			t.Fatalf("oversized result: %v", err)
		}
		if err := q.Finish(ctx, "t1", tasks.Ending{Status: tasks.Cancelled, Message: "cancelled", Error: []byte(`{"error":{}}`)}, now.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		if err := q.Finish(ctx, "t1", tasks.Ending{Status: tasks.Completed, Result: []byte(`{}`)}, now); !errors.Is(err, tasks.ErrNotWorking) {
			t.Fatalf("second conclusion: %v, want ErrNotWorking", err)
		}
		if err := q.RequestCancel(ctx, "a1", "t1", now); !errors.Is(err, tasks.ErrNotWorking) {
			t.Fatalf("cancel a concluded task: %v, want ErrNotWorking", err)
		}
		got, _ = q.ByRequest(ctx, "r1")
		if got.Status != tasks.Cancelled || got.Error == nil || got.Result != nil || got.StatusMessage != "cancelled" {
			t.Fatalf("concluded: %+v", got)
		}
		if orphans, err := q.Orphans(ctx, 10); err != nil || len(orphans) != 0 {
			t.Fatalf("orphans: %v %v", orphans, err)
		}
	})
}

// TestTaskExpiry: Create sets the expiry from the ttl; past it Expire drops a concluded
// task's answer (its row stays, expired), ExpiredKept later deletes it; a working task past
// its expiry is left as it is (the sweeper concludes its call first); run twice, or by two
// replicas, nothing changes the second time. The migration's backfill gives a task written
// before it created_at + ttl_ms.
func TestTaskExpiry(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		q := tasks.New(st)
		now := time.Now().UTC().Truncate(time.Millisecond)
		storetest.Account(t, st, "a1")
		for _, id := range []string{"done", "old", "working", "fresh"} {
			created := now.Add(-2 * time.Hour)
			switch id {
			case "old":
				created = now.Add(-time.Hour - tasks.ExpiredKept - time.Minute)
			case "fresh":
				created = now
			}
			task := &tasks.Task{ID: id, AccountID: "a1", RequestID: "r-" + id, Tool: "invoke_partner_message", Status: tasks.Working,
				TTLMs: time.Hour.Milliseconds(), CreatedAt: created, UpdatedAt: created}
			if err := q.Create(ctx, task); err != nil {
				t.Fatal(err)
			}
			if !task.ExpiresAt.Equal(created.Add(time.Hour)) {
				t.Fatalf("%s expires %v, want %v", id, task.ExpiresAt, created.Add(time.Hour))
			}
			if id != "working" {
				if err := q.Finish(ctx, id, tasks.Ending{Status: tasks.Completed, Message: "answered", Result: []byte(`{"ok":true}`)}, created); err != nil {
					t.Fatal(err)
				}
			}
		}
		got, _ := q.Get(ctx, "a1", "done")
		if !got.Expired(now) || got.Expired(got.ExpiresAt.Add(-time.Millisecond)) {
			t.Fatalf("expired at now: %v (expires %v)", got.Expired(now), got.ExpiresAt)
		}
		if fresh, _ := q.Get(ctx, "a1", "fresh"); fresh.Expired(now) {
			t.Fatal("a fresh task is expired")
		}
		cleared, deleted, err := q.Expire(ctx, now, 100)
		if err != nil || cleared != 2 || deleted != 1 {
			t.Fatalf("expire: cleared %d deleted %d %v; want 2 (done, old) and 1 (old)", cleared, deleted, err)
		}
		if _, err := q.Get(ctx, "a1", "old"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a task expired a day ago: %v, want deleted", err)
		}
		got, err = q.Get(ctx, "a1", "done")
		if err != nil || got.Result != nil || got.Error != nil || got.Status != tasks.Completed || got.StatusMessage != "expired" {
			t.Fatalf("an expired task: %+v %v; want kept without its answer", got, err)
		}
		if w, _ := q.Get(ctx, "a1", "working"); w.Status != tasks.Working {
			t.Fatalf("a working task past its expiry: %+v", w)
		}
		if f, _ := q.Get(ctx, "a1", "fresh"); f.Result == nil {
			t.Fatal("a fresh task lost its answer")
		}
		if cleared, deleted, err := q.Expire(ctx, now, 100); err != nil || cleared != 0 || deleted != 0 {
			t.Fatalf("expire again: %d %d %v; want nothing", cleared, deleted, err)
		}

		// The backfill of a task written before the column.
		if _, err := st.DB().ExecContext(ctx, "UPDATE tasks SET expires_at = NULL WHERE id = 'fresh'"); err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile("../migrations/20261203080002_task_expiry.tx.up.sql")
		if err != nil {
			t.Fatal(err)
		}
		var stmt strings.Builder
		tpl := template.Must(template.New("m").Parse(strings.Split(string(raw), "--bun:split")[1]))
		if err := tpl.Execute(&stmt, struct{ Postgres bool }{st.Postgres()}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.DB().ExecContext(ctx, stmt.String()); err != nil {
			t.Fatalf("%s: %v", stmt.String(), err)
		}
		f, err := q.Get(ctx, "a1", "fresh")
		if err != nil || !f.ExpiresAt.Equal(now.Add(time.Hour)) {
			t.Fatalf("backfilled expiry %v %v, want %v", f.ExpiresAt, err, now.Add(time.Hour))
		}
	})
}

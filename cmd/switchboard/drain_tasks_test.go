package main

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/invocations"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/store/tasks"
)

// TestSIGTERMWaitsForTasks: SIGTERM while the replica runs two tasks, one whose partner
// answers within the shutdown timeout and one whose partner never does. serve waits for the
// first, which completes charged once, and leaves the second to the sweeper when the timeout
// ends, working with its call still dispatching (its hold durable; TestLongCallsAsTasks has the
// sweeper refund such a task), says so in its log, and exits 0.
func TestSIGTERMWaitsForTasks(t *testing.T) {
	bin := buildBinary(t)
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			dsn := storetest.DSN(t, dialect)
			dir := t.TempDir()
			keyFile := filepath.Join(dir, "signing-key.pem")
			key, _, err := signing.LoadOrCreatePrivateKey(keyFile)
			if err != nil {
				t.Fatal(err)
			}
			var started atomic.Int32
			work := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/slow":
					started.Add(1)
					time.Sleep(1500 * time.Millisecond)
				case "/hang":
					started.Add(1)
					<-r.Context().Done()
					return
				}
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, `{"success":true,"result":{"done":true},"providerCostMicro":200}`)
			})
			partner, caFile := startPartner(t, signing.Middleware(serviceVerifier(key), work), dir)
			env := []string{"SWITCHBOARD_DATA_DIR=" + dir, "SWITCHBOARD_DATABASE_URL=" + dsn, "SWITCHBOARD_SIGNING_KEY_FILE=" + keyFile,
				"SWITCHBOARD_SMTP_URL=", "SWITCHBOARD_API_KEY=", "SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS=true", "SWITCHBOARD_PARTNER_CA_FILE=" + caFile,
				"SWITCHBOARD_TASK_AFTER=1s", "SWITCHBOARD_DRAIN_DELAY=0s", "SWITCHBOARD_SHUTDOWN_TIMEOUT=5s"}
			s := startServe(t, bin, freeAddr(t), env)
			apiKey := s.onboard("drain-tasks@example.com")
			for _, in := range []struct{ handle, path string }{{"@slowtask", "/slow"}, {"@hangtask", "/hang"}} {
				st, out := s.do("POST", "/v1/partner/intents", apiKey, map[string]any{
					"publicIdentifier": in.handle, "name": in.handle[1:], "description": "drain test " + in.path, "category": "QUERY",
					"toolEndpoint": partner.URL + in.path, "timeoutMs": 60000, "feeRate": 0.0005,
					"payoutAddresses": map[string]string{"evm": "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"}})
				if st != 201 {
					t.Fatalf("publish %s: %d %v", in.handle, st, out)
				}
				if st, out := s.do("POST", "/v1/partner/intents/"+out["id"].(string)+"/active", apiKey, map[string]any{"active": true}); st != 200 {
					t.Fatalf("activate %s: %d %v", in.handle, st, out)
				}
			}
			ids := map[string]string{}
			for _, h := range []string{"@slowtask", "@hangtask"} {
				st, out := s.doWith("POST", "/v1/invoke", apiKey, map[string]any{"message": h + " go"}, map[string]string{"Prefer": "respond-async"})
				if st != 202 || out["status"] != "working" {
					t.Fatalf("respond-async %s: %d %v", h, st, out)
				}
				ids[h] = out["taskId"].(string)
			}
			for started.Load() < 2 {
				time.Sleep(10 * time.Millisecond)
			}
			if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if err := s.cmd.Wait(); err != nil {
				t.Fatalf("serve after SIGTERM: %v, want exit 0\n%s", err, s.stderr)
			}
			if log := s.stderr.String(); !strings.Contains(log, "left to the sweeper") || !strings.Contains(log, `"tasks":1}`) {
				t.Fatalf("serve did not say it left one task to the sweeper:\n%s", log)
			}

			ctx := context.Background()
			db, err := store.Open(ctx, dsn, "")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			q := tasks.New(db)
			waited, err := q.ByRequest(ctx, requestOf(t, db, ids["@slowtask"]))
			if err != nil || waited.Status != tasks.Completed || waited.Result == nil || !strings.Contains(*waited.Result, `"success":true`) {
				t.Fatalf("the task that answered within the timeout: %+v %v, want completed with its answer", waited, err)
			}
			if inv, err := invocations.New(db).ByID(ctx, waited.RequestID); err != nil || inv.State != store.InvSucceeded || partnerFees(t, db, waited.RequestID) != 1 {
				t.Fatalf("its call: %+v %v, want succeeded with one partner fee", inv, err)
			}
			left, err := q.ByRequest(ctx, requestOf(t, db, ids["@hangtask"]))
			if err != nil || left.Status != tasks.Working {
				t.Fatalf("the task left to the sweeper: %+v %v, want working", left, err)
			}
			if inv, err := invocations.New(db).ByID(ctx, left.RequestID); err != nil || inv.State != store.InvDispatching {
				t.Fatalf("its call: %+v %v, want still dispatching (held) for the sweeper", inv, err)
			}
		})
	}
}

// requestOf is the invocation task id runs.
func requestOf(t *testing.T, db *store.Store, id string) string {
	t.Helper()
	var rid string
	if err := db.DB().NewSelect().Table("tasks").Column("request_id").Where("id = ?", id).Scan(context.Background(), &rid); err != nil {
		t.Fatal(err)
	}
	return rid
}

package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/invocations"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

// pgTool finds a PostgreSQL client program of the newest installed server version (the
// cluster's own, so pg_dump is never older than the server), else the one on PATH.
func pgTool(t *testing.T, name string) string {
	t.Helper()
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	if len(found) > 0 {
		sort.Strings(found)
		return found[len(found)-1]
	}
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not installed (Debian: postgresql-client): %v", name, err)
	}
	return p
}

// withDatabase is dsn naming another database of the same server.
func withDatabase(t *testing.T, dsn, name string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// TestBackupRestoreDrill is docs/operations.md's restore runbook played on a cluster of the
// test's own: serve runs under a steady load (reads, and writes confirmed) while `pg_dump
// --format=custom` takes the backup; the dump is restored with `pg_restore` into a fresh
// database, `switchboard migrate` finds nothing to apply and `admin ledger-check` is clean;
// and a serve on the restored database serves the same account, keys and intents: the key
// issued before the dump works, the key and intent lists are the ones listed before the
// dump, every call answered well before the dump began is there, and a new call succeeds.
func TestBackupRestoreDrill(t *testing.T) {
	if os.Getenv("TEST_DATABASE_URL") == "" {
		t.Skip("needs PostgreSQL: set TEST_DATABASE_URL (CI does)")
	}
	bin := buildBinary(t)
	cluster := storetest.StartCluster(t)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "signing-key.pem")
	key, _, err := signing.LoadOrCreatePrivateKey(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	work := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"success":true,"result":{"done":true},"providerCostMicro":300}`)
	})
	partner, caFile := startPartner(t, signing.Middleware(serviceVerifier(key), signing.DedupeMiddleware(signing.NewResponseDedupe(), work)), dir)
	const secret = "c3dpdGNoYm9hcmQgcmVzdG9yZSBkcmlsbCBrZXkhISE="
	settings := func(dsn string) []string {
		return []string{"SWITCHBOARD_DATA_DIR=" + t.TempDir(), "SWITCHBOARD_DATABASE_URL=" + dsn, "SWITCHBOARD_SIGNING_KEY_FILE=" + keyFile,
			"SWITCHBOARD_MASTER_KEY=" + secret, "SWITCHBOARD_SERVER_SECRET=" + secret,
			"SWITCHBOARD_SMTP_URL=", "SWITCHBOARD_API_KEY=", "SWITCHBOARD_REDIS_URL=", "SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS=true", "SWITCHBOARD_PARTNER_CA_FILE=" + caFile,
			"SWITCHBOARD_DEFAULT_RATE_LIMIT_PER_MINUTE=100000", "SWITCHBOARD_DEFAULT_SPEND_LIMIT_USD=1000", "SWITCHBOARD_STARTING_CREDIT_USD=1000",
			"SWITCHBOARD_SWEEP_MARGIN=1s", "SWITCHBOARD_SWEEP_INTERVAL=300ms", "SWITCHBOARD_REPROBE_INTERVAL=0", "SWITCHBOARD_SHUTDOWN_TIMEOUT=30s"}
	}
	live := cluster.DSN()
	env := settings(live)
	s := startServe(t, bin, freeAddr(t), env)
	agent := s.onboard("drill@example.com")
	for _, in := range []struct{ handle, category string }{{"@drillread", "QUERY"}, {"@drillwrite", "EXECUTE"}} {
		st, out := s.do("POST", "/v1/partner/intents", agent, map[string]any{
			"publicIdentifier": in.handle, "name": in.handle[1:], "description": "restore drill", "category": in.category,
			"toolEndpoint": partner.URL + "/" + in.handle[1:], "timeoutMs": 2000, "feeRate": 0.0005,
			"payoutAddresses": map[string]string{"evm": "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"}})
		if st != 201 {
			t.Fatalf("publish %s: %d %v", in.handle, st, out)
		}
		if st, out := s.do("POST", "/v1/partner/intents/"+out["id"].(string)+"/active", agent, map[string]any{"active": true}); st != 200 {
			t.Fatalf("activate %s: %d %v", in.handle, st, out)
		}
	}
	st, minted := s.do("POST", "/v1/keys", agent, map[string]any{"name": "issued before the dump", "scopes": []string{"read", "partner"}})
	if st != 201 {
		t.Fatalf("mint a key: %d %v", st, minted)
	}
	issued := minted["secret"].(string)
	// What the restored service must serve the same: the account, the keys, the intents.
	view := func(s *server) (account, keys, intents any) {
		t.Helper()
		st, acct := s.do("GET", "/v1/account", issued, nil)
		if st != 200 {
			t.Fatalf("GET /v1/account with the key issued before the dump: %d %v", st, acct)
		}
		st, k := s.do("GET", "/v1/keys", agent, nil)
		if st != 200 {
			t.Fatalf("GET /v1/keys: %d %v", st, k)
		}
		st, in := s.do("GET", "/v1/partner/intents", agent, nil)
		if st != 200 {
			t.Fatalf("GET /v1/partner/intents: %d %v", st, in)
		}
		return map[string]any{"userId": acct["userId"], "email": acct["email"]}, idsOf(k["keys"], "id", "name", "scopes", "revokedAt"),
			idsOf(in["intents"], "id", "publicIdentifier", "category", "active", "toolEndpoint", "feeRate")
	}
	acctBefore, keysBefore, intentsBefore := view(s)

	// The steady load: reads on a budget lease and writes confirmed.
	type answered struct {
		requestID string
		at        time.Time
	}
	var mu sync.Mutex
	var calls []answered
	var failures atomic.Int32
	var stop atomic.Bool
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for !stop.Load() {
				body := map[string]any{"message": "@drillread go"}
				want := 200
				if i == 0 {
					body["message"], want = "@drillwrite go", 409
				}
				st, out := s.do("POST", "/v1/invoke", agent, body)
				if st == 409 && want == 409 {
					body["confirmRequestId"] = details(out)["requestId"]
					st, out = s.do("POST", "/v1/invoke", agent, body)
				}
				id, _ := out["requestId"].(string)
				if st != 200 || out["success"] != true || id == "" {
					if failures.Add(1) <= 5 {
						t.Errorf("a call under the dump: %d %v", st, out)
					}
					continue
				}
				mu.Lock()
				calls = append(calls, answered{id, time.Now()})
				mu.Unlock()
			}
		})
	}
	time.Sleep(3 * time.Second)
	dump := filepath.Join(t.TempDir(), "switchboard.dump")
	dumpBegan := time.Now()
	if out, err := exec.Command(pgTool(t, "pg_dump"), "--format=custom", "--file="+dump, "--dbname="+live).CombinedOutput(); err != nil {
		t.Fatalf("pg_dump: %v\n%s", err, out)
	}
	dumpTook := time.Since(dumpBegan)
	time.Sleep(time.Second) // the load goes on after the backup point
	stop.Store(true)
	wg.Wait()
	s.cmd.Process.Signal(syscall.SIGTERM)
	if err := s.cmd.Wait(); err != nil {
		t.Fatalf("serve after SIGTERM: %v\n%s", err, s.stderr)
	}
	if failures.Load() > 0 {
		t.Fatalf("%d calls failed while pg_dump ran", failures.Load())
	}
	fi, err := os.Stat(dump)
	if err != nil {
		t.Fatal(err)
	}

	// The restore, as the runbook says: a fresh database, pg_restore, migrate, ledger-check.
	ctx := context.Background()
	admin := storetest.OpenURL(t, withDatabase(t, live, "postgres"))
	if _, err := admin.DB().ExecContext(ctx, "CREATE DATABASE restored"); err != nil {
		t.Fatal(err)
	}
	restoredDSN := withDatabase(t, live, "restored")
	restoreBegan := time.Now()
	if out, err := exec.Command(pgTool(t, "pg_restore"), "--no-owner", "--exit-on-error", "--dbname="+restoredDSN, dump).CombinedOutput(); err != nil {
		t.Fatalf("pg_restore: %v\n%s", err, out)
	}
	restoreTook := time.Since(restoreBegan)
	restoredEnv := settings(restoredDSN)
	for _, args := range [][]string{{"migrate"}, {"admin", "ledger-check"}} {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), restoredEnv...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("switchboard %s on the restored database: %v\n%s", strings.Join(args, " "), err, out)
		}
		if args[0] == "migrate" && !strings.HasPrefix(string(out), "applied 0 migration(s)") {
			t.Fatalf("migrate on a database restored from this release: %s, want nothing to apply", out)
		}
	}

	restored := startServe(t, bin, freeAddr(t), restoredEnv)
	acctAfter, keysAfter, intentsAfter := view(restored)
	for _, c := range []struct {
		what          string
		before, after any
	}{{"account", acctBefore, acctAfter}, {"keys", keysBefore, keysAfter}, {"intents", intentsBefore, intentsAfter}} {
		if !reflect.DeepEqual(c.before, c.after) {
			t.Errorf("the restored service's %s:\n%v\nbefore the dump:\n%v", c.what, c.after, c.before)
		}
	}
	// Every call answered a second before the dump began (its batch long committed) is in it.
	db := storetest.OpenURL(t, restoredDSN)
	var rows, kept int
	if err := db.DB().NewRaw("SELECT COUNT(*) FROM invocations").Scan(ctx, &rows); err != nil {
		t.Fatal(err)
	}
	for _, c := range calls {
		if c.at.After(dumpBegan.Add(-time.Second)) {
			continue
		}
		kept++
		inv, err := invocations.New(db).ByID(ctx, c.requestID)
		if err != nil || inv.State != store.InvSucceeded {
			t.Errorf("call %s, answered %s before the dump began, in the restored database: %+v %v", c.requestID, dumpBegan.Sub(c.at).Round(time.Millisecond), inv, err)
		}
	}
	if kept == 0 {
		t.Fatal("no call was answered before the dump began")
	}
	if st, out := restored.do("POST", "/v1/invoke", issued, map[string]any{"message": "@drillread after the restore"}); st != 200 || out["success"] != true {
		t.Fatalf("a call on the restored service with the key issued before the dump: %d %v", st, out)
	}
	restored.cmd.Process.Signal(syscall.SIGTERM)
	if err := restored.cmd.Wait(); err != nil {
		t.Fatalf("the restored serve after SIGTERM: %v\n%s", err, restored.stderr)
	}
	check := exec.Command(bin, "admin", "ledger-check")
	check.Env = append(os.Environ(), restoredEnv...)
	if out, err := check.CombinedOutput(); err != nil {
		t.Fatalf("ledger-check after serving on the restored database: %v\n%s", err, out)
	}
	t.Logf("restore drill: %d calls answered under load (%d before the dump began), dump %d bytes in %s (pg_dump --format=custom), restored in %s (pg_restore), %d invocations restored; ledger-check clean; account, %d keys and %d intents the same",
		len(calls), kept, fi.Size(), dumpTook.Round(time.Millisecond), restoreTook.Round(time.Millisecond), rows,
		len(keysBefore.([]map[string]any)), len(intentsBefore.([]map[string]any)))
}

// idsOf keeps the named fields of each object of a JSON list.
func idsOf(list any, fields ...string) []map[string]any {
	var out []map[string]any
	items, _ := list.([]any)
	for _, item := range items {
		m, _ := item.(map[string]any)
		kept := map[string]any{}
		for _, f := range fields {
			kept[f] = m[f]
		}
		out = append(out, kept)
	}
	return out
}

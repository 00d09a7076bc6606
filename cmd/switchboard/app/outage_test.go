package app_test

import (
	"context"
	"database/sql"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
)

// checkUnavailable asserts a REST call answers 503 UNAVAILABLE with Retry-After, never 500.
func checkUnavailable(t *testing.T, env *apptest.Env, method, path, key string, body any) {
	t.Helper()
	status, h, out := apptest.Do(t, method, env.URL+path, key, body)
	e, _ := out["error"].(map[string]any)
	if status != http.StatusServiceUnavailable || e["code"] != "UNAVAILABLE" || h.Get("Retry-After") == "" {
		t.Errorf("%s %s during the outage: %d %v Retry-After=%q, want 503 UNAVAILABLE with Retry-After", method, path, status, out, h.Get("Retry-After"))
	}
}

// A PostgreSQL outage answers 503 UNAVAILABLE with Retry-After on both doors (never 500), and
// the service recovers by itself when the database is back.
func TestPostgresOutageAnswers503AndRecovers(t *testing.T) {
	c := storetest.StartCluster(t)
	st := storetest.OpenURL(t, c.DSN())
	env := apptest.Start(t, apptest.Options{Store: st})
	key := env.Onboard(t, "outage@example.com")["apiKey"].(string)

	c.Stop()
	if st, body := probe(t, env, "/readyz"); st != 503 || !strings.Contains(body, "database unreachable") {
		t.Errorf("readyz during the outage: %d %s, want 503 database unreachable", st, body)
	}
	if st, _ := probe(t, env, "/livez"); st != 200 {
		t.Errorf("livez during the outage: %d, want 200 (a restart cures nothing)", st)
	}
	checkUnavailable(t, env, "GET", "/v1/account", key, nil)
	checkUnavailable(t, env, "GET", "/v1/keys", key, nil)
	checkUnavailable(t, env, "POST", "/v1/keys", key, map[string]any{"name": "k", "scopes": []string{"read"}})
	checkUnavailable(t, env, "POST", "/v1/agents/signup", "", map[string]any{"email": "new@example.com"})
	if _, e := apptest.CallTool(t, env.MCP(t, key), "account_get", nil); e == nil || e.Code != tools.CodeUnavailable {
		t.Errorf("MCP account_get during the outage: %v, want UNAVAILABLE", e)
	}

	c.Start()
	if status, out := env.REST(t, "GET", "/v1/account", key, nil); status != 200 {
		t.Fatalf("after the database came back: %d %v", status, out)
	}
	if st, body := probe(t, env, "/readyz"); st != 200 {
		t.Errorf("readyz after the outage: %d %s", st, body)
	}
	if status, out := env.REST(t, "POST", "/v1/keys", key, map[string]any{"name": "k", "scopes": []string{"read"}}); status != 201 {
		t.Fatalf("a write after the database came back: %d %v", status, out)
	}
}

// A SQLite database held locked by another writer past the busy timeout answers 503, not 500.
func TestSQLiteLockedAnswers503(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locked.db")
	opts := "?_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)&_pragma=busy_timeout(200)&_txlock=immediate"
	ctx := context.Background()
	st := storetest.OpenURL(t, path+opts)
	env := apptest.Start(t, apptest.Options{Store: st})
	key := env.Onboard(t, "locked@example.com")["apiKey"].(string)

	other, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(200)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	checkUnavailable(t, env, "POST", "/v1/keys", key, map[string]any{"name": "k", "scopes": []string{"read"}})
	conn.ExecContext(ctx, "ROLLBACK")
	conn.Close()
	if status, out := env.REST(t, "POST", "/v1/keys", key, map[string]any{"name": "k", "scopes": []string{"read"}}); status != 201 {
		t.Fatalf("after the lock was released: %d %v", status, out)
	}
}

package app_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
)

// probe GETs path and returns its status and body.
func probe(t *testing.T, env *apptest.Env, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(env.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// /readyz is ready only with every migration applied and while not draining; /livez and
// /healthz answer 200 throughout.
func TestReadinessAndLiveness(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	alive := func() {
		t.Helper()
		for _, path := range []string{"/livez", "/healthz"} {
			if st, body := probe(t, env, path); st != 200 || !strings.Contains(body, `"ok"`) {
				t.Fatalf("%s: %d %s", path, st, body)
			}
		}
	}
	alive()
	if st, body := probe(t, env, "/readyz"); st != 200 || body != `{"status":"ready"}` {
		t.Fatalf("readyz of a started app: %d %s", st, body)
	}

	// A database restored from before the latest migration: not ready until it is applied.
	ctx := context.Background()
	db := env.App.Store.DB()
	var last string
	if err := db.NewRaw("SELECT name FROM bun_migrations ORDER BY name DESC LIMIT 1").Scan(ctx, &last); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "DELETE FROM bun_migrations WHERE name = ?", last); err != nil {
		t.Fatal(err)
	}
	if st, body := probe(t, env, "/readyz"); st != 503 || !strings.Contains(body, "migrations not applied: "+last) {
		t.Fatalf("readyz with migration %s unrecorded: %d %s", last, st, body)
	}
	alive()
	if _, err := db.ExecContext(ctx, "INSERT INTO bun_migrations (name, group_id, migrated_at) VALUES (?, 1, CURRENT_TIMESTAMP)", last); err != nil {
		t.Fatal(err)
	}
	if st, body := probe(t, env, "/readyz"); st != 200 {
		t.Fatalf("readyz with the migration recorded again: %d %s", st, body)
	}

	env.App.Drain()
	if st, body := probe(t, env, "/readyz"); st != 503 || !strings.Contains(body, `"reason":"draining"`) {
		t.Fatalf("readyz while draining: %d %s", st, body)
	}
	alive()
}

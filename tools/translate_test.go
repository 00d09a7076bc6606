package tools_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/switchboard-hq/switchboard/store/dberr"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/uptrace/bun/driver/pgdriver"
	_ "modernc.org/sqlite"
)

// The kernel translates the store's errors without importing the store: its sentinels, however
// deeply wrapped (one of several wrapped errors included), and the driver errors the store
// normalizes; a connection that failed is retryable whatever it was to.
func TestTranslateReadsWhatAnErrorMeans(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	for _, tc := range []struct {
		name string
		err  error
		want tools.Code
	}{
		{"not found", fmt.Errorf("get key: %w", dberr.ErrNotFound), tools.CodeNotFound},
		{"conflict", fmt.Errorf("insert: %w", fmt.Errorf("row: %w", dberr.ErrConflict)), tools.CodeConflict},
		{"unavailable", fmt.Errorf("commit: %w", dberr.ErrUnavailable), tools.CodeUnavailable},
		{"unavailable beside another", fmt.Errorf("%w: %w", errors.New("the driver's own"), dberr.ErrUnavailable), tools.CodeUnavailable},
		{"a refused connection, normalized", dberr.Normalize(refused), tools.CodeUnavailable},
		{"a refused connection, as it came", fmt.Errorf("ping: %w", refused), tools.CodeUnavailable},
		{"a reset connection", fmt.Errorf("read: %w", syscall.ECONNRESET), tools.CodeUnavailable},
		{"anything else", errors.New("boom"), tools.CodeInternal},
	} {
		e := tools.Translate(tc.err)
		if e == nil || e.Code != tc.want {
			t.Errorf("%s: %v, want %s", tc.name, e, tc.want)
		}
		if tc.want == tools.CodeUnavailable && e.RetryAfter == 0 {
			t.Errorf("%s: UNAVAILABLE without Retry-After", tc.name)
		}
	}
	if !errors.Is(fmt.Errorf("x: %w", dberr.ErrNotFound), dberr.ErrNotFound) || errors.Is(dberr.ErrNotFound, dberr.ErrConflict) {
		t.Error("the sentinels are no longer distinct values errors.Is tells apart")
	}
}

// A database that cannot answer is UNAVAILABLE (retry), never INTERNAL, even when its driver's
// error reaches the kernel as the driver made it (not normalized by the store): real errors of
// both drivers, a SQLite database another connection holds, and a PostgreSQL backend that the
// server terminated.
func TestTranslateAnOutageTheStoreDidNotNormalize(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "t.db")
	holder, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if _, err := holder.ExecContext(ctx, "CREATE TABLE t (id TEXT)"); err != nil {
		t.Fatal(err)
	}
	tx, err := holder.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "INSERT INTO t VALUES ('held')"); err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	_, busy := other.ExecContext(ctx, "INSERT INTO t VALUES ('second')")
	if busy == nil {
		t.Fatal("a second writer got in while the first held the database")
	}
	cases := map[string]error{"sqlite busy": fmt.Errorf("insert: %w", busy)}

	if url := os.Getenv("TEST_DATABASE_URL"); url != "" {
		pg := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(url)))
		defer pg.Close()
		pg.SetMaxOpenConns(1)
		_, terminated := pg.ExecContext(ctx, "SELECT pg_terminate_backend(pg_backend_pid())")
		if terminated == nil {
			t.Fatal("PostgreSQL terminated its own backend without an error")
		}
		cases["postgres terminated"] = fmt.Errorf("select: %w", terminated)
	}
	for name, err := range cases {
		if e := tools.Translate(err); e.Code != tools.CodeUnavailable || e.RetryAfter == 0 {
			t.Errorf("%s (%v): %s, want UNAVAILABLE with Retry-After", name, err, e.Code)
		}
	}
}

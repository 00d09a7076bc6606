package dberr_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store/dberr"
	"github.com/uptrace/bun/driver/pgdriver"
	_ "modernc.org/sqlite"
)

// Errors from real drivers map onto the sentinels, with the original kept.
func TestNormalizeRealDriverErrors(t *testing.T) {
	ctx := context.Background()
	lite, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	if _, err := lite.ExecContext(ctx, "CREATE TABLE t (id TEXT PRIMARY KEY, name TEXT UNIQUE)"); err != nil {
		t.Fatal(err)
	}
	if _, err := lite.ExecContext(ctx, "INSERT INTO t VALUES ('a', 'x')"); err != nil {
		t.Fatal(err)
	}
	_, dup := lite.ExecContext(ctx, "INSERT INTO t VALUES ('b', 'x')")
	_, pk := lite.ExecContext(ctx, "INSERT INTO t VALUES ('a', 'y')")
	none := lite.QueryRowContext(ctx, "SELECT id FROM t WHERE id = 'zz'").Scan(new(string))
	for _, c := range []struct {
		name string
		err  error
		want error
	}{
		{"sqlite unique", dup, dberr.ErrConflict},
		{"sqlite primary key", pk, dberr.ErrConflict},
		{"no rows", none, dberr.ErrNotFound},
	} {
		got := dberr.Normalize(c.err)
		if !errors.Is(got, c.want) || !errors.Is(got, c.err) {
			t.Errorf("%s: Normalize(%v) = %v, want %v wrapping the original", c.name, c.err, got, c.want)
		}
	}
	if dberr.Normalize(nil) != nil {
		t.Error("Normalize(nil) is not nil")
	}
	other := errors.New("a bug of ours")
	if got := dberr.Normalize(other); got != other || dberr.IsUnavailable(other) {
		t.Errorf("an error that is none of these: Normalize = %v, IsUnavailable %v; want it unchanged and not unavailable", got, dberr.IsUnavailable(other))
	}

	if url := os.Getenv("TEST_DATABASE_URL"); url != "" {
		pg := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(url)))
		defer pg.Close()
		conn, err := pg.Conn(ctx) // a temporary table lives on one connection
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.ExecContext(ctx, "CREATE TEMP TABLE u (id TEXT PRIMARY KEY)"); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.ExecContext(ctx, "INSERT INTO u VALUES ('a')"); err != nil {
			t.Fatal(err)
		}
		_, dup := conn.ExecContext(ctx, "INSERT INTO u VALUES ('a')")
		if got := dberr.Normalize(dup); !errors.Is(got, dberr.ErrConflict) {
			t.Errorf("PostgreSQL unique violation: %v, want ErrConflict", got)
		}
	}
}

// A database nobody answers for is unavailable: retry, not a bug.
func TestUnavailableWhenNobodyAnswers(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	pg := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithAddr(addr), pgdriver.WithInsecure(true), pgdriver.WithDialTimeout(2*time.Second)))
	defer pg.Close()
	err = pg.PingContext(context.Background())
	if err == nil {
		t.Fatal("a ping to a closed port succeeded")
	}
	if !dberr.IsUnavailable(err) || !errors.Is(dberr.Normalize(err), dberr.ErrUnavailable) {
		t.Errorf("connection refused: IsUnavailable %v, Normalize %v; want unavailable", dberr.IsUnavailable(err), dberr.Normalize(err))
	}
	if !dberr.IsUnavailable(fmt.Errorf("commit: %w", dberr.ErrUnavailable)) {
		t.Error("a wrapped ErrUnavailable is not unavailable")
	}
}

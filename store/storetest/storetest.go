// Package storetest opens real, migrated, isolated databases for tests: SQLite always, and
// PostgreSQL when TEST_DATABASE_URL is set (each test gets its own schema).
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/switchboard-hq/switchboard/store"
)

// Dialects names the databases a test runs against: "sqlite", plus "postgres" when
// TEST_DATABASE_URL is set.
func Dialects() []string {
	if os.Getenv("TEST_DATABASE_URL") != "" {
		return []string{"sqlite", "postgres"}
	}
	return []string{"sqlite"}
}

// Each runs fn as a subtest once per dialect, each with a fresh migrated store.
func Each(t *testing.T, fn func(t *testing.T, s *store.Store)) {
	t.Helper()
	for _, d := range Dialects() {
		t.Run(d, func(t *testing.T) { fn(t, Open(t, d)) })
	}
}

// Open returns a fresh migrated store of the named dialect, closed and dropped when t ends.
func Open(t testing.TB, dialect string) *store.Store {
	t.Helper()
	return OpenURL(t, DSN(t, dialect))
}

// DSN returns the address of a fresh database of the named dialect, dropped when t ends:
// open it more than once (OpenURL) for stores that share it as replicas do.
func DSN(t testing.TB, dialect string) string {
	t.Helper()
	switch dialect {
	case "sqlite":
		return filepath.Join(t.TempDir(), "test.db")
	case "postgres":
		return postgresSchema(t)
	}
	t.Fatalf("unknown dialect %q", dialect)
	return ""
}

// OpenURL returns a migrated store on dsn (a cluster of the test's own, SQLite with options
// of its own), closed when t ends.
func OpenURL(t testing.TB, dsn string) *store.Store {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, dsn, t.TempDir())
	if err != nil {
		t.Fatalf("open the store: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return s
}

// postgresSchema creates a schema of its own for the test and returns a DSN whose
// search_path points at it.
func postgresSchema(t testing.TB) string {
	t.Helper()
	base := os.Getenv("TEST_DATABASE_URL")
	if base == "" {
		t.Fatal("TEST_DATABASE_URL is not set")
	}
	ctx := context.Background()
	admin, err := store.Open(ctx, base, "")
	if err != nil {
		t.Fatalf("connect TEST_DATABASE_URL: %v", err)
	}
	b := make([]byte, 6)
	rand.Read(b)
	schema := "t_" + hex.EncodeToString(b)
	if _, err := admin.DB().ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		admin.Close()
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		admin.DB().ExecContext(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		admin.Close()
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse TEST_DATABASE_URL: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// Package store keeps Switchboard's state: bun models, embedded migrations and queries, on
// PostgreSQL (production) or SQLite (the embedded, zero-setup default).
package store

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-hq/switchboard/store/dberr"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/driver/pgdriver"
	"github.com/uptrace/bun/migrate"

	"github.com/switchboard-hq/switchboard/store/watch"
)

// Sentinel errors every query returns in place of driver-specific ones, so callers above the
// store never look at a driver error.
// They are dberr's, so that packages which only translate errors need not import the store.
var (
	ErrNotFound    = dberr.ErrNotFound
	ErrConflict    = dberr.ErrConflict
	ErrUnavailable = dberr.ErrUnavailable
)

// Store is the database handle shared by every capability.
type Store struct {
	db       *bun.DB
	postgres bool
	watch    *watch.Hub // changes to cached rows, fanned out in this process after commit

	// SQLite has one writer, and every transaction here takes its lock (_txlock=immediate):
	// this process's transactions queue for it on writer instead of polling SQLite's lock,
	// whose busy handler sleeps 1, 2, 5... up to 100 ms between tries. Behind the batch
	// writer's back-to-back commits a lease renewal polled for about 50 ms on average.
	writer sync.Mutex
	prep   prepared // ExecPrepared's statements (the batch writer's, on SQLite)
}

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Open connects to PostgreSQL when url starts with postgres:// or postgresql://, otherwise to
// SQLite: url may be a file path, a "file:" URI, or empty for dataDir/switchboard.db.
func Open(ctx context.Context, url, dataDir string) (*Store, error) {
	var s *Store
	if strings.HasPrefix(url, "postgres://") || strings.HasPrefix(url, "postgresql://") {
		sqldb := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(url)))
		s = &Store{db: bun.NewDB(sqldb, pgdialect.New()), postgres: true}
		s.SetMaxConns(DefaultMaxConns)
	} else {
		dsn, err := sqliteDSN(url, dataDir)
		if err != nil {
			return nil, err
		}
		sqldb, err := sql.Open("sqlite", dsn)
		if err != nil {
			return nil, fmt.Errorf("open sqlite: %w", err)
		}
		s = &Store{db: bun.NewDB(sqldb, sqlitedialect.New())}
	}
	if err := s.db.PingContext(ctx); err != nil {
		s.db.Close()
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	s.watch = watch.New(s.db, s.postgres)
	return s, nil
}

// Changes is where the changes committed to cached rows (keys, intents, tiers) are watched.
func (s *Store) Changes() *watch.Hub { return s.watch }

func sqliteDSN(url, dataDir string) (string, error) {
	path := strings.TrimPrefix(url, "sqlite://")
	if path == "" {
		if err := os.MkdirAll(dataDir, 0o700); err != nil {
			return "", fmt.Errorf("create data dir: %w", err)
		}
		path = filepath.Join(dataDir, "switchboard.db")
	}
	if strings.Contains(path, "?") {
		return path, nil // the caller chose its own options
	}
	// WAL lets readers run beside the one writer, and with synchronous=NORMAL a commit does
	// not wait for fsync (a power loss can drop the last commits, a crash cannot); busy_timeout
	// waits instead of failing with SQLITE_BUSY; immediate transactions take the write lock up
	// front so two writers never deadlock upgrading read locks. No connection checkpoints the
	// WAL after its commits (SQLite's default, every 1,000 pages, ran the checkpoint and its
	// fsyncs inside whichever commit crossed the mark: a lone caller's 25 ms tail): the
	// server checkpoints in the background instead (Checkpoint). Temporary files stay in
	// memory: a batch's savepoint journals the pages it changes, and past 64 KB SQLite spilled
	// that journal to a file it opened, wrote and deleted inside the commit (a lone caller's
	// batch crossed it: a quarter of the 130 µs its writes took).
	return path + "?_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=busy_timeout(10000)&_pragma=wal_autocheckpoint(0)&_pragma=temp_store(MEMORY)&_txlock=immediate", nil
}

// DefaultMaxConns is the PostgreSQL pool size of a process unless configured.
const DefaultMaxConns = 10

// SetMaxConns sizes the PostgreSQL pool: at most n connections, all kept open when idle.
// database/sql keeps only 2 idle by default, so under concurrency every query beyond them
// paid for a new connection (TCP, startup, auth): milliseconds each.
func (s *Store) SetMaxConns(n int) {
	if !s.postgres || n <= 0 {
		return
	}
	s.db.SetMaxOpenConns(n)
	s.db.SetMaxIdleConns(n)
	s.db.SetConnMaxIdleTime(5 * time.Minute)
}

// DB exposes the bun handle to packages of this module's tests and the operator CLI.
func (s *Store) DB() *bun.DB { return s.db }

// Postgres reports whether the store runs on PostgreSQL.
func (s *Store) Postgres() bool { return s.postgres }

// Close closes the connection pool.
func (s *Store) Close() error { return s.db.Close() }

// Checkpoint copies what SQLite's write-ahead log holds into the database file, as far as
// it can without waiting for readers or the writer (PASSIVE), off every commit's path; serve
// runs it every second. It does nothing on PostgreSQL.
//
// The log starts over from its beginning only when a writer finds it wholly copied and no
// reader in it, which a steady load never leaves: under 32 callers it grew by 150 MB a second
// without end, and calls/s fell by a third in 16 s. Past restartFrames, Checkpoint therefore
// finishes the copy with this process's writers held back (they queue on s.writer) and
// starts the log over (RESTART), waiting at most restartWait for readers still in it (when
// they outlast that, it tries again next time). Writers wait about 20 ms for it, once a second
// at most; the file keeps its size (truncating it took 55 ms) and is written over.
func (s *Store) Checkpoint(ctx context.Context) error {
	if s.postgres {
		return nil
	}
	var busy, frames, copied int
	if err := s.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied); err != nil {
		return err
	}
	if frames < restartFrames {
		return nil
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var timeout int64
	if err := conn.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&timeout); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", restartWait.Milliseconds())); err != nil {
		return err
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), fmt.Sprintf("PRAGMA busy_timeout = %d", timeout))
	s.writer.Lock()
	defer s.writer.Unlock()
	return conn.QueryRowContext(ctx, "PRAGMA wal_checkpoint(RESTART)").Scan(&busy, &frames, &copied)
}

// restartFrames is the size of SQLite's log (in pages, 4 KB each) past which Checkpoint
// starts it over; restartWait how long it then waits for readers to leave it.
const (
	restartFrames = 4096
	restartWait   = 50 * time.Millisecond
)

// Ping checks the database answers (health checks).
func (s *Store) Ping(ctx context.Context) error { return s.db.PingContext(ctx) }

type dialectTypes struct {
	Postgres bool
	TS       string
	Bytes    string
	JSON     string
}

// Migrate applies every embedded migration not yet applied. Each migration runs in its own
// transaction and is recorded only when it succeeded.
func (s *Store) Migrate(ctx context.Context) (applied []string, err error) {
	m, err := s.migrator()
	if err != nil {
		return nil, err
	}
	if err := m.Init(ctx); err != nil {
		return nil, fmt.Errorf("init migrations: %w", err)
	}
	if err := m.Lock(ctx); err != nil {
		return nil, fmt.Errorf("lock migrations: %w", err)
	}
	defer func() {
		if uerr := m.Unlock(context.WithoutCancel(ctx)); uerr != nil && err == nil {
			err = fmt.Errorf("unlock migrations: %w", uerr)
		}
	}()
	group, err := m.Migrate(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	for _, mig := range group.Migrations {
		applied = append(applied, mig.Name+"_"+mig.Comment)
	}
	return applied, nil
}

// Unapplied lists the embedded migrations the database has not recorded as applied: a
// replica is not ready while any is missing (a migration Job still running, or a database
// restored from before it).
func (s *Store) Unapplied(ctx context.Context) ([]string, error) {
	m, err := s.migrator()
	if err != nil {
		return nil, err
	}
	all, err := m.MigrationsWithStatus(ctx)
	if err != nil {
		return nil, fmt.Errorf("read applied migrations: %w", err)
	}
	var names []string
	for _, mig := range all.Unapplied() {
		names = append(names, mig.Name+"_"+mig.Comment)
	}
	return names, nil
}

func (s *Store) migrator() (*migrate.Migrator, error) {
	ms := migrate.NewMigrations()
	if err := ms.Discover(migrationFiles); err != nil {
		return nil, fmt.Errorf("load migrations: %w", err)
	}
	types := dialectTypes{TS: "TIMESTAMP", Bytes: "BLOB", JSON: "TEXT"}
	if s.postgres {
		types = dialectTypes{Postgres: true, TS: "TIMESTAMPTZ", Bytes: "BYTEA", JSON: "JSONB"}
	}
	return migrate.NewMigrator(s.db, ms, migrate.WithMarkAppliedOnSuccess(true), migrate.WithTemplateData(types)), nil
}

// IsUnavailable reports whether err means the database cannot answer now, for any driver
// (dberr.IsUnavailable). Such a call can be retried; it is not a bug.
func IsUnavailable(err error) bool { return dberr.IsUnavailable(err) }

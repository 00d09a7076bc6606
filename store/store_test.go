package store_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

func newKey(id, accountID, hash string) *accounts.APIKey {
	return &accounts.APIKey{ID: id, AccountID: accountID, Name: "k", Prefix: "sb_test_abc", Hash: hash,
		Scopes: []string{"read", "publish"}, SpendLimitMicro: 50_000_000, RateLimitPerMinute: 30,
		CreatedAt: time.Now().UTC()}
}

func TestMigrateIsIdempotent(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		applied, err := s.Migrate(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(applied) != 0 {
			t.Fatalf("second migrate applied %v, want nothing", applied)
		}
	})
}

// SQLite's connections leave the write-ahead log alone after their commits (no checkpoint,
// with its fsyncs, inside a commit); Checkpoint copies it into the database file.
func TestSQLiteCheckpointsOffTheCommitPath(t *testing.T) {
	ctx := context.Background()
	path := storetest.DSN(t, "sqlite")
	s := storetest.OpenURL(t, path)
	var every int
	if err := s.DB().NewRaw("PRAGMA wal_autocheckpoint").Scan(ctx, &every); err != nil || every != 0 {
		t.Fatalf("wal_autocheckpoint %d %v, want 0", every, err)
	}
	// A savepoint's journal of the pages it changed stays in memory (2), never a file opened
	// and deleted inside a commit.
	var temp int
	if err := s.DB().NewRaw("PRAGMA temp_store").Scan(ctx, &temp); err != nil || temp != 2 {
		t.Fatalf("temp_store %d %v, want 2 (MEMORY)", temp, err)
	}
	for i := range 200 {
		id := fmt.Sprintf("ckpt-%d", i)
		if err := accounts.New(s).Create(ctx, &accounts.Account{ID: id, Email: id + "@example.com", CreatedAt: time.Now().UTC()}, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	size := func() int64 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	before := size()
	if err := s.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if after := size(); after <= before {
		t.Fatalf("the database file is %d bytes after the checkpoint, %d before: nothing was copied from the log", after, before)
	}
}

// Under a steady load, with a writer always about to commit and a reader always inside the
// log, SQLite never starts its write-ahead log over by itself: Checkpoint must, or the log
// grows by all that is written (150 MB a second under 32 invoking callers) without end.
func TestSQLiteLogStartsOverUnderSteadyLoad(t *testing.T) {
	ctx := context.Background()
	path := storetest.DSN(t, "sqlite")
	s := storetest.OpenURL(t, path)
	if _, err := s.DB().ExecContext(ctx, "CREATE TABLE wal_load (id INTEGER PRIMARY KEY, b TEXT NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	load, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range 3 { // readers, each holding a snapshot of the log for a few milliseconds at a time
		wg.Go(func() {
			conn, err := s.DB().Conn(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			for load.Err() == nil {
				var n int
				if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
					t.Error(err)
					return
				}
				if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM wal_load").Scan(&n); err != nil {
					t.Error(err)
				}
				time.Sleep(3 * time.Millisecond)
				if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	// serve's checkpointer, ten times as often; after each run, the log's length in pages
	// (a PASSIVE checkpoint reports it): it falls only when the log has started over.
	var restarts atomic.Int32
	wg.Go(func() {
		last := 0
		for load.Err() == nil {
			if err := s.Checkpoint(ctx); err != nil {
				t.Error(err)
			}
			var busy, frames, copied int
			if err := s.DB().QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied); err != nil {
				t.Error(err)
			}
			if frames < last {
				restarts.Add(1)
			}
			last = frames
			time.Sleep(100 * time.Millisecond)
		}
	})
	// Writes go on until the log has started over twice, or 96 MB have gone through it (three
	// times as many pages as restartFrames, many times over).
	blob := strings.Repeat("x", 32<<10)
	written := 0
	for written < 96<<20 && restarts.Load() < 2 && !t.Failed() {
		err := s.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
			_, err := tx.ExecContext(ctx, "INSERT INTO wal_load (b) VALUES (?)", blob)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		written += len(blob)
	}
	stop()
	wg.Wait()
	if restarts.Load() == 0 {
		t.Fatalf("the write-ahead log never started over while %d MB went through it", written>>20)
	}
	t.Logf("the write-ahead log started over %d times while %d MB went through it", restarts.Load(), written>>20)
}

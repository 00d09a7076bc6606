package store

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/driver/pgdriver"
)

// Key changes (a revocation) are pushed to every process that caches keys: in the process
// that made the change as soon as it commits, and on PostgreSQL to every other process
// sharing the database through NOTIFY on keysChannel, which PostgreSQL delivers only when
// the writing transaction commits.
const keysChannel = "switchboard_keys"

// AllKeys is the key id WatchKeys reports when anything may have changed: the watch was
// (re)established and notifications may have been missed.
const AllKeys = ""

// keyWatchers fans a committed key change out in this process.
type keyWatchers struct {
	mu  sync.Mutex
	fns []func(keyID string)
}

func (w *keyWatchers) add(fn func(string)) func() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.fns = append(w.fns, fn)
	i := len(w.fns) - 1
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.fns[i] = nil
	}
}

func (w *keyWatchers) changed(keyID string) {
	w.mu.Lock()
	fns := append([]func(string){}, w.fns...)
	w.mu.Unlock()
	for _, fn := range fns {
		if fn != nil {
			fn(keyID)
		}
	}
}

// keyChanged announces, inside the writing transaction, that keyID changed: PostgreSQL
// delivers the notification on commit. The caller fans it out in this process after commit.
func (s *Store) keyChanged(ctx context.Context, db bun.IDB, keyID string) error {
	if !s.postgres {
		return nil
	}
	_, err := db.ExecContext(ctx, "SELECT pg_notify(?, ?)", keysChannel, keyID)
	return err
}

// WatchKeys calls fn with the id of every API key a process sharing this database changes
// (revokes), and with AllKeys when notifications may have been missed, until ctx ends.
// live reports whether changes are being delivered: a cache may serve keys only while it is
// true. On SQLite, which one process serves, changes are this process's own and always live.
func (s *Store) WatchKeys(ctx context.Context, fn func(keyID string), live func(bool)) {
	stop := s.keyWatch.add(fn)
	defer stop()
	if !s.postgres {
		live(true)
		<-ctx.Done()
		live(false)
		return
	}
	defer live(false)
	ln := pgdriver.NewListener(s.db)
	stopped := make(chan struct{})
	defer close(stopped)
	go func() { // a blocked read ends only when the connection closes
		select {
		case <-ctx.Done():
		case <-stopped:
		}
		ln.Close()
	}()
	up := false
	for ctx.Err() == nil {
		if !up {
			if err := ln.Listen(ctx, keysChannel); err != nil {
				sleep(ctx, time.Second)
				continue
			}
			// Listening again: anything sent while we were not is lost, so forget everything.
			up = true
			fn(AllKeys)
			live(true)
		}
		_, payload, err := ln.ReceiveTimeout(ctx, 5*time.Second)
		var ne net.Error
		switch {
		case err == nil:
			fn(payload)
		case errors.As(err, &ne) && ne.Timeout():
			// Quiet: the connection is fine.
		default:
			up = false
			live(false)
			fn(AllKeys)
			sleep(ctx, 200*time.Millisecond)
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

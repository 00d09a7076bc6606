// Package watch pushes changes to rows that processes cache to every process sharing the
// database; the store announces them and fans them out (Hub), the caches watch them.
package watch

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/driver/pgdriver"
)

// Changes to rows that processes cache (API keys, partner intents, account tiers) are pushed
// to every process: in the process that made the change as soon as it commits, and on
// PostgreSQL to every other process sharing the database through NOTIFY, which PostgreSQL
// delivers only when the writing transaction commits. One LISTEN connection per process
// serves every watcher.

// Kind says what changed; each kind has its own NOTIFY channel, whose payload is the ID.
type Kind string

const (
	KeyChange    Kind = "switchboard_keys"     // ID: the API key's id (the channel older replicas listen on)
	IntentChange Kind = "switchboard_intents"  // ID: the intent's @handle (never changes)
	TierChange   Kind = "switchboard_accounts" // ID: the account's id
)

var kinds = []string{string(KeyChange), string(IntentChange), string(TierChange)}

// Change is a committed change. The zero Change means anything may have changed: the watch
// was (re)established and notifications may have been missed. An empty ID means every row
// of its Kind.
type Change struct {
	Kind Kind
	ID   string
}

// AllKeys is the key id WatchKeys reports when anything may have changed.
const AllKeys = ""

// Hub fans changes out to the watchers of one store and runs its listener while there are
// watchers (PostgreSQL).
type Hub struct {
	db       *bun.DB
	postgres bool

	life  sync.Mutex // serializes starting and stopping the listener
	users int
	stop  func() // ends the listener and waits for it

	mu   sync.Mutex // watchers and liveness; callbacks run under it, in order
	subs map[*watcher]struct{}
	live bool
}

// New returns the hub of the store on db.
func New(db *bun.DB, postgres bool) *Hub { return &Hub{db: db, postgres: postgres} }

type watcher struct {
	fn   func(Change)
	live func(bool)
}

// Changed delivers committed changes to every watcher of this process.
func (w *Hub) Changed(cs ...Change) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for s := range w.subs {
		for _, c := range cs {
			s.fn(c)
		}
	}
}

// setLive records whether changes are delivered; on either edge every watcher forgets all.
func (w *Hub) setLive(live bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.live == live {
		return
	}
	w.live = live
	for s := range w.subs {
		if live {
			s.fn(Change{})
			s.live(true)
		} else {
			s.live(false)
			s.fn(Change{})
		}
	}
}

// Announce tells, inside the writing transaction db, that rows of kind changed: PostgreSQL
// delivers the notification on commit. The caller fans the changes out in this process after
// commit (Changed).
func (w *Hub) Announce(ctx context.Context, db bun.IDB, kind Kind, ids ...string) error {
	if !w.postgres || len(ids) == 0 {
		return nil
	}
	_, err := db.ExecContext(ctx, "SELECT pg_notify(?, id) FROM unnest(ARRAY[?]::text[]) AS id", string(kind), bun.List(ids))
	return err
}

// Watch calls fn with every change a process sharing this database commits to a cached row,
// and with the zero Change when notifications may have been missed, until ctx ends. live
// reports whether changes are being delivered: a cache may serve rows only while it is true.
// On SQLite, which one process serves, changes are this process's own and always live. fn
// and live run one at a time and must be quick; they must not write to the store.
func (w *Hub) Watch(ctx context.Context, fn func(Change), live func(bool)) {
	me := &watcher{fn: fn, live: live}
	w.life.Lock()
	w.mu.Lock()
	if w.subs == nil {
		w.subs = map[*watcher]struct{}{}
	}
	w.subs[me] = struct{}{}
	if !w.postgres || w.live {
		live(true)
	}
	w.mu.Unlock()
	if w.users++; w.users == 1 && w.postgres {
		lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		done := make(chan struct{})
		go func() { defer close(done); w.listen(lctx) }()
		w.stop = func() { cancel(); <-done }
	}
	w.life.Unlock()

	<-ctx.Done()

	w.life.Lock()
	defer w.life.Unlock()
	if w.users--; w.users == 0 && w.stop != nil {
		w.stop() // reports not live to every watcher, this one included
		w.stop = nil
	}
	w.mu.Lock()
	delete(w.subs, me)
	w.mu.Unlock()
	live(false)
}

// WatchKeys is Watch for API keys alone: fn gets the id of a changed key, AllKeys when any
// may have changed.
func (w *Hub) WatchKeys(ctx context.Context, fn func(keyID string), live func(bool)) {
	w.Watch(ctx, func(c Change) {
		if c.Kind == KeyChange || c.Kind == "" {
			fn(c.ID)
		}
	}, live)
}

// listen holds the process's LISTEN connection on every channel until ctx ends, reconnecting
// when it breaks.
func (w *Hub) listen(ctx context.Context) {
	defer w.setLive(false)
	ln := pgdriver.NewListener(w.db)
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
			if err := ln.Listen(ctx, kinds...); err != nil {
				sleep(ctx, time.Second)
				continue
			}
			// Listening again: anything sent while we were not is lost, so forget everything.
			up = true
			w.setLive(true)
		}
		channel, payload, err := ln.ReceiveTimeout(ctx, 5*time.Second)
		var ne net.Error
		switch {
		case err == nil:
			w.Changed(Change{Kind: Kind(channel), ID: payload})
		case errors.As(err, &ne) && ne.Timeout():
			// Quiet: the connection is fine.
		default:
			up = false
			w.setLive(false)
			sleep(ctx, 200*time.Millisecond)
		}
	}
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

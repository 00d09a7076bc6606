package billing_test

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/commit"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/service"
	"github.com/switchboard-hq/switchboard/tools/webhooks"
)

// A durable call's start and hold commit before dispatch, and its outcome before Conclude
// returns, even on a replica whose batch writer and leases would take other calls (here the
// batch writer does not run: nothing of the call waits for it).
func TestDurableRecorderCommitsBeforeTheAnswer(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		c := &clock{}
		c.ns.Store(time.Now().UnixNano())
		r := newRecordings(t, st, c, false)
		p := account(t, st, "caller")
		if err := r.alone.Grant(ctx, "caller", 1_000_000, "grant"); err != nil {
			t.Fatal(err)
		}
		tk := open(t, r.lease, p, "write", true)
		if s, rs := stateOf(t, st, p, "write"), reservationState(t, st, "write"); s != store.InvDispatching || rs != store.ReservationOpen {
			t.Fatalf("after Open: %q, reservation %q, want both committed", s, rs)
		}
		if err := tk.Conclude(ctx, ending(store.InvSucceeded, false)); err != nil {
			t.Fatal(err)
		}
		if s, rs := stateOf(t, st, p, "write"), reservationState(t, st, "write"); s != store.InvSucceeded || rs != store.ReservationSettled {
			t.Fatalf("once concluded: %q, reservation %q, want its outcome committed", s, rs)
		}
		if ids, err := r.journal.IDs(); err != nil || len(ids) != 0 {
			t.Fatalf("journal %v %v: an outcome the database took is not kept", ids, err)
		}
		toldOnce(t, st, p, "write", webhooks.CallSucceeded)
		ledgerOK(t, st)
	})
}

// While the database refuses it (SQLite held locked by another writer), a durable call's
// outcome goes to the journal, and the caller is told it is kept there; once the database is
// back, Current records it, exactly once, and the journal lets it go.
func TestDurableRecorderJournalsWhileTheDatabaseRefuses(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "locked.db")
	st := storetest.OpenURL(t, path+"?_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)&_pragma=busy_timeout(200)&_txlock=immediate")
	j, err := commit.OpenJournal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := &clock{}
	c.ns.Store(time.Now().UnixNano())
	svc := billing.NewService(billing.DefaultConfig(), service.Deps{Store: st, Now: c.now, Log: slog.New(slog.NewTextHandler(io.Discard, nil))},
		billing.Recording{Journal: j})
	p := account(t, st, "caller")
	if err := svc.Grant(ctx, "caller", 1_000_000, "grant"); err != nil {
		t.Fatal(err)
	}
	tk := open(t, svc, p, "write", true)

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
	err = tk.Conclude(ctx, ending(store.InvSucceeded, false))
	if !store.IsUnavailable(err) || !strings.Contains(tk.Kept(err), "journal") {
		t.Fatalf("concluded with the database locked: %v (kept: %q), want UNAVAILABLE, kept in the journal", err, tk.Kept(err))
	}
	if ids, err := j.IDs(); err != nil || len(ids) != 1 || ids[0] != "write" {
		t.Fatalf("journal %v %v, want the call's outcome", ids, err)
	}
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	conn.Close()

	if err := svc.Current(ctx, p.AccountID, "write"); err != nil {
		t.Fatal(err)
	}
	if s, rs := stateOf(t, st, p, "write"), reservationState(t, st, "write"); s != store.InvSucceeded || rs != store.ReservationSettled {
		t.Fatalf("after Current: %q, reservation %q, want the journaled outcome recorded", s, rs)
	}
	if ids, err := j.IDs(); err != nil || len(ids) != 0 {
		t.Fatalf("journal after its outcome landed: %v %v", ids, err)
	}
	if n, err := svc.ReplayJournal(ctx); err != nil || n != 0 {
		t.Fatalf("replayed %d again (%v)", n, err)
	}
	toldOnce(t, st, p, "write", webhooks.CallSucceeded)
	ledgerOK(t, st)
}

package billing_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/invocations"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/webhooks"
)

// On a lease, nothing of a call is written before its answer: its whole record is then one
// write, queued to the batch writer, and Conclude returns only once it has committed. A
// charged call's row names its lease's ledger transaction (posted when the lease is
// settled); a refunded one names none. A second conclusion writes nothing.
func TestLeaseRecorderWritesTheWholeCallOnceAnswered(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		c := &clock{}
		c.ns.Store(time.Now().UnixNano())
		r := newRecordings(t, st, c, false) // the batch writer waits until r.run
		p := account(t, st, "caller")
		if err := r.alone.Grant(ctx, "caller", 1_000_000, "grant"); err != nil {
			t.Fatal(err)
		}
		ok, failed := open(t, r.lease, p, "ok", false), open(t, r.lease, p, "failed", false)
		for _, id := range []string{"ok", "failed"} {
			if s, n := stateOf(t, st, p, id), reservationRows(t, st, id); s != "" || n != 0 {
				t.Fatalf("%s after Open: state %q, %d reservation rows, want nothing written", id, s, n)
			}
		}
		done := make(chan error, 2)
		go func() { done <- ok.Conclude(ctx, ending(store.InvSucceeded, false)) }()
		go func() { done <- failed.Conclude(ctx, ending(store.InvFailed, false)) }()
		for !r.b.Pending(p.AccountID) {
			time.Sleep(time.Millisecond)
		}
		select {
		case err := <-done:
			t.Fatalf("answered (%v) before the call's record committed", err)
		default:
		}
		r.run(t)
		for range 2 {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		for id, state := range map[string]string{"ok": store.InvSucceeded, "failed": store.InvFailed} {
			inv, err := invocations.New(st).Get(ctx, p.AccountID, id)
			if err != nil || inv.State != state {
				t.Fatalf("%s once concluded: %+v %v", id, inv, err)
			}
			if charged := inv.LedgerTxn != nil && *inv.LedgerTxn != ""; charged != (state == store.InvSucceeded) {
				t.Fatalf("%s names ledger transaction %v", id, inv.LedgerTxn)
			}
			if n := reservationRows(t, st, id); n != 0 {
				t.Fatalf("%s has %d reservation rows of its own", id, n)
			}
		}
		if err := ok.Conclude(ctx, ending(store.InvFailed, false)); !errors.Is(err, billing.ErrAlreadyFinished) {
			t.Fatalf("concluded twice: %v", err)
		}
		if !strings.Contains(ok.Kept(nil), "never, if this replica stops first") {
			t.Fatalf("an outcome not recorded is kept as %q", ok.Kept(nil))
		}
		if err := r.lease.Drain(ctx); err != nil { // the lease settled: what its call charged is posted
			t.Fatal(err)
		}
		toldOnce(t, st, p, "ok", webhooks.CallSucceeded)
		toldOnce(t, st, p, "failed", webhooks.CallFailed)
		ledgerOK(t, st)
	})
}

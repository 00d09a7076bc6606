package billing_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools/webhooks"
)

// After the answer, a call's start commits before dispatch and its outcome is queued to the
// batch writer: Conclude returns before it lands, and Current lands it before a read. Near
// its hold's deadline (within 5 s) an outcome commits alone before Conclude returns, so that
// no sweeper refunds the hold under the settlement.
func TestAfterAnswerRecorderQueuesTheOutcome(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		c := &clock{}
		c.ns.Store(time.Now().UnixNano())
		r := newRecordings(t, st, c, false) // the batch writer waits: what is queued stays queued
		p := account(t, st, "caller")
		if err := r.alone.Grant(ctx, "caller", 1_000_000, "grant"); err != nil {
			t.Fatal(err)
		}
		queued := open(t, r.batch, p, "queued", false)
		late := open(t, r.batch, p, "late", false) // held for 10 s + the 30 s sweep margin
		for _, id := range []string{"queued", "late"} {
			if s := stateOf(t, st, p, id); s != store.InvDispatching {
				t.Fatalf("%s after Open: %q, want its start committed", id, s)
			}
		}
		if err := queued.Conclude(ctx, ending(store.InvSucceeded, false)); err != nil {
			t.Fatal(err)
		}
		if s := stateOf(t, st, p, "queued"); s != store.InvDispatching || !r.b.Pending(p.AccountID) {
			t.Fatalf("queued once concluded: %q (pending %v), want its outcome waiting for the batch writer", s, r.b.Pending(p.AccountID))
		}
		c.advance(36 * time.Second)
		if err := late.Conclude(ctx, ending(store.InvFailed, false)); err != nil {
			t.Fatal(err)
		}
		if s := stateOf(t, st, p, "late"); s != store.InvFailed {
			t.Fatalf("late, 4 s before its hold's deadline: %q, want its outcome committed before the answer", s)
		}
		if !strings.Contains(queued.Kept(nil), "sweeper") {
			t.Fatalf("an outcome not recorded is kept as %q", queued.Kept(nil))
		}
		r.run(t)
		if err := r.batch.Current(ctx, p.AccountID, "queued"); err != nil {
			t.Fatal(err)
		}
		if s := stateOf(t, st, p, "queued"); s != store.InvSucceeded {
			t.Fatalf("queued after Current: %q", s)
		}
		toldOnce(t, st, p, "queued", webhooks.CallSucceeded)
		toldOnce(t, st, p, "late", webhooks.CallFailed)
		ledgerOK(t, st)
	})
}

package billing_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/invocations"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/billing"
)

// stateOf is requestID's recorded state, "" while it has no row.
func stateOf(t *testing.T, st *store.Store, p *tools.Principal, requestID string) string {
	t.Helper()
	inv, err := invocations.New(st).Get(context.Background(), p.AccountID, requestID)
	if errors.Is(err, store.ErrNotFound) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return inv.State
}

// reservationRows counts requestID's own reservation rows.
func reservationRows(t *testing.T, st *store.Store, requestID string) int {
	t.Helper()
	n, err := st.DB().NewSelect().Model((*store.Reservation)(nil)).Where("request_id = ?", requestID).Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}

// newCall is a new call's record, before dispatch.
func newCall(p *tools.Principal, id string) *store.Invocation {
	return &store.Invocation{RequestID: id, AccountID: p.AccountID, KeyID: p.KeyID, IntentID: "intent-1", Handle: "@weather",
		Category: "QUERY", Args: "{}", CreatedAt: time.Now().UTC(), Price: callQuote.Price()}
}

// Open chooses the call's recorder once, from its durability and the service's recording, and
// each call is then recorded that way alone: seen here on a replica with leases, a batch
// writer that does not run yet (what is queued to it waits) and a journal. A new call that
// is not durable, short enough and judged by no policy where it is held goes on its key's
// lease (nothing written before its answer, the whole record after it); one that may run past
// its lease, one dispatched from a stored quote, and one whose account may be under a policy
// have their start committed before dispatch and their outcome queued after the answer; a
// durable call has both committed before its answer; the sweeper's conclusion of a call that
// was not durable commits alone.
func TestOpenChoosesOneRecorderPerCall(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		c := &clock{}
		c.ns.Store(time.Now().UnixNano())
		r := newRecordings(t, st, c, false)
		p := account(t, st, "caller")
		if err := r.alone.Grant(ctx, "caller", 1_000_000, "grant"); err != nil {
			t.Fatal(err)
		}
		// An account whose policies were never read here may be under one.
		other := account(t, st, "other")
		if err := r.alone.Grant(ctx, "other", 1_000_000, "grant"); err != nil {
			t.Fatal(err)
		}
		quoted := newCall(p, "from-quote")
		quoted.State = store.InvAwaitingConfirmation
		if err := r.lease.For(p, billing.Spend{}).Ask(ctx, quoted, "quoted; waiting for the caller's confirmation"); err != nil {
			t.Fatal(err)
		}
		if s, n := stateOf(t, st, p, "from-quote"), reservationRows(t, st, "from-quote"); s != store.InvAwaitingConfirmation || n != 0 {
			t.Fatalf("a quote asked: %q, %d reservation rows, want its row alone", s, n)
		}
		for _, tc := range []struct {
			id, regime string
			p          *tools.Principal
			call       billing.Call
			admitted   bool // its account's policies read first (none): not judged again where held
		}{
			{"long", "after the answer", p, billing.Call{Record: newCall(p, "long"), Runs: 61 * time.Second}, true},
			{"from-quote", "after the answer", p, billing.Call{Record: quoted, From: store.InvAwaitingConfirmation, Runs: 10 * time.Second}, true},
			{"policed", "after the answer", other, billing.Call{Record: newCall(other, "policed"), Runs: 10 * time.Second}, false},
			{"write", "durable", p, billing.Call{Record: newCall(p, "write"), Runs: 10 * time.Second, Durability: billing.DurabilityOf(true, false)}, true},
			{"paid", "durable", p, billing.Call{Record: newCall(p, "paid"), Runs: 10 * time.Second, Durability: billing.DurabilityOf(false, true)}, true},
			// Last: the batch writer runs from here on.
			{"lease", "on a lease", p, billing.Call{Record: newCall(p, "lease"), Runs: 10 * time.Second}, true},
		} {
			p := tc.p
			tk := r.lease.For(p, billing.Spend{Handle: "@weather", IntentID: "intent-1", Category: "QUERY"})
			if tc.admitted {
				if err := tk.Admit(ctx, callQuote.WorstMicro()); err != nil {
					t.Fatal(err)
				}
			}
			tc.call.Quote = callQuote
			if err := tk.Open(ctx, tc.call); err != nil {
				t.Fatalf("%s: %v", tc.id, err)
			}
			started := stateOf(t, st, p, tc.id)
			done := make(chan error, 1)
			go func() { done <- tk.Conclude(ctx, ending(store.InvSucceeded, false)) }()
			var got string
			switch {
			case tc.regime == "on a lease" && started == "" && reservationRows(t, st, tc.id) == 0:
				for !r.b.Pending(p.AccountID) { // its whole record, queued: the answer waits for it
					time.Sleep(time.Millisecond)
				}
				select {
				case err := <-done:
					t.Fatalf("%s: answered (%v) before its record was written", tc.id, err)
				default:
				}
				got = "on a lease"
			case started != store.InvDispatching:
				t.Fatalf("%s: state %q after Open, want its start committed", tc.id, started)
			default:
				if err := <-done; err != nil {
					t.Fatalf("%s: %v", tc.id, err)
				}
				switch stateOf(t, st, p, tc.id) {
				case store.InvDispatching:
					got = "after the answer"
				case store.InvSucceeded:
					got = "durable"
				}
			}
			if got != tc.regime {
				t.Fatalf("%s was recorded %q, want %q", tc.id, got, tc.regime)
			}
			if got == "on a lease" {
				r.run(t) // what is queued lands; later calls queue to a running writer
				if err := <-done; err != nil {
					t.Fatalf("%s: %v", tc.id, err)
				}
			}
		}

		// The sweeper's conclusion of a call left dispatching: alone, before it returns.
		open(t, r.alone, p, "swept", false)
		inv, err := invocations.New(st).Get(ctx, p.AccountID, "swept")
		if err != nil {
			t.Fatal(err)
		}
		if err := r.lease.Reopen(inv, billing.Durability{}).Conclude(ctx, ending(store.InvOutcomeUnknown, false)); err != nil {
			t.Fatal(err)
		}
		if s := stateOf(t, st, p, "swept"); s != store.InvOutcomeUnknown {
			t.Fatalf("the sweeper's conclusion: %q, want it committed alone", s)
		}
		if err := r.lease.Drain(ctx); err != nil {
			t.Fatal(err)
		}
		for id, p := range map[string]*tools.Principal{"lease": p, "long": p, "from-quote": p, "policed": other, "write": p, "paid": p} {
			if s := stateOf(t, st, p, id); s != store.InvSucceeded {
				t.Fatalf("%s: %q once drained", id, s)
			}
		}
		ledgerOK(t, st)
	})
}

// reservationState is the state of requestID's own reservation row.
func reservationState(t *testing.T, st *store.Store, requestID string) string {
	t.Helper()
	var r store.Reservation
	if err := st.DB().NewSelect().Model(&r).Where("request_id = ?", requestID).Scan(context.Background()); err != nil {
		t.Fatalf("%s's reservation: %v", requestID, err)
	}
	return r.State
}

package billing_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/webhooks"
)

// Alone, a call's start commits with its hold before dispatch, and its outcome in a
// transaction of its own before Conclude returns: settled or refunded, once; a second
// conclusion writes nothing, and a settlement whose hold a sweeper refunded first is refused
// with nothing written (the caller relays the answer and charges nothing).
func TestAloneRecorderCommitsEachStepInItsOwnTransaction(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		c := &clock{}
		c.ns.Store(time.Now().UnixNano())
		r := newRecordings(t, st, c, false)
		p := account(t, st, "caller")
		if err := r.alone.Grant(ctx, "caller", 1_000_000, "grant"); err != nil {
			t.Fatal(err)
		}
		for id, state := range map[string]string{"ok": store.InvSucceeded, "failed": store.InvFailed} {
			tk := open(t, r.alone, p, id, false)
			if s, rs := stateOf(t, st, p, id), reservationState(t, st, id); s != store.InvDispatching || rs != store.ReservationOpen {
				t.Fatalf("%s after Open: %q, reservation %q, want both committed", id, s, rs)
			}
			if err := tk.Conclude(ctx, ending(state, false)); err != nil {
				t.Fatal(err)
			}
			want := map[string]string{store.InvSucceeded: store.ReservationSettled, store.InvFailed: store.ReservationRefunded}[state]
			if s, rs := stateOf(t, st, p, id), reservationState(t, st, id); s != state || rs != want {
				t.Fatalf("%s once concluded: %q, reservation %q, want %q and %q", id, s, rs, state, want)
			}
			if err := tk.Conclude(ctx, ending(store.InvOutcomeUnknown, false)); !errors.Is(err, billing.ErrAlreadyFinished) {
				t.Fatalf("%s concluded twice: %v", id, err)
			}
			if !strings.Contains(tk.Kept(nil), "sweeper") {
				t.Fatalf("%s: an outcome not recorded is kept as %q", id, tk.Kept(nil))
			}
		}
		toldOnce(t, st, p, "ok", webhooks.CallSucceeded)
		toldOnce(t, st, p, "failed", webhooks.CallFailed)

		tk := open(t, r.alone, p, "refunded-first", false)
		if ok, err := r.alone.Refund(ctx, "refunded-first", "swept: never settled"); err != nil || !ok {
			t.Fatalf("refund: %v %v", ok, err)
		}
		if err := tk.Conclude(ctx, ending(store.InvSucceeded, false)); !errors.Is(err, billing.ErrReservationClosed) {
			t.Fatalf("a settlement of a refunded hold: %v, want ErrReservationClosed", err)
		}
		if s := stateOf(t, st, p, "refunded-first"); s != store.InvDispatching {
			t.Fatalf("the refused settlement wrote the outcome: %q", s)
		}
		ledgerOK(t, st)
	})
}

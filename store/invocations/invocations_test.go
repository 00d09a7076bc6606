package invocations_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/invocations"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

// call is an invocation by account's key (k-<account>, storetest.Account's) of intent i1, created at
// `at`, in state.
func call(id, account string, at time.Time, state string) *store.Invocation {
	inv := &store.Invocation{RequestID: id, AccountID: account, KeyID: "k-" + account, IntentID: "i1", Handle: "@h", Category: "QUERY",
		Args: "{}", CreatedAt: at}
	inv.State = state
	return inv
}

// An invocation is found by its account and request id (not by another account), by its id
// alone, and its history read from its event rows or, recorded whole, from its trail; on both
// databases.
func TestInvocationsGetAndEvents(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		storetest.Account(t, st, "a")
		storetest.Account(t, st, "b")
		rows := invocations.New(st)
		now := time.Now().UTC().Truncate(time.Second)
		if err := st.CreateInvocation(ctx, call("r1", "a", now, store.InvAwaitingConfirmation), "quoted"); err != nil {
			t.Fatal(err)
		}
		if got, err := rows.Get(ctx, "a", "r1"); err != nil || got.RequestID != "r1" || got.State != store.InvAwaitingConfirmation {
			t.Fatalf("a's r1: %+v %v", got, err)
		}
		if _, err := rows.Get(ctx, "b", "r1"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("r1 asked by another account: %v", err)
		}
		if got, err := rows.ByID(ctx, "r1"); err != nil || got.AccountID != "a" {
			t.Fatalf("r1 by id: %+v %v", got, err)
		}
		if _, err := rows.ByID(ctx, "r2"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("an unknown invocation: %v", err)
		}
		if evs, err := rows.Events(ctx, "r1"); err != nil || len(evs) != 1 || evs[0].State != store.InvAwaitingConfirmation || evs[0].Detail != "quoted" {
			t.Fatalf("r1's events: %+v %v", evs, err)
		}

		whole := call("w1", "a", now, store.InvSucceeded)
		trail := store.Trail(store.Event{State: store.InvDispatching, Detail: "sent", At: now}, store.Event{State: store.InvSucceeded, Detail: "answered", At: now})
		whole.Trail = &trail
		if _, err := st.DB().NewInsert().Model(whole).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		evs, err := rows.Events(ctx, "w1")
		if err != nil || len(evs) != 2 || evs[0].Detail != "sent" || evs[1].State != store.InvSucceeded || evs[1].Seq != 2 {
			t.Fatalf("a trail's events: %+v %v", evs, err)
		}
		if evs, err := rows.Events(ctx, "none"); err != nil || len(evs) != 0 {
			t.Fatalf("an unknown invocation's events: %+v %v", evs, err)
		}
	})
}

// A dispatching call is stuck once its reservation's deadline passed or its reservation was
// closed, never before; a movement still dispatching is listed by its kind and dispatch time,
// oldest first; on both databases.
func TestInvocationsStuckAndDispatching(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		storetest.Account(t, st, "a")
		rows := invocations.New(st)
		now := time.Now().UTC().Truncate(time.Second)
		dispatched := func(id, kind string, at time.Time, expires time.Time, reservation string) {
			t.Helper()
			inv := call(id, "a", at, store.InvDispatching)
			inv.Kind, inv.DispatchedAt = kind, &at
			if _, err := st.DB().NewInsert().Model(inv).Exec(ctx); err != nil {
				t.Fatal(err)
			}
			if reservation == "" {
				return
			}
			r := &store.Reservation{RequestID: id, AccountID: "a", KeyID: "k-a", ReservedMicro: 1, WorstMicro: 1, State: reservation, ExpiresAt: expires, CreatedAt: at}
			if _, err := st.DB().NewInsert().Model(r).Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}
		dispatched("late", store.KindCall, now.Add(-2*time.Minute), now.Add(-time.Minute), store.ReservationOpen)
		dispatched("closed", store.KindCall, now.Add(-3*time.Minute), now.Add(time.Minute), store.ReservationSettled)
		dispatched("running", store.KindCall, now.Add(-time.Minute), now.Add(time.Minute), store.ReservationOpen)
		dispatched("unheld", store.KindCall, now.Add(-time.Minute), time.Time{}, "")
		stuck, err := rows.Stuck(ctx, now, 10)
		if err != nil || ids(stuck) != "[closed late]" {
			t.Fatalf("stuck: %s %v, want [closed late]", ids(stuck), err)
		}
		if stuck, err := rows.Stuck(ctx, now, 1); err != nil || ids(stuck) != "[closed]" {
			t.Fatalf("stuck, one: %s %v", ids(stuck), err)
		}

		dispatched("send-new", store.KindSend, now, time.Time{}, "")
		dispatched("send-old", store.KindSend, now.Add(-time.Hour), time.Time{}, "")
		dispatched("send-older", store.KindSend, now.Add(-2*time.Hour), time.Time{}, "")
		dispatched("fetch-old", store.KindX402, now.Add(-time.Hour), time.Time{}, "")
		if got, err := rows.Dispatching(ctx, store.KindSend, now.Add(-time.Minute), 10); err != nil || ids(got) != "[send-older send-old]" {
			t.Fatalf("sends dispatched before a minute ago: %s %v", ids(got), err)
		}
		if got, err := rows.Dispatching(ctx, store.KindX402, now, 10); err != nil || ids(got) != "[fetch-old]" {
			t.Fatalf("x402 movements: %s %v", ids(got), err)
		}
	})
}

// An intent's results that did not match its output schema are counted, and an account's
// spend since a time sums its finished, not declined, calls' reserve kept, fees and gas; on
// both databases.
func TestInvocationsCounts(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		storetest.Account(t, st, "a")
		storetest.Account(t, st, "b")
		rows := invocations.New(st)
		now := time.Now().UTC().Truncate(time.Second)
		valid, invalid := true, false
		finished := func(id, account string, at time.Time, state string, schemaValid *bool, reserve, refunded, partner, platform, gas int64, done bool) {
			t.Helper()
			inv := call(id, account, at, state)
			inv.ReserveMicro, inv.RefundedMicro, inv.PartnerFeeMicro, inv.PlatformFeeMicro, inv.GasMicro = reserve, refunded, partner, platform, gas
			inv.OutputSchemaValid = schemaValid
			if done {
				inv.FinishedAt = &at
			}
			if _, err := st.DB().NewInsert().Model(inv).Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}
		finished("ok", "a", now, store.InvSucceeded, &valid, 100, 40, 10, 5, 1, true)     // 76
		finished("bad", "a", now, store.InvSucceeded, &invalid, 100, 100, 20, 0, 0, true) // 20
		finished("old", "a", now.Add(-48*time.Hour), store.InvSucceeded, nil, 100, 0, 0, 0, 0, true)
		finished("open", "a", now, store.InvDispatching, nil, 100, 0, 0, 0, 0, false)
		finished("declined", "a", now, store.InvDeclined, nil, 100, 0, 0, 0, 0, true)
		finished("other", "b", now, store.InvSucceeded, &invalid, 100, 0, 0, 0, 0, true)
		if n, err := rows.OutputSchemaMismatches(ctx, "i1"); err != nil || n != 2 {
			t.Fatalf("mismatches of i1: %d %v, want 2", n, err)
		}
		if n, err := rows.OutputSchemaMismatches(ctx, "i2"); err != nil || n != 0 {
			t.Fatalf("mismatches of i2: %d %v", n, err)
		}
		if sum, err := rows.SpentSince(ctx, "a", now.Add(-time.Hour)); err != nil || sum != 96 {
			t.Fatalf("a's spend since an hour ago: %d %v, want 96", sum, err)
		}
		if sum, err := rows.SpentSince(ctx, "a", time.Time{}); err != nil || sum != 196 {
			t.Fatalf("a's spend ever: %d %v, want 196", sum, err)
		}
	})
}

func ids(invs []*store.Invocation) string {
	out := make([]string, len(invs))
	for i, inv := range invs {
		out[i] = inv.RequestID
	}
	return fmt.Sprint(out)
}

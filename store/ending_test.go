package store_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/invocations"
	"github.com/switchboard-hq/switchboard/store/ledger"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

// A call's conclusion is claimed, then written in one call, in the order every conclusion
// has written its rows: the record's claim, the hold's lock, its close, the balance row, the
// key's row, the ledger, the attempts, the outcome, the webhook event, the last event. A
// second claim finds the call concluded and changes nothing.
func TestEndingClaimsThenWritesInOrder(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Millisecond)
		billingAccount(t, s, "e1")
		inv := &store.Invocation{RequestID: "call-1", AccountID: "e1", KeyID: "key-e1", IntentID: "i1", Handle: "@h",
			Category: "read", Args: "{}", CreatedAt: now, DispatchedAt: &now}
		inv.State = store.InvDispatching
		r := &store.Reservation{RequestID: "call-1", AccountID: "e1", KeyID: "key-e1", ReservedMicro: 10, WorstMicro: 100,
			ExpiresAt: now.Add(time.Minute), CreatedAt: now}
		err := s.InTx(ctx, func(ctx context.Context, q *store.Q) error {
			if _, err := q.LockCredit(ctx, "e1", now); err != nil {
				return err
			}
			if _, err := q.LockKeySpends(ctx, []string{"key-e1"}); err != nil {
				return err
			}
			if err := q.InsertInvocation(ctx, inv); err != nil {
				return err
			}
			return q.OpenReservation(ctx, r, store.Move{AccountID: "e1", Credit: store.CreditDelta{Available: -10, Reserved: 10, Held: 90},
				Keys: []string{"key-e1"}, Held: 100}, now)
		})
		if err != nil {
			t.Fatal(err)
		}

		trips := &roundTrips{}
		//lint:ignore SA1019 the hook must see this store's own DB, which WithQueryHook would clone
		s.DB().AddQueryHook(trips)
		done := inv.Outcome
		done.State, done.FinishedAt, done.PartnerFeeMicro = store.InvSucceeded, &now, 40
		ended := *inv
		ended.Outcome = done
		rows, err := ledger.Rows("call-1", now, ledger.Txn{Memo: "settlement", Legs: []ledger.Posting{
			{Book: ledger.UserAvailable("e1"), Micro: -40, Kind: "partner_fee"}, {Book: "partner:p", Micro: 40, Kind: "partner_fee"}}})
		if err != nil {
			t.Fatal(err)
		}
		ev := &store.WebhookEvent{ID: "msg_e1", AccountID: "e1", Type: "call.succeeded", Body: "{}", CreatedAt: now}
		err = s.InTx(ctx, func(ctx context.Context, q *store.Q) error {
			locked, claimed, err := q.ClaimEnding(ctx, "call-1", store.InvSucceeded, now, true)
			if err != nil || !claimed || locked.State != store.ReservationOpen || locked.WorstMicro != 100 {
				t.Fatalf("claim: %+v %v %v", locked, claimed, err)
			}
			return q.WriteEnding(ctx, store.Ending{Invocation: &ended, Detail: "succeeded", Events: []*store.WebhookEvent{ev},
				Attempts: []store.Attempt{{Detail: "try 1", At: now}},
				Hold: &store.Closing{State: store.ReservationSettled, Move: store.Move{AccountID: "e1",
					Credit: store.CreditDelta{Available: -40, Reserved: -10, Held: -90}, Keys: []string{"key-e1"}, Spent: 50, Held: -100, Ledger: &rows}}})
		})
		if err != nil {
			t.Fatal(err)
		}
		var order []string
		for _, text := range trips.all() {
			for _, st := range strings.Split(text, ";\n") {
				if w := statementOf(st); w != "" {
					order = append(order, w)
				}
			}
		}
		want := []string{"UPDATE invocations", "SELECT reservations", "UPDATE reservations", "UPDATE credit_accounts",
			"UPDATE key_spend", "INSERT ledger_entries", "INSERT invocation_events", "UPDATE invocations",
			"INSERT webhook_events", "INSERT invocation_events"}
		if strings.Join(order, ", ") != strings.Join(want, ", ") {
			t.Fatalf("statements:\n got %v\nwant %v", order, want)
		}

		ca, err := s.Credit(ctx, "e1")
		if err != nil || ca.AvailableMicro != -50 || ca.ReservedMicro != 0 || ca.HeldMicro != 0 {
			t.Fatalf("balance: %+v %v", ca, err)
		}
		if got, err := invocations.New(s).ByID(ctx, "call-1"); err != nil || got.State != store.InvSucceeded || got.PartnerFeeMicro != 40 {
			t.Fatalf("record: %+v %v", got, err)
		}
		events, err := invocations.New(s).Events(ctx, "call-1")
		if err != nil || len(events) != 2 || events[0].Detail != "try 1" || events[1].Detail != "succeeded" {
			t.Fatalf("events: %+v %v", events, err)
		}
		err = s.InTx(ctx, func(ctx context.Context, q *store.Q) error {
			locked, claimed, err := q.ClaimEnding(ctx, "call-1", store.InvFailed, now, true)
			if err != nil || claimed || locked != nil {
				t.Fatalf("second claim: %+v %v %v", locked, claimed, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// statementOf names a statement by its verb and table ("" for what is not one of a call's
// rows: BEGIN, COMMIT, savepoints).
func statementOf(sql string) string {
	f := strings.Fields(strings.ReplaceAll(sql, `"`, ""))
	switch {
	case len(f) >= 3 && f[0] == "INSERT" && f[1] == "INTO":
		return "INSERT " + f[2]
	case len(f) >= 2 && f[0] == "UPDATE":
		return "UPDATE " + f[1]
	case len(f) >= 1 && f[0] == "SELECT":
		for i, w := range f {
			if w == "FROM" && i+1 < len(f) {
				return "SELECT " + f[i+1]
			}
		}
	}
	return ""
}

// roundTrips keeps the text of every query the store sends.
type roundTrips struct {
	mu      sync.Mutex
	queries []string
}

func (r *roundTrips) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context { return ctx }
func (r *roundTrips) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queries = append(r.queries, e.Query)
}

func (r *roundTrips) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.queries)
}

package commit_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/commit"
	"github.com/switchboard-hq/switchboard/store/invocations"
	"github.com/switchboard-hq/switchboard/store/ledger"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/uptrace/bun/dialect"
)

// Calls recorded whole in one row each (a read on a budget lease) and merged into one batch
// are one round trip on PostgreSQL, and write no ledger rows of their own (a lease's calls are
// posted when it is settled); a call's history is its row's trail.
func TestABatchOfCallRows(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Millisecond)
		payout := ledger.PartnerPayable("p", "evm:0xabc")
		for _, a := range []string{"b1", "b2"} {
			billingAccount(t, s, a)
			if err := s.InTx(ctx, func(ctx context.Context, q *store.Q) error {
				if _, err := q.LockCredit(ctx, a, now); err != nil {
					return err
				}
				if err := q.AdjustCredit(ctx, a, store.CreditDelta{Available: 10_000}, now); err != nil {
					return err
				}
				return ledger.Post(ctx, q, "", "grant", now, ledger.Posting{Book: "external:grants", Micro: -10_000, Kind: "grant"},
					ledger.Posting{Book: ledger.UserAvailable(a), Micro: 10_000, Kind: "grant"})
			}); err != nil {
				t.Fatal(err)
			}
		}
		// A call's whole record: its charge from available credit, its breakdown posted, its row.
		call := func(account, id string, settled bool) func(context.Context, *store.Q) error {
			return func(ctx context.Context, q *store.Q) error {
				inv := &store.Invocation{RequestID: id, AccountID: account, KeyID: "key-" + account, IntentID: "i", Handle: "@h", Category: "DATA",
					Args: "{}", CreatedAt: now, DispatchedAt: &now, Price: store.Price{ReserveMicro: 100}, Outcome: store.Outcome{State: store.InvFailed, RefundedMicro: 100, FinishedAt: &now}}
				if settled {
					inv.State, inv.RefundedMicro = store.InvSucceeded, 0
					inv.PartnerFeeMicro, inv.PlatformFeeMicro, inv.GasMicro, inv.PayoutBook = 120, 50, 7, payout
				}
				trail := store.Trail(store.Event{State: store.InvDispatching, Detail: "drawn", At: now}, store.Event{State: inv.State, Detail: "done", At: now})
				inv.Trail = &trail
				return q.InsertInvocation(ctx, inv)
			}
		}
		b := commit.NewBatcher(s, 64, slog.New(slog.NewTextHandler(io.Discard, nil)))
		trips := &roundTrips{}
		//lint:ignore SA1019 the hook must see this store's own DB, which WithQueryHook would clone
		s.DB().AddQueryHook(trips)
		failed := make(chan error, 8)
		for _, c := range []struct {
			account, id string
			settled     bool
		}{{"b1", "s1", true}, {"b2", "s2", true}, {"b1", "s3", true}, {"b1", "r1", false}} {
			b.AddWrites(c.account, call(c.account, c.id, c.settled), func(err error) { failed <- err })
		}
		bctx, stop := context.WithCancel(ctx)
		go b.Run(bctx)
		if err := b.Idle(ctx); err != nil {
			t.Fatal(err)
		}
		stop()
		for range 4 {
			if err := <-failed; err != nil {
				t.Fatal(err)
			}
		}
		// On PostgreSQL a batch of calls on leases alone is one round trip, BEGIN to COMMIT
		// (one per lane: SQLite has one, PostgreSQL puts b1 and b2 in one or two).
		if s.Postgres() {
			if q := trips.all(); len(q) == 0 || len(q) > 2 || !strings.HasPrefix(q[0], "BEGIN;\n") || !strings.HasSuffix(q[0], ";\nCOMMIT") {
				t.Fatalf("the batch's round trips: %q", q)
			}
		}
		if err := ledger.Check(ctx, s); err != nil {
			t.Fatalf("ledger-check after a batch of calls: %v", err)
		}
		var evs []store.InvocationEvent
		for _, id := range []string{"s1", "s2", "s3", "r1"} {
			inv, err := invocations.New(s).ByID(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if inv.Kind != store.KindCall {
				t.Fatalf("call %s recorded by the batch writer is of kind %q, want %q", id, inv.Kind, store.KindCall)
			}
			if rows, _ := ledger.Entries(ctx, s, id); len(rows) != 0 {
				t.Fatalf("call %s has %d ledger rows of its own, want none", id, len(rows))
			}
		}
		evs, err := invocations.New(s).Events(ctx, "s2")
		if err != nil || len(evs) != 2 || evs[0].State != store.InvDispatching || evs[1].Detail != "done" || evs[1].Seq != 2 || !evs[1].At.Equal(now) {
			t.Fatalf("history from the row's trail: %+v %v", evs, err)
		}
		if s.DB().Dialect().Name() == dialect.SQLite {
			// The batch writer's prepared rows store values as bun renders them: a row written
			// alone through bun reads back alike, byte for byte.
			alone := &store.Invocation{RequestID: "alone", AccountID: "b1", KeyID: "key-b1", IntentID: "i", Handle: "@h", Category: "DATA",
				Args: "{}", CreatedAt: now, DispatchedAt: &now, Outcome: store.Outcome{State: store.InvSucceeded, FinishedAt: &now}}
			if err := s.InTx(ctx, func(ctx context.Context, q *store.Q) error { return q.InsertInvocation(ctx, alone) }); err != nil {
				t.Fatal(err)
			}
			var raw []string
			if err := s.DB().NewRaw(`SELECT typeof(created_at) || ' ' || created_at || ' ' || typeof(finished_at) || ' ' || COALESCE(output_schema_valid, 'null') || ' ' || typeof(trail)
				FROM invocations WHERE request_id IN ('alone', 's2') ORDER BY request_id`).Scan(ctx, &raw); err != nil {
				t.Fatal(err)
			}
			if len(raw) != 2 || strings.Replace(raw[1], "text null text", "text null null", 1) != raw[0] {
				t.Fatalf("stored by the batch writer and by bun: %q", raw)
			}
		}
	})
}

// roundTrips records the queries a store's DB sends while it is on.
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

package billing_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/commit"
	"github.com/switchboard-hq/switchboard/store/invocations"
	"github.com/switchboard-hq/switchboard/store/ledger"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/service"
)

// clock is a settable clock for leases' deadlines.
type clock struct{ ns atomic.Int64 }

func (c *clock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// replica is what one process holds: its batch writer and its leases.
type replica struct {
	svc   *billing.Service
	batch *commit.Batcher
}

func newReplica(t *testing.T, st *store.Store, c *clock, cfg billing.LeaseConfig) *replica {
	t.Helper()
	r := newStoppedReplica(st, c, cfg)
	r.run(t)
	return r
}

// newStoppedReplica is a replica whose batch writer does not run yet: what is queued waits.
func newStoppedReplica(st *store.Store, c *clock, cfg billing.LeaseConfig) *replica {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	b := commit.NewBatcher(st, 64, log)
	svc := billing.NewService(billing.DefaultConfig(), service.Deps{Store: st, Now: c.now, Log: log}, billing.Recording{Batch: b, Leases: &cfg})
	return &replica{svc: svc, batch: b}
}

func (r *replica) run(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.batch.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// call reserves a call of quote q on the replica's lease and, once recorded, settles it with
// the platform fee it quoted.
func (r *replica) call(ctx context.Context, p *tools.Principal, id string, q billing.Quote) error {
	h, err := r.svc.Hold(ctx, p, billing.Plan{RequestID: id, Quote: q, Runs: 10 * time.Second, MayLease: true}, noRecord)
	if err != nil {
		return err
	}
	c := billing.Conclusion{Settlement: &billing.Settlement{PlatformFeeMicro: q.PlatformFeeMicro}}
	if !h.ConcludeOnLease(ctx, c, h.At(), callRow(p, id, q, c), nil) {
		return errors.New("a hold with an API key was not drawn from a lease")
	}
	return nil
}

// funded is an account with an API key and 1 USD of credit, granted through r.
func funded(t *testing.T, st *store.Store, r *replica, id string) *tools.Principal {
	t.Helper()
	p := account(t, st, id)
	if err := r.svc.Grant(context.Background(), id, 1_000_000, "grant"); err != nil {
		t.Fatal(err)
	}
	return p
}

func leaseRows(t *testing.T, st *store.Store, accountID string) []store.Reservation {
	t.Helper()
	var rows []store.Reservation
	if err := st.DB().NewSelect().Model(&rows).Where("account_id = ? AND request_id LIKE 'lease:%'", accountID).Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	return rows
}

// Calls draw their reservations from one lease, renewed by one transaction every few calls;
// the lease holds their worst cases until it is settled (renewed, returned), when what they
// charged is posted, and what they did not comes back.
func TestCallsReserveFromABudgetLease(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		c := &clock{}
		c.ns.Store(time.Now().UnixNano())
		r := newReplica(t, st, c, billing.LeaseConfig{Calls: 4, TTL: 2 * time.Minute, Renew: 30 * time.Second, Idle: 2 * time.Second})
		p := funded(t, st, r, "l")
		q := billing.Quote{ReserveMicro: 100, MaxPartnerFeeMicro: 150, PlatformFeeMicro: 50} // worst 300
		for i := range 10 {
			if err := r.call(ctx, p, fmt.Sprintf("l%d", i), q); err != nil {
				t.Fatal(err)
			}
		}
		if err := r.batch.Idle(ctx); err != nil {
			t.Fatal(err)
		}
		ledgerOK(t, st)
		// Four calls a lease: three leases of 1200 for ten calls of 300, each settled when the
		// next was taken (the calls' charges posted, the hold released), the last one open
		// with its two calls recorded, naming it, and not posted yet.
		open := 0
		for _, row := range leaseRows(t, st, "l") {
			switch {
			case row.State == store.ReservationOpen && row.WorstMicro == 1200:
				open++
			case row.State == store.ReservationSettled && row.WorstMicro == 1200:
			default:
				t.Fatalf("lease row %+v", row)
			}
		}
		if n := len(leaseRows(t, st, "l")); n != 3 || open != 1 {
			t.Fatalf("%d lease rows, %d open; want 3 and 1", n, open)
		}
		ca, _ := st.Credit(ctx, "l")
		ks, _ := st.KeySpendOf(ctx, p.KeyID)
		if ca.AvailableMicro != 1_000_000-8*150 || ca.ReservedMicro != 0 || ca.HeldMicro != 1200 || ks.SpentMicro != 8*150 || ks.HeldMicro != 1200 {
			t.Fatalf("after ten calls: %+v %+v, want 1200 spent and the open lease's 1200 held", ca, ks)
		}
		// Idle for less than its idle time: kept; past it: returned whole.
		r.svc.ReturnIdleLeases(ctx)
		c.advance(3 * time.Second)
		r.svc.ReturnIdleLeases(ctx)
		if err := r.batch.Idle(ctx); err != nil {
			t.Fatal(err)
		}
		for _, row := range leaseRows(t, st, "l") {
			if row.State != store.ReservationSettled {
				t.Fatalf("idle lease not settled: %+v", row)
			}
		}
		ca, _ = st.Credit(ctx, "l")
		ks, _ = st.KeySpendOf(ctx, p.KeyID)
		if ca.HeldMicro != 0 || ks.HeldMicro != 0 || ca.AvailableMicro != 1_000_000-10*150 {
			t.Fatalf("after the return: %+v %+v", ca, ks)
		}
		ledgerOK(t, st)
		// The next call opens a new lease.
		if err := r.call(ctx, p, "l10", q); err != nil {
			t.Fatal(err)
		}
		r.svc.ReturnLeases("l")
		if err := r.batch.Idle(ctx); err != nil {
			t.Fatal(err)
		}
		if rows := leaseRows(t, st, "l"); len(rows) != 4 {
			t.Fatalf("lease rows %+v, want the three returned ones and a new one", rows)
		}
		ledgerOK(t, st)
	})
}

// Two replicas with leases on one key and one account: the spend limit and the credit hold in
// total, and a key close to its limit is refused only for what it really lacks.
func TestBudgetLeasesHoldLimitsAcrossReplicas(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		c := &clock{}
		c.ns.Store(time.Now().UnixNano())
		cfg := billing.DefaultLeaseConfig()
		a, b := newReplica(t, st, c, cfg), newReplica(t, st, c, cfg)
		p := account(t, st, "m")
		p.SpendLimitMicro = 1_500
		if err := a.svc.Grant(ctx, "m", 1_000_000, "grant"); err != nil {
			t.Fatal(err)
		}
		q := billing.Quote{ReserveMicro: 100, MaxPartnerFeeMicro: 200} // worst 300, costs 100
		// One replica alone reaches the limit exactly: 1500 / 300 = 5 calls in flight.
		var held []*billing.Hold
		for i := range 6 {
			h, err := a.svc.Hold(ctx, p, billing.Plan{RequestID: fmt.Sprintf("m%d", i), Quote: q, Runs: 10 * time.Second, MayLease: true}, noRecord)
			if err == nil {
				held = append(held, h)
			} else if e, ok := err.(*tools.Error); !ok || e.Code != tools.CodeSpendLimit {
				t.Fatalf("call %d: %v", i, err)
			}
		}
		if len(held) != 5 {
			t.Fatalf("%d calls of worst 300 held under a 1500 limit, want 5", len(held))
		}
		// Returned while the five are in flight (near its limit the key's leases hold a call
		// each): a lease comes back once its calls are recorded.
		a.svc.ReturnLeases("")
		if err := a.batch.Idle(ctx); err != nil {
			t.Fatal(err)
		}
		for _, row := range leaseRows(t, st, "m") {
			if row.State != store.ReservationOpen {
				t.Fatalf("lease %+v was returned while a call drawn on it was in flight", row)
			}
		}
		// Refund them all: the key is back to nothing spent, nothing held.
		for _, h := range held {
			h.ConcludeOnLease(ctx, billing.Conclusion{Reason: "test"}, h.At(), noWrite, nil)
		}
		if err := a.batch.Idle(ctx); err != nil {
			t.Fatal(err)
		}
		ledgerOK(t, st)
		if ks, _ := st.KeySpendOf(ctx, p.KeyID); ks.SpentMicro != 0 || ks.HeldMicro != 0 {
			t.Fatalf("after five refunds and the leases' return: %+v", ks)
		}
		for _, row := range leaseRows(t, st, "m") {
			if row.State != store.ReservationRefunded {
				t.Fatalf("lease %+v not returned after its calls were recorded", row)
			}
		}
		// Both replicas at once, 20 calls that settle at 100 each: never more than the limit
		// spent or held.
		var wg sync.WaitGroup
		var won atomic.Int32
		for i := range 20 {
			r := a
			if i%2 == 1 {
				r = b
			}
			wg.Go(func() {
				err := r.call(ctx, p, fmt.Sprintf("n%d", i), q)
				if err == nil {
					won.Add(1)
				} else if e, ok := err.(*tools.Error); !ok || e.Code != tools.CodeSpendLimit {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		for _, r := range []*replica{a, b} {
			r.svc.ReturnLeases("")
			if err := r.batch.Idle(ctx); err != nil {
				t.Fatal(err)
			}
		}
		ledgerOK(t, st)
		ks, _ := st.KeySpendOf(ctx, p.KeyID)
		if won.Load() < 1 || ks.SpentMicro != int64(won.Load())*100 || ks.SpentMicro > 1_500 || ks.HeldMicro != 0 {
			t.Fatalf("%d calls won, key %+v: want each charged 100, within 1500, nothing held", won.Load(), ks)
		}
	})
}

// A replica that dies holding a lease: the sweeper settles the lease after its deadline, and
// not before, charging the calls it had recorded (from their rows) and releasing the rest.
func TestSweeperRefundsADeadReplicasLease(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		c := &clock{}
		c.ns.Store(time.Now().UnixNano())
		dead := newReplica(t, st, c, billing.DefaultLeaseConfig())
		p := funded(t, st, dead, "d")
		if err := dead.call(ctx, p, "d1", billing.Quote{ReserveMicro: 100, PlatformFeeMicro: 50}); err != nil {
			t.Fatal(err)
		}
		if err := dead.batch.Idle(ctx); err != nil {
			t.Fatal(err)
		}
		// The call is recorded, naming the lease's transaction; its money waits for the lease,
		// which holds its worst case (ledger-check leaves an open lease's transaction out).
		if ca, _ := st.Credit(ctx, "d"); ca.AvailableMicro != 1_000_000 || ca.HeldMicro == 0 {
			t.Fatalf("before the lease is settled: %+v", ca)
		}
		if inv, err := invocations.New(st).ByID(ctx, "d1"); err != nil || inv.LedgerTxn == nil || "lease:"+*inv.LedgerTxn != leaseRows(t, st, "d")[0].RequestID {
			t.Fatalf("the call's row: %+v %v, want it naming its lease's transaction", inv, err)
		}
		ledgerOK(t, st)
		// The replica is gone: nobody returns its lease.
		if n, err := dead.svc.Sweep(ctx); n != 0 || err != nil {
			t.Fatalf("swept a live lease: %d %v", n, err)
		}
		c.advance(billing.DefaultLeaseConfig().TTL + time.Second)
		if n, err := dead.svc.Sweep(ctx); n != 1 || err != nil {
			t.Fatalf("sweep after the lease's deadline: %d %v, want its lease refunded", n, err)
		}
		ca, _ := st.Credit(ctx, "d")
		ks, _ := st.KeySpendOf(ctx, p.KeyID)
		if ca.HeldMicro != 0 || ks.HeldMicro != 0 || ca.AvailableMicro != 1_000_000-150 {
			t.Fatalf("after the sweep: %+v %+v", ca, ks)
		}
		ledgerOK(t, st)
	})
}

// A call whose lease was swept before its row was written (its replica stalled past the
// lease's deadline) reserves on its own when it is recorded and is charged at once; its row
// names no lease.
func TestACallOutlivingItsLeaseIsChargedOnItsOwn(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		c := &clock{}
		c.ns.Store(time.Now().UnixNano())
		r := newReplica(t, st, c, billing.DefaultLeaseConfig())
		p := funded(t, st, r, "s")
		q := billing.Quote{ReserveMicro: 100, MaxPartnerFeeMicro: 150, PlatformFeeMicro: 50}
		h, err := r.svc.Hold(ctx, p, billing.Plan{RequestID: "s1", Quote: q, Runs: 10 * time.Second, MayLease: true}, noRecord)
		if err != nil {
			t.Fatal(err)
		}
		c.advance(billing.DefaultLeaseConfig().TTL + time.Second)
		if n, err := r.svc.Sweep(ctx); n != 1 || err != nil {
			t.Fatalf("sweep: %d %v, want the lease settled", n, err)
		}
		stl := &billing.Settlement{PartnerFeeMicro: 120, PlatformFeeMicro: 50, PartnerBook: ledger.PartnerPayable("p", "evm:0xabc")}
		cl := billing.Conclusion{Settlement: stl}
		done := make(chan error, 1)
		if !h.ConcludeOnLease(ctx, cl, h.At(), callRow(p, "s1", q, cl), func(err error) { done <- err }) {
			t.Fatal("not drawn on a lease")
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		ca, _ := st.Credit(ctx, "s")
		ks, _ := st.KeySpendOf(ctx, p.KeyID)
		if ca.AvailableMicro != 1_000_000-270 || ca.HeldMicro != 0 || ks.SpentMicro != 270 || ks.HeldMicro != 0 {
			t.Fatalf("after the call: %+v %+v, want 270 charged and nothing held", ca, ks)
		}
		if inv, err := invocations.New(st).ByID(ctx, "s1"); err != nil || inv.LedgerTxn != nil {
			t.Fatalf("the call's row: %+v %v, want it naming no lease", inv, err)
		}
		if entries, err := ledger.Entries(ctx, st, "s1"); err != nil || len(entries) == 0 {
			t.Fatalf("the call's own ledger rows: %v %v", entries, err)
		}
		ledgerOK(t, st)
	})
}

// The sweeper settling a lease while the calls drawn on it are being recorded: each call is
// charged exactly once, either in the lease's settlement (its row committed before the
// settlement locked the lease) or on its own (it found the lease closed), never lost and
// never twice.
func TestASettlementRacingItsCallsChargesEachOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		c := &clock{}
		c.ns.Store(time.Now().UnixNano())
		r := newReplica(t, st, c, billing.DefaultLeaseConfig())
		p := funded(t, st, r, "race")
		q := billing.Quote{ReserveMicro: 100, MaxPartnerFeeMicro: 150, PlatformFeeMicro: 50}
		const calls = 40
		holds := make([]*billing.Hold, calls)
		for i := range holds {
			h, err := r.svc.Hold(ctx, p, billing.Plan{RequestID: fmt.Sprintf("race%d", i), Quote: q, Runs: 10 * time.Second, MayLease: true}, noRecord)
			if err != nil {
				t.Fatal(err)
			}
			holds[i] = h
		}
		c.advance(billing.DefaultLeaseConfig().TTL + time.Second)
		stl := &billing.Settlement{PartnerFeeMicro: 120, PlatformFeeMicro: 50, PartnerBook: ledger.PartnerPayable("p", "evm:0xabc")}
		var wg sync.WaitGroup
		errs := make(chan error, calls+1)
		for i, h := range holds {
			cl := billing.Conclusion{Settlement: stl}
			wg.Add(1)
			h.ConcludeOnLease(ctx, cl, h.At(), callRow(p, fmt.Sprintf("race%d", i), q, cl), func(err error) { errs <- err; wg.Done() })
			if i == calls/2 {
				wg.Go(func() {
					_, err := r.svc.Sweep(ctx)
					errs <- err
				})
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if n, err := r.svc.Sweep(ctx); err != nil { // the lease, if the first sweep came before any row
			t.Fatal(err)
		} else if rows := leaseRows(t, st, "race"); len(rows) != 1 || rows[0].State == store.ReservationOpen {
			t.Fatalf("after the sweeps (%d): %+v", n, rows)
		}
		ca, _ := st.Credit(ctx, "race")
		ks, _ := st.KeySpendOf(ctx, p.KeyID)
		const each = 100 + 120 + 50
		if ca.AvailableMicro != 1_000_000-calls*each || ca.HeldMicro != 0 || ca.ReservedMicro != 0 || ks.SpentMicro != calls*each || ks.HeldMicro != 0 {
			t.Fatalf("after %d calls: %+v %+v, want each charged %d once and nothing held", calls, ca, ks, each)
		}
		onLease, alone := 0, 0
		for i := range calls {
			inv, err := invocations.New(st).ByID(ctx, fmt.Sprintf("race%d", i))
			if err != nil {
				t.Fatal(err)
			}
			own, err := ledger.Entries(ctx, st, inv.RequestID)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case inv.LedgerTxn != nil && len(own) == 0:
				onLease++
			case inv.LedgerTxn == nil && len(own) > 0:
				alone++
			default:
				t.Fatalf("call %s names %v and has %d ledger rows of its own", inv.RequestID, inv.LedgerTxn, len(own))
			}
		}
		t.Logf("%d calls charged in the lease's settlement, %d on their own", onLease, alone)
		ledgerOK(t, st)
	})
}

// A call held on a lease is recorded in one write when it concludes (Hold.ConcludeOnLease),
// and its lease's settlement moves the same balances and spend as a start and a finish would
// have, in one ledger transaction for all of the lease's calls.
func TestConcludeOnALeaseInOneWrite(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		c := &clock{}
		c.ns.Store(time.Now().UnixNano())
		r := newStoppedReplica(st, c, billing.DefaultLeaseConfig())
		p := funded(t, st, r, "o")
		q := billing.Quote{ReserveMicro: 100, MaxPartnerFeeMicro: 150, PlatformFeeMicro: 50}
		noop := func(context.Context, *store.Q, *string) error { return nil }
		var failed []error
		for i := range 6 {
			h, err := r.svc.Hold(ctx, p, billing.Plan{RequestID: fmt.Sprintf("o%d", i), Quote: q, Runs: 10 * time.Second, MayLease: true}, noRecord)
			if err != nil {
				t.Fatal(err)
			}
			var stl *billing.Settlement // odd calls fail and are refunded
			if i%2 == 0 {
				stl = &billing.Settlement{PartnerFeeMicro: 120, PlatformFeeMicro: 50, PartnerBook: ledger.PartnerPayable("p", "evm:0xabc")}
			}
			c := billing.Conclusion{Settlement: stl, Reason: "partner failed"}
			if !h.ConcludeOnLease(ctx, c, h.At(), callRow(p, fmt.Sprintf("o%d", i), q, c), func(err error) {
				if err != nil {
					failed = append(failed, err)
				}
			}) {
				t.Fatal("a hold with an API key was not drawn from a lease")
			}
		}
		r.run(t)
		r.svc.ReturnLeases("")
		if err := r.batch.Idle(ctx); err != nil {
			t.Fatal(err)
		}
		if len(failed) > 0 {
			t.Fatal(failed)
		}
		ledgerOK(t, st)
		ca, _ := st.Credit(ctx, "o")
		ks, _ := st.KeySpendOf(ctx, p.KeyID)
		const each = 100 + 120 + 50 // three settled calls; three refunded ones cost nothing
		if ca.AvailableMicro != 1_000_000-3*each || ca.HeldMicro != 0 || ca.ReservedMicro != 0 || ks.SpentMicro != 3*each || ks.HeldMicro != 0 {
			t.Fatalf("after six calls: %+v %+v", ca, ks)
		}
		// No call has a reservation or ledger rows of its own: the lease's row held their worst
		// cases, and their ledger is the lease's one transaction, a leg per book and kind.
		for i := range 6 {
			id := fmt.Sprintf("o%d", i)
			n, err := st.DB().NewSelect().Model((*store.Reservation)(nil)).Where("request_id = ?", id).Count(ctx)
			if err != nil {
				t.Fatal(err)
			}
			entries, err := ledger.Entries(ctx, st, id)
			if err != nil {
				t.Fatal(err)
			}
			if n != 0 || len(entries) != 0 {
				t.Fatalf("call %s has %d reservation rows and %d ledger rows of its own, want none", id, n, len(entries))
			}
		}
		var legs []ledger.Entry
		if err := st.DB().NewSelect().Model(&legs).Where("request_id IS NULL AND memo LIKE 'settlement of %'").Scan(ctx); err != nil {
			t.Fatal(err)
		}
		got, txns := map[string]int64{}, map[string]bool{}
		for _, e := range legs {
			got[e.Kind] += e.AmountMicro
			txns[e.TxnID] = true
		}
		// Three settled calls in one batch: the refunded ones cost nothing and post nothing.
		want := map[string]int64{"charge": -3 * each, "consume": 300, "partner_fee": 360, "platform_fee": 150}
		if len(legs) != len(want) || len(txns) != 1 || !maps.Equal(got, want) {
			t.Fatalf("the batch's ledger: %d rows in %d transactions, %v; want %v in one", len(legs), len(txns), got, want)
		}
		// ledger-check proves the lease's transaction is the sum of the rows naming it: a row
		// that says other than what was posted breaks the proof, and so do rows gone.
		var txn string
		for id := range txns {
			txn = id
		}
		bump := func(by int) {
			if _, err := st.DB().NewUpdate().Model((*store.Invocation)(nil)).Set("partner_fee_micro = partner_fee_micro + ?", by).
				Where("request_id = ?", "o2").Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}
		bump(1)
		if err := ledger.Check(ctx, st); err == nil || !strings.Contains(err.Error(), "batch ledger transaction "+txn) {
			t.Fatalf("ledger-check with a call's row off its lease's transaction: %v", err)
		}
		bump(-1)
		ledgerOK(t, st)
		if _, err := st.DB().NewDelete().Model((*store.Invocation)(nil)).Where("ledger_txn = ?", txn).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		if err := ledger.Check(ctx, st); err == nil || !strings.Contains(err.Error(), "batch ledger transaction "+txn) {
			t.Fatalf("ledger-check with a settled lease's calls gone: %v", err)
		}
		// A hold is concluded once.
		h, err := r.svc.Hold(ctx, p, billing.Plan{RequestID: "o6", Quote: q, Runs: 10 * time.Second, MayLease: true}, noRecord)
		if err != nil {
			t.Fatal(err)
		}
		if !h.ConcludeOnLease(ctx, billing.Conclusion{Reason: "test"}, h.At(), noop, nil) || h.ConcludeOnLease(ctx, billing.Conclusion{Reason: "late"}, h.At(), noop, nil) {
			t.Fatal("replaced a committed job")
		}
	})
}

func noWrite(context.Context, *store.Q, *string) error { return nil }

// callRow is the record dispatch writes beside a call's money: its invocation row with the
// breakdown (naming ledgerTxn, its lease's), which ledger-check sums the lease's transaction
// against.
func callRow(p *tools.Principal, requestID string, q billing.Quote, c billing.Conclusion) func(context.Context, *store.Q, *string) error {
	return func(ctx context.Context, sq *store.Q, ledgerTxn *string) error {
		now := time.Now().UTC()
		inv := &store.Invocation{RequestID: requestID, AccountID: p.AccountID, KeyID: p.KeyID, IntentID: "i", Handle: "@h", Category: "QUERY",
			Args: "{}", CreatedAt: now, DispatchedAt: &now, Price: store.Price{ReserveMicro: q.ReserveMicro}, Outcome: store.Outcome{State: store.InvFailed, RefundedMicro: q.ReserveMicro, FinishedAt: &now}}
		if st := c.Settlement; st != nil {
			inv.State, inv.RefundedMicro, inv.PayoutBook = store.InvSucceeded, 0, st.PartnerBook
			inv.PartnerFeeMicro, inv.PlatformFeeMicro, inv.GasMicro = st.PartnerFeeMicro, st.PlatformFeeMicro, st.GasMicro
		}
		inv.LedgerTxn = ledgerTxn
		return sq.InsertInvocation(ctx, inv)
	}
}

// A call that may run past its lease's deadline (drawn just before the lease is replaced)
// is held on its own, with a deadline of its own; a shorter one is drawn on the lease.
func TestLongCallsAreNotDrawnOnALease(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		c := &clock{}
		c.ns.Store(time.Now().UnixNano())
		r := newReplica(t, st, c, billing.DefaultLeaseConfig()) // 2-minute deadline, replaced after 30 s
		p := funded(t, st, r, "x")
		q := billing.Quote{ReserveMicro: 100, PlatformFeeMicro: 50}
		short, err := r.svc.Hold(ctx, p, billing.Plan{RequestID: "x1", Quote: q, Runs: 60 * time.Second, MayLease: true}, noRecord)
		if err != nil {
			t.Fatal(err)
		}
		long, err := r.svc.Hold(ctx, p, billing.Plan{RequestID: "x2", Quote: q, Runs: 61 * time.Second, MayLease: true}, noRecord)
		if err != nil {
			t.Fatal(err)
		}
		if !short.OnLease() || long.OnLease() {
			t.Fatalf("a 60 s call on a lease: %v, a 61 s call: %v; want true and false", short.OnLease(), long.OnLease())
		}
		var state string
		if err := st.DB().NewSelect().Model((*store.Reservation)(nil)).Column("state").Where("request_id = ?", "x2").Scan(ctx, &state); err != nil || state != store.ReservationOpen {
			t.Fatalf("the long call's own reservation: %q %v, want open", state, err)
		}
		if want := c.now().Add(61*time.Second + billing.DefaultConfig().SweepMargin); !long.Deadline().Equal(want.UTC()) {
			t.Fatalf("the long call's deadline %v, want %v", long.Deadline(), want)
		}
		short.ConcludeOnLease(ctx, billing.Conclusion{Reason: "test"}, short.At(), noWrite, nil)
		if _, err := r.svc.Refund(ctx, "x2", "test"); err != nil {
			t.Fatal(err)
		}
		r.svc.ReturnLeases("")
		if err := r.batch.Idle(ctx); err != nil {
			t.Fatal(err)
		}
		ledgerOK(t, st)
	})
}

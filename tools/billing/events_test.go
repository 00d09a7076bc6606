package billing_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
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
	"github.com/switchboard-hq/switchboard/tools/webhooks"
)

// The intent's owner, told of its calls under the caller's pseudonym.
const (
	ownerAccount = "owner-acct"
	pseudonym    = "u_pseudonym"
)

var (
	callQuote = billing.Quote{ReserveMicro: 100, MaxPartnerFeeMicro: 150, PlatformFeeMicro: 50}
	settled   = billing.Settlement{PartnerFeeMicro: 120, PlatformFeeMicro: 50, PartnerBook: ledger.PartnerPayable("p", "evm:0xabc")}
)

// recordings are services on one store that commit records each way a ticket can: on a lease
// or after the answer (one batch writer), alone, durable with a journal.
type recordings struct {
	lease, batch, alone *billing.Service
	b                   *commit.Batcher
	journal             *commit.Journal
}

func newRecordings(t *testing.T, st *store.Store, c *clock, run bool) *recordings {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	d := service.Deps{Store: st, Now: c.now, Log: log}
	j, err := commit.OpenJournal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b := commit.NewBatcher(st, 64, log)
	leases := billing.DefaultLeaseConfig()
	r := &recordings{b: b, journal: j,
		lease: billing.NewService(billing.DefaultConfig(), d, billing.Recording{Batch: b, Leases: &leases, Journal: j}),
		batch: billing.NewService(billing.DefaultConfig(), d, billing.Recording{Batch: b}),
		alone: billing.NewService(billing.DefaultConfig(), d, billing.Recording{})}
	if run {
		r.run(t)
	}
	return r
}

func (r *recordings) run(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.b.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// open opens the ticket of a new call id of p's.
func open(t *testing.T, svc *billing.Service, p *tools.Principal, id string, durable bool) *billing.Ticket {
	t.Helper()
	now := time.Now().UTC()
	inv := &store.Invocation{RequestID: id, AccountID: p.AccountID, KeyID: p.KeyID, IntentID: "intent-1", Handle: "@weather",
		Category: "QUERY", Args: "{}", CreatedAt: now, Price: callQuote.Price()}
	tk := svc.For(p, billing.Spend{Handle: inv.Handle, IntentID: inv.IntentID, Category: inv.Category})
	if err := tk.Admit(context.Background(), callQuote.WorstMicro()); err != nil { // as dispatch does: admitted, then held
		t.Fatal(err)
	}
	if err := tk.Open(context.Background(), billing.Call{Record: inv, Quote: callQuote, Runs: 10 * time.Second, Durability: billing.DurabilityOf(durable, false)}); err != nil {
		t.Fatal(err)
	}
	return tk
}

// ending is a call's ending: succeeded and settled, or failed (cancelled, outcome unknown)
// and refunded.
func ending(state string, paid bool) billing.Ending {
	now := time.Now().UTC()
	e := billing.Ending{Outcome: store.Outcome{State: state, Attempts: 1, FinishedAt: &now}, Detail: "test: " + state,
		Attempts: []store.Attempt{{Detail: "HTTP 200 in 3 ms", At: now}}, Paid: paid,
		Partner: billing.Partner{AccountID: ownerAccount, UserID: pseudonym}}
	if state == store.InvSucceeded {
		st := settled
		e.Settlement = &st
		e.Outcome.PartnerFeeMicro, e.Outcome.PlatformFeeMicro = st.PartnerFeeMicro, st.PlatformFeeMicro
	} else {
		e.Outcome.RefundedMicro, e.Outcome.OutcomeCode, e.Outcome.OutcomeMessage = callQuote.ReserveMicro, "UNAVAILABLE", "@weather did not answer"
	}
	return e
}

// sentEvent is an event in the outbox, its body parsed.
type sentEvent struct {
	Account, Type, Body string
	Data                webhooks.CallData
}

// callEventsOf are the outbox's call.* events about requestID.
func callEventsOf(t *testing.T, st *store.Store, requestID string) []sentEvent {
	t.Helper()
	var rows []store.WebhookEvent
	if err := st.DB().NewSelect().Model(&rows).Where("type LIKE 'call.%'").Order("id").Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	var out []sentEvent
	for _, r := range rows {
		var b struct {
			Type string            `json:"type"`
			Data webhooks.CallData `json:"data"`
		}
		if err := json.Unmarshal([]byte(r.Body), &b); err != nil {
			t.Fatal(err)
		}
		if b.Data.RequestID == requestID {
			out = append(out, sentEvent{Account: r.AccountID, Type: r.Type, Body: r.Body, Data: b.Data})
		}
	}
	return out
}

// toldOnce checks that requestID's ending is in the outbox exactly once for its caller p (with
// the key) and once for the intent's owner (with the pseudonym, nothing that names the
// caller), as event typ, with the charge of its state.
func toldOnce(t *testing.T, st *store.Store, p *tools.Principal, requestID, typ string) {
	t.Helper()
	evs := callEventsOf(t, st, requestID)
	if len(evs) != 2 {
		t.Fatalf("%s: %d call events, want one for the caller and one for the partner: %+v", requestID, len(evs), evs)
	}
	byAccount := map[string]sentEvent{}
	for _, ev := range evs {
		if ev.Type != typ || ev.Data.RequestID != requestID || ev.Data.Handle != "@weather" || ev.Data.IntentID != "intent-1" || ev.Data.Attempts != 1 || ev.Data.FinishedAt.IsZero() {
			t.Fatalf("%s: event %s, want %s: %s", requestID, ev.Type, typ, ev.Body)
		}
		wantCharged := int64(0)
		if ev.Data.State == store.InvSucceeded {
			wantCharged = callQuote.ReserveMicro + settled.PartnerFeeMicro + settled.PlatformFeeMicro
		} else if ev.Data.RefundedMicro != callQuote.ReserveMicro || ev.Data.ErrorCode != "UNAVAILABLE" {
			t.Fatalf("%s: a call that did not succeed: %s", requestID, ev.Body)
		}
		if ev.Data.ChargedMicro != wantCharged || ev.Data.ChargedUsd != tools.USD(wantCharged).String() {
			t.Fatalf("%s: charged %d (%s), want %d: %s", requestID, ev.Data.ChargedMicro, ev.Data.ChargedUsd, wantCharged, ev.Body)
		}
		byAccount[ev.Account] = ev
	}
	mine, theirs := byAccount[p.AccountID], byAccount[ownerAccount]
	if mine.Data.KeyID != p.KeyID || mine.Data.UserID != "" {
		t.Fatalf("%s: the caller's event: %s", requestID, mine.Body)
	}
	if theirs.Data.UserID != pseudonym || theirs.Data.KeyID != "" || strings.Contains(theirs.Body, p.AccountID) || strings.Contains(theirs.Body, p.KeyID) {
		t.Fatalf("%s: the partner's event names the caller: %s", requestID, theirs.Body)
	}
}

// Each way a call's record commits writes its call.* events with it, once per call: durable,
// on a budget lease (the merged whole-record write), after the answer through the batch
// writer, alone, a journaled outcome replayed, and the sweeper's conclusion (durable or not).
// A second conclusion of a concluded call writes none.
func TestCallEventsLandOncePerCallOnEveryPath(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		c := &clock{}
		c.ns.Store(time.Now().UnixNano())
		r := newRecordings(t, st, c, true)
		p := account(t, st, "caller")
		if err := r.alone.Grant(ctx, "caller", 1_000_000, "grant"); err != nil {
			t.Fatal(err)
		}
		conclude := func(tk *billing.Ticket, e billing.Ending) {
			t.Helper()
			if err := tk.Conclude(ctx, e); err != nil {
				t.Fatal(err)
			}
		}

		conclude(open(t, r.lease, p, "durable", true), ending(store.InvSucceeded, false))
		conclude(open(t, r.lease, p, "paid", true), ending(store.InvFailed, true))
		conclude(open(t, r.lease, p, "lease-ok", false), ending(store.InvSucceeded, false))
		conclude(open(t, r.lease, p, "lease-failed", false), ending(store.InvFailed, false))
		conclude(open(t, r.batch, p, "batch", false), ending(store.InvSucceeded, false))
		conclude(open(t, r.batch, p, "batch-cancelled", false), ending(store.InvCancelled, false))
		alone := open(t, r.alone, p, "alone", false)
		conclude(alone, ending(store.InvSucceeded, false))
		if err := alone.Conclude(ctx, ending(store.InvFailed, false)); !errors.Is(err, billing.ErrAlreadyFinished) {
			t.Fatalf("a second conclusion: %v", err)
		}

		// The sweeper's: calls left dispatching by a process that died, concluded from their
		// records.
		open(t, r.alone, p, "swept", false)
		open(t, r.alone, p, "swept-durable", true)
		open(t, r.alone, p, "swept-ok", false)
		for id, durable := range map[string]bool{"swept": false, "swept-durable": true, "swept-ok": false} {
			inv, err := invocations.New(st).Get(ctx, p.AccountID, id)
			if err != nil || inv.State != store.InvDispatching {
				t.Fatalf("%s: %+v %v", id, inv, err)
			}
			state := store.InvOutcomeUnknown
			if id == "swept-ok" {
				state = store.InvSucceeded // sent again with the same requestId: it answered
			}
			conclude(r.alone.Reopen(inv, billing.DurabilityOf(durable, false)), ending(state, false))
		}
		// The sweeper finds a call concluded meanwhile by its own process: nothing more.
		inv, err := invocations.New(st).Get(ctx, p.AccountID, "alone")
		if err != nil {
			t.Fatal(err)
		}
		inv.State = store.InvDispatching
		if err := r.alone.Reopen(inv, billing.Durability{}).Conclude(ctx, ending(store.InvOutcomeUnknown, false)); !errors.Is(err, billing.ErrAlreadyFinished) {
			t.Fatalf("the sweeper concluded a concluded call: %v", err)
		}

		// A durable outcome the database did not take waits in the journal (in the format
		// Conclude writes it) until the sweeper replays it, twice here: it lands once.
		open(t, r.lease, p, "journaled", true)
		e := ending(store.InvSucceeded, false)
		jinv, err := invocations.New(st).Get(ctx, p.AccountID, "journaled")
		if err != nil {
			t.Fatal(err)
		}
		jinv.Outcome = e.Outcome
		if err := r.journal.Put("journaled", map[string]any{"Invocation": jinv, "Attempts": e.Attempts, "Settlement": e.Settlement,
			"RefundReason": e.Detail, "Detail": e.Detail, "Partner": e.Partner}); err != nil {
			t.Fatal(err)
		}
		for want := 1; want >= 0; want-- {
			if n, err := r.lease.ReplayJournal(ctx); err != nil || n != want {
				t.Fatalf("replayed %d (%v), want %d", n, err, want)
			}
		}

		if err := r.lease.Drain(ctx); err != nil {
			t.Fatal(err)
		}
		for id, typ := range map[string]string{
			"durable": webhooks.CallSucceeded, "paid": webhooks.CallRefunded, "lease-ok": webhooks.CallSucceeded,
			"lease-failed": webhooks.CallFailed, "batch": webhooks.CallSucceeded, "batch-cancelled": webhooks.CallFailed,
			"alone": webhooks.CallSucceeded, "swept": webhooks.CallRefunded, "swept-durable": webhooks.CallRefunded,
			"swept-ok": webhooks.CallSucceeded, "journaled": webhooks.CallSucceeded,
		} {
			toldOnce(t, st, p, id, typ)
		}
		// The lease's calls were recorded whole, on the lease: no reservation row of their own.
		for _, id := range []string{"lease-ok", "lease-failed"} {
			if n, err := st.DB().NewSelect().Model((*store.Reservation)(nil)).Where("request_id = ?", id).Count(ctx); err != nil || n != 0 {
				t.Fatalf("%s has %d reservation rows (%v): it was not recorded on a lease", id, n, err)
			}
		}
		ledgerOK(t, st)
	})
}

// A batch retried whole (here: a job in it finds the database unavailable once) writes its
// calls' records and events again in a new transaction: each call's events land once, never
// twice, never lost, whether the call was merged on a lease or queued after its answer.
func TestCallEventsLandOnceWhenABatchIsRetried(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		c := &clock{}
		c.ns.Store(time.Now().UnixNano())
		r := newRecordings(t, st, c, false) // stopped: everything below waits for one batch
		accounts := []string{"callerA", "callerB", "callerC"}
		principals := map[string]*tools.Principal{}
		var runs atomic.Int32
		for _, a := range accounts {
			principals[a] = account(t, st, a)
			if err := r.alone.Grant(ctx, a, 1_000_000, "grant"); err != nil {
				t.Fatal(err)
			}
			// First in its account's lane: unavailable the first time, so the batch is retried.
			first := true
			r.b.Add(a, func(context.Context, *store.Q) error {
				runs.Add(1)
				if first {
					first = false
					return fmt.Errorf("%w: the test's outage", store.ErrUnavailable)
				}
				return nil
			}, nil)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for _, a := range accounts[:2] { // on leases: Conclude waits for the merged write
			for i := range 2 {
				tk := open(t, r.lease, principals[a], fmt.Sprintf("lease-%s%d", a[len(a)-1:], i), false)
				wg.Go(func() { errs <- tk.Conclude(ctx, ending(store.InvSucceeded, false)) })
			}
		}
		for i := range 2 { // after the answer: queued, Conclude returns
			if err := open(t, r.batch, principals["callerC"], fmt.Sprintf("batch-C%d", i), false).Conclude(ctx, ending(store.InvFailed, false)); err != nil {
				t.Fatal(err)
			}
		}
		for _, a := range accounts[:2] {
			for !r.b.Pending(a) { // queued behind its account's failing job
				time.Sleep(time.Millisecond)
			}
		}
		r.run(t)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil && !store.IsUnavailable(err) { // a slow retry answers "not recorded yet"; the record still lands
				t.Fatal(err)
			}
		}
		if err := r.lease.Drain(ctx); err != nil {
			t.Fatal(err)
		}
		if runs.Load() < int32(len(accounts))+1 {
			t.Fatalf("the failing jobs ran %d times: no batch was retried", runs.Load())
		}
		for _, a := range accounts[:2] {
			for i := range 2 {
				toldOnce(t, st, principals[a], fmt.Sprintf("lease-%s%d", a[len(a)-1:], i), webhooks.CallSucceeded)
			}
		}
		for i := range 2 {
			toldOnce(t, st, principals["callerC"], fmt.Sprintf("batch-C%d", i), webhooks.CallFailed)
		}
		ledgerOK(t, st)
	})
}

// A journaled outcome replayed writes the call's events only for accounts that listen, as its
// conclusion would have: here nobody has an endpoint, and nothing is written.
func TestJournalReplayWritesEventsOnlyForListeners(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		c := &clock{}
		c.ns.Store(time.Now().UnixNano())
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		j, err := commit.OpenJournal(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		cfg := billing.DefaultConfig()
		cfg.Listens = func(context.Context, string) bool { return false }
		svc := billing.NewService(cfg, service.Deps{Store: st, Now: c.now, Log: log}, billing.Recording{Journal: j})
		p := account(t, st, "caller")
		if err := svc.Grant(ctx, "caller", 1_000_000, "grant"); err != nil {
			t.Fatal(err)
		}
		open(t, svc, p, "journaled", true)
		e := ending(store.InvSucceeded, false)
		inv, err := invocations.New(st).Get(ctx, p.AccountID, "journaled")
		if err != nil {
			t.Fatal(err)
		}
		inv.Outcome = e.Outcome
		if err := j.Put("journaled", map[string]any{"Invocation": inv, "Attempts": e.Attempts, "Settlement": e.Settlement,
			"RefundReason": e.Detail, "Detail": e.Detail, "Partner": e.Partner}); err != nil {
			t.Fatal(err)
		}
		if n, err := svc.ReplayJournal(ctx); err != nil || n != 1 {
			t.Fatalf("replayed %d (%v), want 1", n, err)
		}
		if evs := callEventsOf(t, st, "journaled"); len(evs) != 0 {
			t.Fatalf("a replayed outcome wrote %d call events for accounts with no endpoint: %+v", len(evs), evs)
		}
	})
}

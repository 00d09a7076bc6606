package billing

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/commit"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/tracing"
)

// A call's money and its record go through one seam: its Ticket, made with the call's plan
// (For), which prices the call and applies the owner's policies (billing.go's Quote,
// admit.go), is opened once when the call is about to go out (Open) and concluded once when it
// has ended (Ticket.Conclude). The ticket owns the hold of the call's worst case, whether it is drawn from a budget lease, the
// settlement or refund, and how the call's record reaches the database. That last choice is
// made here, from the Recording the service was built with, and nowhere else:
//
//	durable (writes, paid calls)  the hold and the start record commit before dispatch; the
//	                              outcome commits before the caller is answered, and waits in
//	                              the journal while the database refuses it
//	on a lease (other calls, with leases)
//	                              nothing is written before the partner answers; the call's
//	                              row is one write merged by the batch writer, committed
//	                              before the caller is answered, and names its lease's
//	                              ledger transaction: the lease holds the call's worst case
//	                              until it is settled (renewed, returned, or swept after its
//	                              deadline), when what its calls charged is posted at once
//	after the answer (other calls, with a batch writer, well before the hold's deadline)
//	                              the start commits before dispatch; the outcome is queued to
//	                              the batch writer and committed after the caller is answered
//	alone (otherwise)             the start, then the outcome, each in its own transaction,
//	                              before the caller is answered
//
// A call paid on chain (a flat fee) brings its Escrow: the ticket pays it to the partner when
// the call's recorded outcome is a success and refunds it otherwise, once that outcome has
// committed, so credit and on-chain money move by the same record. An outcome that has not
// committed yet leaves the payment held, and the payment sweeper concludes it by the record
// when it lands.

// Recording is how this replica commits calls' records, decided once, when the service is
// built.
type Recording struct {
	// Batch commits records after their callers are answered (group commit) and writes calls
	// held on leases; nil: every record commits on its own before its caller is answered.
	Batch *commit.Batcher
	// Leases, with Batch: calls that are not durable draw their holds from budget leases.
	Leases *LeaseConfig
	// Journal keeps a durable call's outcome while the database refuses it; nil: the outcome
	// waits for the database alone.
	Journal *commit.Journal
	// Failpoint, when set, is told each step a record reaches ("reserve": the hold and the
	// start record are written, not committed); the crash-consistency tests kill the process
	// there.
	Failpoint func(step string)
}

// ErrAlreadyFinished is a conclusion of a call another process concluded first: nothing of
// it was written, and the call's record is the truth.
var ErrAlreadyFinished = errors.New("the invocation was finished already")

// ErrReservationClosed is a settlement whose hold was closed already (refunded by an older
// sweeper): the outcome can be recorded, but nothing can be charged.
var ErrReservationClosed = errors.New("the reservation was closed already")

// ErrMoved is an Open whose quote another call confirmed (or paid) first.
var ErrMoved = errors.New("the invocation was moved by another call first")

// errJournaled marks an outcome the database did not take that waits in the journal.
var errJournaled = errors.New("kept in the journal")

// settleAhead is how long before its hold's deadline an outcome may still be left to the
// batch writer: past it, the caller waits for the commit (the sweeper could otherwise refund
// the hold under the settlement).
const settleAhead = 5 * time.Second

// recordWait bounds how long a caller whose answer waits for its record waits for the
// database; past it the caller is told the outcome is not recorded yet (UNAVAILABLE).
const recordWait = 5 * time.Second

// errNotRecorded is an outcome that has not reached the database within recordWait.
var errNotRecorded = fmt.Errorf("%w: the call's record did not land within %s", store.ErrUnavailable, recordWait)

// Call is what the ticket of a call is opened with.
type Call struct {
	// Record is the call's record as it is before dispatch: new (From "") or in state From.
	Record *store.Invocation
	From   string
	Quote  Quote
	// Runs is how long the call may take (its tries times their timeout).
	Runs time.Duration
	// Durable: answered only once its outcome has committed (a write, a paid call).
	Durable bool
	// Escrow is the call's payment held on chain before dispatch (a flat fee), concluded
	// with the call; nil: it has none. A call with one is not judged again by the policies.
	Escrow Escrow
}

// Escrow concludes a call's payment held on chain: paid to the partner (success) or refunded,
// exactly once whoever asks (payments.Service).
type Escrow interface {
	Conclude(ctx context.Context, requestID string, success bool) (*store.FlatPayment, error)
}

// Ending is how a call ended: its outcome, the partner attempts, and its money, settled with
// Settlement or, when that is nil, refunded for Detail (which its record's last event says).
// Its call.* events (events.go) go to the caller and to Partner.
type Ending struct {
	Outcome    store.Outcome
	Attempts   []store.Attempt
	Settlement *Settlement
	Detail     string
	Partner    Partner
	// Paid: the caller paid a flat fee on chain before dispatch (refunded unless it succeeded).
	Paid bool
}

// A Ticket is one call's money and record. It is made with the call's plan (For), for its
// caller and what the spend policies see of it, and asked, in the order of a call: its price
// (Quote), the owner's policies (Admit; AdmitPayment for a flat fee), its hold and start
// (Open), and its end, once (Conclude). The caller's money is reached through it alone.
type Ticket struct {
	svc     *Service
	p       *tools.Principal // the caller; nil: reopened by the sweeper
	spend   Spend            // the call as the spend policies see it (its WorstMicro per question)
	record  store.Invocation // as dispatched; its outcome is written when it concludes
	hold    *Hold            // nil: reopened by the sweeper (its hold is in the database)
	durable bool
	escrow  Escrow // nil: not paid on chain
}

// For is the ticket of p's call of the intent sp names (sp.WorstMicro is ignored: each
// question brings its own), made when the call's plan is made.
func (s *Service) For(p *tools.Principal, sp Spend) *Ticket {
	return &Ticket{svc: s, p: p, spend: sp}
}

// Caller is whose call it is (nil for a ticket the sweeper reopened).
func (t *Ticket) Caller() *tools.Principal { return t.p }

// costing is the call as the policies see it when it may cost worst.
func (t *Ticket) costing(worst int64) Spend {
	sp := t.spend
	sp.WorstMicro = worst
	return sp
}

// Open holds c's worst case for the call and moves its record to dispatching (inserting it
// when new), in one transaction, or, for a call drawn on a budget lease, in memory until it
// concludes. The owner's policies are judged again where the hold is taken, except for a call
// paid on chain (its payment was judged as it was made: AdmitPayment). A call whose worst
// case does not fit is refused (SPEND_LIMIT, INSUFFICIENT_CREDITS, POLICY_DENIED) with
// nothing written, and its escrow refunded; ErrMoved: another call dispatched the quote (and
// concludes its escrow).
func (t *Ticket) Open(ctx context.Context, c Call) error {
	s, p := t.svc, t.p
	plan := Plan{RequestID: c.Record.RequestID, Quote: c.Quote, Runs: c.Runs, MayLease: c.From == "" && !c.Durable}
	if c.Escrow == nil {
		sp := t.costing(c.Quote.WorstMicro())
		plan.Spend = &sp
	}
	row := *c.Record
	h, err := s.Hold(ctx, p, plan, func(ctx context.Context, q *store.Q, h *Hold) error {
		at := h.At()
		started := row // a batch may run a job again
		started.State, started.DispatchedAt = store.InvDispatching, &at
		if c.From != "" {
			ok, err := q.MoveInvocation(ctx, row.RequestID, c.From, store.InvDispatching, at)
			if err != nil {
				return err
			}
			if !ok {
				return ErrMoved
			}
		} else if err := q.InsertInvocation(ctx, &started); err != nil {
			return err
		}
		if err := q.AddEvent(ctx, row.RequestID, store.InvDispatching, "credit reserved", at); err != nil {
			return err
		}
		s.rec.Failpoint("reserve")
		return nil
	})
	var refused *tools.Error
	if errors.As(err, &refused) && c.Escrow != nil {
		s.concludeEscrow(ctx, c.Escrow, row.RequestID, false) // never dispatched: the payer gets it back
	}
	if err != nil {
		return err
	}
	at := h.At()
	row.State, row.DispatchedAt = store.InvDispatching, &at
	// A call paid on chain is durable whatever the caller said: its escrow is concluded by the
	// outcome once that has committed (pay), which the batch writer would answer before.
	t.record, t.hold, t.durable, t.escrow = row, h, c.Durable || c.Escrow != nil, c.Escrow
	return nil
}

// Close ends a call that holds nothing, in the state its record was read in (a quote its
// caller declined, a call paid but never dispatched), with outcome o and, as its last event, detail: the record's move, its
// outcome and its event in one transaction. closed is false, with nothing written, when
// another call moved the record first (confirmed the quote). also writes what the closing
// causes beside it (an event), in the same transaction.
func (s *Service) Close(ctx context.Context, record *store.Invocation, o store.Outcome, detail string, also ...func(ctx context.Context, q *store.Q) error) (closed bool, err error) {
	inv := *record
	inv.Outcome = o
	err = s.store.InTx(ctx, func(ctx context.Context, q *store.Q) error {
		closed, err = q.MoveInvocation(ctx, inv.RequestID, record.State, o.State, *o.FinishedAt)
		if err != nil || !closed {
			return err
		}
		if err := q.WriteOutcome(ctx, &inv); err != nil {
			return err
		}
		for _, f := range also {
			if err := f(ctx, q); err != nil {
				return err
			}
		}
		return q.AddEvent(ctx, inv.RequestID, o.State, detail, *o.FinishedAt)
	})
	return closed, err
}

// Reopen is the ticket of a call left dispatching by a process that did not conclude it
// (the sweeper's): its hold is in the database, and its outcome commits before anything else.
func (s *Service) Reopen(inv *store.Invocation, durable bool) *Ticket {
	return &Ticket{svc: s, record: *inv, durable: durable}
}

// Conclude settles or refunds the call's hold and writes its record's outcome, the way its
// recording says (see the top of this file). Only one process concludes a call: the others
// get ErrAlreadyFinished and nothing they wrote lands, so a call is never settled twice. An
// unavailable database is returned as such (Kept says what becomes of the outcome). A paid
// call's escrow is concluded by the outcome that committed.
func (t *Ticket) Conclude(ctx context.Context, e Ending) error {
	err := t.write(ctx, e)
	if t.escrow != nil {
		t.pay(ctx, e, err)
	}
	return err
}

// pay concludes a paid call's escrow by its recorded outcome: e's when it committed (err nil),
// the record's when another process concluded the call first; otherwise the outcome is not
// recorded yet, and the payment sweeper concludes the escrow once it is.
func (t *Ticket) pay(ctx context.Context, e Ending, err error) {
	s, id := t.svc, t.record.RequestID
	success := e.Outcome.State == store.InvSucceeded
	switch {
	case err == nil:
	case errors.Is(err, ErrAlreadyFinished):
		inv, rerr := s.store.InvocationByID(ctx, id)
		if rerr != nil {
			return
		}
		success = inv.State == store.InvSucceeded
	default:
		return
	}
	s.concludeEscrow(ctx, t.escrow, id, success)
}

// concludeEscrow settles (success) or refunds a call's escrow; one not concluded now (the
// chain or the database did not answer) is left to the payment sweeper.
func (s *Service) concludeEscrow(ctx context.Context, e Escrow, requestID string, success bool) {
	if _, err := e.Conclude(context.WithoutCancel(ctx), requestID, success); err != nil {
		s.log.WarnContext(ctx, "flat-fee payment not concluded yet; the sweeper will", "request_id", requestID, "err", err)
	}
}

// write writes the call's conclusion the way its recording says.
func (t *Ticket) write(ctx context.Context, e Ending) error {
	s := t.svc
	inv := t.record
	inv.Outcome = e.Outcome
	inv.Attempts = len(e.Attempts)
	if st := e.Settlement; st != nil && st.PartnerFeeMicro > 0 {
		inv.PayoutBook = st.PartnerBook
	}
	// Its events are written with its outcome, in the same transaction or merged write.
	events, err := callEvents(&inv, e, t.hold == nil, s.listens(ctx))
	if err != nil {
		return err
	}
	committed := tracing.Committed(ctx, "batch.commit", nil) // the call's span of its batch commit
	logged := func(err error) {
		committed(err)
		switch {
		case err == nil:
		case errors.Is(err, ErrAlreadyFinished):
			s.log.Info("invocation finished by another process first", "request_id", inv.RequestID)
		default:
			s.log.Error("record invocation outcome; the sweeper will conclude it", "request_id", inv.RequestID, "err", err)
		}
	}
	switch h := t.hold; {
	case t.durable:
		return s.commitDurable(ctx, journaled{Invocation: inv, Attempts: e.Attempts, Settlement: e.Settlement, RefundReason: e.Detail, Detail: e.Detail,
			Partner: e.Partner, Paid: e.Paid, Swept: t.hold == nil}, events)
	case h != nil && h.OnLease():
		// Nothing of the call is written yet: one write records it whole, before the answer.
		done := make(chan error, 1)
		if !h.ConcludeOnLease(ctx, Conclusion{Settlement: e.Settlement, Reason: e.Detail}, *inv.FinishedAt, wholeRecord(inv, e, events), func(err error) { logged(err); done <- err }) {
			return ErrAlreadyFinished // concluded once already
		}
		err := awaitRecord(done)
		if err != nil && !store.IsUnavailable(err) {
			// A batch whose commit landed but whose answer the connection lost is sent again,
			// and then fails on the rows it wrote the first time: the call's row is its
			// record, and the caller is answered from it, never told it failed.
			if _, ferr := s.store.Invocation(ctx, inv.AccountID, inv.RequestID); ferr == nil {
				return ErrAlreadyFinished
			}
		}
		return err
	case h != nil && s.rec.Batch != nil && s.now().Add(settleAhead).Before(h.Deadline()):
		s.rec.Batch.Add(inv.AccountID, s.outcomeIn(&inv, e.Attempts, e.Settlement, e.Detail, events), logged)
		return nil
	default:
		return s.store.InTx(ctx, s.outcomeIn(&inv, e.Attempts, e.Settlement, e.Detail, events))
	}
}

// Kept says what becomes of the outcome of a call whose record the database did not take
// (err, from Conclude), for the caller's UNAVAILABLE answer.
func (t *Ticket) Kept(err error) string {
	switch {
	case t.hold != nil && t.hold.OnLease():
		return "it is recorded (and charged, if it succeeded) when the database is back, or never, if this replica stops first"
	case errors.Is(err, errJournaled):
		return "it is kept in this replica's journal and recorded (and charged, if it succeeded) as soon as the database is back"
	}
	return "it is recorded (and charged, if it succeeded) when the database is back, or, if this replica stops first, concluded by the sweeper, which asks the partner again with the same requestId"
}

const leaseEvent = "credit reserved from the key's budget lease"

// wholeRecord is the rest of the whole record of a call held on a lease, written when it
// concludes (Hold.ConcludeOnLease writes its money first): the invocation inserted in its
// final state, one row carrying its breakdown and, as its trail, the events a start and a
// conclusion would write, with its webhook events (merged with the batch's other rows).
func wholeRecord(inv store.Invocation, e Ending, outbox []*store.WebhookEvent) func(ctx context.Context, q *store.Q, ledgerTxn *string) error {
	events := []store.Event{{State: store.InvDispatching, Detail: leaseEvent, At: *inv.DispatchedAt}}
	for _, a := range e.Attempts {
		events = append(events, store.Event{State: "attempt", Detail: a.Detail, At: a.At})
	}
	trail := store.Trail(append(events, store.Event{State: inv.State, Detail: e.Detail, At: *inv.FinishedAt})...)
	inv.Trail = &trail
	return func(ctx context.Context, q *store.Q, ledgerTxn *string) error {
		final := inv // a batch may run a job again
		final.LedgerTxn = ledgerTxn
		if err := q.InsertInvocation(ctx, &final); err != nil {
			return err
		}
		return insertEvents(ctx, q, outbox)
	}
}

// outcomeIn is a conclusion's transaction for a call whose start is written: claim the
// record, close the hold, write the attempts, the outcome and its webhook events.
func (s *Service) outcomeIn(inv *store.Invocation, attempts []store.Attempt, st *Settlement, detail string, events []*store.WebhookEvent) func(ctx context.Context, q *store.Q) error {
	return func(ctx context.Context, q *store.Q) error {
		// Claim first: the row lock makes a concurrent finisher wait, then find it finished.
		ok, err := q.MoveInvocation(ctx, inv.RequestID, store.InvDispatching, inv.State, *inv.FinishedAt)
		if err != nil {
			return err
		}
		if !ok {
			return ErrAlreadyFinished
		}
		if st != nil || inv.DispatchedAt != nil {
			closed, err := s.CloseIn(ctx, q, inv.RequestID, Conclusion{Settlement: st, Reason: detail}, *inv.FinishedAt)
			if err != nil {
				return err
			}
			if !closed && st != nil {
				return ErrReservationClosed
			}
		}
		for _, a := range attempts {
			if err := q.AddEvent(ctx, inv.RequestID, "attempt", a.Detail, a.At); err != nil {
				return err
			}
		}
		if err := q.WriteOutcome(ctx, inv); err != nil {
			return err
		}
		if err := insertEvents(ctx, q, events); err != nil {
			return err
		}
		return q.AddEvent(ctx, inv.RequestID, inv.State, detail, *inv.FinishedAt)
	}
}

// insertEvents writes a call's webhook events into the outbox inside q's transaction (a copy
// of each: a job run again writes the same rows).
func insertEvents(ctx context.Context, q *store.Q, events []*store.WebhookEvent) error {
	for _, ev := range events {
		row := *ev
		if err := q.InsertWebhookEvent(ctx, &row); err != nil {
			return err
		}
	}
	return nil
}

// awaitRecord waits (at most recordWait) for a queued record's outcome.
func awaitRecord(done <-chan error) error {
	t := time.NewTimer(recordWait)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return errNotRecorded
	}
}

// journaled is a durable call's outcome on its way to the database. Its JSON is the journal's
// file format: replicas of the previous release read it (and ignore what they do not know;
// an entry written by one of them tells the caller alone of its call, as a paid call's
// conclusion of its own would).
type journaled struct {
	Invocation   store.Invocation
	Attempts     []store.Attempt
	Settlement   *Settlement
	RefundReason string
	Detail       string
	// What the call's events are built from again when it is replayed.
	Partner Partner `json:",omitzero"`
	Paid    bool    `json:",omitempty"`
	Swept   bool    `json:",omitempty"`
}

// events are the webhook events of a journaled outcome, built again when it is replayed (for
// the accounts listens says listen, as when it was concluded).
func (e journaled) events(listens func(string) bool) ([]*store.WebhookEvent, error) {
	inv := e.Invocation
	return callEvents(&inv, Ending{Settlement: e.Settlement, Partner: e.Partner, Paid: e.Paid}, e.Swept, listens)
}

// listens is the filter of the accounts a call's events are written for (nil: every account).
func (s *Service) listens(ctx context.Context) func(accountID string) bool {
	if s.cfg.Listens == nil {
		return nil
	}
	return func(accountID string) bool { return s.cfg.Listens(ctx, accountID) }
}

// commitDurable commits a durable call's outcome before its caller is answered. When the
// database cannot take it, the outcome goes to the journal (fsynced) before anything else, so
// neither the outage nor a crash during it loses what the partner answered: the entry stays
// while the database is away, for ReplayJournal, and leaves once the database has the outcome
// (or another process's conclusion). The database is retried for up to recordWait before the
// caller is told it is not recorded yet. (A crash between the partner's answer and the first
// commit attempt loses the answer, as one before the journal's fsync would: its caller was
// told nothing, and the sweeper concludes the call outcome_unknown.)
func (s *Service) commitDurable(ctx context.Context, e journaled, events []*store.WebhookEvent) error {
	id := e.Invocation.RequestID
	journal := s.rec.Journal
	deadline := time.Now().Add(recordWait)
	inJournal := false
	for attempt := 1; ; attempt++ {
		inv := e.Invocation
		err := s.store.InTx(ctx, s.outcomeIn(&inv, e.Attempts, e.Settlement, e.Detail, events))
		if !store.IsUnavailable(err) {
			if inJournal {
				if derr := journal.Delete(id); derr != nil {
					s.log.ErrorContext(ctx, "journal: remove a recorded outcome", "request_id", id, "err", derr)
				}
			}
			return err
		}
		if !inJournal && journal != nil {
			if jerr := journal.Put(id, e); jerr != nil {
				s.log.ErrorContext(ctx, "journal a write's outcome", "request_id", id, "err", jerr)
			} else {
				inJournal = true
			}
		}
		if time.Now().After(deadline) {
			if inJournal {
				return fmt.Errorf("%w: %w", errJournaled, err)
			}
			return err
		}
		time.Sleep(min(time.Duration(attempt)*100*time.Millisecond, time.Second))
	}
}

// ReplayJournal commits the outcomes this replica's journal holds (durable calls answered by
// their partners whose records did not reach the database: an outage, a crash) and reports
// how many landed. The sweeper runs it first, so a call the journal holds is never concluded
// as outcome unknown by this replica.
func (s *Service) ReplayJournal(ctx context.Context) (int, error) {
	if s.rec.Journal == nil {
		return 0, nil
	}
	ids, err := s.rec.Journal.IDs()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range ids {
		ok, err := s.replayOne(ctx, id)
		if err != nil {
			return n, err
		}
		if ok {
			n++
		}
	}
	return n, nil
}

// replayOne commits journal entry id; ok when its outcome is now the recorded one.
func (s *Service) replayOne(ctx context.Context, id string) (ok bool, err error) {
	journal := s.rec.Journal
	var e journaled
	if err := journal.Get(id, &e); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil // another process replayed it
		}
		// Unreadable (a damaged disk): set aside for the operator, so that it does not stop
		// every later sweep; the sweeper concludes the invocation as for a lost journal.
		s.log.ErrorContext(ctx, "journal: an entry cannot be read; set aside", "request_id", id, "err", err)
		return false, journal.SetAside(id)
	}
	inv := e.Invocation
	events, err := e.events(s.listens(ctx))
	if err != nil {
		return false, err
	}
	err = s.store.InTx(ctx, s.outcomeIn(&inv, e.Attempts, e.Settlement, e.Detail, events))
	switch {
	case store.IsUnavailable(err):
		return false, err
	case errors.Is(err, ErrAlreadyFinished):
		s.log.WarnContext(ctx, "journal: the invocation was concluded elsewhere first; its recorded outcome stands", "request_id", id)
	case err != nil:
		s.log.ErrorContext(ctx, "journal: replay an outcome", "request_id", id, "err", err)
	default:
		s.log.InfoContext(ctx, "journal: outcome recorded", "request_id", id, "state", inv.State)
		ok = true
	}
	return ok, journal.Delete(id)
}

// Current brings requestID's record up to date on this replica before it is read: the
// account's outcomes still queued to the batch writer are committed, and an outcome waiting in
// the journal is recorded.
func (s *Service) Current(ctx context.Context, accountID, requestID string) error {
	if b := s.rec.Batch; b != nil {
		if err := b.Wait(ctx, accountID); err != nil {
			return err
		}
	}
	if j := s.rec.Journal; j != nil && j.Has(requestID) {
		if _, err := s.replayOne(ctx, requestID); err != nil {
			return err
		}
	}
	return nil
}

// Settled is the kernel's hook before a read of an account's money: what this replica still
// has to commit for the account is committed (bounded: with the database away a read answers
// now rather than hang), and the account's idle leases come back first, so that the balance
// read shows no budget held for calls that are not running. "" is every account.
func (s *Service) Settled(ctx context.Context, accountID string) error {
	if s.leases != nil && accountID != "" {
		s.leases.Return(accountID)
	}
	b := s.rec.Batch
	if b == nil || !b.Pending(accountID) {
		return nil // the common case: nothing to wait for, no timer
	}
	wait, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var err error
	if accountID == "" {
		err = b.Idle(wait)
	} else {
		err = b.Wait(wait, accountID)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		s.log.WarnContext(ctx, "pending settlements not committed within 2 s; reading without them", "err", err)
	}
	return nil
}

// ReturnIdleLeases returns the budget leases unused for their idle time (run every second).
func (s *Service) ReturnIdleLeases(context.Context) error {
	if s.leases != nil {
		s.leases.ReturnIdle()
	}
	return nil
}

// ReturnLeases gives back the budget leases this replica holds for accountID ("": every
// account's), through the batch writer (shutdown: before the batch writer's last drain).
func (s *Service) ReturnLeases(accountID string) {
	if s.leases != nil {
		s.leases.Return(accountID)
	}
}

// Drain returns every budget lease and waits until the batch writer has committed what this
// replica queued (shutdown, tests).
func (s *Service) Drain(ctx context.Context) error {
	s.ReturnLeases("")
	if s.rec.Batch == nil {
		return nil
	}
	return s.rec.Batch.Idle(ctx)
}

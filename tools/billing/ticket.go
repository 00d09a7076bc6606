package billing

import (
	"context"
	"errors"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/flatpay"
	"github.com/switchboard-hq/switchboard/tools"
)

// A call's money and its record go through one seam: its Ticket, made with the call's plan
// (For), which prices the call and applies the owner's policies (billing.go's Quote,
// admit.go), is opened once when the call is about to go out (Open) and concluded once when it
// has ended (Ticket.Conclude). The ticket owns the hold of the call's worst case, whether it
// is drawn from a budget lease, the settlement or refund, and the recorder that takes the
// call's record to the database, chosen when it is opened (record.go).
//
// A call paid on chain (a flat fee) brings its Escrow: the ticket pays it to the partner when
// the call's recorded outcome is a success and refunds it otherwise, once that outcome has
// committed, so credit and on-chain money move by the same record. An outcome that has not
// committed yet leaves the payment held, and the payment sweeper concludes it by the record
// when it lands.

// ErrAlreadyFinished is a conclusion of a call another process concluded first: nothing of
// it was written, and the call's record is the truth.
var ErrAlreadyFinished = errors.New("the invocation was finished already")

// ErrReservationClosed is a settlement whose hold was closed already (refunded by an older
// sweeper): the outcome can be recorded, but nothing can be charged.
var ErrReservationClosed = errors.New("the reservation was closed already")

// ErrMoved is an Open whose quote another call confirmed (or paid) first.
var ErrMoved = errors.New("the invocation was moved by another call first")

// Call is what the ticket of a call is opened with.
type Call struct {
	// Record is the call's record as it is before dispatch: new (From "") or in state From.
	Record *store.Invocation
	From   string
	Quote  Quote
	// Runs is how long the call may take (its tries times their timeout).
	Runs time.Duration
	// Durability is the call's (DurabilityOf, from its intent).
	Durability Durability
	// Escrow is the call's payment held on chain before dispatch (a flat fee), concluded
	// with the call; nil: it has none. A call with one is not judged again by the policies.
	Escrow Escrow
}

// Escrow concludes a call's payment held on chain: paid to the partner (success) or refunded,
// exactly once whoever asks (payments.Service).
type Escrow interface {
	Conclude(ctx context.Context, requestID string, success bool) (*flatpay.FlatPayment, error)
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
	svc    *Service
	p      *tools.Principal // the caller; nil: reopened by the sweeper
	spend  Spend            // the call as the spend policies see it (its WorstMicro per question)
	record store.Invocation // as dispatched; its outcome is written when it concludes
	hold   *Hold            // nil: reopened by the sweeper (its hold is in the database)
	rec    recorder         // how its record commits, chosen when it is opened
	escrow Escrow           // nil: not paid on chain
	move   *Movement        // nil: a partner call (movement.go)
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
// concludes; the call's recorder is chosen here (recorderOf). The owner's policies are judged
// again where the hold is taken, except for a call paid on chain (its payment was judged as
// it was made: AdmitPayment). A call whose worst case does not fit is refused (SPEND_LIMIT,
// INSUFFICIENT_CREDITS, POLICY_DENIED) with nothing written, and its escrow refunded;
// ErrMoved: another call dispatched the quote (and concludes its escrow).
func (t *Ticket) Open(ctx context.Context, c Call) error {
	s, p := t.svc, t.p
	plan := Plan{RequestID: c.Record.RequestID, Quote: c.Quote, Runs: c.Runs}
	if c.Escrow == nil {
		sp := t.costing(c.Quote.WorstMicro())
		plan.Spend = &sp
	}
	admit := s.heldCheck(p, plan.Spend)
	rec := s.recorderOf(p, c, admit != nil)
	row := *c.Record
	h, err := s.hold(ctx, p, plan, admit, rec == recorder(onLease{}), func(ctx context.Context, q *store.Q, h *Hold) error {
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
	t.record, t.hold, t.rec, t.escrow = row, h, rec, c.Escrow
	return nil
}

// Ask records a call that holds nothing yet, in its record's state, with detail as its first
// event and also's rows beside it, in one transaction: a quote waiting for its caller's
// confirmation or payment, a call its owner's policy sent for approval. Its money moves only
// once it is opened (Open) from that state.
func (t *Ticket) Ask(ctx context.Context, record *store.Invocation, detail string, also ...func(ctx context.Context, q *store.Q) error) error {
	return t.svc.store.CreateInvocation(ctx, record, detail, also...)
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

// Close is Service.Close for the ticket's call: a quote its caller declined, a call its
// owner's approval does not let out.
func (t *Ticket) Close(ctx context.Context, record *store.Invocation, o store.Outcome, detail string, also ...func(ctx context.Context, q *store.Q) error) (closed bool, err error) {
	return t.svc.Close(ctx, record, o, detail, also...)
}

// Reopen is the ticket of a call left dispatching by a process that did not conclude it
// (the sweeper's): its hold is in the database, and its outcome commits before anything else.
func (s *Service) Reopen(inv *store.Invocation, d Durability) *Ticket {
	return &Ticket{svc: s, record: *inv, rec: s.recorderOf(nil, Call{Durability: d}, false)}
}

// Conclude settles or refunds the call's hold and writes its record's outcome: it hands the
// ending to the call's recorder. Only one process concludes a call: the others get
// ErrAlreadyFinished and nothing they wrote lands, so a call is never settled twice. An
// unavailable database is returned as such (Kept says what becomes of the outcome). A paid
// call (always durable) has its escrow concluded by the outcome that committed (durable.conclude).
func (t *Ticket) Conclude(ctx context.Context, e Ending) error {
	return t.rec.conclude(ctx, t, e)
}

// concludeEscrow settles (success) or refunds a call's escrow; one not concluded now (the
// chain or the database did not answer) is left to the payment sweeper.
func (s *Service) concludeEscrow(ctx context.Context, e Escrow, requestID string, success bool) {
	if _, err := e.Conclude(context.WithoutCancel(ctx), requestID, success); err != nil {
		s.log.WarnContext(ctx, "flat-fee payment not concluded yet; the sweeper will", "request_id", requestID, "err", err)
	}
}

// Kept says what becomes of the outcome of a call whose record the database did not take
// (err, from Conclude), for the caller's UNAVAILABLE answer.
func (t *Ticket) Kept(err error) string { return t.rec.kept(err) }

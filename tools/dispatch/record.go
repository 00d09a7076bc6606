package dispatch

import (
	"context"
	"errors"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/tracing"
)

// The invocation state machine: quoted (awaiting_confirmation) -> dispatching -> succeeded,
// failed, cancelled or outcome_unknown. Each step is one transaction that moves the state and
// the money together.

// ErrAlreadyFinished is finish on an invocation that another process finished first.
var ErrAlreadyFinished = errors.New("the invocation was finished already")

// ErrReservationClosed is a settlement whose reservation was already closed (refunded by an
// older sweeper): the outcome can be recorded, but nothing can be charged.
var ErrReservationClosed = errors.New("the reservation was closed already")

// start puts inv in state dispatching and reserves its credit, in one transaction. With
// from == "" inv is new and inserted; otherwise it must be in state from (a quote being
// confirmed), and moved reports false when it was not (another call confirmed it first).
// A refusal of the reservation (SPEND_LIMIT, INSUFFICIENT_CREDITS) writes nothing.
func (s *Service) start(ctx context.Context, inv *store.Invocation, from string, r *store.Reservation, spendLimitMicro int64) (moved bool, err error) {
	err = s.store.InTx(ctx, func(ctx context.Context, q *store.Q) error {
		moved = false
		at := r.CreatedAt
		if from != "" {
			ok, err := q.MoveInvocation(ctx, inv.RequestID, from, store.InvDispatching, at)
			if err != nil || !ok {
				return err
			}
		}
		// The reservation's locks and check come first; the writes after them go to the
		// database together.
		if err := s.billing.ReserveIn(ctx, q, r, spendLimitMicro); err != nil {
			return err
		}
		inv.State, inv.DispatchedAt = store.InvDispatching, &at
		if from == "" {
			if err := q.InsertInvocation(ctx, inv); err != nil {
				return err
			}
		}
		moved = true
		return q.AddEvent(ctx, inv.RequestID, store.InvDispatching, "credit reserved", at)
	})
	return moved, err
}

// leased is a call's reservation drawn from its key's budget lease.
type leased struct {
	billing.Drawn
	res             *store.Reservation
	spendLimitMicro int64
}

// startOnLease is start for a new call whose reservation is taken from its key's budget
// lease: nothing waits for the database unless the lease must be renewed. The invocation and
// its reservation are written by the batch writer, ahead of the call's finish (which may
// replace that write with the whole record while it still waits in the queue).
func (s *Service) startOnLease(ctx context.Context, p *tools.Principal, inv *store.Invocation, r *store.Reservation) (*leased, error) {
	at := r.CreatedAt
	inv.State, inv.DispatchedAt = store.InvDispatching, &at
	row := *inv // as it starts: the caller goes on to write its outcome into inv
	d, err := s.leases.Reserve(ctx, p, r, func(ctx context.Context, q *store.Q) error {
		started := row // a batch may run a job again
		if err := q.InsertInvocation(ctx, &started); err != nil {
			return err
		}
		return q.AddFirstEvents(ctx, row.RequestID, store.Event{State: store.InvDispatching, Detail: leaseEvent, At: at})
	}, func(err error) {
		if err != nil {
			// Its finish fails too (nothing to finish): nothing is charged, and the lease's
			// budget comes back when the lease is returned.
			s.log.Error("record a dispatched invocation", "request_id", row.RequestID, "err", err)
		}
	})
	if err != nil {
		return nil, err
	}
	return &leased{Drawn: d, res: r, spendLimitMicro: p.SpendLimitMicro}, nil
}

const leaseEvent = "credit reserved from the key's budget lease"

// finishOnLeaseIn is the whole record of a call drawn on a lease whose start was never
// written: the reservation drawn and settled or refunded (billing.ConcludeOnLeaseIn), the
// invocation inserted in its final state, and the events a start and a finish would write.
func (s *Service) finishOnLeaseIn(inv *store.Invocation, l *leased, attempts []store.Attempt, st *billing.Settlement, refundReason, detail string) func(ctx context.Context, q *store.Q) error {
	inv.Attempts = len(attempts)
	row := *inv
	return func(ctx context.Context, q *store.Q) error {
		if err := s.billing.ConcludeOnLeaseIn(ctx, q, l.LeaseID, l.res, l.spendLimitMicro, st, refundReason, *row.FinishedAt); err != nil {
			return err
		}
		final := row
		if err := q.InsertInvocation(ctx, &final); err != nil {
			return err
		}
		events := []store.Event{{State: store.InvDispatching, Detail: leaseEvent, At: *row.DispatchedAt}}
		for _, a := range attempts {
			events = append(events, store.Event{State: "attempt", Detail: a.Detail, At: a.At})
		}
		return q.AddFirstEvents(ctx, row.RequestID, append(events, store.Event{State: row.State, Detail: detail, At: *row.FinishedAt})...)
	}
}

// settleAhead is how long before its reservation's deadline a finish may still be left to
// the batch writer: past it, the caller waits for the commit (the sweeper could otherwise
// refund the reservation under the settlement).
const settleAhead = 5 * time.Second

// finish records the attempts, settles (st non-nil) or refunds the reservation of a
// dispatched invocation, and writes its outcome with its final transition, in one
// transaction. Only one process finishes an invocation: the others get ErrAlreadyFinished and
// nothing they wrote lands, so a call is never settled twice.
//
// With a batch writer and well before cl.settleBy (the reservation's deadline), the
// transaction is queued and committed with others after the caller has its answer: the
// reservation already holds the worst case, so no money rule waits on it. A finish that fails
// there leaves the invocation dispatching, for the sweeper to conclude. A call drawn on a
// lease whose start is still queued has that start replaced by its whole record.
func (s *Service) finish(ctx context.Context, inv *store.Invocation, cl *call, attempts []store.Attempt, st *billing.Settlement, refundReason, detail string) error {
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
	if l := cl.onLease; l != nil && l.Job.Replace(s.finishOnLeaseIn(inv, l, attempts, st, refundReason, detail), logged) {
		return nil // its start was still queued: one write records the whole call
	}
	write := s.finishIn(inv, attempts, st, refundReason, detail)
	by := cl.settleBy
	if s.batch == nil || by.IsZero() || !s.now().Add(settleAhead).Before(by) {
		if cl.onLease != nil {
			// Its start, queued by startOnLease and taken by a batch, must land first.
			if err := s.batch.Wait(ctx, inv.AccountID); err != nil {
				return err
			}
		}
		return s.store.InTx(ctx, write)
	}
	s.batch.Add(inv.AccountID, write, logged)
	return nil
}

// finishIn is finish's transaction.
func (s *Service) finishIn(inv *store.Invocation, attempts []store.Attempt, st *billing.Settlement, refundReason, detail string) func(ctx context.Context, q *store.Q) error {
	return func(ctx context.Context, q *store.Q) error {
		// Claim first: the row lock makes a concurrent finisher wait, then find it finished.
		ok, err := q.MoveInvocation(ctx, inv.RequestID, store.InvDispatching, inv.State, *inv.FinishedAt)
		if err != nil {
			return err
		}
		if !ok {
			return ErrAlreadyFinished
		}
		inv.Attempts = len(attempts)
		switch {
		case st != nil:
			ok, err := s.billing.SettleIn(ctx, q, inv.RequestID, *st, *inv.FinishedAt)
			if err != nil {
				return err
			}
			if !ok {
				return ErrReservationClosed
			}
		case inv.DispatchedAt != nil:
			if _, err := s.billing.RefundIn(ctx, q, inv.RequestID, refundReason, *inv.FinishedAt); err != nil {
				return err
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
		return q.AddEvent(ctx, inv.RequestID, inv.State, detail, *inv.FinishedAt)
	}
}

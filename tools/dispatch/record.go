package dispatch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
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

// errNotMoved aborts a start whose quote another call confirmed first.
var errNotMoved = errors.New("the invocation was moved by another call first")

// start puts inv in state dispatching and holds its worst case (billing.Hold), written
// together: with from == "" inv is new and inserted; otherwise it must be in state from (a
// quote being confirmed), and moved reports false when it was not (another call confirmed it
// first). A refusal of the hold (SPEND_LIMIT, INSUFFICIENT_CREDITS) writes nothing. A read
// held on a budget lease writes nothing here: its whole record is one write when it finishes.
func (s *Service) start(ctx context.Context, p *tools.Principal, cl *call, inv *store.Invocation, from string) (moved bool, err error) {
	plan := billing.Plan{RequestID: inv.RequestID, Quote: cl.quote, Runs: time.Duration(cl.tries) * cl.timeout,
		MayLease: from == "" && !cl.durable}
	row := *inv // as it starts: the caller goes on to write its outcome into inv
	h, err := s.billing.Hold(ctx, p, plan, func(ctx context.Context, q *store.Q, h *billing.Hold) error {
		at := h.At()
		started := row // a batch may run a job again
		started.State, started.DispatchedAt = store.InvDispatching, &at
		if from != "" {
			ok, err := q.MoveInvocation(ctx, row.RequestID, from, store.InvDispatching, at)
			if err != nil {
				return err
			}
			if !ok {
				return errNotMoved
			}
		} else if err := q.InsertInvocation(ctx, &started); err != nil {
			return err
		}
		if err := q.AddEvent(ctx, row.RequestID, store.InvDispatching, "credit reserved", at); err != nil {
			return err
		}
		s.cfg.Failpoint("reserve")
		return nil
	})
	if errors.Is(err, errNotMoved) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	at := h.At()
	cl.hold = h
	inv.State, inv.DispatchedAt = store.InvDispatching, &at
	return true, nil
}

const leaseEvent = "credit reserved from the key's budget lease"

// finishOnLeaseIn is the rest of the whole record of a call held on a lease, written when it
// concludes (billing.Hold.ConcludeOnLease writes its money first): the invocation inserted in
// its final state, one row carrying its breakdown and, as its trail, the events a start and a
// finish would write.
func finishOnLeaseIn(inv *store.Invocation, attempts []store.Attempt, detail string) func(ctx context.Context, q *store.Q) error {
	inv.Attempts = len(attempts)
	events := []store.Event{{State: store.InvDispatching, Detail: leaseEvent, At: *inv.DispatchedAt}}
	for _, a := range attempts {
		events = append(events, store.Event{State: "attempt", Detail: a.Detail, At: a.At})
	}
	trail := store.Trail(append(events, store.Event{State: inv.State, Detail: detail, At: *inv.FinishedAt})...)
	row := *inv
	row.Trail = &trail
	return func(ctx context.Context, q *store.Q) error {
		final := row
		return q.InsertInvocation(ctx, &final)
	}
}

// settleAhead is how long before its reservation's deadline a finish may still be left to
// the batch writer: past it, the caller waits for the commit (the sweeper could otherwise
// refund the reservation under the settlement).
const settleAhead = 5 * time.Second

// recordWait bounds how long a caller whose answer waits for its record waits for the
// database; past it the caller is told the outcome is not recorded yet (UNAVAILABLE).
const recordWait = 5 * time.Second

// errNotRecorded is a finish that has not reached the database within recordWait.
var errNotRecorded = fmt.Errorf("%w: the call's record did not land within %s", store.ErrUnavailable, recordWait)

// finish records the attempts, settles (st non-nil) or refunds the reservation of a
// dispatched invocation, and writes its outcome with its final transition, in one
// transaction. Only one process finishes an invocation: the others get ErrAlreadyFinished and
// nothing they wrote lands, so a call is never settled twice.
//
// What the caller may be told before the commit (the answer never runs ahead of a record a
// crash could lose):
//   - a write or a flat-fee call (cl.durable) is answered only once its outcome has
//     committed; while the database is away its outcome waits in the journal, replayed by
//     this replica's sweeper (finishDurable);
//   - a read whose dispatching record has committed may have its outcome committed by the
//     batch writer after the answer (well before its hold's deadline): a crash then leaves
//     it dispatching, and the sweeper sends it again with the same requestId (it is
//     idempotent; the partner dedupes) and records that answer;
//   - a read drawn on a budget lease has nothing written before its partner answers: it is
//     written whole in one write-only job, merged by the batch writer with other calls',
//     and answered once that has committed. A crash before then leaves no trace but the
//     request the partner saw; the lease's budget comes back with the lease.
func (s *Service) finish(ctx context.Context, inv *store.Invocation, cl *call, attempts []store.Attempt, st *billing.Settlement, refundReason, detail string) error {
	if st != nil && st.PartnerFeeMicro > 0 {
		inv.PayoutBook = st.PartnerBook
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
	if cl.durable {
		return s.finishDurable(ctx, journaled{Invocation: *inv, Attempts: attempts, Settlement: st, RefundReason: refundReason, Detail: detail})
	}
	if h := cl.hold; h != nil && h.OnLease() {
		// Nothing of the call is written yet: one write records it whole, before the answer.
		done := make(chan error, 1)
		if !h.ConcludeOnLease(ctx, billing.Conclusion{Settlement: st, Reason: refundReason}, *inv.FinishedAt, finishOnLeaseIn(inv, attempts, detail), func(err error) { logged(err); done <- err }) {
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
	}
	write := s.finishIn(inv, attempts, st, refundReason, detail)
	if s.batch == nil || cl.hold == nil || !s.now().Add(settleAhead).Before(cl.hold.Deadline()) {
		return s.store.InTx(ctx, write)
	}
	s.batch.Add(inv.AccountID, write, logged)
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

// errJournaled marks an outcome the database did not take that waits in the journal.
var errJournaled = errors.New("kept in the journal")

// journaled is a write's outcome on its way to the database (Service.UseJournal).
type journaled struct {
	Invocation   store.Invocation
	Attempts     []store.Attempt
	Settlement   *billing.Settlement
	RefundReason string
	Detail       string
}

// finishDurable commits a write's outcome before its caller is answered. When the database
// cannot take it, the outcome goes to the journal (fsynced) before anything else, so neither
// the outage nor a crash during it loses what the partner answered: the entry stays while the
// database is away, for ReplayJournal, and leaves once the database has the outcome (or
// another process's conclusion). The database is retried for up to recordWait before the
// caller is told it is not recorded yet. (A crash between the partner's answer and the first
// commit attempt loses the answer, as one before the journal's fsync would: its caller was
// told nothing, and the sweeper concludes the call outcome_unknown.)
func (s *Service) finishDurable(ctx context.Context, e journaled) error {
	id := e.Invocation.RequestID
	deadline := time.Now().Add(recordWait)
	inJournal := false
	for attempt := 1; ; attempt++ {
		inv := e.Invocation
		err := s.store.InTx(ctx, s.finishIn(&inv, e.Attempts, e.Settlement, e.RefundReason, e.Detail))
		if !store.IsUnavailable(err) {
			if inJournal {
				if derr := s.journal.Delete(id); derr != nil {
					s.log.ErrorContext(ctx, "journal: remove a recorded outcome", "request_id", id, "err", derr)
				}
			}
			return err
		}
		if !inJournal && s.journal != nil {
			if jerr := s.journal.Put(id, e); jerr != nil {
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

// ReplayJournal commits the outcomes this replica's journal holds (writes answered by their
// partners whose records did not reach the database: an outage, a crash) and reports how many
// landed. It runs before every sweep, so a write the journal holds is never concluded as
// outcome unknown by this replica.
func (s *Service) ReplayJournal(ctx context.Context) (int, error) {
	if s.journal == nil {
		return 0, nil
	}
	ids, err := s.journal.IDs()
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
	var e journaled
	if err := s.journal.Get(id, &e); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil // another process replayed it
		}
		// Unreadable (a damaged disk): set aside for the operator, so that it does not stop
		// every later sweep; the sweeper concludes the invocation as for a lost journal.
		s.log.ErrorContext(ctx, "journal: an entry cannot be read; set aside", "request_id", id, "err", err)
		return false, s.journal.SetAside(id)
	}
	inv := e.Invocation
	err = s.store.InTx(ctx, s.finishIn(&inv, e.Attempts, e.Settlement, e.RefundReason, e.Detail))
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
	return ok, s.journal.Delete(id)
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
		if st != nil || inv.DispatchedAt != nil {
			closed, err := s.billing.CloseIn(ctx, q, inv.RequestID, billing.Conclusion{Settlement: st, Reason: refundReason}, *inv.FinishedAt)
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
		return q.AddEvent(ctx, inv.RequestID, inv.State, detail, *inv.FinishedAt)
	}
}

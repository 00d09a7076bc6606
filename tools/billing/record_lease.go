package billing

import (
	"context"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/tools"
)

// onLease is the recorder of a call held on its key's budget lease (lease.go): nothing of it
// is written before the partner answers; its whole record is then one write, merged with
// other calls' by the batch writer and committed before its caller is answered.
type onLease struct{}

func (onLease) conclude(ctx context.Context, t *Ticket, e Ending) error {
	inv, events, err := t.end(ctx, e)
	if err != nil {
		return err
	}
	s := t.svc
	logged := s.queued(ctx, inv.RequestID)
	done := make(chan error, 1)
	if !t.hold.ConcludeOnLease(ctx, Conclusion{Settlement: e.Settlement, Reason: e.Detail}, *inv.FinishedAt, wholeRecord(inv, e, events), func(err error) { logged(err); done <- err }) {
		return ErrAlreadyFinished // concluded once already
	}
	err = awaitRecord(done)
	if err != nil && !store.IsUnavailable(err) {
		// A batch whose commit landed but whose answer the connection lost is sent again,
		// and then fails on the rows it wrote the first time: the call's row is its
		// record, and the caller is answered from it, never told it failed.
		if _, ferr := s.invocations.Get(ctx, inv.AccountID, inv.RequestID); ferr == nil {
			return ErrAlreadyFinished
		}
	}
	return err
}

func (onLease) kept(error) string {
	return "it is recorded (and charged, if it succeeded) when the database is back, or never, if this replica stops first"
}

// leasable reports whether p's new call, which may run for runs, is held on its key's budget
// lease: this replica holds leases, the call has an API key, it is recorded before its lease's
// deadline (Leases.outlasts), and no policy judges it where it is held (policed: a lease holds
// in memory, where no other call's check can see it).
func (s *Service) leasable(p *tools.Principal, runs time.Duration, policed bool) bool {
	return !policed && s.leases != nil && p.KeyID != "" && s.leases.outlasts(runs)
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

package billing

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/commit"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/tracing"
)

// How a call's record reaches the database is decided once, when its ticket is opened
// (recorderOf, from the call's Durability and the Recording the service was built with), and
// nowhere else. Each way is a recorder, in a file of its own, which the ticket hands the call's
// ending to when it concludes:
//
//	durable (writes, paid calls)  the hold and the start record commit before dispatch; the
//	  record_durable.go           outcome commits before the caller is answered, and waits in
//	                              the journal while the database refuses it
//	on a lease (other new calls, with leases, no policy, short enough)
//	  record_lease.go             nothing is written before the partner answers; the call's
//	                              row is one write merged by the batch writer, committed
//	                              before the caller is answered, and names its lease's
//	                              ledger transaction: the lease holds the call's worst case
//	                              until it is settled (renewed, returned, or swept after its
//	                              deadline), when what its calls charged is posted at once
//	after the answer (other calls, with a batch writer)
//	  record_after.go             the start commits before dispatch; the outcome is queued to
//	                              the batch writer and committed after the caller is answered,
//	                              unless the hold's deadline is near (then as alone)
//	alone (otherwise, and the sweeper's conclusions)
//	  record_alone.go             the start, then the outcome, each in its own transaction,
//	                              before the caller is answered
//
// What every recorder writes of the ending is ending.go's. Below them: the reads that must see
// what this replica has yet to commit (Current, Settled, Drain).

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

// Durability is whether a call is answered only once its outcome has committed. It is decided
// here from what the call's intent is (DurabilityOf), and its plan carries it to Open and
// Reopen.
type Durability struct{ durable bool }

// DurabilityOf is the durability of a call of an intent: durable when it is a write (it moves
// value and is never sent twice, so its outcome must not be lost) or paid on chain (its
// payment is concluded by the outcome that committed).
func DurabilityOf(write, paidOnChain bool) Durability {
	return Durability{durable: write || paidOnChain}
}

// A recorder writes one call's ending the way its regime says.
type recorder interface {
	// conclude writes t's ending e; an unavailable database is returned as such.
	conclude(ctx context.Context, t *Ticket, e Ending) error
	// kept says what becomes of an outcome the database did not take (err, from conclude).
	kept(err error) string
}

// recorderOf is the one decision of how a call's record commits: p's call c (p nil: a call
// reopened by the sweeper), policed when its policies are judged where it is held.
func (s *Service) recorderOf(p *tools.Principal, c Call, policed bool) recorder {
	switch {
	case c.Durability.durable || c.Escrow != nil:
		// A call paid on chain is durable whatever its intent: its escrow is concluded by the
		// outcome once that has committed (durable.conclude), which the batch writer would answer
		// before.
		return durable{}
	case p == nil:
		return alone{} // its hold is in the database, and nothing of it in memory
	case c.From == "" && s.leasable(p, c.Runs, policed):
		return onLease{}
	case s.rec.Batch != nil:
		return afterAnswer{}
	}
	return alone{}
}

// settleAhead is how long before its hold's deadline an outcome may still be left to the
// batch writer: past it, the caller waits for the commit (the sweeper could otherwise refund
// the hold under the settlement).
const settleAhead = 5 * time.Second

// recordWait bounds how long a caller whose answer waits for its record waits for the
// database; past it the caller is told the outcome is not recorded yet (UNAVAILABLE).
const recordWait = 5 * time.Second

// errNotRecorded is an outcome that has not reached the database within recordWait.
var errNotRecorded = fmt.Errorf("%w: the call's record did not land within %s", store.ErrUnavailable, recordWait)

// sweeperKeeps is what becomes of an outcome not recorded whose start is in the database.
const sweeperKeeps = "it is recorded (and charged, if it succeeded) when the database is back, or, if this replica stops first, concluded by the sweeper, which asks the partner again with the same requestId"

// queued is what a record queued to the batch writer is told of its commit: the call's span
// of its batch commit, and a log line when it did not land.
func (s *Service) queued(ctx context.Context, requestID string) func(error) {
	committed := tracing.Committed(ctx, "batch.commit", nil)
	return func(err error) {
		committed(err)
		switch {
		case err == nil:
		case errors.Is(err, ErrAlreadyFinished):
			s.log.Info("invocation finished by another process first", "request_id", requestID)
		default:
			s.log.Error("record invocation outcome; the sweeper will conclude it", "request_id", requestID, "err", err)
		}
	}
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

package billing

import (
	"context"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/tools"
)

// Plan is what billing needs of a call to hold its worst case.
type Plan struct {
	RequestID string
	Quote     Quote
	// Runs is how long the call may take (its tries times their timeout): the hold's
	// deadline, past which the sweeper refunds it, is that plus Config.SweepMargin.
	Runs time.Duration
	// MayLease lets Hold draw the hold from its key's budget lease when the lease's recorder
	// would take the call (Service.leasable): written after the call goes out. Ticket.Open
	// ignores it: the call's recorder decides.
	MayLease bool
	// Spend is the call as spend policies see it; nil: the call was admitted already (a flat
	// fee, whose payment was checked before it was collected).
	Spend *Spend
}

// Record writes the caller's own rows beside hold h, in its transaction. A hold drawn from a
// budget lease writes nothing until its call concludes (ConcludeOnLease), and Record does not
// run for it.
type Record func(ctx context.Context, q *store.Q, h *Hold) error

// A Hold is a call's worst case held against its key's spend limit and its account's free
// credit, under the same locks whichever way it was taken, until the call's conclusion
// settles or refunds it (CloseIn, or ConcludeOnLease for a hold drawn from a lease).
type Hold struct {
	r      *store.Reservation
	limits spendLimits // the key's and its ancestors' spend limits, checked again if a lease is gone when the hold is written

	// A hold drawn from a lease, in memory until its call concludes.
	svc     *Service
	lease   *lease
	leaseID string
}

// At is when the hold was taken: the call's dispatch time.
func (h *Hold) At() time.Time { return h.r.CreatedAt }

// Deadline is when the sweeper may refund the hold if nobody concluded it.
func (h *Hold) Deadline() time.Time { return h.r.ExpiresAt }

// OnLease reports whether the hold was drawn from a budget lease (nothing written yet).
func (h *Hold) OnLease() bool { return h.leaseID != "" }

// Hold holds plan's worst case for p's call. Without a lease the hold and record commit in
// one transaction before Hold returns; on a lease (plan.MayLease and a call the lease's
// recorder takes: Service.leasable) the worst case is taken from the key's lease in memory,
// and nothing is written until the call concludes: the whole call is then one write
// (ConcludeOnLease), so a call costs the database one row set, merged with other calls' by
// the batch writer. A call whose worst case does not fit is refused (SPEND_LIMIT,
// INSUFFICIENT_CREDITS) with nothing written; an error of record's aborts the write and is
// returned.
func (s *Service) Hold(ctx context.Context, p *tools.Principal, plan Plan, record Record) (*Hold, error) {
	admit := s.heldCheck(p, plan.Spend) // under a policy: judged where every held call is seen
	return s.hold(ctx, p, plan, admit, plan.MayLease && s.leasable(p, plan.Runs, admit != nil), record)
}

// hold is Hold with the policies' check admit (nil: none) and its lease decided (Ticket.Open
// decides it with the call's recorder).
func (s *Service) hold(ctx context.Context, p *tools.Principal, plan Plan, admit func(ctx context.Context, q *store.Q) error, onLease bool, record Record) (*Hold, error) {
	now := s.now().UTC()
	limits, chain := limitsOf(p)
	h := &Hold{svc: s, limits: limits, r: &store.Reservation{
		RequestID: plan.RequestID, AccountID: p.AccountID, KeyID: p.KeyID, KeyChain: chain,
		ReservedMicro: plan.Quote.ReserveMicro, WorstMicro: plan.Quote.WorstMicro(),
		ExpiresAt: now.Add(plan.Runs + s.cfg.SweepMargin), CreatedAt: now,
	}}
	if onLease {
		if err := s.leases.draw(ctx, p, h); err != nil {
			return nil, err
		}
		return h, nil
	}
	err := s.store.InTx(ctx, func(ctx context.Context, q *store.Q) error {
		if err := s.reserveIn(ctx, q, h.r, h.limits, admit); err != nil {
			return err
		}
		return record(ctx, q, h)
	})
	if err != nil {
		if plan.Spend != nil {
			return nil, s.denied(ctx, p, *plan.Spend, err)
		}
		return nil, err
	}
	return h, nil
}

// Conclusion is how a call's hold ends: settled with Settlement, or (nil) refunded for Reason.
type Conclusion struct {
	Settlement *Settlement
	Reason     string
}

package dispatch

import (
	"context"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/tools"
)

// A way is how one call of invoke_partner_message goes once it is planned: chosen once, by
// wayOf, from what the caller sent and what the plan says, so that each reads on its own (a
// plain call's code holds nothing of a quote's or of a confirmation's).
type way interface {
	take(ctx context.Context, c *tools.Caller, cl *call, in InvokeInput) (InvokeOutput, error)
}

// wayOf chooses cl's way: an answer to an earlier quote or approval continues it (confirm.go);
// a write or a flat-fee call is quoted first (prepare.go); a long-running intent's call, for a
// caller that takes a task, runs as one (task.go); any other call is answered in its request
// (dispatch.go).
func (s *Service) wayOf(c *tools.Caller, cl *call, in InvokeInput) way {
	switch {
	case in.Decline || in.ConfirmRequestID != "":
		return continued{s}
	case cl.write || cl.flat:
		return quoting{s}
	case s.runsAsTask(c, cl):
		return tasked{s}
	}
	return answered{s}
}

// newCall prepares a new call (its args and price, prepare) and builds its record, named by
// the caller's call id (chosen before the call when it carries an idempotency key).
func (s *Service) newCall(ctx context.Context, c *tools.Caller, cl *call, in InvokeInput) (*store.Invocation, error) {
	if err := s.prepare(ctx, cl, in.Args); err != nil {
		return nil, err
	}
	return s.newInvocation(cl, c.NewCallID()), nil
}

// admitted is newCall admitted by the owner's spend policies for its worst case (admit).
func (s *Service) admitted(ctx context.Context, c *tools.Caller, cl *call, in InvokeInput) (*store.Invocation, error) {
	inv, err := s.newCall(ctx, c, cl, in)
	if err != nil {
		return nil, err
	}
	if err := s.admit(ctx, cl, inv, cl.quote.WorstMicro(), chargeOf(cl.quote)); err != nil {
		return nil, err
	}
	return inv, nil
}

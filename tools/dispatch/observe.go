package dispatch

import (
	"context"
	"time"

	"github.com/switchboard-hq/switchboard/tools/partners/outbound"
)

// OutcomeCancelled is an Observation's outcome when the caller went away mid-call.
const OutcomeCancelled = "CANCELLED"

// Observation is one dispatched call, for Config.Observe: how the partner call ended and where
// the time went (Total - Partner is Switchboard's own overhead: reserving, checking, and
// settling unless that is left to the batch writer).
type Observation struct {
	Handle  string
	Outcome string        // an outbound.Outcome (OK, PARTNER_FAILURE, TIMEOUT, ...) or OutcomeCancelled
	Partner time.Duration // the partner call, every try included
	Total   time.Duration // from dispatch start (reservation) until the answer is ready (its outcome recorded, or queued for the batch writer)
}

// observe reports a call to Config.Observe; dispatch defers it once the partner has answered.
func (s *Service) observe(handle, outcome string, partner time.Duration, began time.Time) {
	if s.cfg.Observe != nil {
		s.cfg.Observe(Observation{Handle: handle, Outcome: outcome, Partner: partner, Total: time.Since(began)})
	}
}

func outcomeOf(ctx context.Context, answer *outbound.Result, err error) string {
	if ctx.Err() != nil {
		return OutcomeCancelled
	}
	return string(outbound.Classify(answer, err))
}

package partners

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/switchboard-hq/switchboard/signing"
	partnerstore "github.com/switchboard-hq/switchboard/store/partners"
	"github.com/switchboard-hq/switchboard/tools/partners/outbound"
)

// Continuous re-probe. Activation is gated on one negative-auth probe; nothing guaranteed the
// endpoint stayed that way. Every active intent is probed again at an interval (jittered, so
// a fleet's probes spread out): the unsigned and forged requests again, plus, for idempotent
// categories, a signed health round trip. An endpoint that now accepts an unsigned or forged
// call is deactivated at once; timeouts and 5xx only count against it, and ReprobeFailures in
// a row deactivate it as unhealthy. The publisher is told; they reactivate through the normal
// probe-gated path.

// Reprobe probes the intents that are due, at most `concurrency` at a time, each claimed first
// so that replicas never probe the same intent twice in a round. It returns how many it probed.
func (s *Service) Reprobe(ctx context.Context, every time.Duration, concurrency int) (int, error) {
	now := s.now()
	due, err := s.rows.DueProbes(ctx, now, 200)
	if err != nil {
		return 0, err
	}
	sem := make(chan struct{}, max(concurrency, 1))
	var wg sync.WaitGroup
	var mu sync.Mutex
	n := 0
	var firstErr error
	for _, row := range due {
		// ±10% jitter keeps probes of a fleet from marching in step.
		next := now.Add(every + time.Duration((rand.Float64()*0.2-0.1)*float64(every)))
		won, err := s.rows.ClaimProbe(ctx, row.ID, now, next)
		if err != nil {
			return n, err
		}
		if !won {
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func(row *partnerstore.Intent) {
			defer func() { <-sem; wg.Done() }()
			if err := s.reprobeOne(ctx, row); err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				return
			}
			mu.Lock()
			n++
			mu.Unlock()
		}(row)
	}
	wg.Wait()
	return n, firstErr
}

func (s *Service) reprobeOne(ctx context.Context, row *partnerstore.Intent) error {
	rep := s.Probe(ctx, row)
	result := "probe " + rep.Verdict
	healthy := rep.Verdict == outbound.ProbePass
	for _, step := range rep.Steps {
		if step.Verdict == outbound.StepAccepted {
			// Serving an unsigned or forged call is never tolerated, not even once.
			return s.deactivate(ctx, row, "the endpoint served a call it must refuse: "+rep.Reason, result)
		}
	}
	// Anything else short of PASS (5xx, timeouts, odd statuses) is ill health: it counts.
	if healthy && !IsWriteCategory(row.Category) {
		// A signed health round trip with the probe's args: only for idempotent categories,
		// which may be called again harmlessly.
		args, _ := ProbeArgs(row)
		t := Target(row)
		t.Timeout = min(t.Timeout, s.cfg.ProbeTimeout)
		res, err := s.out.Call(ctx, t, signing.CallFields{RequestID: signing.NewRequestID(), IntentDefinitionID: row.ID,
			UserID: s.UserID(row.OwnerID, row.PartnerID), Args: args})
		switch o := outbound.Classify(res, err); o {
		case outbound.OutcomeOK, outbound.OutcomePartnerAnswer:
			result += ", health " + string(o)
		default:
			healthy, result = false, result+", health "+string(o)
		}
	}
	failures := 0
	if !healthy {
		failures = row.ProbeFailures + 1
	}
	if err := s.rows.RecordProbe(ctx, row.ID, result, failures, s.now()); err != nil {
		return err
	}
	if limit := s.reprobeLimit(); failures >= limit {
		return s.deactivate(ctx, row, fmt.Sprintf("%d re-probes in a row failed (last: %s)", failures, result), result)
	}
	return nil
}

func (s *Service) reprobeLimit() int {
	if s.cfg.ReprobeFailures > 0 {
		return s.cfg.ReprobeFailures
	}
	return 3
}

// deactivate turns an intent off with the reason recorded on it and tells its publisher.
func (s *Service) deactivate(ctx context.Context, row *partnerstore.Intent, reason, result string) error {
	_, err := s.mutate(ctx, byReprobe, func(ctx context.Context) (*partnerstore.Intent, error) { return s.rows.Intent(ctx, row.ID) },
		func(r *partnerstore.Intent) (bool, error) {
			if !r.IsActive {
				return false, nil
			}
			r.IsActive, r.DeactivatedReason = false, "re-probe at "+s.now().Format(time.RFC3339)+": "+reason
			return true, nil
		})
	if err != nil {
		return err
	}
	if err := s.rows.RecordProbe(ctx, row.ID, result, row.ProbeFailures, s.now()); err != nil {
		return err
	}
	s.log.WarnContext(ctx, "intent deactivated by re-probe", "intent", row.PublicIdentifier, "reason", reason)
	if s.cfg.Notify != nil {
		text := fmt.Sprintf("Switchboard deactivated your intent %s.\n\nWhy: %s\n\nFix the endpoint (%s), check it with partner_test_endpoint, then activate it again with partner_set_active or on the portal.\n",
			row.PublicIdentifier, reason, row.ToolEndpoint)
		if err := s.cfg.Notify(ctx, row.OwnerID, "Switchboard deactivated "+row.PublicIdentifier, text); err != nil {
			s.log.WarnContext(ctx, "tell the publisher", "intent", row.PublicIdentifier, "err", err)
		}
	}
	return nil
}

package webhooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/outbox"
	"github.com/switchboard-hq/switchboard/tools"
)

// A fan-out takes at most batchSize events at a time; a claimed delivery is leased for the
// attempt's timeout plus a margin, after which another replica may claim it (this one died
// mid-send).
const (
	batchSize   = 64
	leaseMargin = 30 * time.Second
)

// Default shares of the sender (Config.Slots, PerEndpoint, PerAccount): a replica sends at
// most DefaultSlots at once, at most DefaultPerEndpoint to one endpoint and DefaultPerAccount
// to one account's endpoints, counted with what every replica has in flight. An account's
// silent endpoints then hold at most its share, and the other slots keep moving.
const (
	DefaultSlots       = 8
	DefaultPerEndpoint = 2
	DefaultPerAccount  = 4
)

// Round is what the worker did (RunOnce: in one call).
type Round struct {
	FannedOut int // events given their deliveries
	Attempts  int // deliveries attempted
	Delivered int
	Disabled  int // endpoints disabled
}

// sender keeps the attempts in flight: a slot is taken by each, and given back when it is
// recorded, which wakes the loop to claim what fits in it.
type sender struct {
	s        *Service
	freed    chan struct{} // a slot was given back (buffered: one wake-up is enough)
	wg       sync.WaitGroup
	mu       sync.Mutex
	inFlight int
	round    Round
	err      error // the first attempt's error since the last take
}

func (s *Service) newSender() *sender { return &sender{s: s, freed: make(chan struct{}, 1)} }

// step fans out the events waiting and starts an attempt for every due delivery that fits in
// the free slots and the shares; it returns how many it started. It never waits for an
// attempt: slow ones hold their slots, and the next step fills the others.
func (sn *sender) step(ctx context.Context) (int, error) {
	s := sn.s
	fanOut, due, err := s.outbox.WebhookWork(ctx, s.clock())
	if err != nil {
		return 0, err
	}
	for fanOut {
		n, err := s.outbox.FanOutWebhookEvents(ctx, s.clock(), batchSize, func() string { return "wd_" + NewID()[4:] }, subscribed)
		if err != nil {
			return 0, fmt.Errorf("fan out webhook events: %w", err)
		}
		sn.mu.Lock()
		sn.round.FannedOut += n
		sn.mu.Unlock()
		fanOut = n == batchSize
		due = due || n > 0
	}
	sn.mu.Lock()
	free := s.cfg.Slots - sn.inFlight
	sn.mu.Unlock()
	if !due || free <= 0 {
		return 0, nil
	}
	now := s.clock()
	ids, err := s.outbox.ClaimWebhookDeliveries(ctx, s.cfg.Replica, now, now.Add(s.cfg.Timeout+leaseMargin),
		outbox.Caps{Limit: free, PerEndpoint: s.cfg.PerEndpoint, PerAccount: s.cfg.PerAccount})
	if err != nil {
		return 0, fmt.Errorf("claim webhook deliveries: %w", err)
	}
	sn.mu.Lock()
	sn.inFlight += len(ids)
	sn.mu.Unlock()
	for _, id := range ids {
		sn.wg.Go(func() {
			delivered, disabled, err := s.attempt(ctx, id)
			sn.mu.Lock()
			sn.inFlight--
			sn.round.Attempts++
			if delivered {
				sn.round.Delivered++
			}
			if disabled {
				sn.round.Disabled++
			}
			if err != nil && sn.err == nil {
				sn.err = err
			}
			sn.mu.Unlock()
			select {
			case sn.freed <- struct{}{}:
			default:
			}
		})
	}
	return len(ids), nil
}

// idle reports whether nothing is in flight.
func (sn *sender) idle() bool {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	return sn.inFlight == 0
}

// takeErr returns (and forgets) the first attempt's error since the last call.
func (sn *sender) takeErr() error {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	err := sn.err
	sn.err = nil
	return err
}

// Run delivers until ctx ends (every replica runs it: leases keep two from sending one
// delivery at once). It fans out and claims every interval and whenever an attempt ends, while
// slow attempts are still in flight; on the way out it waits for those in flight.
func (s *Service) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	sn := s.newSender()
	defer sn.wg.Wait()
	var pruned time.Time
	for {
		if _, err := sn.step(ctx); err != nil && ctx.Err() == nil {
			s.log.ErrorContext(ctx, "webhook deliveries", "err", err)
		}
		if err := sn.takeErr(); err != nil && ctx.Err() == nil {
			s.log.ErrorContext(ctx, "webhook delivery", "err", err)
		}
		if now := s.clock(); now.Sub(pruned) >= pruneEvery {
			pruned = now
			if _, err := s.Prune(ctx); err != nil && ctx.Err() == nil {
				s.log.ErrorContext(ctx, "prune webhook events", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-sn.freed:
		}
	}
}

// pruneEvery is how often Run prunes the outbox.
const pruneEvery = time.Hour

// Prune deletes the events older than the retention that nothing waits to deliver, with their
// deliveries and attempts, a batch at a time; it returns how many events it deleted.
func (s *Service) Prune(ctx context.Context) (int, error) {
	const batch = 500
	total := 0
	for {
		n, err := s.outbox.PruneWebhookEvents(ctx, s.clock().Add(-s.cfg.Retention), batch)
		total += n
		if err != nil || n < batch {
			return total, err
		}
	}
}

// RunOnce fans out the events written so far and attempts every delivery due now (by the
// service's clock), once each, within the shares, as Run does; it returns once nothing due
// fits and nothing is in flight.
func (s *Service) RunOnce(ctx context.Context) (Round, error) {
	sn := s.newSender()
	for {
		// Idle before the step, not after: an attempt ending during the claim (which counted
		// it in flight) has signalled freed, and the loop claims again.
		wasIdle := sn.idle()
		n, err := sn.step(ctx)
		if err == nil {
			err = sn.takeErr()
		}
		if err != nil {
			sn.wg.Wait()
			return sn.result(), err
		}
		if n > 0 {
			continue
		}
		if wasIdle {
			return sn.result(), nil
		}
		select {
		case <-sn.freed:
		case <-ctx.Done():
			sn.wg.Wait()
			return sn.result(), ctx.Err()
		}
	}
}

func (sn *sender) result() Round {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	return sn.round
}

// subscribed reports whether an endpoint takes events of type t (none listed: every type).
func subscribed(ep *outbox.Endpoint, t string) bool {
	if len(ep.EventTypes) == 0 {
		return true
	}
	for _, x := range ep.EventTypes {
		if x == t {
			return true
		}
	}
	return false
}

// attempt sends one claimed delivery and records what came of it.
func (s *Service) attempt(ctx context.Context, id string) (delivered, disabled bool, _ error) {
	send, err := s.outbox.WebhookSendOf(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return false, false, nil // its endpoint was deleted meanwhile
	}
	if err != nil {
		return false, false, fmt.Errorf("read webhook delivery %s: %w", id, err)
	}
	at := s.clock()
	status, sendErr := s.post(ctx, send, at)
	a := &outbox.Attempt{ID: "wa_" + NewID()[4:], DeliveryID: id, At: at, Status: status,
		DurationMs: s.clock().Sub(at).Milliseconds()}
	out := outbox.Outcome{Attempt: a, Delivered: sendErr == nil}
	if sendErr != nil {
		// The owner reads a summary; the whole error (TLS details, addresses) is the operator's.
		a.Error = summarize(sendErr, s.cfg.Timeout)
		s.log.DebugContext(ctx, "webhook attempt failed", "delivery", id, "endpoint", send.Endpoint.ID, "err", sendErr)
		out.Next, out.Disable = s.afterFailure(send, at, status)
		if timedOut(sendErr) {
			// A silent receiver holds a slot for the whole timeout: it is paused, and its
			// deliveries wait, so it stops occupying slots.
			out.Pause = s.pauseAfterTimeout(send, s.clock())
			if !out.Next.IsZero() && out.Next.Before(out.Pause) {
				out.Next = out.Pause
			}
		}
	}
	disabled, err = s.outbox.RecordWebhookAttempt(ctx, s.cfg.Replica, send, out, func() string { return NewID()[4:] })
	if errors.Is(err, outbox.ErrLeaseLost) {
		s.log.WarnContext(ctx, "webhook delivery taken over by another replica before its attempt was recorded", "delivery", id)
		return false, false, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("record webhook attempt: %w", err)
	}
	if disabled {
		s.tellDisabled(ctx, send.Endpoint, out.Disable)
	}
	return out.Delivered, disabled, nil
}

// afterFailure decides what follows a failed attempt: the next try (exponential backoff from
// 5 s, doubling, capped at 4 h, with ±20% jitter so failing endpoints are not all retried in
// step), or none once the delivery has been failing for the retry window since its creation
// or its latest replay (at least that long: the last try is after it); and whether the endpoint is disabled (failing for DisableAfter,
// or it answered 410 Gone).
func (s *Service) afterFailure(send *outbox.Send, at time.Time, status int) (next time.Time, disable string) {
	if status == http.StatusGone {
		return time.Time{}, "the endpoint answered 410 Gone"
	}
	since := at
	if send.Endpoint.FailingSince != nil {
		since = *send.Endpoint.FailingSince
	}
	if at.Sub(since) >= s.cfg.DisableAfter {
		disable = fmt.Sprintf("every attempt failed for %s, since %s", s.cfg.DisableAfter, since.UTC().Format(time.RFC3339))
	}
	if at.Sub(send.Delivery.RetryWindowStart()) >= s.cfg.RetryWindow {
		return time.Time{}, disable
	}
	return at.Add(Backoff(send.Delivery.Attempts+1, rand.Float64())), disable
}

// pauseAfterTimeout is when an endpoint whose attempt timed out (ending at end) may be tried
// again: after as long as it has been failing (so the pauses double while it stays silent),
// at least the attempt timeout and at most the longest backoff step.
func (s *Service) pauseAfterTimeout(send *outbox.Send, end time.Time) time.Time {
	since := end
	if send.Endpoint.FailingSince != nil {
		since = *send.Endpoint.FailingSince
	}
	return end.Add(min(max(end.Sub(since), s.cfg.Timeout), maxRetryDelay))
}

// Backoff is the delay after the n-th failed attempt (n >= 1), with jitter in [0, 1) spreading
// it by ±20%.
func Backoff(n int, jitter float64) time.Duration {
	d := firstRetry
	for i := 1; i < n && d < maxRetryDelay; i++ {
		d *= 2
	}
	d = min(d, maxRetryDelay)
	return time.Duration(float64(d) * (0.8 + 0.4*jitter))
}

// post sends the delivery with fresh timestamp and signatures: 2xx is delivered; anything else
// (a redirect, an error status, a timeout, a refused connection) is a failure. The answer's
// body is read up to maxResponseBody and ignored.
func (s *Service) post(ctx context.Context, send *outbox.Send, at time.Time) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	body := []byte(send.Event.Body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, send.Endpoint.URL, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	ts := at.Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Switchboard-Webhooks/1")
	req.Header.Set(signing.WebhookIDHeader, send.Event.ID)
	req.Header.Set(signing.WebhookTimestampHeader, strconv.FormatInt(ts, 10))
	req.Header.Set(signing.WebhookSignatureHeader, signing.SignWebhookV1(s.secret(send.Endpoint), send.Event.ID, ts, body)+" "+
		s.cfg.Signer.SignWebhookV1a(send.Event.ID, ts, body))
	resp, err := s.cfg.Client.HTTPClient().Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseBody))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// The status line is the receiver's and may be any bytes: PostgreSQL would refuse
		// invalid UTF-8, and the attempt, never recorded, would be sent again forever.
		return resp.StatusCode, &statusError{status: tools.Clip(resp.Status, maxStatusLine, "…")}
	}
	return resp.StatusCode, nil
}

// tellDisabled e-mails the account's owner that an endpoint was disabled (the account event
// was written with it).
func (s *Service) tellDisabled(ctx context.Context, ep *outbox.Endpoint, reason string) {
	s.log.WarnContext(ctx, "webhook endpoint disabled", "endpoint", ep.ID, "url", ep.URL, "reason", reason)
	if s.cfg.Notify == nil {
		return
	}
	text := fmt.Sprintf("Switchboard stopped sending events to your webhook endpoint %s.\n\nWhy: %s.\n\n"+
		"Its deliveries wait. Fix the receiver, then replay one of them (webhook_delivery_replay, or the portal's Webhooks page): "+
		"that enables the endpoint again and sends what waits.\n", ep.URL, reason)
	if err := s.cfg.Notify(ctx, ep.AccountID, "Switchboard disabled a webhook endpoint", text); err != nil {
		s.log.WarnContext(ctx, "tell the owner of a disabled webhook endpoint", "endpoint", ep.ID, "err", err)
	}
}

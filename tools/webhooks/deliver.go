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

// A round of the worker handles at most this many events and deliveries, sending up to
// sendConcurrency at once; a claimed delivery is leased for the attempt's timeout plus a
// margin, after which another replica may claim it (this one died mid-send).
const (
	batchSize       = 64
	sendConcurrency = 8
	leaseMargin     = 30 * time.Second
)

// Round is what one round of the worker did.
type Round struct {
	FannedOut int // events given their deliveries
	Attempts  int // deliveries attempted
	Delivered int
	Disabled  int // endpoints disabled
}

// Run delivers until ctx ends, a round every interval (every replica runs it: leases keep two
// from sending one delivery at once).
func (s *Service) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	var pruned time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := s.RunOnce(ctx); err != nil && ctx.Err() == nil {
				s.log.ErrorContext(ctx, "webhook deliveries", "err", err)
			}
			if now := s.clock(); now.Sub(pruned) >= pruneEvery {
				pruned = now
				if _, err := s.Prune(ctx); err != nil && ctx.Err() == nil {
					s.log.ErrorContext(ctx, "prune webhook events", "err", err)
				}
			}
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

// RunOnce fans out the events written since the last round and attempts every delivery due
// now (by the service's clock), once each.
func (s *Service) RunOnce(ctx context.Context) (Round, error) {
	var r Round
	fanOut, due, err := s.outbox.WebhookWork(ctx, s.clock())
	if err != nil || !fanOut && !due {
		return r, err
	}
	for fanOut {
		n, err := s.outbox.FanOutWebhookEvents(ctx, s.clock(), batchSize, func() string { return "wd_" + NewID()[4:] }, subscribed)
		if err != nil {
			return r, fmt.Errorf("fan out webhook events: %w", err)
		}
		r.FannedOut += n
		fanOut = n == batchSize
	}
	for {
		now := s.clock()
		ids, err := s.outbox.ClaimWebhookDeliveries(ctx, s.cfg.Replica, now, now.Add(s.cfg.Timeout+leaseMargin), batchSize)
		if err != nil {
			return r, fmt.Errorf("claim webhook deliveries: %w", err)
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		sem := make(chan struct{}, sendConcurrency)
		var firstErr error
		for _, id := range ids {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				delivered, disabled, err := s.attempt(ctx, id)
				mu.Lock()
				defer mu.Unlock()
				r.Attempts++
				if delivered {
					r.Delivered++
				}
				if disabled {
					r.Disabled++
				}
				if err != nil && firstErr == nil {
					firstErr = err
				}
			})
		}
		wg.Wait()
		if firstErr != nil {
			return r, firstErr
		}
		if len(ids) < batchSize {
			return r, nil
		}
	}
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
		// The text holds the receiver's status line, which may be any bytes: PostgreSQL would
		// refuse invalid UTF-8, and the attempt, never recorded, would be sent again forever.
		a.Error = tools.Clip(sendErr.Error(), 500, "…")
		out.Next, out.Disable = s.afterFailure(send, at, status)
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
		return resp.StatusCode, fmt.Errorf("the endpoint answered %s; only 2xx counts as delivered", resp.Status)
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

package webhooks_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/outbox"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools/partners/partnertest"
	"github.com/switchboard-hq/switchboard/tools/webhooks"
)

// silent is a TCP listener on loopback that accepts connections and never answers (the
// attack of issue 46): an attempt to it ends only by its timeout.
type silent struct {
	l        net.Listener
	accepted chan struct{} // one value per connection accepted
	mu       sync.Mutex
	conns    []net.Conn
}

func newSilent(t *testing.T) *silent {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &silent{l: l, accepted: make(chan struct{}, 1000)}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.accepted <- struct{}{}
		}
	}()
	t.Cleanup(func() {
		l.Close()
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, c := range s.conns {
			c.Close()
		}
	})
	return s
}

func (s *silent) URL() string { return "https://" + s.l.Addr().String() + "/events" }

// emit writes an event for accountID as the money seam does (in a store transaction).
func emit(t *testing.T, st *store.Store, accountID, requestID string, at time.Time) {
	t.Helper()
	if err := st.InTx(context.Background(), func(ctx context.Context, q *store.Q) error {
		return webhooks.Emit(ctx, q, webhooks.CallSucceeded, accountID, at, webhooks.CallData{RequestID: requestID})
	}); err != nil {
		t.Fatal(err)
	}
}

// attemptsOf counts the attempts recorded for an account's deliveries.
func attemptsOf(t *testing.T, st *store.Store, accountID string) int {
	t.Helper()
	n, err := st.DB().NewSelect().Model((*outbox.Attempt)(nil)).
		Where("delivery_id IN (SELECT id FROM webhook_deliveries WHERE account_id = ?)", accountID).Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}

// Ten endpoints of one account that accept TCP and never answer, with more deliveries waiting
// for them than the replica has slots, never hold another account's event: the worker
// running as serve runs it, the healthy account's event (written after the silent attempts
// are in flight) is delivered while every one of those attempts is still blocked, none of
// them having timed out or been recorded. The timeout is long, so the order cannot flake:
// before this sender, that event waited for a whole round of silent attempts (four waves of
// the timeout here) before it was even fanned out.
func TestSilentEndpointsNeverStallAnotherAccount(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		healthy := newReceiver(t)
		const timeout = 30 * time.Second
		w := newWorld(t, s, worldOptions{allowLocal: true, caPEM: partnertest.CAPEM(healthy.srv), timeout: timeout})
		silents := make([]*silent, webhooks.MaxEndpoints)
		for i := range silents {
			silents[i] = newSilent(t)
			w.mustCall(w.root, "webhook_endpoint_create", map[string]any{"url": silents[i].URL()})
		}
		storetest.Account(t, s, "healthy")
		if err := outbox.New(s).CreateWebhookEndpoint(ctx, &outbox.Endpoint{ID: "we_healthy", AccountID: "healthy", URL: healthy.URL(),
			SecretSalt: []byte("salt"), CreatedAt: w.clock.Now()}, webhooks.MaxEndpoints); err != nil {
			t.Fatal(err)
		}
		got := make(chan struct{}, 1)
		healthy.answer = func(int) int {
			select {
			case got <- struct{}{}:
			default:
			}
			return http.StatusOK
		}

		// Three events of the attacked account: 30 deliveries that can only time out.
		for i := range 3 {
			emit(t, s, "acct", fmt.Sprintf("silent-%d", i), w.clock.Now())
		}
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); w.hooks.Run(runCtx, 20*time.Millisecond) }()
		t.Cleanup(func() {
			stop()
			for _, sl := range silents { // the blocked attempts end, and Run returns
				sl.l.Close()
				sl.mu.Lock()
				for _, c := range sl.conns {
					c.Close()
				}
				sl.mu.Unlock()
			}
			<-done
		})

		// Wait for the account's share of silent attempts to be in flight.
		deadline := time.After(timeout)
		for inFlight := 0; inFlight < webhooks.DefaultPerAccount; inFlight++ {
			select {
			case <-silents[0].accepted:
			case <-silents[1].accepted:
			case <-silents[2].accepted:
			case <-silents[3].accepted:
			case <-silents[4].accepted:
			case <-silents[5].accepted:
			case <-silents[6].accepted:
			case <-silents[7].accepted:
			case <-silents[8].accepted:
			case <-silents[9].accepted:
			case <-deadline:
				t.Fatalf("only %d silent attempts started within %s", inFlight, timeout)
			}
		}
		emit(t, s, "healthy", "healthy-1", w.clock.Now())
		select {
		case <-got:
		case <-time.After(timeout):
			t.Fatalf("the healthy account's event was not delivered within the %s the silent attempts are blocked for", timeout)
		}
		if n := attemptsOf(t, s, "acct"); n != 0 {
			t.Fatalf("%d silent attempts ended before the healthy event was delivered: it waited for them", n)
		}
		healthy.mu.Lock()
		defer healthy.mu.Unlock()
		if len(healthy.ok) != 1 {
			t.Fatalf("the healthy receiver got %d events", len(healthy.ok))
		}
	})
}

// An endpoint whose attempts time out is paused: the attempts in flight when it happened are
// the last for a while, what waits for it (and what is fanned out meanwhile) is moved to the
// pause's end, which grows while it stays silent; once the pause ends one attempt at a time
// tries it, and the first success ends the pause: what waited is sent.
func TestTimedOutEndpointIsPausedThenTriedOneAtATime(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		var mu sync.Mutex
		answering, requests := false, 0
		rcv := newReceiver(t)
		const timeout = 200 * time.Millisecond
		w := newWorld(t, s, worldOptions{allowLocal: true, caPEM: partnertest.CAPEM(rcv.srv), timeout: timeout})
		rcv.srv.Config.Handler = http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			mu.Lock()
			requests++
			ok := answering
			mu.Unlock()
			if !ok {
				select { // silent until the client gives up
				case <-r.Context().Done():
				case <-time.After(10 * timeout):
				}
				return
			}
			rw.WriteHeader(http.StatusNoContent)
		})
		w.mustCall(w.root, "webhook_endpoint_create", map[string]any{"url": rcv.URL()})
		for i := range 5 {
			emit(t, s, "acct", fmt.Sprintf("r%d", i), w.clock.Now())
		}
		endpoint := func() *outbox.Endpoint {
			t.Helper()
			eps, err := outbox.New(s).WebhookEndpoints(ctx, "acct")
			if err != nil || len(eps) != 1 {
				t.Fatal(eps, err)
			}
			return eps[0]
		}
		pending := func() []*outbox.DeliveryRow {
			t.Helper()
			rows, err := outbox.New(s).WebhookDeliveries(ctx, "acct", outbox.DeliveryFilter{State: outbox.DeliveryPending, Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			return rows
		}

		start := w.clock.Now()
		if r := w.run(); r.FannedOut != 5 || r.Attempts != webhooks.DefaultPerEndpoint {
			t.Fatalf("first round %+v: want the endpoint's share (%d) attempted, then none while it is paused", r, webhooks.DefaultPerEndpoint)
		}
		ep := endpoint()
		if ep.PausedUntil == nil || !ep.PausedUntil.Equal(start.Add(timeout)) {
			t.Fatalf("paused until %v, want the timeout after the attempt (%v)", ep.PausedUntil, start.Add(timeout))
		}
		for _, d := range pending() {
			if d.NextAttemptAt.Before(*ep.PausedUntil) {
				t.Fatalf("delivery %s due %v, before the pause ends", d.ID, d.NextAttemptAt)
			}
		}
		emit(t, s, "acct", "during", w.clock.Now())
		if r := w.run(); r.FannedOut != 1 || r.Attempts != 0 {
			t.Fatalf("round during the pause %+v: want the event fanned out and nothing attempted", r)
		}

		// The pause ends: one trial at a time, which times out again, and the pause grows to
		// as long as the endpoint has been failing (here: the timeout, then twice it).
		again := ep
		for trial := range 2 {
			w.clock.Set(*again.PausedUntil)
			if r := w.run(); r.Attempts != 1 {
				t.Fatalf("round after pause %d: %+v, want one trial attempt", trial+1, r)
			}
			again = endpoint()
			failing := w.clock.Now().Sub(start)
			if again.PausedUntil == nil || again.PausedUntil.Sub(w.clock.Now()) != failing {
				t.Fatalf("paused until %v at %v: want %s, as long as it has been failing", again.PausedUntil, w.clock.Now(), failing)
			}
		}

		// The receiver answers: the trial succeeds, the pause ends, and everything is sent.
		mu.Lock()
		answering = true
		mu.Unlock()
		w.clock.Set(*again.PausedUntil)
		if r := w.run(); r.Attempts != 2 || r.Delivered != 2 {
			t.Fatalf("round after the receiver came back %+v: want the trial and the other delivery never tried delivered", r)
		}
		for range 20 { // the deliveries that timed out are sent at their own backoff's end
			next, err := outbox.New(s).NextWebhookAttemptAt(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if next.IsZero() {
				break
			}
			w.clock.Set(next)
			w.run()
		}
		if ep := endpoint(); ep.PausedUntil != nil || ep.FailingSince != nil {
			t.Fatalf("after a success: paused until %v, failing since %v", ep.PausedUntil, ep.FailingSince)
		}
		if left := pending(); len(left) != 0 {
			t.Fatalf("%d still pending", len(left))
		}
		mu.Lock()
		defer mu.Unlock()
		if requests != webhooks.DefaultPerEndpoint+2+6 {
			t.Fatalf("the receiver saw %d requests, want %d", requests, webhooks.DefaultPerEndpoint+2+6)
		}
	})
}

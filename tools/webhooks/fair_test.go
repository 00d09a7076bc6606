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

func newSilent(t testing.TB) *silent {
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
	t.Cleanup(s.close)
	return s
}

// close stops listening and drops the connections held: the attempts blocked on them end.
func (s *silent) close() {
	s.l.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.Close()
	}
	s.conns = nil
}

// URL is the listener's as an http URL (development's SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS
// takes it), so that an attempt is blocked for exactly the attempt timeout: over https the
// client's 10 s TLS handshake timeout would end it first.
func (s *silent) URL() string { return "http://" + s.l.Addr().String() + "/events" }

// emit writes an event for accountID as the money seam does (in a store transaction).
func emit(t testing.TB, st *store.Store, accountID, requestID string, at time.Time) {
	t.Helper()
	if err := st.InTx(context.Background(), func(ctx context.Context, q *store.Q) error {
		return webhooks.Emit(ctx, q, webhooks.CallSucceeded, accountID, at, webhooks.CallData{RequestID: requestID})
	}); err != nil {
		t.Fatal(err)
	}
}

// attemptsOf counts the attempts recorded for an account's deliveries.
func attemptsOf(t testing.TB, st *store.Store, accountID string) int {
	t.Helper()
	n, err := st.DB().NewSelect().Model((*outbox.Attempt)(nil)).
		Where("delivery_id IN (SELECT id FROM webhook_deliveries WHERE account_id = ?)", accountID).Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}

// attack is issue 46's: ten endpoints of one account ("acct") that accept TCP and never
// answer, three events of that account waiting for them (30 deliveries, more than a
// replica's slots), and a healthy receiver of another account ("healthy"), with the worker
// running as serve runs it (a round every interval). It returns once the attacked account's share of silent attempts
// is in flight.
type attack struct {
	w       *world
	st      *store.Store
	healthy *receiver
	got     chan time.Time // when the healthy receiver got an event
	stop    func()         // ends the worker and the silent attempts
}

func startAttack(t testing.TB, st *store.Store, timeout, every time.Duration) *attack {
	ctx := context.Background()
	a := &attack{st: st, healthy: newReceiver(t), got: make(chan time.Time, 1)}
	a.w = newWorld(t, st, worldOptions{allowLocal: true, caPEM: partnertest.CAPEM(a.healthy.srv), timeout: timeout})
	silents := make([]*silent, webhooks.MaxEndpoints)
	for i := range silents {
		silents[i] = newSilent(t)
		a.w.mustCall(a.w.root, "webhook_endpoint_create", map[string]any{"url": silents[i].URL()})
	}
	storetest.Account(t, st, "healthy")
	if err := outbox.New(st).CreateWebhookEndpoint(ctx, &outbox.Endpoint{ID: "we_healthy", AccountID: "healthy", URL: a.healthy.URL(),
		SecretSalt: []byte("salt"), CreatedAt: a.w.clock.Now()}, webhooks.MaxEndpoints); err != nil {
		t.Fatal(err)
	}
	a.healthy.answer = func(int) int {
		select {
		case a.got <- time.Now():
		default:
		}
		return http.StatusOK
	}
	for i := range 3 {
		emit(t, st, "acct", fmt.Sprintf("silent-%d", i), a.w.clock.Now())
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); a.w.hooks.Run(runCtx, every) }()
	a.stop = func() {
		stop()
		for _, sl := range silents {
			sl.close()
		}
		<-done
	}
	accepted := make(chan struct{}, 100)
	for _, sl := range silents {
		go func() {
			for range sl.accepted {
				accepted <- struct{}{}
			}
		}()
	}
	deadline := time.After(timeout)
	for inFlight := 0; inFlight < webhooks.DefaultPerAccount; inFlight++ {
		select {
		case <-accepted:
		case <-deadline:
			a.stop()
			t.Fatalf("only %d silent attempts started within %s", inFlight, timeout)
		}
	}
	return a
}

// Ten endpoints of one account that accept TCP and never answer, with more deliveries waiting
// for them than the replica has slots, never hold another account's event: the healthy
// account's event (written after the silent attempts are in flight) is delivered while every
// one of those attempts is still blocked, none of them having timed out or been recorded.
// The timeout is long, so the order cannot flake: before this sender, that event waited for
// a whole round of silent attempts (four waves of the timeout here) before it was even fanned
// out, and this test failed after the timeout.
func TestSilentEndpointsNeverStallAnotherAccount(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		const timeout = 30 * time.Second
		a := startAttack(t, s, timeout, 20*time.Millisecond)
		defer a.stop()
		emit(t, s, "healthy", "healthy-1", a.w.clock.Now())
		select {
		case <-a.got:
		case <-time.After(timeout):
			t.Fatalf("the healthy account's event was not delivered within the %s the silent attempts are blocked for", timeout)
		}
		if n := attemptsOf(t, s, "acct"); n != 0 {
			t.Fatalf("%d silent attempts ended before the healthy event was delivered: it waited for them", n)
		}
		a.healthy.mu.Lock()
		defer a.healthy.mu.Unlock()
		if len(a.healthy.ok) != 1 {
			t.Fatalf("the healthy receiver got %d events", len(a.healthy.ok))
		}
	})
}

// How long the healthy account's event waits under the attack, from its write to its
// arrival, with the default attempt timeout and serve's interval (docs/webhooks.md quotes it).
func BenchmarkHealthyEventBesideSilentEndpoints(b *testing.B) {
	for _, dialect := range storetest.Dialects() {
		b.Run(dialect, func(b *testing.B) {
			var waited time.Duration
			for range b.N {
				b.StopTimer()
				st := storetest.Open(b, dialect)
				a := startAttack(b, st, webhooks.DefaultTimeout, time.Second) // serve's interval
				b.StartTimer()
				at := time.Now()
				emit(b, st, "healthy", "healthy-1", a.w.clock.Now())
				select {
				case got := <-a.got:
					waited += got.Sub(at)
				case <-time.After(10 * time.Minute):
					b.Fatal("the healthy event waited more than 10 minutes")
				}
				b.StopTimer()
				a.stop()
			}
			b.ReportMetric(float64(waited.Microseconds())/1000/float64(b.N), "healthy-wait-ms")
		})
	}
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
		release := make(chan struct{})
		t.Cleanup(func() { close(release) }) // before the receiver closes: it waits for its handlers
		const timeout = 200 * time.Millisecond
		w := newWorld(t, s, worldOptions{allowLocal: true, caPEM: partnertest.CAPEM(rcv.srv), timeout: timeout})
		rcv.srv.Config.Handler = http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			mu.Lock()
			requests++
			ok := answering
			mu.Unlock()
			if !ok {
				select { // silent until the client gives up, or the test ends
				case <-r.Context().Done():
				case <-release:
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

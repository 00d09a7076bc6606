package webhooks_test

import (
	"bufio"
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/outbox"
	"github.com/switchboard-hq/switchboard/store/sessions"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/partners/outbound"
	"github.com/switchboard-hq/switchboard/tools/partners/partnertest"
	"github.com/switchboard-hq/switchboard/tools/service"
	"github.com/switchboard-hq/switchboard/tools/webhooks"
)

// A delivery to an endpoint that always fails is retried for at least 24 hours and then given
// up; an endpoint failing every attempt for five days is disabled, with an account event and
// a notice to its owner, and sent nothing more; a replay (after the receiver is fixed) enables
// it again and delivers with the same webhook-id. An event type the endpoint did not choose
// is never delivered to it.
func TestFailingEndpointGivesUpThenIsDisabledAndReplayRevivesIt(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		rcv := newReceiver(t)
		fixed := false
		rcv.answer = func(int) int {
			if fixed {
				return http.StatusNoContent
			}
			return http.StatusServiceUnavailable
		}
		w := newWorld(t, s, worldOptions{allowLocal: true, caPEM: partnertest.CAPEM(rcv.srv)})
		ep := w.mustCall(w.root, "webhook_endpoint_create", map[string]any{"url": rcv.URL(), "eventTypes": []string{"call.succeeded"}}).(webhooks.CreateOutput).Endpoint
		emit := func(typ string) {
			if err := s.InTx(ctx, func(ctx context.Context, q *store.Q) error {
				return webhooks.Emit(ctx, q, typ, "acct", w.clock.Now(), webhooks.CallData{RequestID: typ})
			}); err != nil {
				t.Fatal(err)
			}
		}
		emit(webhooks.CallSucceeded)
		emit(webhooks.CallFailed) // not chosen: never a delivery
		first := w.clock.Now()
		// Day by day, one new event each day, the clock moved to each attempt due.
		var disabledAt time.Time
		for day := 0; day < 7 && disabledAt.IsZero(); day++ {
			if day > 0 {
				emit(webhooks.CallSucceeded)
			}
			dayEnd := first.Add(time.Duration(day+1) * 24 * time.Hour)
			for i := 0; i < 100; i++ {
				if r := w.run(); r.Disabled > 0 {
					disabledAt = w.clock.Now()
					break
				}
				next, _ := outbox.New(s).NextWebhookAttemptAt(ctx)
				if next.IsZero() || next.After(dayEnd) {
					break
				}
				w.clock.Set(next)
			}
			w.clock.Set(dayEnd)
		}
		if disabledAt.IsZero() || disabledAt.Sub(first) < webhooks.DefaultDisableAfter {
			t.Fatalf("disabled at %v, %s after the first failure", disabledAt, disabledAt.Sub(first))
		}
		page := w.mustCall(w.root, "webhook_delivery_list", map[string]any{"endpointId": ep.ID, "limit": 100}).(webhooks.ListDeliveriesOutput)
		var gaveUp *webhooks.Delivery
		for i, d := range page.Deliveries {
			if d.EventType != webhooks.CallSucceeded {
				t.Fatalf("a %s was delivered to an endpoint that chose call.succeeded only", d.EventType)
			}
			if d.State == outbox.DeliveryFailed && gaveUp == nil {
				gaveUp = &page.Deliveries[i]
			}
		}
		if gaveUp == nil {
			t.Fatalf("no delivery was given up: %+v", page.Deliveries)
		}
		if last := gaveUp.Attempts[len(gaveUp.Attempts)-1].At; last.Sub(gaveUp.CreatedAt) < 24*time.Hour {
			t.Fatalf("given up after %s, before 24 hours (%d attempts)", last.Sub(gaveUp.CreatedAt), len(gaveUp.Attempts))
		}
		t.Logf("a delivery failing throughout: %d attempts over %s, then given up; endpoint disabled %s after its first failure",
			len(gaveUp.Attempts), gaveUp.Attempts[len(gaveUp.Attempts)-1].At.Sub(gaveUp.CreatedAt).Round(time.Minute), disabledAt.Sub(first).Round(time.Minute))
		eps := w.mustCall(w.root, "webhook_endpoint_list", nil).(webhooks.ListEndpointsOutput).Endpoints
		if len(eps) != 1 || eps[0].DisabledAt == nil || !strings.Contains(eps[0].DisabledReason, "every attempt failed") {
			t.Fatalf("endpoint %+v", eps)
		}
		evs, err := sessions.New(s).AccountEvents(ctx, "acct")
		if err != nil || len(evs) != 1 || evs[0].Kind != sessions.EventWebhookEndpointDisabled {
			t.Fatalf("account events %+v %v", evs, err)
		}
		if len(w.notices) != 1 || !strings.Contains(w.notices[0], rcv.URL()) {
			t.Fatalf("notices %q", w.notices)
		}
		// Disabled: nothing is attempted any more, however late.
		requests := rcv.requests
		emit(webhooks.CallSucceeded)
		w.clock.Add(48 * time.Hour)
		if r := w.run(); r.Attempts != 0 || rcv.requests != requests {
			t.Fatalf("a disabled endpoint was sent %d attempts", r.Attempts)
		}
		// Fixed and replayed: enabled again, the replayed delivery and those that waited arrive.
		fixed = true
		rep := w.mustCall(w.root, "webhook_delivery_replay", map[string]any{"deliveryId": gaveUp.ID}).(webhooks.ReplayOutput)
		if rep.Delivery.State != outbox.DeliveryPending || rep.Notice == "" {
			t.Fatalf("replay %+v", rep)
		}
		w.run()
		if rcv.ok[gaveUp.WebhookID] != 1 {
			t.Fatalf("the replayed %s arrived %d times", gaveUp.WebhookID, rcv.ok[gaveUp.WebhookID])
		}
		if pending, _ := outbox.New(s).WebhookDeliveries(ctx, "acct", outbox.DeliveryFilter{State: outbox.DeliveryPending, Limit: 10}); len(pending) != 0 {
			t.Fatalf("%d deliveries still pending after the endpoint came back", len(pending))
		}
	})
}

// A receiver's answer is read only up to a small limit and ignored: a 2xx with an endless body
// is delivered without reading it, and one that never answers fails by the timeout.
func TestResponseBodyIsBoundedAndSlowReceiversTimeOut(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		var mu sync.Mutex
		var written int64
		release := make(chan struct{})
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/hang" {
				<-release
				return
			}
			w.WriteHeader(http.StatusOK)
			chunk := make([]byte, 64<<10)
			for range 1024 { // 64 MiB unless the client stops reading
				n, err := w.Write(chunk)
				mu.Lock()
				written += int64(n)
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}))
		srv.Config.ErrorLog = log.New(io.Discard, "", 0)
		srv.StartTLS()
		t.Cleanup(func() { close(release); srv.Close() })
		w := newWorld(t, s, worldOptions{allowLocal: true, caPEM: partnertest.CAPEM(srv), timeout: 300 * time.Millisecond})
		w.mustCall(w.root, "webhook_endpoint_create", map[string]any{"url": srv.URL + "/big", "eventTypes": []string{"key.created"}})
		w.mustCall(w.root, "webhook_endpoint_create", map[string]any{"url": srv.URL + "/hang", "eventTypes": []string{"key.created"}})
		w.mustCall(w.root, "api_key_create", map[string]any{"name": "k", "scopes": []string{"read"}})
		w.run()
		page := w.mustCall(w.root, "webhook_delivery_list", nil).(webhooks.ListDeliveriesOutput)
		states := map[string]webhooks.Delivery{}
		for _, d := range page.Deliveries {
			states[strings.TrimPrefix(d.URL, srv.URL)] = d
		}
		if d := states["/big"]; d.State != outbox.DeliveryDelivered {
			t.Fatalf("the big answer's delivery: %+v", d)
		}
		if d := states["/hang"]; d.State != outbox.DeliveryPending || len(d.Attempts) != 1 || d.Attempts[0].Error != "timed out after 300 ms without an answer" {
			t.Fatalf("the hanging receiver's delivery: %+v", d)
		}
		mu.Lock()
		defer mu.Unlock()
		if written >= 64<<20 {
			t.Fatalf("the whole %d-byte answer was read", written)
		}
	})
}

// Two replicas running rounds at once on one database never both send a delivery: each
// webhook-id arrives once.
func TestTwoReplicasSendEachDeliveryOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		rcv := newReceiver(t)
		w := newWorld(t, s, worldOptions{allowLocal: true, caPEM: partnertest.CAPEM(rcv.srv)})
		w.mustCall(w.root, "webhook_endpoint_create", map[string]any{"url": rcv.URL()})
		out, err := outbound.New(outbound.Options{AllowLocal: true, ExtraCAPEM: partnertest.CAPEM(rcv.srv)})
		if err != nil {
			t.Fatal(err)
		}
		other, err := webhooks.NewService(webhooks.Config{SecretKey: []byte("a test secret key of 32 bytes..."), Signer: w.signer, Client: out, AllowLocal: true},
			service.Deps{Store: s, Now: w.clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		const events = 150
		for i := range events {
			if err := s.InTx(ctx, func(ctx context.Context, q *store.Q) error {
				return webhooks.Emit(ctx, q, webhooks.CallSucceeded, "acct", w.clock.Now(), webhooks.CallData{RequestID: strings.Repeat("x", i%7)})
			}); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		rounds := [2]webhooks.Round{}
		for i, svc := range []*webhooks.Service{w.hooks, other} {
			wg.Go(func() {
				r, err := svc.RunOnce(ctx)
				if err != nil {
					t.Error(err)
				}
				rounds[i] = r
			})
		}
		wg.Wait()
		w.run() // whatever one replica fanned out after the other's claim
		rcv.mu.Lock()
		defer rcv.mu.Unlock()
		dup := 0
		for _, n := range rcv.ok {
			dup += n - 1
		}
		if len(rcv.ok) != events || dup != 0 {
			t.Fatalf("%d of %d events arrived, %d twice (rounds %+v)", len(rcv.ok), events, dup, rounds)
		}
	})
}

// Deliveries fanned out in one round share their created_at: paging through more of them than
// a page holds lists each exactly once, and a beforeId without before is refused.
func TestDeliveryListPagesThroughOneRoundsDeliveries(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		w := newWorld(t, s, worldOptions{})
		// Two endpoints, never sent to: the test fans out but makes no round.
		for _, u := range []string{"https://93.184.215.14/a", "https://93.184.215.14/b"} {
			w.mustCall(w.root, "webhook_endpoint_create", map[string]any{"url": u, "eventTypes": []string{"call.succeeded"}})
		}
		const events = 7 // 14 deliveries, all created at one instant
		for i := range events {
			if err := s.InTx(ctx, func(ctx context.Context, q *store.Q) error {
				return webhooks.Emit(ctx, q, webhooks.CallSucceeded, "acct", w.clock.Now(), webhooks.CallData{RequestID: strings.Repeat("r", i+1)})
			}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := outbox.New(s).FanOutWebhookEvents(ctx, w.clock.Now(), 100, func() string { return "wd_" + webhooks.NewID()[4:] }, func(*outbox.Endpoint, string) bool { return true }); err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		args := map[string]any{"limit": 4}
		pages := 0
		for ; pages < 10; pages++ {
			page := w.mustCall(w.root, "webhook_delivery_list", args).(webhooks.ListDeliveriesOutput)
			for _, d := range page.Deliveries {
				seen[d.ID]++
			}
			if page.NextBefore == nil {
				break
			}
			if page.NextBeforeID == "" {
				t.Fatalf("page %d: nextBefore without nextBeforeId", pages)
			}
			args = map[string]any{"limit": 4, "before": page.NextBefore, "beforeId": page.NextBeforeID}
		}
		for id, n := range seen {
			if n != 1 {
				t.Errorf("delivery %s listed %d times", id, n)
			}
		}
		if len(seen) != 2*events || pages != 3 {
			t.Fatalf("%d of %d deliveries listed in %d pages", len(seen), 2*events, pages+1)
		}
		if _, e := w.call(w.root, "webhook_delivery_list", map[string]any{"beforeId": "wd_x"}); e == nil || e.Code != tools.CodeBadInput || !strings.Contains(e.Message, "nextBefore and nextBeforeId") {
			t.Fatalf("beforeId alone: %v", e)
		}
	})
}

// A receiver whose status line holds invalid UTF-8 and a NUL (which neither the query builder
// nor PostgreSQL takes in text) gets its attempt recorded, the text made valid, and the
// delivery backs off instead of being sent again at every round.
func TestStatusLineNotUTF8IsRecordedAndBacksOff(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		var mu sync.Mutex
		requests := 0
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				go func() {
					defer c.Close()
					req, err := http.ReadRequest(bufio.NewReader(c))
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					mu.Lock()
					requests++
					mu.Unlock()
					io.WriteString(c, "HTTP/1.1 500 Br\xc3\xff\xfeken \x00 \xe2\x82\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
				}()
			}
		}()
		w := newWorld(t, s, worldOptions{allowLocal: true})
		w.mustCall(w.root, "webhook_endpoint_create", map[string]any{"url": "http://" + l.Addr().String() + "/events", "eventTypes": []string{"key.created"}})
		w.mustCall(w.root, "api_key_create", map[string]any{"name": "k", "scopes": []string{"read"}})
		if r := w.run(); r.Attempts != 1 {
			t.Fatalf("round %+v", r)
		}
		if r := w.run(); r.Attempts != 0 {
			t.Fatalf("attempted again at once: %+v", r)
		}
		page := w.mustCall(w.root, "webhook_delivery_list", nil).(webhooks.ListDeliveriesOutput)
		if len(page.Deliveries) != 1 {
			t.Fatalf("deliveries %+v", page.Deliveries)
		}
		d := page.Deliveries[0]
		if d.State != outbox.DeliveryPending || len(d.Attempts) != 1 || d.Attempts[0].Status != 500 || d.NextAttemptAt == nil {
			t.Fatalf("delivery %+v", d)
		}
		if e := d.Attempts[0].Error; !utf8.ValidString(e) || !strings.Contains(e, "500 Br\uFFFDken \uFFFD \uFFFD") {
			t.Fatalf("attempt error %q", e)
		}
		if wait := d.NextAttemptAt.Sub(d.Attempts[0].At); wait < 4*time.Second || wait > 6*time.Second {
			t.Fatalf("next attempt %s after the first, want the first backoff step", wait)
		}
		mu.Lock()
		defer mu.Unlock()
		if requests != 1 {
			t.Fatalf("the receiver got %d requests", requests)
		}
	})
}

// A replay of a delivery given up after its retry window is retried for a whole window again,
// its backoff restarting at the first step, before it is given up again.
func TestReplayRetriesForAWholeWindowAgain(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		rcv := newReceiver(t)
		rcv.answer = func(int) int { return http.StatusServiceUnavailable }
		w := newWorld(t, s, worldOptions{allowLocal: true, caPEM: partnertest.CAPEM(rcv.srv)})
		w.mustCall(w.root, "webhook_endpoint_create", map[string]any{"url": rcv.URL(), "eventTypes": []string{"key.created"}})
		w.mustCall(w.root, "api_key_create", map[string]any{"name": "k", "scopes": []string{"read"}})
		// untilGivenUp moves the clock to each attempt due until none is.
		untilGivenUp := func() webhooks.Delivery {
			t.Helper()
			for range 200 {
				w.run()
				next, err := outbox.New(s).NextWebhookAttemptAt(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if next.IsZero() {
					break
				}
				w.clock.Set(next)
			}
			page := w.mustCall(w.root, "webhook_delivery_list", nil).(webhooks.ListDeliveriesOutput)
			if len(page.Deliveries) != 1 || page.Deliveries[0].State != outbox.DeliveryFailed {
				t.Fatalf("deliveries %+v", page.Deliveries)
			}
			return page.Deliveries[0]
		}
		first := untilGivenUp()
		tries := len(first.Attempts)

		w.clock.Add(36 * time.Hour) // long after its window
		replayedAt := w.clock.Now()
		w.mustCall(w.root, "webhook_delivery_replay", map[string]any{"deliveryId": first.ID})
		w.run()
		page := w.mustCall(w.root, "webhook_delivery_list", nil).(webhooks.ListDeliveriesOutput)
		d := page.Deliveries[0]
		if d.State != outbox.DeliveryPending || d.NextAttemptAt == nil || d.NextAttemptAt.Sub(replayedAt) > 6*time.Second {
			t.Fatalf("after the replayed attempt: state %s, next attempt %v (replayed at %v)", d.State, d.NextAttemptAt, replayedAt)
		}
		again := untilGivenUp()
		last := again.Attempts[len(again.Attempts)-1].At
		if last.Sub(replayedAt) < webhooks.DefaultRetryWindow || len(again.Attempts)-tries < 10 {
			t.Fatalf("given up again %s after the replay, after %d attempts", last.Sub(replayedAt), len(again.Attempts)-tries)
		}
	})
}

package webhooks_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/outbox"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/keys"
	"github.com/switchboard-hq/switchboard/tools/partners/outbound"
	"github.com/switchboard-hq/switchboard/tools/partners/partnertest"
	"github.com/switchboard-hq/switchboard/tools/service"
	"github.com/switchboard-hq/switchboard/tools/webhooks"
)

// clock is the service's clock, moved by the test.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.now) {
		c.now = t
	}
}
func (c *clock) Add(d time.Duration) { c.Set(c.Now().Add(d)) }

// world is an account with a root key, the key and webhook services behind one kernel, and a
// TLS receiver the outbound client trusts.
type world struct {
	t       testing.TB
	st      *store.Store
	clock   *clock
	kernel  *tools.Kernel
	hooks   *webhooks.Service
	signer  *signing.Signer
	root    string // the root key's secret
	child   string // a key minted under it
	notices []string
	mu      sync.Mutex
}

type worldOptions struct {
	allowLocal bool
	caPEM      []byte
	timeout    time.Duration
}

func newWorld(t testing.TB, s *store.Store, o worldOptions) *world {
	ctx := context.Background()
	w := &world{t: t, st: s, clock: &clock{now: time.Now().UTC().Truncate(time.Second)}}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	d := service.Deps{Store: s, Now: w.clock.Now, Log: quiet}
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	w.signer = signing.NewSigner(priv)
	out, err := outbound.New(outbound.Options{AllowLocal: o.allowLocal, ExtraCAPEM: o.caPEM, Log: quiet, Resolver: loopbackResolver{}})
	if err != nil {
		t.Fatal(err)
	}
	w.hooks, err = webhooks.NewService(webhooks.Config{SecretKey: []byte("a test secret key of 32 bytes..."), Signer: w.signer, Client: out,
		AllowLocal: o.allowLocal, Timeout: o.timeout, Notify: func(_ context.Context, accountID, subject, text string) error {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.notices = append(w.notices, accountID+": "+subject+": "+text)
			return nil
		}}, d)
	if err != nil {
		t.Fatal(err)
	}
	ks := keys.NewService(keys.Config{Env: "test", Defaults: keys.Limits{SpendMicro: 5_000_000, RatePerMinute: 10_000}}, d)
	root, rootSecret := ks.New("acct", "root", tools.ScopeNames(), keys.Limits{SpendMicro: 9_000_000, RatePerMinute: 10_000})
	if err := accounts.New(s).Create(ctx, &accounts.Account{ID: "acct", Email: "owner@example.com", CreatedAt: w.clock.Now()}, nil, root); err != nil {
		t.Fatal(err)
	}
	child, childSecret := ks.New("acct", "child", []string{"read", "publish"}, keys.Limits{SpendMicro: 1_000_000, RatePerMinute: 10_000})
	child.ParentID = &root.ID
	if err := accounts.New(s).MintKey(ctx, child, keys.MaxLiveKeys); err != nil {
		t.Fatal(err)
	}
	w.root, w.child = rootSecret, childSecret
	w.kernel, err = tools.NewKernel(keys.NewAuthenticator(d, nil), tools.NewRateLimiter(w.clock.Now), nil, quiet, w.clock.Now, append(ks.Tools(), w.hooks.Tools()...)...)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// loopbackResolver resolves localhost to loopback and no other name, as a deployment's
// resolver (named in its error) answers for a name that does not exist: no test asks DNS.
type loopbackResolver struct{}

func (loopbackResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if host == "localhost" {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, Server: "10.0.0.2:53", IsNotFound: true}
}

func (w *world) call(key, tool string, args any) (any, *tools.Error) {
	raw, _ := json.Marshal(args)
	return w.kernel.Call(context.Background(), tools.Request{Tool: tool, Args: raw, APIKey: key})
}

func (w *world) mustCall(key, tool string, args any) any {
	w.t.Helper()
	out, e := w.call(key, tool, args)
	if e != nil {
		w.t.Fatalf("%s: %s %s", tool, e.Code, e.Message)
	}
	return out
}

// run makes rounds until nothing is due now.
func (w *world) run() webhooks.Round {
	w.t.Helper()
	r, err := w.hooks.RunOnce(context.Background())
	if err != nil {
		w.t.Fatal(err)
	}
	return r
}

// receiver is a TLS endpoint on a fixed loopback address that can fail, go down (connection
// refused) and come back, recording what it received and checking both signatures.
type receiver struct {
	t        testing.TB
	addr     string
	mu       sync.Mutex
	srv      *httptest.Server
	answer   func(n int) int // the status of the n-th request (1-based); 0 drops the connection
	requests int
	ok       map[string]int    // webhook-id -> 2xx answers
	bodies   map[string]string // webhook-id -> the body (the same on every attempt)
	bad      []string          // problems with what arrived
	verify   *signing.WebhookVerifier
	pubOnly  *signing.WebhookVerifier
}

func newReceiver(t testing.TB) *receiver {
	r := &receiver{t: t, ok: map[string]int{}, bodies: map[string]string{}, answer: func(int) int { return 200 }}
	r.up()
	t.Cleanup(r.down)
	return r
}

func (r *receiver) up() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.srv != nil {
		return
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	if r.addr != "" {
		l, err := net.Listen("tcp", r.addr)
		if err != nil {
			r.t.Fatal(err)
		}
		srv.Listener.Close()
		srv.Listener = l
	}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	r.srv, r.addr = srv, srv.Listener.Addr().String()
}

func (r *receiver) down() {
	r.mu.Lock()
	srv := r.srv
	r.srv = nil
	r.mu.Unlock()
	if srv != nil {
		srv.CloseClientConnections()
		srv.Close()
	}
}

func (r *receiver) URL() string { return "https://" + r.addr + "/events" }

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	r.mu.Lock()
	r.requests++
	status := r.answer(r.requests)
	id := req.Header.Get(signing.WebhookIDHeader)
	if prev, seen := r.bodies[id]; seen && prev != string(body) {
		r.bad = append(r.bad, id+": another body on a retry")
	}
	r.bodies[id] = string(body)
	if r.verify != nil {
		if _, err := r.verify.Verify(req.Header, body); err != nil {
			r.bad = append(r.bad, id+": v1: "+err.Error())
		}
		if _, err := r.pubOnly.Verify(req.Header, body); err != nil {
			r.bad = append(r.bad, id+": v1a: "+err.Error())
		}
	}
	if status >= 200 && status < 300 {
		r.ok[id]++
	}
	r.mu.Unlock()
	if status == 0 { // down mid-round: the connection drops without an answer
		if c, _, err := w.(http.Hijacker).Hijack(); err == nil {
			c.Close()
		}
		return
	}
	w.WriteHeader(status)
}

// A receiver that fails its first three attempts, then is down for six hours (connections
// dropped, then refused), loses no event: every event emitted (by key tools and by Emit in a
// store transaction, as the money seam emits call.*) arrives, with the same webhook-id and
// body on every attempt, both signatures valid on every attempt, and each is delivered once.
func TestReceiverFailingThenDownLosesNoEvent(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		rcv := newReceiver(t)
		w := newWorld(t, s, worldOptions{allowLocal: true, caPEM: partnertest.CAPEM(rcv.srv)})
		created := w.mustCall(w.root, "webhook_endpoint_create", map[string]any{"url": rcv.URL()}).(webhooks.CreateOutput)
		secret, err := signing.ParseWebhookSecret(created.Secret)
		if err != nil || !strings.HasPrefix(created.PublicKey, signing.WebhookPublicKeyPrefix) {
			t.Fatalf("secret %q, public key %q", created.Secret, created.PublicKey)
		}
		rcv.verify = &signing.WebhookVerifier{Secret: secret, Now: w.clock.Now}
		rcv.pubOnly = &signing.WebhookVerifier{PublicKeys: []ed25519.PublicKey{w.signer.PublicKey()}, Now: w.clock.Now}

		const downFor = 6 * time.Hour
		var downUntil time.Time
		rcv.answer = func(n int) int {
			switch {
			case n <= 3:
				return http.StatusInternalServerError
			case downUntil.IsZero() || w.clock.Now().Before(downUntil):
				return 0
			}
			return http.StatusOK
		}

		// The events: three keys minted and one revoked (tools/keys), two calls (Emit in a
		// transaction), and one emitted in a transaction that rolls back (never sent).
		for _, name := range []string{"a", "b", "c"} {
			w.mustCall(w.root, "api_key_create", map[string]any{"name": name, "scopes": []string{"read"}})
		}
		list := w.mustCall(w.root, "api_key_list", nil).(keys.ListOutput)
		for _, k := range list.Keys {
			if k.Name == "c" {
				w.mustCall(w.root, "api_key_revoke", map[string]any{"keyId": k.ID})
			}
		}
		ctx := context.Background()
		for _, id := range []string{"r1", "r2"} {
			if err := s.InTx(ctx, func(ctx context.Context, q *store.Q) error {
				return webhooks.Emit(ctx, q, webhooks.CallSucceeded, "acct", w.clock.Now(), webhooks.CallData{RequestID: id, Handle: "@x", ChargedMicro: 1500, ChargedUsd: "0.0015"})
			}); err != nil {
				t.Fatal(err)
			}
		}
		rolledBack := errors.New("roll back")
		if err := s.InTx(ctx, func(ctx context.Context, q *store.Q) error {
			if err := webhooks.Emit(ctx, q, webhooks.CallFailed, "acct", w.clock.Now(), webhooks.CallData{RequestID: "never"}); err != nil {
				return err
			}
			return rolledBack
		}); !errors.Is(err, rolledBack) {
			t.Fatal(err)
		}
		const emitted = 6 // the rolled-back one is not an event

		// The clock moves only to the next attempt due; the receiver comes back after six hours.
		start := w.clock.Now()
		var attempts int
		for round := 0; round < 200; round++ {
			r := w.run()
			attempts += r.Attempts
			if round == 0 {
				if r.FannedOut != emitted {
					t.Fatalf("fanned out %d events, want %d", r.FannedOut, emitted)
				}
				rcv.down() // and connections are refused from now on
				downUntil = w.clock.Now().Add(downFor)
			}
			next, err := outbox.New(s).NextWebhookAttemptAt(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if next.IsZero() {
				break
			}
			if !next.Before(downUntil) {
				rcv.up()
			}
			w.clock.Set(next)
		}

		page := w.mustCall(w.root, "webhook_delivery_list", map[string]any{"limit": 100}).(webhooks.ListDeliveriesOutput)
		var maxDelay time.Duration
		for _, d := range page.Deliveries {
			if d.State != outbox.DeliveryDelivered || d.DeliveredAt == nil {
				t.Fatalf("delivery %s of %s is %s after the receiver came back", d.ID, d.EventType, d.State)
			}
			if len(d.Attempts) < 2 || d.Attempts[len(d.Attempts)-1].Status != 200 {
				t.Fatalf("delivery %s attempts %+v", d.ID, d.Attempts)
			}
			var when time.Time
			if err := s.DB().NewSelect().Table("webhook_events").Column("created_at").Where("id = ?", d.WebhookID).Scan(ctx, &when); err != nil {
				t.Fatal(err)
			}
			maxDelay = max(maxDelay, d.DeliveredAt.Sub(when))
		}
		rcv.mu.Lock()
		defer rcv.mu.Unlock()
		if len(rcv.bad) > 0 {
			t.Fatalf("receiver saw: %v", rcv.bad)
		}
		duplicates := 0
		for _, n := range rcv.ok {
			duplicates += n - 1
		}
		if len(page.Deliveries) != emitted || len(rcv.ok) != emitted || duplicates != 0 {
			t.Fatalf("%d deliveries, %d distinct webhook-ids received, %d duplicates; want %d, %d, 0", len(page.Deliveries), len(rcv.ok), duplicates, emitted, emitted)
		}
		for id, body := range rcv.bodies {
			if strings.Contains(body, `"never"`) {
				t.Fatalf("the rolled-back event %s was sent", id)
			}
		}
		if maxDelay < downFor {
			t.Fatalf("max delay %s: the receiver was down for %s", maxDelay, downFor)
		}
		t.Logf("events emitted %d; attempts %d (receiver saw %d requests); delivered %d; duplicates seen by the receiver %d; max delay %s (receiver down %s, clock moved %s)",
			emitted, attempts, rcv.requests, len(rcv.ok), duplicates, maxDelay.Round(time.Second), downFor, w.clock.Now().Sub(start).Round(time.Second))
	})
}

// Bad input gets an error that says what to do: an endpoint that is not https (outside
// development), a loopback host, an unknown event type; a key minted under another key and
// an unknown id are refused too, and nothing is stored.
func TestBadInputIsRefusedClearly(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		w := newWorld(t, s, worldOptions{})
		for _, tc := range []struct {
			key, tool string
			args      map[string]any
			code      tools.Code
			says      string
		}{
			{w.root, "webhook_endpoint_create", map[string]any{"url": "http://example.com/hook"}, tools.CodeBadInput, "must be https://"},
			{w.root, "webhook_endpoint_create", map[string]any{"url": "https://127.0.0.1/hook"}, tools.CodeBadInput, "loopback"},
			{w.root, "webhook_endpoint_create", map[string]any{"url": "https://127.0.0.1:6379/hook"}, tools.CodeBadInput, "port 6379 is not allowed; endpoints take port 443 (the https default: write no port) or 8443"},
			{w.root, "webhook_endpoint_create", map[string]any{"url": "https://hooks.invalid/hook"}, tools.CodeBadInput, `hooks.invalid does not resolve; check its spelling`},
			{w.root, "webhook_endpoint_create", map[string]any{"url": "ftp://example.com/hook"}, tools.CodeBadInput, "use an https:// URL"},
			{w.root, "webhook_endpoint_create", map[string]any{"url": "https://93.184.215.14/hook", "eventTypes": []string{"call.succeeded", "call.exploded"}}, tools.CodeBadInput, `unknown event type "call.exploded"; the event types are call.succeeded`},
			{w.child, "webhook_endpoint_create", map[string]any{"url": "https://93.184.215.14/hook"}, tools.CodeForbidden, "manage webhooks with a root key"},
			{w.child, "webhook_delivery_list", map[string]any{}, tools.CodeForbidden, "minted under another key"},
			{w.root, "webhook_endpoint_delete", map[string]any{"endpointId": "we_nope"}, tools.CodeNotFound, "webhook_endpoint_list shows"},
			{w.root, "webhook_delivery_replay", map[string]any{"deliveryId": "wd_nope"}, tools.CodeNotFound, "webhook_delivery_list shows"},
		} {
			_, e := w.call(tc.key, tc.tool, tc.args)
			if e == nil || e.Code != tc.code || !strings.Contains(e.Message, tc.says) || strings.Contains(e.Message, "10.0.0.2") {
				t.Errorf("%s %v: got %v, want %s saying %q", tc.tool, tc.args, e, tc.code, tc.says)
			}
		}
		if eps, err := outbox.New(s).WebhookEndpoints(context.Background(), "acct"); err != nil || len(eps) != 0 {
			t.Fatalf("endpoints stored: %d, %v", len(eps), err)
		}
		// A public https URL with known types is taken, and its secret is never listed.
		out := w.mustCall(w.root, "webhook_endpoint_create", map[string]any{"url": "https://93.184.215.14/hook", "eventTypes": []string{"key.created"}}).(webhooks.CreateOutput)
		listed, _ := json.Marshal(w.mustCall(w.root, "webhook_endpoint_list", nil))
		if !strings.HasPrefix(out.Secret, "whsec_") || strings.Contains(string(listed), strings.TrimPrefix(out.Secret, "whsec_")) {
			t.Fatalf("secret %q; list %s", out.Secret, listed)
		}
	})
}

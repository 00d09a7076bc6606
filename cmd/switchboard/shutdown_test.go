package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/invocations"
	"github.com/switchboard-hq/switchboard/store/ledger"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

// TestSIGTERMUnderLoad sends SIGTERM to serve (PostgreSQL, budget leases and the batch
// writer on, as in production) while callers keep it busy and slow partner calls are in
// flight. The callers act as a proxy would: they stop sending once /readyz says 503. No
// caller sees a reset or a 5xx, the process exits 0, every answered call is recorded as
// succeeded with one partner fee, no reservation or budget lease is left open, and
// `admin ledger-check` is clean.
func TestSIGTERMUnderLoad(t *testing.T) {
	bin := buildBinary(t)
	dsn := storetest.DSN(t, "postgres")
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "signing-key.pem")
	key, _, err := signing.LoadOrCreatePrivateKey(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	var slowStarted, traced atomic.Int32
	work := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("traceparent") != "" {
			traced.Add(1)
		}
		if r.URL.Path == "/slow" {
			slowStarted.Add(1)
			time.Sleep(1500 * time.Millisecond) // still running when SIGTERM arrives
		} else {
			time.Sleep(time.Duration(10+rand.IntN(90)) * time.Millisecond)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"success":true,"result":{"done":true},"providerCostMicro":200}`)
	})
	partner, caFile := startPartner(t, signing.Middleware(serviceVerifier(key), signing.DedupeMiddleware(signing.NewResponseDedupe(), work)), dir)
	env := []string{"SWITCHBOARD_DATA_DIR=" + dir, "SWITCHBOARD_DATABASE_URL=" + dsn, "SWITCHBOARD_SIGNING_KEY_FILE=" + keyFile,
		"SWITCHBOARD_SMTP_URL=", "SWITCHBOARD_API_KEY=", "SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS=true", "SWITCHBOARD_PARTNER_CA_FILE=" + caFile,
		"SWITCHBOARD_DEFAULT_RATE_LIMIT_PER_MINUTE=100000", "SWITCHBOARD_DEFAULT_SPEND_LIMIT_USD=100",
		"SWITCHBOARD_DRAIN_DELAY=1s", "SWITCHBOARD_SHUTDOWN_TIMEOUT=30s"}
	s := startServe(t, bin, freeAddr(t), env)
	apiKey := s.onboard("sigterm@example.com")
	for _, in := range []struct{ handle, path string }{{"@fastq", "/fast"}, {"@slowq", "/slow"}} {
		st, out := s.do("POST", "/v1/partner/intents", apiKey, map[string]any{
			"publicIdentifier": in.handle, "name": in.handle[1:], "description": "shutdown test " + in.path, "category": "QUERY",
			"toolEndpoint": partner.URL + in.path, "timeoutMs": 5000, "feeRate": 0.0005,
			"payoutAddresses": map[string]string{"evm": "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"}})
		if st != 201 {
			t.Fatalf("publish %s: %d %v", in.handle, st, out)
		}
		if st, out := s.do("POST", "/v1/partner/intents/"+out["id"].(string)+"/active", apiKey, map[string]any{"active": true}); st != 200 {
			t.Fatalf("activate %s: %d %v", in.handle, st, out)
		}
	}

	// The proxy's health check: callers stop sending once /readyz is not 200.
	var stop atomic.Bool
	var saw503 atomic.Bool
	go func() {
		for !stop.Load() {
			resp, err := http.Get(s.url + "/readyz")
			if err == nil {
				resp.Body.Close()
				saw503.Store(resp.StatusCode == 503)
			}
			if err != nil || resp.StatusCode != 200 {
				stop.Store(true)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()

	type answer struct {
		status    int
		requestID string
		err       string
		after     bool // answered after SIGTERM
	}
	var mu sync.Mutex
	var answers []answer
	var signalled atomic.Bool
	call := func(handle string) {
		// Callers send a traceparent; with no OTEL_EXPORTER_OTLP_ENDPOINT it goes no further.
		st, out := s.doWith("POST", "/v1/invoke", apiKey, map[string]any{"message": handle + " go"},
			map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"})
		a := answer{status: st, after: signalled.Load()}
		a.requestID, _ = out["requestId"].(string)
		if e, ok := out["transport"].(string); ok {
			a.err = e
		} else if st != 200 || out["success"] != true {
			a.err = fmt.Sprint(out)
		}
		mu.Lock()
		answers = append(answers, a)
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for !stop.Load() {
				call("@fastq")
			}
		})
	}
	time.Sleep(time.Second)
	const slow = 4
	for range slow {
		wg.Go(func() { call("@slowq") })
	}
	for slowStarted.Load() < slow {
		time.Sleep(10 * time.Millisecond)
	}
	signalled.Store(true)
	sent := time.Now()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exitErr := s.cmd.Wait()
	drained := time.Since(sent)
	wg.Wait()
	stop.Store(true)
	if exitErr != nil {
		t.Fatalf("serve after SIGTERM: %v, want exit 0\n%s", exitErr, s.stderr)
	}
	if !strings.Contains(s.stderr.String(), "drained: calls finished") {
		t.Fatalf("serve did not log its drain:\n%s", s.stderr)
	}
	if !saw503.Load() {
		t.Error("/readyz never answered 503 while the replica drained: the health check saw only a closed port")
	}

	afterSignal := 0
	for _, a := range answers {
		if a.err != "" {
			t.Errorf("a caller saw %d %s (request %q, after SIGTERM: %v)", a.status, a.err, a.requestID, a.after)
		}
		if a.after {
			afterSignal++
		}
	}
	if n := traced.Load(); n != 0 {
		t.Errorf("%d partner requests carried a traceparent with tracing off", n)
	}
	if t.Failed() {
		t.FailNow()
	}

	ctx := context.Background()
	db, err := store.Open(ctx, dsn, "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, a := range answers {
		inv, err := invocations.New(db).ByID(ctx, a.requestID)
		if err != nil || inv.State != store.InvSucceeded {
			t.Errorf("answered call %s: recorded %+v, %v; want succeeded", a.requestID, inv, err)
			continue
		}
		fees := partnerFees(t, db, a.requestID)
		if fees != 1 {
			t.Errorf("answered call %s: %d partner fees in the ledger, want 1", a.requestID, fees)
		}
	}
	var open int
	if err := db.DB().NewRaw("SELECT COUNT(*) FROM reservations WHERE state = ?", store.ReservationOpen).Scan(ctx, &open); err != nil {
		t.Fatal(err)
	}
	if open != 0 {
		t.Errorf("%d reservations (budget leases, calls) left open after the drain, want 0", open)
	}
	check := exec.Command(bin, "admin", "ledger-check")
	check.Env = append(os.Environ(), env...)
	if out, err := check.CombinedOutput(); err != nil {
		t.Fatalf("ledger-check: %v\n%s", err, out)
	}
	// The operator's view of a call recorded whole in its row: its history from the row's
	// trail, no ledger rows of its own, and the batch transaction it is charged in.
	show := exec.Command(bin, "admin", "invocation", answers[0].requestID)
	show.Env = append(os.Environ(), env...)
	raw, err := show.Output()
	if err != nil {
		t.Fatalf("admin invocation: %v\n%s", err, raw)
	}
	var view struct {
		Invocation  store.Invocation
		Events      []store.InvocationEvent
		Ledger      []ledger.Entry
		LedgerBatch []ledger.Entry `json:"ledgerBatch"`
	}
	if err := json.Unmarshal(raw, &view); err != nil {
		t.Fatalf("admin invocation: %v\n%s", err, raw)
	}
	charged := false
	for _, e := range view.LedgerBatch {
		charged = charged || e.Kind == "partner_fee" && e.Book == view.Invocation.PayoutBook && e.AmountMicro >= view.Invocation.PartnerFeeMicro
	}
	if n := len(view.Events); n < 2 || view.Events[0].State != store.InvDispatching || view.Events[n-1].State != store.InvSucceeded ||
		len(view.Ledger) != 0 || view.Invocation.LedgerTxn == nil || !charged {
		t.Fatalf("admin invocation of a read on a lease: %s", raw)
	}
	t.Logf("SIGTERM under load: %d calls answered (%d of them after SIGTERM, %d slow ones in flight at the partner when it came), 0 resets, 0 5xx, all recorded; exit 0 %s after SIGTERM (1 s drain delay)",
		len(answers), afterSignal, slow, drained.Round(10*time.Millisecond))
}

// doWith is do with extra request headers.
func (s *server) doWith(method, path, key string, body any, headers map[string]string) (int, map[string]any) {
	s.t.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, s.url+path, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", key)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, map[string]any{"transport": err.Error()}
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

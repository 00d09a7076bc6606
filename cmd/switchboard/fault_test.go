package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
	"github.com/switchboard-hq/switchboard/tools/partners/partnertest"
)

// server is one `switchboard serve` process of a fault test.
type server struct {
	t      *testing.T
	cmd    *exec.Cmd
	url    string
	stderr *syncBuffer
}

// buildBinary builds switchboard as deploy/image/build ships it: static, without cgo (so
// go-ethereum's pure-Go secp256k1, no libc), paths trimmed and symbols stripped.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "switchboard")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startServe runs serve with env on addr and waits until it is healthy.
func startServe(t *testing.T, bin, addr string, env []string) *server {
	t.Helper()
	return startServeIn(t, bin, addr, "", env)
}

// startServeIn is startServe run in the working directory dir ("": the test's); env comes
// last, so it may set its own SWITCHBOARD_BASE_URL.
func startServeIn(t *testing.T, bin, addr, dir string, env []string) *server {
	t.Helper()
	s := &server{t: t, url: "http://" + addr, stderr: new(syncBuffer)}
	s.cmd = exec.Command(bin, "serve")
	s.cmd.Dir = dir
	s.cmd.Env = append(append(os.Environ(), "SWITCHBOARD_ADDR="+addr, "SWITCHBOARD_BASE_URL="+s.url), env...)
	s.cmd.Stderr = s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.cmd.Process.Kill(); s.cmd.Wait() })
	for i := 0; ; i++ {
		// Healthy, and this process is the one listening: it logs "switchboard serving" once
		// its listener is bound (another test's serve that took the same free port would
		// answer /healthz too).
		if r, err := http.Get(s.url + "/healthz"); err == nil {
			r.Body.Close()
			if r.StatusCode == 200 && strings.Contains(s.stderr.String(), "switchboard serving") {
				return s
			}
		}
		if i > 200 {
			t.Fatalf("serve did not come up:\n%s", s.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// serviceVerifier verifies envelopes as a partner holding the service key's public half does.
func serviceVerifier(key ed25519.PrivateKey) *signing.Verifier {
	return signing.NewVerifier(signing.KeySourceFunc(func(context.Context) (ed25519.PublicKey, error) { return key.Public().(ed25519.PublicKey), nil }))
}

// startPartner starts a TLS partner serving h and writes its CA into dir, for
// SWITCHBOARD_PARTNER_CA_FILE.
func startPartner(t *testing.T, h http.Handler, dir string) (*partnertest.Partner, string) {
	t.Helper()
	partner := partnertest.Start(t, h)
	caFile := filepath.Join(dir, "partner-ca.pem")
	if err := os.WriteFile(caFile, partnertest.CAPEM(partner.Server), 0o600); err != nil {
		t.Fatal(err)
	}
	return partner, caFile
}

// partnerFees counts the partner-fee postings of a call in the ledger.
func partnerFees(t *testing.T, db *store.Store, requestID string) int {
	t.Helper()
	ctx := context.Background()
	entries, err := ledger.Entries(ctx, db, requestID)
	if err != nil {
		t.Fatal(err)
	}
	fees := 0
	for _, e := range entries {
		if e.Kind == "partner_fee" && e.AmountMicro > 0 {
			fees++
		}
	}
	// A call recorded whole in its row is charged in its batch's transaction, which
	// ledger-check proves is the sum of the rows naming it: one more fee when it names one.
	inv, err := invocations.New(db).ByID(ctx, requestID)
	if err != nil || inv.LedgerTxn == nil {
		return fees
	}
	batch, err := ledger.BatchEntries(ctx, db, *inv.LedgerTxn)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range batch {
		if e.Kind == "partner_fee" && e.Book == inv.PayoutBook && e.AmountMicro >= inv.PartnerFeeMicro {
			fees++
		}
	}
	return fees
}

func (s *server) kill9() {
	s.cmd.Process.Signal(syscall.SIGKILL)
	s.cmd.Wait()
}

func (s *server) do(method, path, key string, body any) (int, map[string]any) {
	s.t.Helper()
	var r io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		r = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, s.url+path, r)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("x-api-key", key)
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

var codeRe = regexp.MustCompile(`\b(\d{8})\b`)

// onboard signs email up with the development mailer and reads the code from the log.
func (s *server) onboard(email string) string {
	s.t.Helper()
	if st, out := s.do("POST", "/v1/agents/signup", "", map[string]any{"email": email}); st != 200 {
		s.t.Fatalf("signup: %d %v", st, out)
	}
	var code string
	for i := 0; code == "" && i < 100; i++ {
		sc := bufio.NewScanner(strings.NewReader(s.stderr.String()))
		for sc.Scan() {
			if line := sc.Text(); strings.Contains(line, "DEVELOPMENT MAILER") && strings.Contains(line, email) {
				var rec struct{ Text string }
				json.Unmarshal([]byte(line), &rec)
				if m := codeRe.FindStringSubmatch(rec.Text); m != nil {
					code = m[1]
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	st, out := s.do("POST", "/v1/agents/verify", "", map[string]any{"email": email, "code": code})
	if st != 200 {
		s.t.Fatalf("verify: %d %v", st, out)
	}
	return out["apiKey"].(string)
}

// TestKill9WithCallsInFlight kills serve with -9 while partner calls are in flight, starts it
// again, and sweeps: no invocation is left dispatching, each is concluded once (the partner's
// dedupe replays its first answer to the re-send: its work ran once per request), nobody is
// charged twice, and the ledger's invariants hold. Its calls reserve one by one (budget leases
// off), so each dispatch is recorded before it is sent; a read drawn on a lease is written
// whole when its partner answers, and a kill before then leaves nothing to conclude
// (TestCrashMatrix plays that order).
func TestKill9WithCallsInFlight(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	key, _, err := signing.LoadOrCreatePrivateKey(filepath.Join(dir, "signing-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	var runs sync.Map // requestId -> *atomic.Int32
	var started atomic.Int32
	work := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		env, _ := signing.EnvelopeFromContext(r.Context())
		n, _ := runs.LoadOrStore(env.RequestID, new(atomic.Int32))
		n.(*atomic.Int32).Add(1)
		started.Add(1)
		time.Sleep(1500 * time.Millisecond) // long enough to be killed in the middle
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"success":true,"result":{"done":true},"providerCostMicro":300}`)
	})
	partner, caFile := startPartner(t, signing.Middleware(serviceVerifier(key), signing.DedupeMiddleware(signing.NewResponseDedupe(), work)), dir)
	env := []string{"SWITCHBOARD_DATA_DIR=" + dir, "SWITCHBOARD_DATABASE_URL=", "SWITCHBOARD_SMTP_URL=", "SWITCHBOARD_API_KEY=",
		"SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS=true", "SWITCHBOARD_PARTNER_CA_FILE=" + caFile, "SWITCHBOARD_SWEEP_MARGIN=1s",
		"SWITCHBOARD_BUDGET_LEASES=false"}
	addr := freeAddr(t)
	s := startServe(t, bin, addr, env)
	apiKey := s.onboard("kill9@example.com")
	st, out := s.do("POST", "/v1/partner/intents", apiKey, map[string]any{
		"publicIdentifier": "@slowwork", "name": "Slow work", "description": "takes a while", "category": "QUERY",
		"toolEndpoint": partner.URL + "/work", "timeoutMs": 2000, "feeRate": 0.001,
		"payoutAddresses": map[string]string{"evm": "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"}})
	if st != 201 {
		t.Fatalf("publish: %d %v", st, out)
	}
	if st, out := s.do("POST", "/v1/partner/intents/"+out["id"].(string)+"/active", apiKey, map[string]any{"active": true}); st != 200 {
		t.Fatalf("activate: %d %v", st, out)
	}

	const calls = 8
	var wg sync.WaitGroup
	for range calls {
		wg.Add(1)
		go func() { defer wg.Done(); s.do("POST", "/v1/invoke", apiKey, map[string]any{"message": "@slowwork go"}) }()
	}
	for started.Load() < calls {
		time.Sleep(10 * time.Millisecond)
	}
	s.kill9() // every call is at the partner now
	wg.Wait()

	s = startServe(t, bin, addr, env)
	time.Sleep(2*2*time.Second + time.Second + 500*time.Millisecond) // past timeout × tries + margin (the real clock)
	var sweepOut, sweepErr bytes.Buffer
	sweep := exec.Command(bin, "admin", "sweep")
	sweep.Env = append(os.Environ(), env...)
	sweep.Stdout, sweep.Stderr = &sweepOut, &sweepErr
	if err := sweep.Run(); err != nil {
		t.Fatalf("admin sweep: %v %s", err, sweepErr.String())
	}
	var swept map[string]int
	json.Unmarshal(sweepOut.Bytes(), &swept)
	if swept["concludedDispatches"] != calls {
		t.Fatalf("sweep: %s, want %d dispatches concluded", sweepOut.String(), calls)
	}

	ctx := context.Background()
	db, err := store.Open(ctx, "", dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var states []struct {
		RequestID string `bun:"request_id"`
		State     string `bun:"state"`
	}
	if err := db.DB().NewRaw("SELECT request_id, state FROM invocations").Scan(ctx, &states); err != nil {
		t.Fatal(err)
	}
	if len(states) != calls {
		t.Fatalf("%d invocations recorded, want %d", len(states), calls)
	}
	for _, inv := range states {
		if inv.State != store.InvSucceeded {
			t.Errorf("%s ended %s, want succeeded (recovered through the partner's dedupe)", inv.RequestID, inv.State)
		}
		n, _ := runs.Load(inv.RequestID)
		if got := n.(*atomic.Int32).Load(); got != 1 {
			t.Errorf("%s: the partner's work ran %d times", inv.RequestID, got)
		}
		fees := partnerFees(t, db, inv.RequestID)
		if fees != 1 {
			t.Errorf("%s: %d partner fees in the ledger, want 1", inv.RequestID, fees)
		}
	}
	if err := ledger.Check(ctx, db); err != nil {
		t.Fatalf("ledger after kill -9: %v", err)
	}
	t.Logf("kill -9 with %d calls in flight: %d concluded by the sweep, 0 stuck, ledger balanced", calls, swept["concludedDispatches"])
}

// TestPostgresRestartUnderLoad stops and restarts PostgreSQL (a cluster of the test's own)
// under a steady load on a running serve: every answer during the outage is 200 or a clean
// 503 with Retry-After, never a 500, and the service recovers without a restart.
func TestPostgresRestartUnderLoad(t *testing.T) {
	bin := buildBinary(t)
	cluster := storetest.StartCluster(t)
	env := []string{"SWITCHBOARD_DATA_DIR=" + t.TempDir(), "SWITCHBOARD_DATABASE_URL=" + cluster.DSN(), "SWITCHBOARD_SMTP_URL=",
		"SWITCHBOARD_API_KEY=", "SWITCHBOARD_DEFAULT_RATE_LIMIT_PER_MINUTE=100000"}
	s := startServe(t, bin, freeAddr(t), env)
	apiKey := s.onboard("pgload@example.com")

	var mu sync.Mutex
	statuses := map[int]int{}
	var bad []string
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var st int
				var out map[string]any
				switch (w + i) % 3 {
				case 0:
					st, out = s.do("GET", "/v1/account", apiKey, nil)
				case 1:
					st, out = s.do("GET", "/v1/keys", apiKey, nil)
				default:
					st, out = s.do("POST", "/v1/keys", apiKey, map[string]any{"name": "load", "scopes": []string{"read"}})
					if st == 201 { // revoked again, so the writes stay under the cap on live keys
						st, out = s.do("DELETE", "/v1/keys/"+out["id"].(string), apiKey, nil)
					}
				}
				mu.Lock()
				statuses[st]++
				if st != 200 && st != 201 && st != 503 {
					bad = append(bad, fmt.Sprintf("%d %v", st, out))
				}
				mu.Unlock()
			}
		}()
	}
	time.Sleep(700 * time.Millisecond)
	cluster.Stop()
	time.Sleep(1500 * time.Millisecond)
	cluster.Start()
	time.Sleep(1500 * time.Millisecond)
	close(stop)
	wg.Wait()
	if len(bad) > 0 {
		t.Fatalf("%d answers other than 200/201/503 during a PostgreSQL restart, e.g. %v", len(bad), bad[:min(3, len(bad))])
	}
	if statuses[503] == 0 {
		t.Fatalf("no 503 during the outage: %v (the outage was not exercised)", statuses)
	}
	if st, out := s.do("GET", "/v1/account", apiKey, nil); st != 200 {
		t.Fatalf("after the restart: %d %v", st, out)
	}
	t.Logf("PostgreSQL restart under load: %v", statuses)
}

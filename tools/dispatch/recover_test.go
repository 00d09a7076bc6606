package dispatch_test

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/invocations"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools/partners/partnertest"
)

// TestDispatchOrphanedByADatabaseLossIsConcluded reproduces the defect end to end: the
// partner runs the call, and the database goes down before the outcome is recorded (a stopped
// PostgreSQL cluster of the test's own). The caller is told the truth at once: the outcome is
// not recorded yet, nothing is charged before it is. Once the database is back:
//   - a write's outcome, kept in the replica's journal, is recorded as the partner gave it
//     (charged once, with its partner fee), and confirming again answers it;
//   - a write whose journal was lost with its replica's disk is never sent again: the sweeper
//     ends it outcome_unknown, refunded;
//   - an idempotent call is sent again by the sweeper (two replicas racing) with the same
//     requestId, the partner's dedupe replays its first answer (its handler ran once) and it is
//     settled once.
func TestDispatchOrphanedByADatabaseLossIsConcluded(t *testing.T) {
	ctx := context.Background()
	var runs sync.Map // path -> *atomic.Int32: how often the partner's own handler ran
	// The outcome is recorded before the answer, so the caller sees the lost database.
	w, cluster, st, stopDB := outageWorld(t, false, func(rw http.ResponseWriter, r *http.Request) {
		n, _ := runs.LoadOrStore(r.URL.Path, new(atomic.Int32))
		n.(*atomic.Int32).Add(1)
		rw.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(rw, `{"success":true,"result":{"path":%q},"providerCostMicro":500}`, r.URL.Path)
	})
	env, partner, key, callerID := w.env, w.partner, w.caller, w.callerID
	w.publish(t, "@orphanq", "/query", nil)
	w.publish(t, "@orphanw", "/write", map[string]any{"category": "EXECUTE"})
	w.publish(t, "@orphanx", "/lost", map[string]any{"category": "EXECUTE"})
	credit := func() int64 {
		ca, err := st.Credit(ctx, callerID)
		if err != nil {
			t.Fatal(err)
		}
		return ca.AvailableMicro
	}
	start := credit()
	notRecorded := func(status int, out map[string]any) string {
		t.Helper()
		e, _ := out["error"].(map[string]any)
		if status != 503 || e["code"] != "UNAVAILABLE" || !strings.Contains(e["message"].(string), "not recorded yet") {
			t.Fatalf("outcome lost with the database: %d %v, want 503 saying it is not recorded yet", status, out)
		}
		return e["details"].(map[string]any)["requestId"].(string)
	}

	// An idempotent call whose outcome is lost with the database.
	stopDB.Store(true)
	status, out := env.REST(t, "POST", "/v1/invoke", key, map[string]any{"message": "@orphanq status"})
	queryID := notRecorded(status, out)
	cluster.Start()

	// Confirmed writes whose outcomes the database does not get.
	quote := func(msg string) string {
		status, out := env.REST(t, "POST", "/v1/invoke", key, map[string]any{"message": msg})
		if status != 409 {
			t.Fatalf("write quote: %d %v", status, out)
		}
		return out["error"].(map[string]any)["details"].(map[string]any)["requestId"].(string)
	}
	writeID, lostID := quote("@orphanw do it"), quote("@orphanx do it")
	for _, c := range []struct{ msg, id string }{{"@orphanw do it", writeID}, {"@orphanx do it", lostID}} {
		stopDB.Store(true)
		status, out = env.REST(t, "POST", "/v1/invoke", key, map[string]any{"message": c.msg, "confirmRequestId": c.id})
		if notRecorded(status, out) != c.id || !strings.Contains(fmt.Sprint(out), "journal") {
			t.Fatalf("confirmed write with the database lost: %d %v, want its outcome kept in the journal", status, out)
		}
		cluster.Start()
	}
	// The second write's journal goes with its replica's disk.
	if err := os.Remove(filepath.Join(env.App.Config.DataDir, "journal", lostID+".json")); err != nil {
		t.Fatalf("the write's outcome is not in the journal: %v", err)
	}
	for _, id := range []string{queryID, writeID, lostID} {
		inv, err := invocations.New(st).ByID(ctx, id)
		if err != nil || inv.State != store.InvDispatching {
			t.Fatalf("%s before the sweep: %+v %v, want dispatching", id, inv, err)
		}
	}
	if status, out := env.REST(t, "POST", "/v1/invoke", key, map[string]any{"message": "@orphanx do it", "confirmRequestId": lostID}); status != 409 || !strings.Contains(fmt.Sprint(out), "sweeper") {
		t.Fatalf("confirm while undecided: %d %v", status, out)
	}
	// Asking about the journaled write records it and answers the partner's result.
	status, out = env.REST(t, "POST", "/v1/invoke", key, map[string]any{"message": "@orphanw do it", "confirmRequestId": writeID})
	if status != 200 || out["success"] != true || charge(out)["partnerFeeMicro"] != 500.0 {
		t.Fatalf("confirm of the journaled write: %d %v, want the partner's result, charged", status, out)
	}

	// Past the deadline, two replicas sweep at once.
	env.Clock.Advance(40 * time.Second)
	var concluded atomic.Int32
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, _, err := env.App.Sweep(ctx)
			if err != nil {
				t.Errorf("sweep: %v", err)
			}
			concluded.Add(int32(n))
		}()
	}
	wg.Wait()
	if concluded.Load() != 2 {
		t.Fatalf("%d invocations concluded, want 2 (each exactly once)", concluded.Load())
	}

	q, _ := invocations.New(st).ByID(ctx, queryID)
	if q.State != store.InvSucceeded || q.PartnerFeeMicro != 500 {
		t.Fatalf("idempotent call after recovery: %+v", q)
	}
	n, _ := runs.Load("/query")
	if got := n.(*atomic.Int32).Load(); got != 1 {
		t.Fatalf("the partner's handler ran %d times for the query: the re-send must be deduped", got)
	}
	if hits := len(partner.Hits()); hits < 4 {
		t.Fatalf("%d requests reached the partner: the query was not sent again", hits)
	}
	wr, _ := invocations.New(st).ByID(ctx, writeID)
	if wr.State != store.InvSucceeded || wr.PartnerFeeMicro != 500 {
		t.Fatalf("the journaled write: %+v, want succeeded with its partner fee", wr)
	}
	lost, _ := invocations.New(st).ByID(ctx, lostID)
	if lost.State != store.InvOutcomeUnknown || lost.PartnerFeeMicro != 0 {
		t.Fatalf("the write whose journal was lost, after the sweep: %+v", lost)
	}
	for _, path := range []string{"/write", "/lost"} {
		n, _ = runs.Load(path)
		if got := n.(*atomic.Int32).Load(); got != 1 {
			t.Fatalf("the write %s ran %d times: it must never be sent again", path, got)
		}
	}
	events, _ := invocations.New(st).Events(ctx, lostID)
	if last := events[len(events)-1]; last.State != store.InvOutcomeUnknown || !strings.Contains(last.Detail, "sweeper") {
		t.Fatalf("the terminal transition is not recorded: %+v", last)
	}
	// Charged once for the query and once for the journaled write (reservation 1000 + fee 500
	// + platform floor 1000 each), nothing for the lost one.
	if got := start - credit(); got != 5000 {
		t.Fatalf("credit went down by %d, want 5000", got)
	}
	w.ledgerOK(t)

	// Asking again answers the recorded truth.
	status, out = env.REST(t, "POST", "/v1/invoke", key, map[string]any{"message": "@orphanx do it", "confirmRequestId": lostID})
	if status != 502 || !strings.Contains(fmt.Sprint(out), "outcome unknown") || !strings.Contains(fmt.Sprint(out), lostID) {
		t.Fatalf("confirm after the sweep: %d %v", status, out)
	}
	status, out = env.REST(t, "POST", "/v1/invoke", key, map[string]any{"message": "@orphanw do it", "confirmRequestId": writeID})
	if status != 200 || out["success"] != true || out["requestId"] != writeID {
		t.Fatalf("the journaled write's outcome, asked again: %d %v", status, out)
	}
	status, out = env.REST(t, "POST", "/v1/invoke", key, map[string]any{"message": "@orphanq status", "confirmRequestId": queryID})
	if status != 200 || out["success"] != true {
		t.Fatalf("the recovered query's outcome: %d %v", status, out)
	}
	// Sweeping again changes nothing.
	if n, m, err := env.App.Sweep(ctx); n != 0 || m != 0 || err != nil {
		t.Fatalf("a second sweep: %d %d %v", n, m, err)
	}
	w.ledgerOK(t)
}

// With settlement after the answer (the default), a read drawn on a budget lease is written
// whole, once, before its answer: a database lost while the partner works costs the caller
// the wait (UNAVAILABLE, "not recorded yet", with the requestId), never the outcome. The
// batch writer records it, charging it exactly once, when the database is back, and asking
// again with the requestId answers the partner's result. No sweeper is needed and the ledger
// balances.
func TestOutcomeLandsWhenTheDatabaseReturns(t *testing.T) {
	ctx := context.Background()
	w, cluster, st, stopDB := outageWorld(t, true, func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		fmt.Fprint(rw, `{"success":true,"result":{"done":true},"providerCostMicro":500}`)
	})
	env, key, callerID := w.env, w.caller, w.callerID
	w.publish(t, "@lateq", "/q", nil)
	before, err := st.Credit(ctx, callerID)
	if err != nil {
		t.Fatal(err)
	}

	stopDB.Store(true)
	status, out := env.REST(t, "POST", "/v1/invoke", key, map[string]any{"message": "@lateq status"})
	details, _ := out["error"].(map[string]any)["details"].(map[string]any)
	if status != 503 || details["outcome"] != "not recorded yet" {
		t.Fatalf("the answer with the database gone: %d %v, want 503 saying it is not recorded yet", status, out)
	}
	requestID := details["requestId"].(string)
	cluster.Start()
	inv, err := invocations.New(w.settledStore(t)).ByID(ctx, requestID)
	if err != nil || inv.State != store.InvSucceeded || inv.PartnerFeeMicro != 500 {
		t.Fatalf("the outcome once the database is back: %+v %v", inv, err)
	}
	after, err := st.Credit(ctx, callerID)
	if err != nil {
		t.Fatal(err)
	}
	if got := before.AvailableMicro - after.AvailableMicro; got != 2500 || after.ReservedMicro != 0 || after.HeldMicro != 0 {
		t.Fatalf("charged %d (reserved %d, held %d), want 2500 once and nothing left reserved", got, after.ReservedMicro, after.HeldMicro)
	}
	status, out = env.REST(t, "POST", "/v1/invoke", key, map[string]any{"message": "@lateq status", "confirmRequestId": requestID})
	if status != 200 || out["success"] != true || out["requestId"] != requestID || charge(out)["totalMicro"] != 2500.0 {
		t.Fatalf("asking again once recorded: %d %v, want the partner's result and its one charge", status, out)
	}
	if n, m, err := env.App.Sweep(ctx); n != 0 || m != 0 || err != nil {
		t.Fatalf("the sweeper found work: %d %d %v", n, m, err)
	}
	w.ledgerOK(t)
}

// outageWorld is the service on a PostgreSQL cluster of the test's own, with a TLS partner
// (verifying and deduping) whose handler stops the cluster in the middle of the next call
// once stopDB is set, then does work.
func outageWorld(t *testing.T, settleAfterAnswer bool, work http.HandlerFunc) (w *world, cluster *storetest.Cluster, st *store.Store, stopDB *atomic.Bool) {
	cluster = storetest.StartCluster(t)
	st = storetest.OpenURL(t, cluster.DSN())
	stopDB = new(atomic.Bool)
	var pub ed25519.PublicKey
	handler := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if stopDB.CompareAndSwap(true, false) {
			if settleAfterAnswer {
				// Whatever the batch writer has queued lands first (a read on a lease has
				// nothing to write before its answer: TestCrashMatrix covers the orders).
				time.Sleep(300 * time.Millisecond)
			}
			cluster.Stop() // the database is lost while the partner does the work
		}
		work(rw, r)
	})
	verifier := signing.NewVerifier(signing.KeySourceFunc(func(context.Context) (ed25519.PublicKey, error) { return pub, nil }))
	partner := partnertest.Start(t, signing.Middleware(verifier, signing.DedupeMiddleware(signing.NewResponseDedupe(), handler)))
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, partnertest.CAPEM(partner.Server), 0o600); err != nil {
		t.Fatal(err)
	}
	env := apptest.Start(t, apptest.Options{Store: st, Config: func(c *apptest.Config) {
		c.AllowLocalEndpoints = true
		c.PartnerCAFile = caFile
		c.SettleAfterAnswer = settleAfterAnswer
	}})
	pub = env.App.SigningKey.Public().(ed25519.PublicKey)
	caller := env.Onboard(t, "caller@example.com")
	w = &world{env: env, partner: partner, publisher: env.Onboard(t, "publisher@example.com")["apiKey"].(string),
		caller: caller["apiKey"].(string), callerID: caller["userId"].(string)}
	return w, cluster, st, stopDB
}

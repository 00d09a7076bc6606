package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/invocations"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools/ratelimit/redistest"
)

// TestTwoReplicas runs two `switchboard serve` processes on one PostgreSQL (a cluster of the
// test's own) and one real Redis, and drives one agent across both: the rate limit holds in
// total, the spend limit holds under concurrent calls on both, a key revoked on one is
// refused by the other within a second, a write quoted on one is confirmed on the other, and
// when one is killed with a call in flight, the sweepers (both replicas, once it is back)
// conclude that call exactly once and the ledger balances.
func TestTwoReplicas(t *testing.T) {
	bin := buildBinary(t)
	cluster := storetest.StartCluster(t)
	redis := redistest.Start(t)
	shared := t.TempDir()
	keyFile := filepath.Join(shared, "signing-key.pem")
	key, _, err := signing.LoadOrCreatePrivateKey(keyFile)
	if err != nil {
		t.Fatal(err)
	}

	var slowRuns atomic.Int32
	var slowID atomic.Value
	work := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			env, _ := signing.EnvelopeFromContext(r.Context())
			slowID.Store(env.RequestID)
			slowRuns.Add(1)
			time.Sleep(1500 * time.Millisecond) // long enough to kill the replica in the middle
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"success":true,"result":{"done":true},"providerCostMicro":500}`)
	})
	partner, caFile := startPartner(t, signing.Middleware(serviceVerifier(key), signing.DedupeMiddleware(signing.NewResponseDedupe(), work)), shared)
	const secret = "c3dpdGNoYm9hcmQgcmVwbGljYXMgc2hhcmUgdGhpcyE="
	common := []string{"SWITCHBOARD_DATABASE_URL=" + cluster.DSN(), "SWITCHBOARD_REDIS_URL=" + redis.URL,
		"SWITCHBOARD_SIGNING_KEY_FILE=" + keyFile, "SWITCHBOARD_MASTER_KEY=" + secret, "SWITCHBOARD_SERVER_SECRET=" + secret,
		"SWITCHBOARD_SMTP_URL=", "SWITCHBOARD_API_KEY=", "SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS=true", "SWITCHBOARD_PARTNER_CA_FILE=" + caFile,
		"SWITCHBOARD_SWEEP_MARGIN=1s", "SWITCHBOARD_SWEEP_INTERVAL=300ms", "SWITCHBOARD_DEFAULT_RATE_LIMIT_PER_MINUTE=600"}
	replicaEnv := func() []string { return append([]string{"SWITCHBOARD_DATA_DIR=" + t.TempDir()}, common...) }
	envA := replicaEnv()
	addrA := freeAddr(t)
	a := startServe(t, bin, addrA, envA)
	b := startServe(t, bin, freeAddr(t), replicaEnv())
	replicas := []*server{a, b}

	agent := a.onboard("agent@example.com")
	mint := func(t *testing.T, s *server, body map[string]any) (id, secret string) {
		t.Helper()
		body["name"] = fmt.Sprint("key ", time.Now().UnixNano())
		st, out := s.do("POST", "/v1/keys", agent, body)
		if st != 201 {
			t.Fatalf("mint a key: %d %v", st, out)
		}
		return out["id"].(string), out["secret"].(string)
	}
	publish := func(handle, path, category string) {
		t.Helper()
		st, out := b.do("POST", "/v1/partner/intents", agent, map[string]any{
			"publicIdentifier": handle, "name": handle[1:], "description": "replica test " + path, "category": category,
			"toolEndpoint": partner.URL + path, "timeoutMs": 2000, "feeRate": 0.0005,
			"payoutAddresses": map[string]string{"evm": "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"}})
		if st != 201 {
			t.Fatalf("publish %s: %d %v", handle, st, out)
		}
		if st, out := a.do("POST", "/v1/partner/intents/"+out["id"].(string)+"/active", agent, map[string]any{"active": true}); st != 200 {
			t.Fatalf("activate %s: %d %v", handle, st, out)
		}
	}
	publish("@fastq", "/fast", "QUERY")
	publish("@fastw", "/fast", "EXECUTE")
	publish("@slowq", "/slow", "QUERY")

	t.Run("the rate limit holds in total", func(t *testing.T) {
		_, limited := mint(t, a, map[string]any{"scopes": []string{"read"}, "rateLimitPerMinute": 10})
		counts := map[int]int{}
		for i := range 14 {
			st, _ := replicas[i%2].do("GET", "/v1/account", limited, nil)
			counts[st]++
		}
		if counts[200] != 10 || counts[429] != 4 {
			t.Fatalf("14 calls across two replicas on a key of 10 a minute: %v, want 10 answered and 4 refused", counts)
		}
	})

	t.Run("the spend limit holds under concurrent calls on both", func(t *testing.T) {
		// Each call may cost 0.0025 USD (infrastructure 0.001, partner 0.0005, platform 0.001):
		// a 0.01 USD limit has room for exactly four.
		_, capped := mint(t, b, map[string]any{"scopes": []string{"partner"}, "spendLimitUsd": 0.01})
		var mu sync.Mutex
		codes := map[string]int{}
		var wg sync.WaitGroup
		for i := range 10 {
			wg.Go(func() {
				st, out := replicas[i%2].do("POST", "/v1/invoke", capped, map[string]any{"message": "@fastq go"})
				code := fmt.Sprint(st)
				if e, ok := out["error"].(map[string]any); ok {
					code = fmt.Sprint(e["code"])
				}
				mu.Lock()
				codes[code]++
				mu.Unlock()
			})
		}
		wg.Wait()
		if codes["200"] != 4 || codes["SPEND_LIMIT"] != 6 {
			t.Fatalf("10 concurrent calls on a key with room for 4: %v", codes)
		}
	})

	t.Run("a key tree shares its parent's limits across both", func(t *testing.T) {
		// A parent of 6 calls a minute and 0.01 USD (room for four calls of 0.0025) mints two
		// children with the same limits on the other replica: the three together, over both
		// replicas, make 6 calls a minute and spend on four.
		_, parent := mint(t, a, map[string]any{"scopes": []string{"read", "partner"}, "rateLimitPerMinute": 6, "spendLimitUsd": 0.01})
		tree := []string{parent}
		for range 2 {
			st, out := b.do("POST", "/v1/keys", parent, map[string]any{"name": "child", "scopes": []string{"read", "partner"}, "rateLimitPerMinute": 6, "spendLimitUsd": 0.01})
			if st != 201 {
				t.Fatalf("mint a child: %d %v", st, out)
			}
			tree = append(tree, out["secret"].(string))
		}
		// The two mints took two of the parent's six.
		counts := map[int]int{}
		for i := range 12 {
			st, _ := replicas[i%2].do("GET", "/v1/account", tree[i%3], nil)
			counts[st]++
		}
		if counts[200] != 4 || counts[429] != 8 {
			t.Fatalf("12 calls of the tree across two replicas after two mints: %v, want 4 answered (the parent allows 6 a minute) and 8 refused", counts)
		}
	})

	t.Run("a key tree shares its parent's spend limit across both", func(t *testing.T) {
		// A parent with room for four calls (0.01 USD) mints two children of 0.01 USD on the
		// other replica; the three call at once on both replicas, on budget leases.
		_, parent := mint(t, a, map[string]any{"scopes": []string{"partner"}, "spendLimitUsd": 0.01})
		tree := []string{parent}
		for range 2 {
			st, out := b.do("POST", "/v1/keys", parent, map[string]any{"name": "child", "scopes": []string{"partner"}, "spendLimitUsd": 0.01})
			if st != 201 {
				t.Fatalf("mint a child: %d %v", st, out)
			}
			tree = append(tree, out["secret"].(string))
		}
		var mu sync.Mutex
		codes := map[string]int{}
		var wg sync.WaitGroup
		for i := range 12 {
			wg.Go(func() {
				st, out := replicas[i%2].do("POST", "/v1/invoke", tree[i%3], map[string]any{"message": "@fastq go"})
				code := fmt.Sprint(st)
				if e, ok := out["error"].(map[string]any); ok {
					code = fmt.Sprint(e["code"])
				}
				mu.Lock()
				codes[code]++
				mu.Unlock()
			})
		}
		wg.Wait()
		if codes["200"] < 1 || codes["200"] > 4 || codes["200"]+codes["SPEND_LIMIT"] != 12 {
			t.Fatalf("12 concurrent calls of a tree whose parent has room for 4: %v", codes)
		}
		t.Logf("12 concurrent calls of the tree over two replicas: %v", codes)
	})

	t.Run("a key revoked on one is refused by the other within a second", func(t *testing.T) {
		id, doomed := mint(t, a, map[string]any{"scopes": []string{"read"}})
		for range 2 { // b caches it
			if st, out := b.do("GET", "/v1/account", doomed, nil); st != 200 {
				t.Fatalf("before revocation: %d %v", st, out)
			}
		}
		if st, out := a.do("DELETE", "/v1/keys/"+id, agent, nil); st != 200 {
			t.Fatalf("revoke: %d %v", st, out)
		}
		deadline := time.Now().Add(time.Second)
		for {
			st, out := b.do("GET", "/v1/account", doomed, nil)
			if st == 401 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("b still answers the revoked key a second later: %d %v", st, out)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})

	t.Run("a write quoted on one is confirmed on the other", func(t *testing.T) {
		st, out := a.do("POST", "/v1/invoke", agent, map[string]any{"message": "@fastw do it"})
		e, _ := out["error"].(map[string]any)
		if st != 409 || e["code"] != "CONFIRMATION_REQUIRED" {
			t.Fatalf("quote on a: %d %v", st, out)
		}
		rid := e["details"].(map[string]any)["requestId"].(string)
		if st, out := b.do("POST", "/v1/invoke", agent, map[string]any{"message": "@fastw do it", "confirmRequestId": rid}); st != 200 || out["success"] != true {
			t.Fatalf("confirm on b: %d %v", st, out)
		}
		if st, out := a.do("POST", "/v1/invoke", agent, map[string]any{"message": "@fastw do it", "confirmRequestId": rid}); st != 200 || out["requestId"] != rid {
			t.Fatalf("the outcome asked again on a: %d %v", st, out)
		}
	})

	t.Run("a killed replica's call is concluded exactly once", func(t *testing.T) {
		ctx := context.Background()
		db, err := store.Open(ctx, cluster.DSN(), "")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		// A read drawn on a budget lease is written whole when its partner answers, so a
		// replica killed before then leaves no record and charges nothing (docs/decisions.md,
		// "Budget leases"). Here a reserves call by call: the dispatch is recorded before it
		// is sent, and it is the sweepers' to conclude.
		a.kill9()
		a = startServe(t, bin, addrA, append(envA, "SWITCHBOARD_BUDGET_LEASES=false"))
		go a.do("POST", "/v1/invoke", agent, map[string]any{"message": "@slowq go"})
		for slowRuns.Load() == 0 {
			time.Sleep(10 * time.Millisecond)
		}
		// The call is at the partner; kill once its record has landed.
		rid := slowID.Load().(string)
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			inv, err := invocations.New(db).ByID(ctx, rid)
			if err == nil && inv.State == store.InvDispatching {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the slow call's record did not land: %+v %v", inv, err)
			}
		}
		a.kill9()
		a = startServe(t, bin, addrA, append(envA, "SWITCHBOARD_BUDGET_LEASES=false"))
		// Past the call's deadline (2 s × 2 tries + 1 s) both replicas sweep every 300 ms.
		var out map[string]any
		for deadline := time.Now().Add(20 * time.Second); ; {
			var st int
			st, out = b.do("POST", "/v1/invoke", agent, map[string]any{"message": "@slowq go", "confirmRequestId": rid})
			if st == 200 {
				break
			}
			if st != 409 || time.Now().After(deadline) {
				t.Fatalf("the killed call's outcome: %d %v", st, out)
			}
			time.Sleep(200 * time.Millisecond)
		}
		if out["success"] != true || slowRuns.Load() != 1 {
			t.Fatalf("concluded: %v; the partner's work ran %d times, want once (the re-send is deduped)", out, slowRuns.Load())
		}
		time.Sleep(time.Second) // more sweeps on both replicas find nothing to do

		fees := partnerFees(t, db, rid)
		if fees != 1 {
			t.Fatalf("%d partner fees for the killed call, want 1", fees)
		}
		check := exec.Command(bin, "admin", "ledger-check")
		check.Env = append(os.Environ(), envA...)
		if out, err := check.CombinedOutput(); err != nil {
			t.Fatalf("ledger-check: %v\n%s", err, out)
		}
	})
}

package main

import (
	"context"
	"crypto/ecdsa"
	"fmt"
	"math/big"
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

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/switchboard-hq/switchboard/contracts"
	"github.com/switchboard-hq/switchboard/contracts/anviltest"
	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools/ratelimit/redistest"
)

// previousRelease is the commit the upgrade tests start from: the release running before the
// one in this working tree. There are no tags; it is main as it stood when issue 37's work
// began (the release the first-hour review ran). Move it to the last release's commit each
// time one is cut, so that the rolling test upgrades from what is deployed and the migration
// check looks at what that release did not have (docs/operations.md, "Upgrades").
const previousRelease = "8367546c9a0cd4adabbfbab141fa18e7ddcdc667"

// git runs git in the repository this test's source belongs to.
func git(t *testing.T, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("git", args...)
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if e, ok := err.(*exec.ExitError); ok {
			stderr = string(e.Stderr)
		}
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return out
}

// needPreviousRelease fails the test with what to do when the clone lacks the previous
// release (a shallow clone: CI must fetch the history).
func needPreviousRelease(t *testing.T) {
	t.Helper()
	if err := exec.Command("git", "cat-file", "-e", previousRelease+"^{commit}").Run(); err != nil {
		t.Fatalf("the previous release %s is not in this clone (shallow? run `git fetch --unshallow`): the upgrade tests build it: %v", previousRelease, err)
	}
}

// buildRelease builds switchboard at commit (from `git archive` into a temporary directory)
// as buildBinary builds the working tree's: static, no cgo, trimmed and stripped.
func buildRelease(t *testing.T, commit string) string {
	t.Helper()
	needPreviousRelease(t)
	root := strings.TrimSpace(string(git(t, "rev-parse", "--show-toplevel")))
	src := t.TempDir()
	archive := filepath.Join(t.TempDir(), "release.tar")
	git(t, "-C", root, "archive", "--format=tar", "-o", archive, commit)
	if out, err := exec.Command("tar", "-x", "-f", archive, "-C", src).CombinedOutput(); err != nil {
		t.Fatalf("untar %s: %v\n%s", commit, err, out)
	}
	bin := filepath.Join(t.TempDir(), "switchboard-"+commit[:7])
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, "./cmd/switchboard")
	build.Dir = src
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", commit, err, out)
	}
	return bin
}

// contractBreaks are what a migration may not do while the previous release still runs on
// the schema: drop or rename what it reads, change a column's type, or make it refuse rows
// the previous release writes. DROP INDEX (an index rebuilt) is allowed.
var contractBreaks = []struct {
	re   *regexp.Regexp
	what string
}{
	{regexp.MustCompile(`(?is)\bDROP\s+(TABLE|COLUMN|VIEW|FUNCTION|TYPE|TRIGGER)\b`), "drops something the previous release may use"},
	{regexp.MustCompile(`(?is)\bRENAME\b`), "renames something the previous release uses by its old name"},
	{regexp.MustCompile(`(?is)\bALTER\s+COLUMN\s+\S+\s+(SET\s+DATA\s+)?TYPE\b`), "changes a column's type under the previous release"},
	{regexp.MustCompile(`(?is)\bALTER\s+COLUMN\s+\S+\s+SET\s+NOT\s+NULL\b`), "makes a column refuse the NULLs the previous release writes"},
	{regexp.MustCompile(`(?is)\bADD\s+(COLUMN\s+)?\S+\s+[^,;]*\bNOT\s+NULL\b`), "adds a NOT NULL column without a DEFAULT: the previous release's INSERTs leave it out"},
}

// expandOnly lists how one migration's statements would break the previous release running
// beside it. A statement whose text (comments included) carries `-- contract:` is a contract
// step, allowed in a release after the one that stopped using what it removes.
func expandOnly(sql string) []string {
	var problems []string
	for _, stmt := range regexp.MustCompile(`--bun:split|;`).Split(sql, -1) {
		if strings.Contains(stmt, "-- contract:") {
			continue
		}
		var code []string
		for _, line := range strings.Split(stmt, "\n") {
			if i := strings.Index(line, "--"); i >= 0 {
				line = line[:i]
			}
			code = append(code, line)
		}
		text := strings.Join(code, "\n")
		for _, b := range contractBreaks {
			if !b.re.MatchString(text) {
				continue
			}
			if strings.HasPrefix(b.what, "adds a NOT NULL") && regexp.MustCompile(`(?is)\bDEFAULT\b`).MatchString(text) {
				continue
			}
			problems = append(problems, fmt.Sprintf("%s: %s", b.what, strings.Join(strings.Fields(text), " ")))
		}
	}
	return problems
}

func TestExpandOnlyFindsContractSteps(t *testing.T) {
	for _, c := range []struct {
		sql  string
		bad  bool
		name string
	}{
		{"ALTER TABLE keys ADD COLUMN parent_id TEXT", false, "a nullable column"},
		{"ALTER TABLE keys ADD COLUMN depth INTEGER NOT NULL DEFAULT 0", false, "a NOT NULL column with a default"},
		{"CREATE INDEX a ON b (c);\n--bun:split\nDROP INDEX old_idx", false, "an index rebuilt"},
		{"-- the old DROP COLUMN is gone\nCREATE TABLE t (id TEXT)", false, "a comment naming a drop"},
		{"ALTER TABLE keys ADD COLUMN depth INTEGER NOT NULL", true, "a NOT NULL column without a default"},
		{"ALTER TABLE invocations DROP COLUMN trail", true, "a dropped column"},
		{"DROP TABLE code_guesses", true, "a dropped table"},
		{"ALTER TABLE keys RENAME COLUMN name TO label", true, "a renamed column"},
		{"ALTER TABLE keys ALTER COLUMN name TYPE BYTEA", true, "a changed type"},
		{"ALTER TABLE keys ALTER COLUMN name SET NOT NULL", true, "a column made NOT NULL"},
		{"-- contract: trail unused since release abc1234\nALTER TABLE invocations DROP COLUMN trail", false, "a marked contract step"},
	} {
		if got := expandOnly(c.sql); (len(got) > 0) != c.bad {
			t.Errorf("%s: %q gives %v, want a problem: %v", c.name, c.sql, got, c.bad)
		}
	}
}

// TestMigrationsSincePreviousReleaseOnlyExpand holds the migrations to expand-then-contract
// (docs/operations.md, "Upgrades"): every migration of the previous release is still here,
// unchanged (a database that applied it never runs it again), and the ones added since only
// expand the schema, so the previous release runs on it during a rolling upgrade.
// TestRollingUpgrade proves the same by running it there.
func TestMigrationsSincePreviousReleaseOnlyExpand(t *testing.T) {
	needPreviousRelease(t)
	const dir = "store/migrations/"
	root := strings.TrimSpace(string(git(t, "rev-parse", "--show-toplevel")))
	old := map[string]bool{}
	for _, name := range strings.Fields(string(git(t, "-C", root, "ls-tree", "--name-only", previousRelease, dir))) {
		old[filepath.Base(name)] = true
		was := git(t, "-C", root, "show", previousRelease+":"+name)
		now, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Errorf("migration %s of the previous release is gone: a database that applied it is ahead of this release's history (%v)", name, err)
			continue
		}
		if string(was) != string(now) {
			t.Errorf("migration %s changed since the previous release: databases that applied it never run it again; add a new migration instead", name)
		}
	}
	if len(old) == 0 {
		t.Fatalf("no migrations in %s at %s", dir, previousRelease)
	}
	entries, err := os.ReadDir(filepath.Join(root, dir))
	if err != nil {
		t.Fatal(err)
	}
	added := 0
	for _, e := range entries {
		if old[e.Name()] || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		added++
		raw, err := os.ReadFile(filepath.Join(root, dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range expandOnly(string(raw)) {
			t.Errorf("%s %s; expand now and contract in a later release (mark that statement `-- contract: <what>, unused since <release>`)", e.Name(), p)
		}
	}
	t.Logf("%d migrations in the previous release, %d added since", len(old), added)
}

// rotation is the load balancer of the rolling upgrade: callers take replicas in turn; a
// replica leaves it before it is sent SIGTERM (as the endpoints controller drops a pod
// while its preStop hook runs) and joins once it is healthy.
type rotation struct {
	mu   sync.Mutex
	live []*server
	next int
}

func (r *rotation) pick() *server {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next++
	return r.live[r.next%len(r.live)]
}

func (r *rotation) set(live ...*server) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.live = live
}

// upgradeCall is one call of the steady load and what its caller was told.
type upgradeCall struct {
	kind      string // account, discover, key, read, write, flat
	requestID string
	problem   string // empty: answered as expected
	at        time.Time
	previous  bool // sent (first) to a replica of the previous release
}

// TestRollingUpgrade upgrades two replicas of the previous release to this working tree's
// under steady load: both serve on one PostgreSQL and one Redis; callers read (the account,
// discover), mint a key, use it and revoke it, invoke a read intent, invoke a write intent
// and confirm it (often on the other replica), and pay a flat-fee intent on anvil. Then `switchboard migrate` runs this
// release's migrations while the previous release serves, and the replicas are replaced one
// at a time: out of the rotation, SIGTERM (drained, exit 0), the new release started on the
// same settings and put back. No call fails, every answered call is recorded once as
// succeeded (a per-call fee once in the ledger, a flat fee settled on chain), and `admin
// ledger-check` is clean.
func TestRollingUpgrade(t *testing.T) {
	if os.Getenv("TEST_DATABASE_URL") == "" {
		t.Skip("needs PostgreSQL: set TEST_DATABASE_URL (CI does)")
	}
	began := time.Now()
	oldBin := buildRelease(t, previousRelease)
	newBin := buildBinary(t)
	built := time.Since(began)
	dsn := storetest.DSN(t, "postgres")
	redis := redistest.Start(t)
	chain := anviltest.Start(t)
	shared := t.TempDir()
	keyFile := filepath.Join(shared, "signing-key.pem")
	key, _, err := signing.LoadOrCreatePrivateKey(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	var received sync.Map // requestId -> *atomic.Int32
	work := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/flat" {
			fmt.Fprint(w, `{"success":true,"result":{"paid":true}}`)
			return
		}
		fmt.Fprint(w, `{"success":true,"result":{"done":true},"providerCostMicro":300}`)
	})
	counted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get("X-Service-Request-Id"); id != "" {
			n, _ := received.LoadOrStore(id, new(atomic.Int32))
			n.(*atomic.Int32).Add(1)
		}
		signing.Middleware(serviceVerifier(key), signing.DedupeMiddleware(signing.NewResponseDedupe(), work)).ServeHTTP(w, r)
	})
	partner, caFile := startPartner(t, counted, shared)
	const secret = "c3dpdGNoYm9hcmQgcm9sbGluZyB1cGdyYWRlIGtleSE="
	common := []string{"SWITCHBOARD_DATABASE_URL=" + dsn, "SWITCHBOARD_REDIS_URL=" + redis.URL,
		"SWITCHBOARD_SIGNING_KEY_FILE=" + keyFile, "SWITCHBOARD_MASTER_KEY=" + secret, "SWITCHBOARD_SERVER_SECRET=" + secret,
		"SWITCHBOARD_SMTP_URL=", "SWITCHBOARD_API_KEY=", "SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS=true", "SWITCHBOARD_PARTNER_CA_FILE=" + caFile,
		"SWITCHBOARD_DEFAULT_RATE_LIMIT_PER_MINUTE=100000", "SWITCHBOARD_DEFAULT_SPEND_LIMIT_USD=1000", "SWITCHBOARD_STARTING_CREDIT_USD=1000",
		"SWITCHBOARD_DRAIN_DELAY=1s", "SWITCHBOARD_SHUTDOWN_TIMEOUT=30s", "SWITCHBOARD_REPROBE_INTERVAL=0",
		"SWITCHBOARD_FLATFEE_RPC_URL=" + chain.URL, fmt.Sprintf("SWITCHBOARD_FLATFEE_CHAIN_ID=%d", anviltest.ChainID),
		"SWITCHBOARD_FLATFEE_TOKEN=" + chain.Token.Hex(), "SWITCHBOARD_FLATFEE_PAYER=" + chain.Payer.Hex(),
		"SWITCHBOARD_FLATFEE_RELAYER_KEY=" + hexutil.Encode(crypto.FromECDSA(chain.Relayer)), "SWITCHBOARD_FLATFEE_TREASURY=" + chain.Treasury.Hex(),
		"SWITCHBOARD_FLATFEE_CONFIRMATIONS=1", "SWITCHBOARD_FLATFEE_PLATFORM_USD=0.01", "SWITCHBOARD_PAYOUT_INTERVAL=0"}
	// Each replica keeps its own data directory across its replacement, as a pod's volume.
	envA := append([]string{"SWITCHBOARD_DATA_DIR=" + t.TempDir()}, common...)
	envB := append([]string{"SWITCHBOARD_DATA_DIR=" + t.TempDir()}, common...)
	a := startServe(t, oldBin, freeAddr(t), envA)
	b := startServe(t, oldBin, freeAddr(t), envB)

	agent := a.onboard("upgrade@example.com")
	for _, in := range []struct{ handle, path, category, unit string }{
		{"@upread", "/read", "QUERY", ""}, {"@upwrite", "/write", "EXECUTE", ""}, {"@upflat", "/flat", "QUERY", "flat_usdc"},
	} {
		row := map[string]any{"publicIdentifier": in.handle, "name": in.handle[1:], "description": "rolling upgrade " + in.path, "category": in.category,
			"toolEndpoint": partner.URL + in.path, "timeoutMs": 5000, "feeRate": 0.0005,
			"payoutAddresses": map[string]string{"evm": "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"}}
		if in.unit != "" {
			row["feeRate"], row["feeRateUnit"] = 0.02, in.unit
		}
		st, out := b.do("POST", "/v1/partner/intents", agent, row)
		if st != 201 {
			t.Fatalf("publish %s: %d %v", in.handle, st, out)
		}
		if st, out := a.do("POST", "/v1/partner/intents/"+out["id"].(string)+"/active", agent, map[string]any{"active": true}); st != 200 {
			t.Fatalf("activate %s: %d %v", in.handle, st, out)
		}
	}
	payer := chain.NewKey(t)
	chain.Mint(t, crypto.PubkeyToAddress(payer.PublicKey), 1_000_000_000)

	rot := &rotation{}
	rot.set(a, b)
	var mu sync.Mutex
	var calls []upgradeCall
	record := func(c upgradeCall, s *server) {
		c.at, c.previous = time.Now(), s.cmd.Path == oldBin
		mu.Lock()
		calls = append(calls, c)
		mu.Unlock()
	}
	problem := func(st int, out map[string]any, wantStatus int) string {
		if st != wantStatus {
			return fmt.Sprintf("%d %v", st, out)
		}
		return ""
	}
	kinds := map[string]func(){
		"account": func() {
			s := rot.pick()
			st, out := s.do("GET", "/v1/account", agent, nil)
			record(upgradeCall{kind: "account", problem: problem(st, out, 200)}, s)
		},
		"discover": func() {
			s := rot.pick()
			st, out := s.do("GET", "/v1/discover?query=rolling+upgrade", agent, nil)
			record(upgradeCall{kind: "discover", problem: problem(st, out, 200)}, s)
		},
		// A key minted on one replica, used on the next and revoked (by itself) on the one
		// after: keys written by either release are read and changed by the other. A key the
		// previous release minted has no recorded parent, so this release takes it for a root
		// that only it and the owner revoke (docs/operations.md, "Upgrades").
		"key": func() {
			s := rot.pick()
			st, out := s.do("POST", "/v1/keys", agent, map[string]any{"name": fmt.Sprint("rolling ", time.Now().UnixNano()), "scopes": []string{"read"}})
			c := upgradeCall{kind: "key", problem: problem(st, out, 201)}
			id, _ := out["id"].(string)
			minted, _ := out["secret"].(string)
			if c.problem == "" {
				st, out = rot.pick().do("GET", "/v1/account", minted, nil)
				c.problem = problem(st, out, 200)
			}
			if c.problem == "" {
				st, out = rot.pick().do("DELETE", "/v1/keys/"+id, minted, nil)
				c.problem = problem(st, out, 200)
			}
			record(c, s)
		},
		"read": func() {
			s := rot.pick()
			st, out := s.do("POST", "/v1/invoke", agent, map[string]any{"message": "@upread go"})
			c := upgradeCall{kind: "read", problem: problem(st, out, 200)}
			c.requestID, _ = out["requestId"].(string)
			if c.problem == "" && (out["success"] != true || c.requestID == "") {
				c.problem = fmt.Sprint(out)
			}
			record(c, s)
		},
		"write": func() {
			c := upgradeCall{kind: "write"}
			s := rot.pick()
			st, out := s.do("POST", "/v1/invoke", agent, map[string]any{"message": "@upwrite do it"})
			if c.problem = problem(st, out, 409); c.problem == "" {
				c.requestID, _ = details(out)["requestId"].(string)
				st, out = rot.pick().do("POST", "/v1/invoke", agent, map[string]any{"message": "@upwrite do it", "confirmRequestId": c.requestID})
				if c.problem = problem(st, out, 200); c.problem == "" && (out["success"] != true || out["requestId"] != c.requestID) {
					c.problem = fmt.Sprint(out)
				}
			}
			record(c, s)
		},
		"flat": func() {
			c := upgradeCall{kind: "flat"}
			s := rot.pick()
			st, out := s.do("POST", "/v1/invoke", agent, map[string]any{"message": "@upflat weather"})
			q, _ := details(out)["quote"].(map[string]any)
			if c.problem = problem(st, out, 402); c.problem == "" && q == nil {
				c.problem = fmt.Sprintf("a quote without its terms: %v", out)
			}
			if c.problem == "" {
				c.requestID, _ = q["requestId"].(string)
				st, out = rot.pick().do("POST", "/v1/invoke", agent, map[string]any{"message": "@upflat weather", "confirmRequestId": c.requestID,
					"payment": signQuote(t, chain, q, payer)})
				if c.problem = problem(st, out, 200); c.problem == "" {
					if pay, _ := out["payment"].(map[string]any); out["success"] != true || pay["state"] != "settled" {
						c.problem = fmt.Sprint(out)
					}
				}
			}
			record(c, s)
		},
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for _, kind := range []string{"read", "read", "read", "write", "write", "account", "discover", "key", "flat"} {
		wg.Go(func() {
			for !stop.Load() {
				kinds[kind]()
			}
		})
	}

	// The steady load on the previous release; then this release's migrations under it,
	// the previous release serving on the new schema; then each replica replaced in turn.
	loadBegan := time.Now()
	time.Sleep(2 * time.Second)
	migrate := exec.Command(newBin, "migrate")
	migrate.Env = append(os.Environ(), envA...)
	migrated, err := migrate.CombinedOutput()
	if err != nil {
		t.Fatalf("switchboard migrate (this release): %v\n%s", err, migrated)
	}
	migratedAt := time.Now()
	time.Sleep(2 * time.Second)
	replace := func(old *server, env []string, others ...*server) *server {
		rot.set(others...)
		if err := old.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := old.cmd.Wait(); err != nil {
			t.Errorf("the previous release after SIGTERM: %v, want exit 0\n%s", err, old.stderr)
		}
		s := startServe(t, newBin, strings.TrimPrefix(old.url, "http://"), env)
		rot.set(append(others, s)...)
		return s
	}
	a = replace(a, envA, b)
	time.Sleep(2 * time.Second) // one replica of each release
	b = replace(b, envB, a)
	time.Sleep(2 * time.Second)
	stop.Store(true)
	wg.Wait()
	loaded := time.Since(loadBegan)
	// Drained, the batch writers have committed everything they held.
	for _, s := range []*server{a, b} {
		s.cmd.Process.Signal(syscall.SIGTERM)
		if err := s.cmd.Wait(); err != nil {
			t.Errorf("this release after SIGTERM: %v, want exit 0\n%s", err, s.stderr)
		}
	}

	perKind := map[string]int{}
	failed, previousOnNew := 0, 0
	for _, c := range calls {
		perKind[c.kind]++
		if c.previous && c.at.After(migratedAt) {
			previousOnNew++
		}
		if c.problem != "" {
			failed++
			if failed <= 10 {
				t.Errorf("call (%s) at +%s failed: %s", c.kind, c.at.Sub(loadBegan).Round(time.Millisecond), c.problem)
			}
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d calls failed during the upgrade", failed, len(calls))
	}
	if previousOnNew == 0 {
		t.Fatal("no call was served by the previous release on this release's schema")
	}
	for _, kind := range []string{"account", "discover", "key", "read", "write", "flat"} {
		if perKind[kind] < 3 {
			t.Fatalf("only %d %s calls ran under the upgrade: %v", perKind[kind], kind, perKind)
		}
	}

	ctx := context.Background()
	db := storetest.OpenURL(t, dsn)
	var rows []struct {
		RequestID string `bun:"request_id"`
		State     string `bun:"state"`
	}
	if err := db.DB().NewRaw("SELECT request_id, state FROM invocations").Scan(ctx, &rows); err != nil {
		t.Fatal(err)
	}
	recorded := map[string]string{}
	for _, r := range rows {
		recorded[r.RequestID] = r.State
	}
	answered := map[string]bool{}
	for _, c := range calls {
		if c.requestID == "" {
			continue
		}
		if answered[c.requestID] {
			t.Errorf("request %s answered twice", c.requestID)
		}
		answered[c.requestID] = true
		if recorded[c.requestID] != store.InvSucceeded {
			t.Errorf("%s call %s: recorded %q, want succeeded", c.kind, c.requestID, recorded[c.requestID])
			continue
		}
		n := int32(0)
		if v, ok := received.Load(c.requestID); ok {
			n = v.(*atomic.Int32).Load()
		}
		if n == 0 || c.kind == "write" && n != 1 {
			t.Errorf("%s call %s reached the partner %d times", c.kind, c.requestID, n)
		}
		if c.kind != "flat" {
			if fees := partnerFees(t, db, c.requestID); fees != 1 {
				t.Errorf("%s call %s: %d partner fees in the ledger, want 1", c.kind, c.requestID, fees)
			}
		}
	}
	if len(recorded) != len(answered) {
		for id, state := range recorded {
			if !answered[id] {
				t.Errorf("recorded but never answered: %s (%s)", id, state)
			}
		}
	}
	check := exec.Command(newBin, "admin", "ledger-check")
	check.Env = append(os.Environ(), envA...)
	if out, err := check.CombinedOutput(); err != nil {
		t.Fatalf("ledger-check: %v\n%s", err, out)
	}
	t.Logf("rolling upgrade %s -> working tree: %d calls (%v) in %s of load, 0 failed (%d of them served by the previous release on this release's schema), %d invocations recorded once each; %s; both releases built in %s",
		previousRelease[:7], len(calls), perKind, loaded.Round(100*time.Millisecond), previousOnNew, len(recorded), strings.TrimSpace(string(migrated)), built.Round(time.Second))
}

// signQuote signs a flat-fee quote's EIP-3009 authorization with key, as a paying agent does.
// A quote missing a field signs zeros, and the call's answer says what is wrong.
func signQuote(t *testing.T, chain *anviltest.Chain, q map[string]any, key *ecdsa.PrivateKey) map[string]any {
	from := crypto.PubkeyToAddress(key.PublicKey)
	payTo, _ := q["payTo"].(string)
	amount, _ := q["amount"].(string)
	hexNonce, _ := q["nonce"].(string)
	validAfter, _ := q["validAfter"].(float64)
	validBefore, _ := q["validBefore"].(float64)
	to := common.HexToAddress(payTo)
	value, ok := new(big.Int).SetString(amount, 10)
	if !ok {
		value = new(big.Int)
	}
	after, before := int64(validAfter), int64(validBefore)
	var nonce [32]byte
	copy(nonce[:], common.FromHex(hexNonce))
	sig, err := contracts.Sign(contracts.TypedData(contracts.ReceiveWithAuthorization, anviltest.ChainID, chain.Token, from, to, value, after, before, nonce), key)
	if err != nil {
		t.Error(err)
		return nil
	}
	return map[string]any{"signature": hexutil.Encode(sig), "primaryType": contracts.ReceiveWithAuthorization, "authorization": map[string]any{
		"from": from.Hex(), "to": to.Hex(), "value": amount, "validAfter": fmt.Sprint(after), "validBefore": fmt.Sprint(before), "nonce": hexNonce}}
}

// details is an error answer's details.
func details(out map[string]any) map[string]any {
	e, _ := out["error"].(map[string]any)
	d, _ := e["details"].(map[string]any)
	return d
}

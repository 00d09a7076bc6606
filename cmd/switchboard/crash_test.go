package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/invocations"
	"github.com/switchboard-hq/switchboard/store/ledger"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools/ratelimit/redistest"
)

// crashSteps are the steps of an invoke at which the crash matrix kills serve: the
// failpoints serve kills itself at (SWITCHBOARD_FAILPOINT) and the two moments only the
// outside sees (the partner has the request; the caller has its answer).
var crashSteps = []struct{ name, failpoint string }{
	{"before the reservation commits", "reserve"},
	{"after the request is sent", ""},
	{"after the partner answered", "answered"},
	{"after the caller was answered", ""},
	{"during a batch commit", "batch"},
}

// crashWorld is one database (SQLite in its data directory, or a PostgreSQL cluster of the
// test's own that a cell can stop), one Redis, a TLS partner that verifies and dedupes, and
// an account with a read intent (QUERY) and a write intent (EXECUTE), across serve restarts.
type crashWorld struct {
	t       *testing.T
	bin     string
	addr    string
	env     []string
	dir     string
	cluster *storetest.Cluster // nil: SQLite
	redis   *redistest.Server
	key     string

	current  atomic.Pointer[server]
	received sync.Map     // requestId -> *atomic.Int32: requests that reached the partner
	cellSaw  atomic.Int32 // requests that reached the partner during the current cell
	cellReq  atomic.Value // string: the last requestId that reached it during the cell
	dbDown   atomic.Bool  // the cell stopped the database
	// onRequest, when set, runs (once) as a request reaches the partner, before it answers.
	onRequest atomic.Pointer[func()]
}

func newCrashWorld(t *testing.T, bin, dialect string) *crashWorld {
	w := &crashWorld{t: t, bin: bin, addr: freeAddr(t), dir: t.TempDir(), redis: redistest.Start(t)}
	dsn := ""
	if dialect == "postgres" {
		w.cluster = storetest.StartCluster(t)
		dsn = w.cluster.DSN()
	}
	key, _, err := signing.LoadOrCreatePrivateKey(filepath.Join(w.dir, "signing-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	work := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(rw, `{"success":true,"result":{"path":%q,"at":%d},"providerCostMicro":300}`, r.URL.Path, time.Now().UnixNano())
	})
	dedupe := signing.NewResponseDedupe()
	counted := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get("X-Service-Request-Id"); id != "" {
			n, _ := w.received.LoadOrStore(id, new(atomic.Int32))
			n.(*atomic.Int32).Add(1)
			w.cellSaw.Add(1)
			w.cellReq.Store(id)
		}
		if f := w.onRequest.Swap(nil); f != nil {
			(*f)()
		}
		signing.Middleware(serviceVerifier(key), signing.DedupeMiddleware(dedupe, work)).ServeHTTP(rw, r)
	})
	partner, caFile := startPartner(t, counted, w.dir)
	w.env = []string{"SWITCHBOARD_DATA_DIR=" + w.dir, "SWITCHBOARD_DATABASE_URL=" + dsn, "SWITCHBOARD_SMTP_URL=", "SWITCHBOARD_API_KEY=",
		"SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS=true", "SWITCHBOARD_PARTNER_CA_FILE=" + caFile, "SWITCHBOARD_REDIS_URL=" + w.redis.URL,
		"SWITCHBOARD_SWEEP_MARGIN=1s", "SWITCHBOARD_SWEEP_INTERVAL=200ms", "SWITCHBOARD_DEFAULT_RATE_LIMIT_PER_MINUTE=100000"}
	s := w.start("")
	w.key = s.onboard("crash@example.com")
	// The read's timeout puts its reservation's deadline far enough out (2 tries × 3.5 s) for
	// its outcome to be committed after the answer, the path a crash could otherwise lose.
	for _, in := range []struct {
		handle, category string
		timeoutMs        int
	}{{"@crashread", "QUERY", 3500}, {"@crashwrite", "EXECUTE", 1000}} {
		st, out := s.do("POST", "/v1/partner/intents", w.key, map[string]any{
			"publicIdentifier": in.handle, "name": in.handle, "description": "crash matrix", "category": in.category,
			"toolEndpoint": partner.URL + "/" + strings.TrimPrefix(in.handle, "@"), "timeoutMs": in.timeoutMs, "feeRate": 0.001,
			"payoutAddresses": map[string]string{"evm": "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"}})
		if st != 201 {
			t.Fatalf("publish %s: %d %v", in.handle, st, out)
		}
		if st, out := s.do("POST", "/v1/partner/intents/"+out["id"].(string)+"/active", w.key, map[string]any{"active": true}); st != 200 {
			t.Fatalf("activate %s: %d %v", in.handle, st, out)
		}
	}
	s.kill9()
	return w
}

func (w *crashWorld) start(failpoint string) *server {
	s := startServe(w.t, w.bin, w.addr, append(append([]string{}, w.env...), "SWITCHBOARD_FAILPOINT="+failpoint))
	w.current.Store(s)
	return s
}

func (w *crashWorld) store() *store.Store {
	dsn := ""
	if w.cluster != nil {
		dsn = w.cluster.DSN()
	}
	st, err := store.Open(context.Background(), dsn, w.dir)
	if err != nil {
		w.t.Fatal(err)
	}
	return st
}

// crashCell is one cell of the matrix and what its caller was told.
type crashCell struct {
	step              int
	dbDown, redisDown bool
	write             bool

	status    int
	answer    map[string]any
	requestID string // the call's, when known
}

func (c *crashCell) name() string {
	kind := "read"
	if c.write {
		kind = "write"
	}
	return fmt.Sprintf("%s/%s/db-%s/redis-%s", kind, strings.ReplaceAll(crashSteps[c.step].name, " ", "-"), upDown(c.dbDown), upDown(c.redisDown))
}

func upDown(down bool) string {
	if down {
		return "down"
	}
	return "up"
}

// TestCrashMatrix kills serve with -9 at each step of an invoke, with the database and Redis
// each up or down at that moment, for a read and a write category, on SQLite (the database
// cannot be down apart from the process) and PostgreSQL; then starts serve again, lets its
// sweeper work, and checks what the issue promises: every answer given is recorded as given
// (a confirmation answers it again), no write reaches the partner twice, every charged
// success is recorded once with its partner fee, the ledger's invariants hold, and no
// invocation is left dispatching.
func TestCrashMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("the crash matrix restarts serve 2 times per cell")
	}
	bin := buildBinary(t)
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newCrashWorld(t, bin, dialect)
			for step := range crashSteps {
				for _, dbDown := range []bool{false, true} {
					if dbDown && w.cluster == nil {
						continue // SQLite lives and dies with the process
					}
					for _, redisDown := range []bool{false, true} {
						for _, write := range []bool{false, true} {
							c := &crashCell{step: step, dbDown: dbDown, redisDown: redisDown, write: write}
							t.Run(c.name(), func(t *testing.T) {
								w.t = t
								w.run(c)
								w.check(c)
							})
						}
					}
				}
			}
		})
	}
}

func (w *crashWorld) stopDB() {
	w.cluster.Stop()
	w.dbDown.Store(true)
}

// run plays one cell up to the kill and brings everything back.
func (w *crashWorld) run(c *crashCell) {
	t := w.t
	step := crashSteps[c.step]
	w.cellSaw.Store(0)
	w.cellReq.Store("")
	s := w.start(step.failpoint)
	handle := "@crashread"
	if c.write {
		handle = "@crashwrite"
	}
	body := map[string]any{"message": handle + " go"}
	if c.write {
		st, out := s.do("POST", "/v1/invoke", w.key, body)
		if st != 409 {
			t.Fatalf("write quote: %d %v", st, out)
		}
		c.requestID = out["error"].(map[string]any)["details"].(map[string]any)["requestId"].(string)
		body["confirmRequestId"] = c.requestID
	}
	// What the partner does as the request reaches it: the database goes down (after the
	// batch writer had time to record the dispatch), and at "after the request is sent" the
	// process is killed.
	handled := make(chan struct{})
	onRequest := func() {
		defer close(handled)
		if c.dbDown && step.name != "before the reservation commits" {
			time.Sleep(300 * time.Millisecond)
			w.stopDB()
		}
		if step.name == "after the request is sent" {
			w.current.Load().cmd.Process.Kill()
		}
	}
	w.onRequest.Store(&onRequest)
	if c.dbDown && step.name == "before the reservation commits" {
		w.stopDB()
	}
	if c.redisDown {
		w.redis.Stop()
	}
	c.status, c.answer = s.do("POST", "/v1/invoke", w.key, body)
	s.kill9() // at "after the caller was answered", and wherever a failpoint was not reached
	if w.onRequest.Swap(nil) == nil {
		<-handled // the partner had the request: its part of the cell is played out first
	}
	if w.dbDown.Swap(false) {
		w.cluster.Start()
	}
	if c.redisDown {
		w.redis.Restart()
	}
	if id := w.cellReq.Load().(string); c.requestID == "" && id != "" {
		c.requestID = id // the caller was not told it; the partner was
	}
	if id, ok := c.answer["requestId"].(string); ok {
		c.requestID = id
	} else if e, ok := c.answer["error"].(map[string]any); ok {
		if d, ok := e["details"].(map[string]any); ok && d["requestId"] != nil {
			c.requestID = d["requestId"].(string)
		}
	}
	if c.redisDown && (c.status != 503 || !strings.Contains(fmt.Sprint(c.answer), "UNAVAILABLE")) {
		t.Fatalf("with Redis down a call that costs money is refused: %d %v", c.status, c.answer)
	}
}

// check restarts serve, waits for its sweeper, and asserts the cell's promises.
func (w *crashWorld) check(c *crashCell) {
	t := w.t
	ctx := context.Background()
	s := w.start("")
	defer s.kill9()
	st := w.store()
	defer st.Close()

	// The budget leases the killed serve held are settled by a sweeper once their deadline
	// (2 minutes) has passed, from the rows of the calls they recorded: the deadline is moved
	// to now, as that much time passing would move it.
	if _, err := st.DB().NewRaw("UPDATE reservations SET expires_at = ? WHERE request_id LIKE ? AND state = ?",
		time.Now().UTC().Add(-time.Second), store.LeasePrefix+"%", store.ReservationOpen).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	var left []string
	for deadline := time.Now().Add(20 * time.Second); ; {
		left = left[:0]
		if err := st.DB().NewRaw(`SELECT request_id FROM invocations WHERE state = ?
			UNION ALL SELECT request_id FROM reservations WHERE request_id LIKE ? AND state = ? AND expires_at < ?`,
			store.InvDispatching, store.LeasePrefix+"%", store.ReservationOpen, time.Now().UTC()).Scan(ctx, &left); err != nil {
			t.Fatal(err)
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("invocations left dispatching, or leases unsettled, after the sweep: %v", left)
		}
		time.Sleep(100 * time.Millisecond)
	}

	told := fmt.Sprintf("%d %v", c.status, c.answer)
	var inv *store.Invocation
	if c.requestID != "" {
		found, err := invocations.New(st).ByID(ctx, c.requestID)
		switch {
		case err == nil:
			inv = found
		case c.status == 200:
			t.Fatalf("the caller was answered (%s) and nothing is recorded: %v", told, err)
		}
	}
	// Every answer given is recorded as given.
	if c.status == 200 {
		if inv.State != store.InvSucceeded || c.answer["success"] != true {
			t.Fatalf("answered %s, recorded %s", told, inv.State)
		}
		var recorded map[string]any
		json.Unmarshal([]byte(*inv.Answer), &recorded)
		if !reflect.DeepEqual(recorded["result"], c.answer["result"]) || !reflect.DeepEqual(recorded["charge"], c.answer["charge"]) {
			t.Fatalf("answered result %v charge %v, recorded %v %v", c.answer["result"], c.answer["charge"], recorded["result"], recorded["charge"])
		}
	}
	if c.status != 200 && c.status != 0 && inv != nil && inv.State == store.InvSucceeded && !strings.Contains(told, "not recorded yet") {
		t.Fatalf("the caller was told %s, and the call is recorded as a charged success", told)
	}
	// Confirming again answers the recorded outcome.
	if c.write && inv != nil && inv.State != store.InvAwaitingConfirmation {
		status, again := s.do("POST", "/v1/invoke", w.key, map[string]any{"message": "@crashwrite go", "confirmRequestId": c.requestID})
		if inv.State == store.InvSucceeded {
			if status != 200 || again["requestId"] != c.requestID || !reflect.DeepEqual(again["charge"], recordedCharge(inv)) {
				t.Fatalf("confirming a recorded success again: %d %v", status, again)
			}
		} else if status == 200 {
			t.Fatalf("confirming a call recorded %s again answered a success: %v", inv.State, again)
		}
	}
	// No write reaches the partner twice; every charged success is recorded once, with its fee.
	var all []*store.Invocation
	if err := st.DB().NewSelect().Model(&all).Scan(ctx); err != nil {
		t.Fatal(err)
	}
	for _, x := range all {
		n := int32(0)
		if v, ok := w.received.Load(x.RequestID); ok {
			n = v.(*atomic.Int32).Load()
		}
		if x.Category == "EXECUTE" && n > 1 {
			t.Fatalf("write %s reached the partner %d times", x.RequestID, n)
		}
		if x.State != store.InvSucceeded {
			continue
		}
		fees := partnerFees(t, st, x.RequestID)
		if fees != 1 || x.PartnerFeeMicro != 300 {
			t.Fatalf("success %s: %d partner fees in the ledger, fee %d recorded; want one of 300", x.RequestID, fees, x.PartnerFeeMicro)
		}
	}
	if err := ledger.Check(ctx, st); err != nil {
		t.Fatalf("ledger-check: %v", err)
	}
	state := "nothing"
	if inv != nil {
		state = inv.State
	}
	t.Logf("CELL | %s | %d %s | %s | %d |", c.name(), c.status, brief(c.answer), state, w.cellSaw.Load())
}

func recordedCharge(inv *store.Invocation) any {
	var recorded map[string]any
	json.Unmarshal([]byte(*inv.Answer), &recorded)
	return recorded["charge"]
}

// brief is what the caller was told, in a word.
func brief(answer map[string]any) string {
	if e, ok := answer["error"].(map[string]any); ok {
		return fmt.Sprint(e["code"])
	}
	if _, ok := answer["transport"]; ok {
		return "no answer (connection lost)"
	}
	if answer["success"] == true {
		return "success"
	}
	return fmt.Sprint(answer)
}

package idempotency_test

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/store/ledger"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/idempotency"
	"github.com/switchboard-hq/switchboard/tools/partners/partnertest"
)

// world is the whole service with a TLS partner (/cost answers at once, /block waits for the
// test), a publisher and a caller.
type world struct {
	env      *apptest.Env
	caller   string
	callerID string

	mu      sync.Mutex
	seen    map[string]int // requests that reached the partner, by path
	arrived chan string    // each request's path as it reaches the partner
	release chan struct{}  // closed: /block answers
}

func newWorld(t *testing.T, dialect string) *world {
	t.Helper()
	w := &world{seen: map[string]int{}, arrived: make(chan string, 16), release: make(chan struct{})}
	var pub ed25519.PublicKey
	verifier := signing.NewVerifier(signing.KeySourceFunc(func(context.Context) (ed25519.PublicKey, error) { return pub, nil }))
	partner := partnertest.Start(t, signing.Middleware(verifier, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.mu.Lock()
		w.seen[r.URL.Path]++
		w.mu.Unlock()
		w.arrived <- r.URL.Path
		if r.URL.Path == "/block" {
			<-w.release
		}
		rw.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(rw, `{"success":true,"result":{"at":%d},"providerCostMicro":1500}`, time.Now().UnixNano())
	})))
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, partnertest.CAPEM(partner.Server), 0o600); err != nil {
		t.Fatal(err)
	}
	w.env = apptest.Start(t, apptest.Options{Dialect: dialect, Config: func(c *apptest.Config) {
		c.AllowLocalEndpoints, c.PartnerCAFile = true, caFile
	}})
	pub = w.env.App.SigningKey.Public().(ed25519.PublicKey)
	publisher := w.env.Onboard(t, "publisher@example.com")["apiKey"].(string)
	acct := w.env.Onboard(t, "caller@example.com")
	w.caller, w.callerID = acct["apiKey"].(string), acct["userId"].(string)
	for _, path := range []string{"/cost", "/block", "/write"} {
		handle, category := "@idem"+path[1:], "QUERY"
		if path == "/write" {
			category = "EXECUTE"
		}
		status, out := w.env.REST(t, "POST", "/v1/partner/intents", publisher, map[string]any{
			"publicIdentifier": handle, "name": handle[1:], "description": "idempotency test partner", "category": category,
			"toolEndpoint": partner.URL + path, "timeoutMs": 5000, "feeRate": 0.01, "payoutAddresses": map[string]string{"evm": "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"}})
		if status != 201 {
			t.Fatalf("publish %s: %d %v", handle, status, out)
		}
		if status, out := w.env.REST(t, "POST", "/v1/partner/intents/"+out["id"].(string)+"/active", publisher, map[string]any{"active": true}); status != 200 {
			t.Fatalf("activate %s: %d %v", handle, status, out)
		}
	}
	return w
}

func (w *world) hits(path string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen[path]
}

// invoke posts to /v1/invoke with an Idempotency-Key header ("" for none).
func (w *world) invoke(t *testing.T, key, message string) (int, http.Header, map[string]any) {
	t.Helper()
	h := map[string]string{}
	if key != "" {
		h["Idempotency-Key"] = key
	}
	return apptest.DoWith(t, "POST", w.env.URL+"/v1/invoke", w.caller, map[string]any{"message": message}, h)
}

func (w *world) credit(t *testing.T) int64 {
	t.Helper()
	if err := w.env.App.Settled(context.Background()); err != nil {
		t.Fatal(err)
	}
	ca, err := w.env.App.Store.Credit(context.Background(), w.callerID)
	if err != nil {
		t.Fatal(err)
	}
	return ca.AvailableMicro
}

// TestInvokeIdempotencyKey: over REST, the same key and body answer the first call (the
// partner called once, the account charged once); another body is 409; a retry while the
// first call runs is 409 with Retry-After and then gets its answer; after 24 hours the key
// runs again; an empty or over-long header is 400 saying the limits.
func TestInvokeIdempotencyKey(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newWorld(t, dialect)
			before := w.credit(t)
			status, _, first := w.invoke(t, "retry-1", "@idemcost hello")
			if status != 200 || first["success"] != true {
				t.Fatalf("first call: %d %v", status, first)
			}
			charged := w.credit(t)
			if charged >= before {
				t.Fatalf("the first call charged nothing: %d -> %d", before, charged)
			}
			status, _, again := w.invoke(t, "retry-1", "@idemcost hello")
			if status != 200 || !reflect.DeepEqual(again, first) {
				t.Fatalf("retry: %d %v; want the first answer %v", status, again, first)
			}
			if n := w.hits("/cost"); n != 1 {
				t.Fatalf("the partner was called %d times, want 1", n)
			}
			if now := w.credit(t); now != charged {
				t.Fatalf("credit %d after the retry, %d after the first call: charged twice", now, charged)
			}

			status, _, other := w.invoke(t, "retry-1", "@idemcost something else")
			if e, _ := other["error"].(map[string]any); status != 409 || e["code"] != "CONFLICT" || !strings.Contains(e["message"].(string), "retry-1") {
				t.Fatalf("same key, another body: %d %v; want 409 CONFLICT naming the key", status, other)
			}

			// In flight: the retry waits; then it answers the first call's answer.
			done := make(chan map[string]any)
			go func() {
				_, _, out := w.invoke(t, "slow-1", "@idemblock hello")
				done <- out
			}()
			for w.hits("/block") == 0 {
				<-w.arrived
			}
			status, h, busy := w.invoke(t, "slow-1", "@idemblock hello")
			if e, _ := busy["error"].(map[string]any); status != 409 || e["code"] != "CONFLICT" || h.Get("Retry-After") != "2" || !strings.Contains(e["message"].(string), "in flight") {
				t.Fatalf("retry in flight: %d Retry-After %q %v; want 409 CONFLICT, Retry-After 2", status, h.Get("Retry-After"), busy)
			}
			close(w.release)
			slow := <-done
			status, _, after := w.invoke(t, "slow-1", "@idemblock hello")
			if status != 200 || !reflect.DeepEqual(after, slow) || w.hits("/block") != 1 {
				t.Fatalf("after the first answered: %d %v, first %v, partner %d calls", status, after, slow, w.hits("/block"))
			}

			// 24 hours later the key is a new call.
			w.env.Clock.Advance(24*time.Hour + time.Second)
			status, _, later := w.invoke(t, "retry-1", "@idemcost hello")
			if status != 200 || later["requestId"] == first["requestId"] || w.hits("/cost") != 2 {
				t.Fatalf("after 24 h: %d %v, partner %d calls; want a new call", status, later, w.hits("/cost"))
			}
			if err := ledger.Check(context.Background(), w.env.App.Store); err != nil {
				t.Fatalf("ledger-check: %v", err)
			}

			for _, bad := range []string{" ", strings.Repeat("k", 256)} {
				status, _, out := w.invoke(t, bad, "@idemcost hello")
				if e, _ := out["error"].(map[string]any); status != 400 || !strings.Contains(fmt.Sprint(e["message"]), "1 to 255 characters") {
					t.Fatalf("Idempotency-Key of %d characters: %d %v; want 400 saying the limits", len(bad), status, out)
				}
			}
			if w.hits("/cost") != 2 {
				t.Fatalf("a refused key reached the partner")
			}
		})
	}
}

// TestMCPIdempotencyKey: over MCP (the go-sdk client on Streamable HTTP) the idempotencyKey
// argument does the same as the header, and api_key_create with a key answers the same new
// key again (sealed in the database) without minting a second.
func TestMCPIdempotencyKey(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newWorld(t, dialect)
			cs := w.env.MCP(t, w.caller)
			args := map[string]any{"message": "@idemcost over mcp", "idempotencyKey": "mcp-1"}
			first, e := apptest.CallTool(t, cs, "invoke_partner_message", args)
			if e != nil {
				t.Fatal(e)
			}
			charged := w.credit(t)
			again, e := apptest.CallTool(t, cs, "invoke_partner_message", args)
			if e != nil || !reflect.DeepEqual(again, first) || w.hits("/cost") != 1 || w.credit(t) != charged {
				t.Fatalf("retry: %v %v, first %v; partner %d calls; want one call, charged once", again, e, first, w.hits("/cost"))
			}
			_, e = apptest.CallTool(t, cs, "invoke_partner_message", map[string]any{"message": "@idemcost other", "idempotencyKey": "mcp-1"})
			if e == nil || e.Code != tools.CodeConflict {
				t.Fatalf("same key, other arguments: %v; want CONFLICT", e)
			}
			_, e = apptest.CallTool(t, cs, "invoke_partner_message", map[string]any{"message": "@idemcost x", "idempotencyKey": ""})
			if e == nil || e.Code != tools.CodeBadInput || !strings.Contains(e.Message, "idempotencyKey") {
				t.Fatalf("empty key: %v; want BAD_INPUT", e)
			}

			mint := map[string]any{"name": "ci", "scopes": []string{"read"}, "idempotencyKey": "mint-1"}
			k1, e := apptest.CallTool(t, cs, "api_key_create", mint)
			if e != nil {
				t.Fatal(e)
			}
			status, _, k2 := apptest.DoWith(t, "POST", w.env.URL+"/v1/keys", w.caller, map[string]any{"name": "ci", "scopes": []string{"read"}}, map[string]string{"Idempotency-Key": "mint-1"})
			if status != 201 || k2["secret"] != k1["secret"] || k2["secret"] == nil {
				t.Fatalf("the same key over REST: %d %v; want 201 with the key minted over MCP (%v)", status, k2, k1["secret"])
			}
			_, list := w.env.REST(t, "GET", "/v1/keys", w.caller, nil)
			if n := len(list["keys"].([]any)); n != 2 {
				t.Fatalf("%d keys listed, want 2 (the caller's and one minted)", n)
			}
			var raw []byte
			if err := w.env.App.Store.DB().NewRaw("SELECT answer FROM idempotency_keys WHERE idem_key = ?", "mint-1").Scan(context.Background(), &raw); err != nil {
				t.Fatal(err)
			}
			if secret := k1["secret"].(string); len(raw) == 0 || strings.Contains(string(raw), secret) {
				t.Fatal("the stored answer holds the new key's secret in the clear")
			}
		})
	}
}

// keyHeader sends the API key as an MCP host configured with a header does.
type keyHeader struct{ key string }

func (k keyHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("x-api-key", k.key)
	return http.DefaultTransport.RoundTrip(r)
}

// TestElicitedConfirmationWithAKey: a write called with an idempotency key by a host that is
// asked to confirm (MCP 2026-07-28 elicitation) is confirmed and dispatched once; calling it
// again with the key answers the same quote, asked again from the continuation stored with
// it, and confirming that answers the same outcome; so does a decline of it, sending nothing.
func TestElicitedConfirmationWithAKey(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newWorld(t, dialect)
			asked, decision := 0, "approve"
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked++
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": decision}}, nil
				}}).Connect(context.Background(), &mcp.StreamableClientTransport{
				Endpoint: w.env.URL + "/mcp", HTTPClient: &http.Client{Transport: keyHeader{w.caller}}, DisableStandaloneSSE: true,
			}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			args := map[string]any{"message": "@idemwrite do it", "idempotencyKey": "write-1"}
			first, e := apptest.CallTool(t, cs, "invoke_partner_message", args)
			if e != nil || first["success"] != true || w.hits("/write") != 1 || asked != 1 {
				t.Fatalf("approved: %v %v, partner %d calls, asked %d", first, e, w.hits("/write"), asked)
			}
			again, e := apptest.CallTool(t, cs, "invoke_partner_message", args)
			if e != nil || again["requestId"] != first["requestId"] || w.hits("/write") != 1 || asked != 2 {
				t.Fatalf("again with the key: %v %v, partner %d calls, asked %d; want the quote asked again, the same outcome, no second call", again, e, w.hits("/write"), asked)
			}
			decision = "decline"
			late, e := apptest.CallTool(t, cs, "invoke_partner_message", args)
			if e == nil || e.Code != tools.CodeConflict || e.Details["requestId"] != first["requestId"] || w.hits("/write") != 1 || asked != 3 || late != nil {
				t.Fatalf("declining the dispatched quote: %v %v, partner %d calls, asked %d; want CONFLICT naming it, nothing sent", late, e, w.hits("/write"), asked)
			}
		})
	}
}

// TestACreateRetriedAfterItsProcessDiedCreatesOnce: a create whose process died after its
// commit but before its answer was recorded (its key's row left in flight, as a kill -9
// leaves it) is retried past Abandoned. The retry runs as the same call and creates nothing
// more: api_key_create says which key the lost answer minted (its secret was shown only
// then), and webhook_endpoint_create answers the endpoint it created, its secret included.
func TestACreateRetriedAfterItsProcessDiedCreatesOnce(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newWorld(t, dialect)
			ctx := context.Background()
			lose := func(key string) { // the answer never recorded: the row as the dead run left it
				t.Helper()
				if _, err := w.env.App.Store.DB().NewRaw("UPDATE idempotency_keys SET state = 'in_flight', code = '', answer = NULL WHERE idem_key = ?", key).
					Exec(ctx); err != nil {
					t.Fatal(err)
				}
				w.env.Clock.Advance(idempotency.Abandoned + time.Second)
			}
			post := func(path, key string, body map[string]any) (int, map[string]any) {
				t.Helper()
				status, _, out := apptest.DoWith(t, "POST", w.env.URL+path, w.caller, body, map[string]string{"Idempotency-Key": key})
				return status, out
			}

			mint := map[string]any{"name": "ci", "scopes": []string{"read"}}
			status, first := post("/v1/keys", "lost-mint", mint)
			if status != 201 {
				t.Fatalf("mint: %d %v", status, first)
			}
			lose("lost-mint")
			for range 2 { // the retry, then its kept answer
				status, again := post("/v1/keys", "lost-mint", mint)
				e, _ := again["error"].(map[string]any)
				d, _ := e["details"].(map[string]any)
				if status != 409 || d["keyId"] != first["id"] || !strings.Contains(e["message"].(string), "api_key_revoke") {
					t.Fatalf("mint retried after its process died: %d %v; want CONFLICT naming key %v", status, again, first["id"])
				}
			}
			if _, list := w.env.REST(t, "GET", "/v1/keys", w.caller, nil); len(list["keys"].([]any)) != 2 {
				t.Fatalf("keys %v; want the caller's and the one minted once", list["keys"])
			}

			hook := map[string]any{"url": w.env.URL + "/hooks"}
			status, created := post("/v1/webhooks/endpoints", "lost-hook", hook)
			if status != 201 {
				t.Fatalf("create an endpoint: %d %v", status, created)
			}
			lose("lost-hook")
			status, again := post("/v1/webhooks/endpoints", "lost-hook", hook)
			if status != 201 || !reflect.DeepEqual(again, created) {
				t.Fatalf("endpoint retried after its process died: %d %v; want the first answer %v", status, again, created)
			}
			if _, list := w.env.REST(t, "GET", "/v1/webhooks/endpoints", w.caller, nil); len(list["endpoints"].([]any)) != 1 {
				t.Fatalf("endpoints %v; want one", list["endpoints"])
			}
		})
	}
}

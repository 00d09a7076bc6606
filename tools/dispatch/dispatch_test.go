package dispatch_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/invocations"
	"github.com/switchboard-hq/switchboard/store/learned"
	"github.com/switchboard-hq/switchboard/store/ledger"
	partnerstore "github.com/switchboard-hq/switchboard/store/partners"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/dispatch"
	"github.com/switchboard-hq/switchboard/tools/keys"
	"github.com/switchboard-hq/switchboard/tools/partners/partnertest"
)

// world is a running service, a TLS partner with one behaviour per path, a publisher and a
// caller.
type world struct {
	env       *apptest.Env
	partner   *partnertest.Partner
	publisher string // key
	caller    string // key
	callerID  string
	mu        sync.Mutex
	seen      map[string][]*signing.Envelope // verified envelopes by path
	omitGas   bool                           // /swapbps leaves gasCostMicro out
	hold      time.Duration                  // how long /long works
	solana    func(args []byte) string       // /solpropose: the Solana transaction it proposes for args (base64)
}

const payout = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"

func newWorld(t testing.TB, dialect string, cfg func(*apptest.Config)) *world {
	t.Helper()
	return newWorldAt(t, dialect, time.Time{}, cfg)
}

// newWorldAt is newWorld with its clock starting at start (zero: now).
func newWorldAt(t testing.TB, dialect string, start time.Time, cfg func(*apptest.Config)) *world {
	t.Helper()
	return newWorldOn(t, apptest.Options{Dialect: dialect, Start: start}, cfg)
}

// newWorldOn is newWorld with the app's options (its dialect, clock, a store of the test's own).
func newWorldOn(t testing.TB, o apptest.Options, cfg func(*apptest.Config)) *world {
	t.Helper()
	w := &world{seen: map[string][]*signing.Envelope{}}
	// The service key is only known once the app exists, so the verifier reads it late.
	var pub ed25519.PublicKey
	verifier := signing.NewVerifier(signing.KeySourceFunc(func(context.Context) (ed25519.PublicKey, error) { return pub, nil }))
	w.partner = partnertest.Start(t, signing.Middleware(verifier, http.HandlerFunc(w.serve)))
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, partnertest.CAPEM(w.partner.Server), 0o600); err != nil {
		t.Fatal(err)
	}
	o.Config = func(c *apptest.Config) {
		c.AllowLocalEndpoints = true
		c.PartnerCAFile = caFile
		if cfg != nil {
			cfg(c)
		}
	}
	w.env = apptest.Start(t, o)
	pub = w.env.App.SigningKey.Public().(ed25519.PublicKey)
	w.publisher = w.env.Onboard(t, "publisher@example.com")["apiKey"].(string)
	acct := w.env.Onboard(t, "caller@example.com")
	w.caller, w.callerID = acct["apiKey"].(string), acct["userId"].(string)
	return w
}

// serve is the partner: it has passed signing.Middleware, so the envelope is verified.
func (w *world) serve(rw http.ResponseWriter, r *http.Request) {
	env, _ := signing.EnvelopeFromContext(r.Context())
	w.mu.Lock()
	w.seen[r.URL.Path] = append(w.seen[r.URL.Path], env)
	n := len(w.seen[r.URL.Path])
	w.mu.Unlock()
	reply := func(status int, body string) {
		rw.Header().Set("Content-Type", "application/json")
		rw.WriteHeader(status)
		fmt.Fprint(rw, body)
	}
	switch r.URL.Path {
	case "/swapbps":
		w.swapAnswer(rw)
	case "/cost":
		reply(200, `{"success":true,"result":{"answer":42},"providerCostMicro":1500}`)
	case "/cheap":
		reply(200, `{"success":true,"result":{"answer":1},"providerCostMicro":400}`)
	case "/free":
		reply(200, `{"success":true,"result":{"answer":"free"}}`)
	case "/fail":
		reply(422, `{"success":false,"error":{"code":"BAD_INPUT","message":"unknown city"}}`)
	case "/down":
		reply(503, `{"success":false,"error":{"code":"UPSTREAM","message":"weather provider down"}}`)
	case "/flaky": // 503 the first time, then fine: the retry succeeds
		if n == 1 {
			reply(503, `{"success":false,"error":{"code":"UPSTREAM","message":"blip"}}`)
			return
		}
		reply(200, `{"success":true,"result":{"answer":"second try"},"providerCostMicro":100}`)
	case "/slow":
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	case "/long": // a long job: it answers after w.hold (the brief's 20 s, shortened for CI)
		select {
		case <-r.Context().Done():
			return
		case <-time.After(w.hold):
		}
		reply(200, `{"success":true,"result":{"report":"done"},"providerCostMicro":700}`)
	case "/hang": // a job that only ends when its caller goes
		<-r.Context().Done()
	case "/garbage":
		reply(200, `this is not json`)
	case "/huge":
		reply(200, `{"success":true,"result":"`+strings.Repeat("x", 2<<20)+`"}`)
	case "/non2xx":
		reply(400, `{"success":true,"result":{"answer":"but 400"}}`)
	case "/mismatch":
		reply(200, `{"success":true,"result":{"answer":"not a number"},"providerCostMicro":0}`)
	case "/approve": // an unlimited allowance of the test USDC on base to spender (propose_test.go)
		reply(200, `{"success":true,"result":{"transactions":[{"chain":"base","to":"`+strings.ToLower(baseUSDC.Hex())+`","data":"0x095ea7b3`+
			strings.Repeat("0", 24)+spender[2:]+strings.Repeat("f", 64)+`"}]}}`)
	case "/solpropose": // a Solana transaction built by the test (propose_test.go)
		reply(200, `{"success":true,"result":{"transactions":[{"chain":"solana","transaction":"`+w.solana(env.Args)+`"}]}}`)
	case "/write":
		reply(200, `{"success":true,"result":{"txHash":"0xabc"},"providerCostMicro":700}`)
	default:
		reply(404, `{"success":false,"error":{"code":"BAD_INPUT","message":"no such path"}}`)
	}
}

func (w *world) hits(path string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.seen[path])
}

// publish publishes and activates an intent at path and returns its handle.
func (w *world) publish(t testing.TB, handle, path string, extra map[string]any) string {
	t.Helper()
	body := map[string]any{
		"publicIdentifier": handle, "name": handle[1:], "description": "test partner " + path,
		"category": "QUERY", "toolEndpoint": w.partner.URL + path, "timeoutMs": 1000,
		"feeRate": 0.001, "payoutAddresses": map[string]string{"evm": payout},
	}
	for k, v := range extra {
		body[k] = v
	}
	status, out := w.env.REST(t, "POST", "/v1/partner/intents", w.publisher, body)
	if status != 201 {
		t.Fatalf("publish %s: %d %v", handle, status, out)
	}
	id := out["id"].(string)
	w.env.Clock.Advance(13 * time.Minute) // publishing is limited to 5 an hour
	if status, out := w.env.REST(t, "POST", "/v1/partner/intents/"+id+"/active", w.publisher, map[string]any{"active": true}); status != 200 {
		t.Fatalf("activate %s: %d %v", handle, status, out)
	}
	return handle
}

func (w *world) invoke(t testing.TB, key string, body map[string]any) (int, map[string]any) {
	t.Helper()
	return w.env.REST(t, "POST", "/v1/invoke", key, body)
}

// settledStore is the store once every finished invocation has committed: outcomes commit
// in batches after the caller has its answer, and these tests read the store directly.
func (w *world) settledStore(t testing.TB) *store.Store {
	t.Helper()
	if err := w.env.App.Settled(context.Background()); err != nil {
		t.Fatal(err)
	}
	return w.env.App.Store
}

func (w *world) ledgerOK(t *testing.T) {
	t.Helper()
	if err := ledger.Check(context.Background(), w.settledStore(t)); err != nil {
		t.Fatalf("ledger invariant: %v", err)
	}
}

func (w *world) credit(t *testing.T) int64 {
	t.Helper()
	ca, err := w.settledStore(t).Credit(context.Background(), w.callerID)
	if err != nil {
		t.Fatal(err)
	}
	return ca.AvailableMicro
}

func charge(out map[string]any) map[string]any {
	if c, ok := out["charge"].(map[string]any); ok {
		return c
	}
	return out["error"].(map[string]any)["details"].(map[string]any)["charge"].(map[string]any)
}

func errCode(out map[string]any) string {
	e, _ := out["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

// TestBillingTable walks every row of the spec's invocation billing table.
func TestBillingTable(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newWorld(t, dialect, nil)
			start := w.credit(t)

			// 3a: success with providerCostMicro 1500, capped at the listed 0.001 USD = 1000.
			w.publish(t, "@costly", "/cost", nil)
			status, out := w.invoke(t, w.caller, map[string]any{"message": "ask @costly what the answer is"})
			if status != 200 || out["success"] != true || out["handle"] != "@costly" {
				t.Fatalf("success: %d %v", status, out)
			}
			if res := out["result"].(map[string]any); res["answer"] != float64(42) {
				t.Fatalf("result not relayed: %v", out)
			}
			c := charge(out)
			if c["infrastructureMicro"] != float64(1000) || c["reservedMicro"] != float64(1000) || c["partnerFeeMicro"] != float64(1000) || c["platformFeeMicro"] != float64(1000) || c["totalMicro"] != float64(3000) || c["refundedMicro"] != float64(0) {
				t.Fatalf("3a charge: %v", c)
			}
			if got := start - w.credit(t); got != 3000 {
				t.Fatalf("3a: credit went down by %d, want 3000 (infra 1000 + fee 1000 + platform floor 1000: a query routes no value)", got)
			}
			// Only userId (a pseudonym), args and requestId reach the partner.
			env := w.seen["/cost"][0]
			if env.UserID == w.callerID || !strings.HasPrefix(env.UserID, "u_") || string(env.Args) != `{"query":"ask what the answer is"}` || env.RequestID != out["requestId"] {
				t.Fatalf("envelope: %+v", env)
			}
			w.ledgerOK(t)
			// The same through the MCP door.
			cs := w.env.MCP(t, w.caller)
			mcpOut, e := apptest.CallTool(t, cs, "invoke_partner_message", map[string]any{"message": "@costly once more"})
			if e != nil || mcpOut["success"] != true || charge(mcpOut)["partnerFeeMicro"] != float64(1000) {
				t.Fatalf("MCP invoke: %v %+v", mcpOut, e)
			}
			if err := w.env.App.Kernel.Tool("invoke_partner_message").ValidateOutput(mcpOut); err != nil {
				t.Fatalf("answer breaks the published output schema: %v", err)
			}
			w.ledgerOK(t)

			// 3b: success without providerCostMicro: no partner charge, infra consumed.
			before := w.credit(t)
			w.publish(t, "@freebie", "/free", nil)
			status, out = w.invoke(t, w.caller, map[string]any{"message": "@freebie hello"})
			if status != 200 || charge(out)["partnerFeeMicro"] != float64(0) || before-w.credit(t) != 2000 {
				t.Fatalf("3b: %d %v, credit -%d", status, out, before-w.credit(t))
			}
			w.ledgerOK(t)

			// 3c, success false: the partner's considered answer ("unknown city") is relayed
			// as a result, attributed to the handle, with no partner fee and the reserve refunded.
			w.publish(t, "@failing", "/fail", nil)
			before = w.credit(t)
			status, out = w.invoke(t, w.caller, map[string]any{"message": "@failing please"})
			pe, _ := out["partnerError"].(map[string]any)
			if status != 200 || out["success"] != false || out["handle"] != "@failing" || pe["code"] != "BAD_INPUT" || pe["message"] != "unknown city" {
				t.Fatalf("success false: %d %v", status, out)
			}
			if ch := charge(out); ch["partnerFeeMicro"] != float64(0) || ch["refundedMicro"] != float64(1000) || w.credit(t) != before || w.hits("/fail") != 1 {
				t.Fatalf("success false: not refunded: %v", ch)
			}
			w.ledgerOK(t)

			// 3c: every broker failure refunds and charges no partner fee.
			for _, c := range []struct {
				handle, path, code, msg string
				hits                    int
			}{
				{"@down", "/down", "UNAVAILABLE", "weather provider down", 2},             // idempotent: one retry
				{"@slowpoke", "/slow", "UNAVAILABLE", "did not answer within 1000 ms", 2}, // a timeout is retried too
				{"@garbage", "/garbage", "UPSTREAM", "no valid response envelope", 1},
				{"@huge", "/huge", "UPSTREAM", "over", 1},
				{"@non2xx", "/non2xx", "UPSTREAM", "not a success", 1},
			} {
				w.publish(t, c.handle, c.path, nil)
				before := w.credit(t)
				status, out := w.invoke(t, w.caller, map[string]any{"message": c.handle + " please"})
				e := out["error"].(map[string]any)
				if errCode(out) != c.code || !strings.Contains(e["message"].(string), c.msg) {
					t.Fatalf("%s: %d %v", c.handle, status, out)
				}
				ch := charge(out)
				if ch["partnerFeeMicro"] != float64(0) || ch["refundedMicro"] != float64(1000) || w.credit(t) != before {
					t.Fatalf("%s: not refunded: %v, credit %d -> %d", c.handle, ch, before, w.credit(t))
				}
				if got := w.hits(c.path); got != c.hits {
					t.Fatalf("%s: partner hit %d times, want %d", c.handle, got, c.hits)
				}
				w.ledgerOK(t)
			}
			// Through the MCP door: a broker failure is an isError result carrying the error
			// model; a partner's success false is a normal result saying so.
			if _, e := apptest.CallTool(t, cs, "invoke_partner_message", map[string]any{"message": "@garbage again"}); e == nil || e.Code != tools.CodeUpstream || e.Details["charge"] == nil {
				t.Fatalf("MCP failure: %+v", e)
			}
			if out, e := apptest.CallTool(t, cs, "invoke_partner_message", map[string]any{"message": "@failing again"}); e != nil || out["success"] != false || out["partnerError"] == nil {
				t.Fatalf("MCP success false: %v %+v", out, e)
			}
			w.ledgerOK(t)
			// The retry reuses the requestId (re-signed).
			if a, b := w.seen["/down"][0], w.seen["/down"][1]; a.RequestID != b.RequestID {
				t.Fatalf("retry used a new requestId: %s vs %s", a.RequestID, b.RequestID)
			}
			// A retry that succeeds is a success, billed once.
			w.publish(t, "@flaky", "/flaky", nil)
			if status, out := w.invoke(t, w.caller, map[string]any{"message": "@flaky go"}); status != 200 || out["attempts"] != float64(2) {
				t.Fatalf("flaky: %d %v", status, out)
			}
			w.ledgerOK(t)

			// The operator's view of what happened to a request.
			evs, err := invocations.New(w.settledStore(t)).Events(context.Background(), w.seen["/down"][0].RequestID)
			if err != nil || len(evs) != 4 || evs[0].State != "dispatching" || evs[3].State != "failed" {
				t.Fatalf("events of a failed request: %+v %v", evs, err)
			}
		})
	}
}

func TestRetryRulesAndWriteConfirmation(t *testing.T) {
	w := newWorld(t, "sqlite", nil)
	// A write category is never retried.
	w.publish(t, "@downwrite", "/down", map[string]any{"category": "EXECUTE"})
	status, out := w.invoke(t, w.caller, map[string]any{"message": "@downwrite now"})
	if status != 409 || errCode(out) != "CONFIRMATION_REQUIRED" || w.hits("/down") != 0 {
		t.Fatalf("write without confirmation: %d %v, hits %d", status, out, w.hits("/down"))
	}
	rid := out["error"].(map[string]any)["details"].(map[string]any)["requestId"].(string)
	status, out = w.invoke(t, w.caller, map[string]any{"message": "@downwrite now", "confirmRequestId": rid})
	if errCode(out) != "UNAVAILABLE" || w.hits("/down") != 1 {
		t.Fatalf("confirmed write to a failing partner: %d %v, hits %d (want exactly 1)", status, out, w.hits("/down"))
	}

	// A confirmed write dispatches once, with the quoted requestId; confirming again replays.
	w.publish(t, "@writer", "/write", map[string]any{"category": "EXECUTE", "capabilities": []string{"MUTATES_USER_FUNDS"}})
	before := w.credit(t)
	status, out = w.invoke(t, w.caller, map[string]any{"message": "@writer do it"})
	details := out["error"].(map[string]any)["details"].(map[string]any)
	if status != 409 || details["handle"] != "@writer" || details["category"] != "EXECUTE" || details["maxChargeUsd"] != 0.003 {
		t.Fatalf("quote: %d %v", status, out)
	}
	if w.credit(t) != before || w.hits("/write") != 0 {
		t.Fatal("a quote charged or dispatched")
	}
	rid = details["requestId"].(string)
	// Another account cannot confirm it.
	other := w.env.Onboard(t, "other@example.com")["apiKey"].(string)
	if status, out := w.invoke(t, other, map[string]any{"message": "@writer do it", "confirmRequestId": rid}); status != 404 {
		t.Fatalf("confirming another account's quote: %d %v", status, out)
	}
	// Changed args are refused.
	if status, out := w.invoke(t, w.caller, map[string]any{"message": "@writer do it", "args": map[string]any{"query": "something else"}, "confirmRequestId": rid}); status != 409 {
		t.Fatalf("confirming with other args: %d %v", status, out)
	}
	status, first := w.invoke(t, w.caller, map[string]any{"message": "@writer do it", "confirmRequestId": rid})
	if status != 200 || first["requestId"] != rid || w.hits("/write") != 1 || w.seen["/write"][0].RequestID != rid {
		t.Fatalf("confirm: %d %v", status, first)
	}
	status, again := w.invoke(t, w.caller, map[string]any{"message": "@writer do it", "confirmRequestId": rid})
	if status != 200 || w.hits("/write") != 1 || again["requestId"] != rid || charge(again)["partnerFeeMicro"] != float64(700) {
		t.Fatalf("second confirm dispatched again or lost the outcome: %d %v, hits %d", status, again, w.hits("/write"))
	}
	if got := before - w.credit(t); got != 1000+700+1000 {
		t.Fatalf("charged %d for one confirmed write, want 2700 (infrastructure, partner fee, platform floor: EXECUTE routes no value)", got)
	}
	// A quote expires after 10 minutes.
	_, out = w.invoke(t, w.caller, map[string]any{"message": "@writer again"})
	rid = out["error"].(map[string]any)["details"].(map[string]any)["requestId"].(string)
	w.env.Clock.Advance(dispatch.ConfirmWindow + time.Second)
	if status, out := w.invoke(t, w.caller, map[string]any{"message": "@writer again", "confirmRequestId": rid}); status != 409 || !strings.Contains(out["error"].(map[string]any)["message"].(string), "expired") {
		t.Fatalf("stale confirmation: %d %v", status, out)
	}
	w.ledgerOK(t)
}

func TestArgsAndVisibility(t *testing.T) {
	w := newWorld(t, "sqlite", nil)
	structured := map[string]any{"type": "object", "properties": map[string]any{
		"ticker": map[string]any{"type": "string"}, "days": map[string]any{"type": "integer", "minimum": 1, "maximum": 365}},
		"required": []string{"ticker"}, "additionalProperties": false}
	w.publish(t, "@history", "/free", map[string]any{"parametersSchema": structured})
	// No args for a structured schema: the schema comes back so the model can fill args.
	status, out := w.invoke(t, w.caller, map[string]any{"message": "@history of ETH for a week"})
	if status != 400 || out["error"].(map[string]any)["details"].(map[string]any)["parametersSchema"] == nil {
		t.Fatalf("structured intent without args: %d %v", status, out)
	}
	if status, out := w.invoke(t, w.caller, map[string]any{"message": "@history", "args": map[string]any{"ticker": "ETH", "days": 400}}); status != 400 || !strings.Contains(out["error"].(map[string]any)["message"].(string), "/days") {
		t.Fatalf("args breaking the schema: %d %v", status, out)
	}
	if status, out := w.invoke(t, w.caller, map[string]any{"message": "@history", "args": map[string]any{"ticker": "ETH", "days": 7}}); status != 200 {
		t.Fatalf("valid args: %d %v", status, out)
	}
	if got := string(w.seen["/free"][0].Args); got != `{"days":7,"ticker":"ETH"}` {
		t.Fatalf("partner got args %s", got)
	}
	// Unknown, archived and someone else's inactive intents are NOT_FOUND with a hint.
	if status, out := w.invoke(t, w.caller, map[string]any{"message": "@nobody here"}); status != 404 || !strings.Contains(out["error"].(map[string]any)["message"].(string), "discover") {
		t.Fatalf("unknown handle: %d %v", status, out)
	}
	status, pub := w.env.REST(t, "POST", "/v1/partner/intents", w.publisher, map[string]any{
		"publicIdentifier": "@draft", "name": "draft", "description": "not active yet", "category": "QUERY",
		"toolEndpoint": w.partner.URL + "/free", "feeRate": 0})
	if status != 201 {
		t.Fatalf("publish draft: %d %v", status, pub)
	}
	if status, _ := w.invoke(t, w.caller, map[string]any{"message": "@draft hi"}); status != 404 {
		t.Fatalf("someone else's inactive intent: %d", status)
	}
	if status, out := w.invoke(t, w.publisher, map[string]any{"message": "@draft hi"}); status != 200 {
		t.Fatalf("the publisher's own inactive intent: %d %v", status, out)
	}
	w.env.REST(t, "DELETE", "/v1/partner/intents/"+pub["id"].(string), w.publisher, nil)
	if status, _ := w.invoke(t, w.publisher, map[string]any{"message": "@draft hi"}); status != 404 {
		t.Fatalf("archived intent: %d", status)
	}
	// Two handles, or none, are refused.
	if status, _ := w.invoke(t, w.caller, map[string]any{"message": "@history or @draft"}); status != 400 {
		t.Fatalf("two handles: %d", status)
	}
	// An output that breaks outputSchema is relayed but flagged.
	w.publish(t, "@mismatch", "/mismatch", map[string]any{"outputSchema": map[string]any{"type": "object", "properties": map[string]any{"answer": map[string]any{"type": "number"}}}})
	status, out = w.invoke(t, w.caller, map[string]any{"message": "@mismatch x"})
	if status != 200 || out["outputSchemaValid"] != false || out["result"].(map[string]any)["answer"] != "not a number" {
		t.Fatalf("output mismatch: %d %v", status, out)
	}
	intent, _ := partnerstore.New(w.env.App.Store).IntentByHandle(context.Background(), "@mismatch")
	if n, err := invocations.New(w.settledStore(t)).OutputSchemaMismatches(context.Background(), intent.ID); n != 1 || err != nil {
		t.Fatalf("mismatches counted for @mismatch: %d %v", n, err)
	}
	// Flat-fee intents are never dispatched unpaid.
	w.publish(t, "@flat", "/free", map[string]any{"feeRateUnit": "flat_usdc", "feeRate": 0.5})
	if status, out := w.invoke(t, w.caller, map[string]any{"message": "@flat hi"}); status != 402 || errCode(out) != "PAYMENT_REQUIRED" {
		t.Fatalf("flat fee: %d %v", status, out)
	}
	w.ledgerOK(t)
}

func TestSpendLimitAndCredit(t *testing.T) {
	w := newWorld(t, "sqlite", func(c *apptest.Config) { c.StartingCreditUSD = "0.003" })
	w.publish(t, "@costly", "/cost", nil)
	// A key whose limit is below the worst case (1000 + 1000 + 100) is refused before dispatch.
	_, k := w.env.REST(t, "POST", "/v1/keys", w.caller, map[string]any{"name": "tight", "scopes": []string{"partner"}, "spendLimitUsd": 0.002})
	if status, out := w.invoke(t, k["secret"].(string), map[string]any{"message": "@costly?"}); status != 402 || errCode(out) != "SPEND_LIMIT" {
		t.Fatalf("spend limit: %d %v", status, out)
	}
	// 3000 of credit covers one call (2100), not a second.
	if status, out := w.invoke(t, w.caller, map[string]any{"message": "@costly one"}); status != 200 {
		t.Fatalf("first call: %d %v", status, out)
	}
	if status, out := w.invoke(t, w.caller, map[string]any{"message": "@costly two"}); status != 402 || errCode(out) != "INSUFFICIENT_CREDITS" {
		t.Fatalf("out of credit: %d %v", status, out)
	}
	if w.hits("/cost") != 1 {
		t.Fatalf("refused calls reached the partner: %d hits", w.hits("/cost"))
	}
	// A key without the partner scope cannot invoke.
	_, r := w.env.REST(t, "POST", "/v1/keys", w.caller, map[string]any{"name": "reader", "scopes": []string{"read"}})
	if status, _ := w.invoke(t, r["secret"].(string), map[string]any{"message": "@costly?"}); status != 403 {
		t.Fatalf("no partner scope: %d", status)
	}
	w.ledgerOK(t)
}

// A caller that goes away mid-call: the invocation counts as never happened.
func TestCallerCancel(t *testing.T) {
	w := newWorld(t, "sqlite", nil)
	w.publish(t, "@slowpoke", "/slow", map[string]any{"timeoutMs": 5000})
	before := w.credit(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, e := w.env.App.Kernel.Call(ctx, tools.Request{Tool: "invoke_partner_message", APIKey: w.caller, Args: json.RawMessage(`{"message":"@slowpoke wait"}`)})
	if e == nil || !strings.Contains(e.Message, "cancelled") {
		t.Fatalf("cancelled call: %+v", e)
	}
	if w.credit(t) != before {
		t.Fatalf("a cancelled call cost %d", before-w.credit(t))
	}
	w.ledgerOK(t)
}

// A reservation abandoned by a crash is refunded by the sweeper after its deadline.
func TestSweeperRefundsAbandonedReservation(t *testing.T) {
	w := newWorld(t, "sqlite", nil)
	ctx := context.Background()
	key, err := accounts.New(w.settledStore(t)).KeyByHash(ctx, tools.HashKey(w.caller))
	if err != nil {
		t.Fatal(err)
	}
	before := w.credit(t)
	p := keys.KeyPrincipal(key)
	q, err := w.env.App.Billing.For(p, billing.Spend{}).Quote(ctx, billing.Terms{FeeUnit: billing.FeeUSDPerCall, FeeRate: decimal.RequireFromString("0.001")})
	if err != nil {
		t.Fatal(err)
	}
	noRecord := func(context.Context, *store.Q, *billing.Hold) error { return nil }
	if _, err := w.env.App.Billing.Hold(ctx, p, billing.Plan{RequestID: signing.NewRequestID(), Quote: q, Runs: 30 * time.Second}, noRecord); err != nil {
		t.Fatal(err)
	}
	if w.credit(t) != before-1000 {
		t.Fatal("reservation did not take credit")
	}
	if n, _ := w.env.App.Billing.Sweep(ctx); n != 0 {
		t.Fatal("swept a live reservation")
	}
	w.env.Clock.Advance(61 * time.Second) // timeout 30 s + margin 30 s
	if n, err := w.env.App.Billing.Sweep(ctx); n != 1 || err != nil {
		t.Fatalf("sweep: %d %v", n, err)
	}
	if w.credit(t) != before {
		t.Fatalf("credit after sweep %d, want %d", w.credit(t), before)
	}
	w.ledgerOK(t)
}

// A partner that rejects Switchboard's signature (it trusts another key): failure, refund.
func TestPartnerRejectsSignature(t *testing.T) {
	w := newWorld(t, "sqlite", nil)
	other, _, _ := ed25519.GenerateKey(nil)
	p := partnertest.Correct(t, other)
	status, out := w.env.REST(t, "POST", "/v1/partner/intents", w.publisher, map[string]any{
		"publicIdentifier": "@wrongkey", "name": "wrong key", "description": "verifies against another key", "category": "QUERY",
		"toolEndpoint": p.URL, "feeRate": 0})
	if status != 201 {
		t.Fatalf("publish: %d %v", status, out)
	}
	before := w.credit(t)
	status, out = w.invoke(t, w.publisher, map[string]any{"message": "@wrongkey hi"})
	if status != 502 || !strings.Contains(out["error"].(map[string]any)["message"].(string), "refused Switchboard's signature") {
		t.Fatalf("signature rejected: %d %v", status, out)
	}
	if w.credit(t) != before {
		t.Fatal("charged for a rejected signature")
	}
}

// The MCP_HTTP binding: the go-sdk partner gets a signed tools/call of the tool named as the handle.
func TestMCPBinding(t *testing.T) {
	w := newWorld(t, "sqlite", nil)
	p := partnertest.MCP(t, w.env.App.SigningKey.Public().(ed25519.PublicKey), "@mcp-echo", true)
	status, out := w.env.REST(t, "POST", "/v1/partner/intents", w.publisher, map[string]any{
		"publicIdentifier": "@mcp-echo", "name": "mcp echo", "description": "an MCP partner", "category": "QUERY",
		"bindingType": "MCP_HTTP", "toolEndpoint": p.URL, "feeRate": 0.002, "payoutAddresses": map[string]string{"evm": payout}})
	if status != 201 {
		t.Fatalf("publish: %d %v", status, out)
	}
	if status, out := w.env.REST(t, "POST", "/v1/partner/intents/"+out["id"].(string)+"/active", w.publisher, map[string]any{"active": true}); status != 200 {
		t.Fatalf("activate: %d %v", status, out)
	}
	status, out = w.invoke(t, w.caller, map[string]any{"message": "@mcp-echo say hi"})
	if status != 200 || out["result"].(map[string]any)["args"].(map[string]any)["query"] != "say hi" {
		t.Fatalf("MCP_HTTP invoke: %d %v", status, out)
	}
	if res := out["result"].(map[string]any); res["requestId"] != out["requestId"] || !strings.HasPrefix(res["userId"].(string), "u_") {
		t.Fatalf("MCP_HTTP partner did not verify our signed fields: %v", res)
	}
	if c := charge(out); c["partnerFeeMicro"] != float64(0) || c["reservedMicro"] != float64(1000) {
		t.Fatalf("MCP_HTTP charge (no providerCostMicro): %v", c)
	}
	w.ledgerOK(t)
}

// Token arguments of SWAP/SEND/BRIDGE intents are resolved before anything is quoted: a spam
// token or one that names nothing stops the call, nothing is dispatched or charged.
func TestResolutionBeforeWrites(t *testing.T) {
	w, _ := newMarketWorld(t, "sqlite")
	ctx := context.Background()
	spam := &learned.Token{Chain: "base", AddressKey: "0x1111111111111111111111111111111111111111", Address: "0x1111111111111111111111111111111111111111",
		Ticker: "FREECLAIM", Name: "claim free airdrop at scam.example", TickerKey: "freeclaim", NameKey: "claim free airdrop at scam.example",
		BaseKey: "freeclaim", Decimals: 18, IsSpam: true, SpamReason: "airdrop bait", Source: "test", UpdatedAt: time.Now().UTC()}
	if err := learned.New(w.settledStore(t)).UpsertTokens(ctx, []*learned.Token{spam}); err != nil {
		t.Fatal(err)
	}
	schema := map[string]any{"type": "object", "required": []string{"token", "amount", "chain"}, "additionalProperties": false,
		"properties": map[string]any{
			"token":  map[string]any{"type": "string", "x-token": true},
			"chain":  map[string]any{"type": "string"},
			"amount": map[string]any{"type": "string"},
		}}
	w.publish(t, "@swapper", "/write", map[string]any{"category": "SWAP", "parametersSchema": schema})
	before := w.credit(t)
	for _, tc := range []struct{ token, want string }{
		{"FREECLAIM", "spam"},
		{"NOSUCHTOKENXYZ", "NOSUCHTOKENXYZ"},
	} {
		status, out := w.invoke(t, w.caller, map[string]any{"message": "@swapper", "args": map[string]any{"token": tc.token, "chain": "base", "amount": "1"}})
		if status != 400 || !strings.Contains(strings.ToLower(out["error"].(map[string]any)["message"].(string)), strings.ToLower(tc.want)) {
			t.Fatalf("%s: %d %v", tc.token, status, out)
		}
	}
	// A real token passes resolution and reaches the confirmation step.
	status, out := w.invoke(t, w.caller, map[string]any{"message": "@swapper", "args": map[string]any{"token": "USDC", "chain": "base", "amount": "1"}})
	if status != 409 || errCode(out) != "CONFIRMATION_REQUIRED" {
		t.Fatalf("USDC on base: %d %v", status, out)
	}
	if w.hits("/write") != 0 || w.credit(t) != before {
		t.Fatal("resolution failures dispatched or charged")
	}
}

// New calls reserve from their key's budget lease: one lease transaction for many calls, each
// invocation recorded and settled as before, and a balance read on the replica returns what
// the lease still held. With leases off, no lease is taken.
func TestInvocationsReserveFromABudgetLease(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			w := newWorld(t, dialect, nil)
			w.publish(t, "@leased", "/cost", nil)
			start := w.credit(t)
			leases := func(state string) int64 {
				n, err := w.env.App.Store.DB().NewSelect().Model((*store.Reservation)(nil)).
					Where("account_id = ? AND request_id LIKE 'lease:%' AND state = ?", w.callerID, state).Count(ctx)
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
			var ids []string
			for i := range 5 {
				status, out := w.invoke(t, w.caller, map[string]any{"message": fmt.Sprintf("@leased call %d", i)})
				if status != 200 || charge(out)["totalMicro"] != 3000.0 {
					t.Fatalf("call %d: %d %v", i, status, out)
				}
				ids = append(ids, out["requestId"].(string))
			}
			if n := leases(store.ReservationOpen); n != 1 {
				t.Fatalf("%d open leases after five calls, want one", n)
			}
			// A read of the account on this replica returns the lease and sees every call.
			if status, _ := w.env.REST(t, "GET", "/v1/account", w.caller, nil); status != 200 {
				t.Fatalf("account: %d", status)
			}
			if open, settled := leases(store.ReservationOpen), leases(store.ReservationSettled); open != 0 || settled != 1 {
				t.Fatalf("after a balance read: %d open leases, %d settled; want 0 and 1", open, settled)
			}
			ca, err := w.env.App.Store.Credit(ctx, w.callerID)
			if err != nil || ca.HeldMicro != 0 || ca.ReservedMicro != 0 || ca.AvailableMicro != start-5*3000 {
				t.Fatalf("balance after five calls: %+v %v, want %d available and nothing held", ca, err, start-5*3000)
			}
			for _, id := range ids {
				if inv, err := invocations.New(w.env.App.Store).ByID(ctx, id); err != nil || inv.State != store.InvSucceeded {
					t.Fatalf("invocation %s: %+v %v", id, inv, err)
				}
			}
			w.ledgerOK(t)

			off := newWorld(t, dialect, func(c *apptest.Config) { c.BudgetLeases = false })
			off.publish(t, "@unleased", "/cost", nil)
			if status, out := off.invoke(t, off.caller, map[string]any{"message": "@unleased call"}); status != 200 {
				t.Fatalf("call without leases: %d %v", status, out)
			}
			var n int64
			n, err = off.env.App.Store.DB().NewSelect().Model((*store.Reservation)(nil)).Where("request_id LIKE 'lease:%'").Count(ctx)
			if err != nil || n != 0 {
				t.Fatalf("%d leases with SWITCHBOARD_BUDGET_LEASES=false (%v)", n, err)
			}
		})
	}
}

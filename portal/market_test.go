package portal_test

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/contracts/anviltest"
	"github.com/switchboard-hq/switchboard/signing/partnerexample"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/partners"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools/partners/partnertest"
)

// publishLive publishes an intent over REST with key and, unless inactive, activates it
// (probe-gated); it returns the intent id.
func publishLive(t *testing.T, env *apptest.Env, key string, body map[string]any, active bool) string {
	t.Helper()
	st, out := env.REST(t, "POST", "/v1/partner/intents", key, body)
	if st != 201 {
		t.Fatalf("publish %v: %d %v", body["publicIdentifier"], st, out)
	}
	id := out["id"].(string)
	if active {
		if st, out := env.REST(t, "POST", "/v1/partner/intents/"+id+"/active", key, map[string]any{"active": true}); st != 200 {
			t.Fatalf("activate %v: %d %v", body["publicIdentifier"], st, out)
		}
	}
	return id
}

func weather(partner *partnertest.Partner, handle, category string) map[string]any {
	return map[string]any{"publicIdentifier": handle, "name": "Forecast", "description": "weather forecast for any city",
		"category": category, "toolEndpoint": partner.URL + partnerexample.RESTPath, "feeRate": 0.001,
		"payoutAddresses": map[string]string{"evm": "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"}}
}

var handleRe = regexp.MustCompile(`<h2><a href="/marketplace/(@[a-z0-9_-]+)">`)

func listed(body string) []string {
	var out []string
	for _, m := range handleRe.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

// Anyone browses the marketplace signed out: search ranks as discover ranks (verification
// boosts, a failing record sinks), the filters exclude what they should, and inactive or
// archived intents are neither listed nor served; an intent's page shows its parameters,
// price in words, health, publisher and snippets with the handle filled in.
func TestMarketplaceBrowse(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			env, partner := withPartnerOn(t, apptest.Options{Dialect: dialect})
			ctx := context.Background()
			pub := env.Onboard(t, "market-pub@example.com")["apiKey"].(string)
			ids := map[string]string{}
			for _, h := range []string{"@weather-plain", "@weather-verified", "@weather-flaky"} {
				ids[h] = publishLive(t, env, pub, weather(partner, h, "QUERY"), true)
			}
			bps := weather(partner, "@weather-bps", "SEND")
			bps["feeRate"], bps["feeRateUnit"] = 30, "bps"
			bps["parametersSchema"] = map[string]any{"type": "object", "required": []string{"query", "token", "amount"}, "properties": map[string]any{
				"query": map[string]any{"type": "string"}, "token": map[string]any{"type": "string", "x-token": true},
				"chain": map[string]any{"type": "string"}, "amount": map[string]any{"type": "string"}}}
			ids["@weather-bps"] = publishLive(t, env, pub, bps, true)
			pub2 := env.Onboard(t, "market-pub2@example.com")["apiKey"].(string) // 5 publishes an hour each
			publishLive(t, env, pub2, weather(partner, "@weather-off", "QUERY"), false)
			gone := publishLive(t, env, pub2, weather(partner, "@weather-gone", "QUERY"), true)
			if st, out := env.REST(t, "DELETE", "/v1/partner/intents/"+gone, pub2, nil); st != 200 {
				t.Fatalf("archive: %d %v", st, out)
			}
			// An operator verifies one; another's calls all failed.
			in, err := partners.New(env.App.Store).Intent(ctx, ids["@weather-verified"])
			if err != nil {
				t.Fatal(err)
			}
			in.VerificationStatus = "VERIFIED"
			if err := partners.New(env.App.Store).UpdateIntent(ctx, in); err != nil {
				t.Fatal(err)
			}
			acct, _ := accounts.New(env.App.Store).ByEmail(ctx, "market-pub@example.com")
			for i := range 4 {
				now := time.Now().UTC().Add(-time.Duration(i+1) * time.Hour)
				inv := &store.Invocation{RequestID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i), AccountID: acct.ID, KeyID: "k", IntentID: ids["@weather-flaky"],
					Handle: "@weather-flaky", Category: "QUERY", IntentRevision: 1, Args: "{}", CreatedAt: now, Outcome: store.Outcome{State: store.InvFailed, FinishedAt: &now}}
				if err := env.App.Store.CreateInvocation(ctx, inv, "test"); err != nil {
					t.Fatal(err)
				}
			}

			anon := newHuman(t, env)
			st, body := anon.get("/marketplace?q=weather+forecast")
			got := listed(body)
			if st != 200 || len(got) != 4 || got[0] != "@weather-verified" || got[3] != "@weather-flaky" {
				t.Fatalf("search, signed out: %d %v", st, got)
			}
			// The same order discover gives an agent.
			out, e := apptest.CallTool(t, env.MCP(t, pub), "discover", map[string]any{"query": "weather forecast"})
			if e != nil {
				t.Fatal(e)
			}
			var agent []string
			for _, r := range out["results"].([]any) {
				if h := r.(map[string]any)["handle"].(string); strings.HasPrefix(h, "@weather") && h != "@weather-off" {
					agent = append(agent, h)
				}
			}
			if !slices.Equal(got, agent) {
				t.Fatalf("the marketplace ranks %v, discover %v", got, agent)
			}
			// Browsing without a search: the same rank with verification and health alone
			// (the built-in capabilities are verified too).
			if _, body := anon.get("/marketplace"); !slices.Equal(listed(body), []string{"@get_balances", "@get_price", "@resolve_token",
				"@weather-verified", "@weather-bps", "@weather-plain", "@weather-flaky"}) {
				t.Fatalf("browse: %v", listed(body))
			}
			for q, want := range map[string][]string{
				"q=weather&price=bps":               {"@weather-bps"},
				"q=weather&verification=VERIFIED":   {"@weather-verified"},
				"category=SEND":                     {"@weather-bps"},
				"price=per_call&category=SEND":      nil,
				"q=weather&verification=UNVERIFIED": {"@weather-plain", "@weather-bps", "@weather-flaky"},
			} {
				_, body := anon.get("/marketplace?" + q)
				got := listed(body)
				slices.Sort(got)
				slices.Sort(want)
				if !slices.Equal(got, want) {
					t.Errorf("%s: %v, want %v", q, got, want)
				}
			}
			if st, body := anon.get("/marketplace?price=cheap"); st != 400 || !strings.Contains(body, "q-error") {
				t.Errorf("unknown price kind: %d", st)
			}
			for _, h := range []string{"@weather-off", "@weather-gone", "@nobody-here"} {
				if st, _ := anon.get("/marketplace/" + h); st != 404 {
					t.Errorf("%s: %d, want 404", h, st)
				}
			}

			st, body = anon.get("/marketplace/@weather-bps")
			for _, want := range []string{"30 basis points (0.3%) of the value routed", "<code>query</code>", "Last re-probe",
				`&#34;message&#34;: &#34;@weather-bps &lt;your request&gt;&#34;`, env.URL + "/v1/invoke", "InvokeWithConfirmation", "/developer/sign-in",
				"@weather-plain</a>", "The partner behind <strong>@weather-"} {
				if !strings.Contains(body, want) {
					t.Errorf("the intent page lacks %q", want)
				}
			}
			if st != 200 || strings.Contains(body, `name="csrf"`) {
				t.Fatalf("intent page signed out: %d (no Try it form without a session)", st)
			}
			if _, body := anon.get("/marketplace/@weather-flaky"); !strings.Contains(body, "0.0% of 4 calls") {
				t.Errorf("the flaky intent's health: %s", body)
			}
		})
	}
}

// Try it: a read is called with the session as the caller and shows its result, charge and
// signed receipt; a write shows its itemized quote and nothing reaches the partner until the
// human confirms; the calls land in the caller's log at once.
func TestTryIt(t *testing.T) {
	env, partner := withPartner(t, nil)
	pub := env.Onboard(t, "try-pub@example.com")["apiKey"].(string)
	publishLive(t, env, pub, weather(partner, "@try-read", "QUERY"), true)
	w := weather(partner, "@try-write", "EXECUTE")
	w["parametersSchema"] = map[string]any{"type": "object", "required": []string{"query", "amount"},
		"properties": map[string]any{"query": map[string]any{"type": "string", "description": "what to do"},
			"amount": map[string]any{"type": "number"}, "fast": map[string]any{"type": "boolean"}}}
	publishLive(t, env, pub, w, true)

	h := newHuman(t, env)
	h.signIn("tryer@example.com")
	_, body := h.get("/marketplace/@try-read")
	if !strings.Contains(body, `name="query"`) {
		t.Fatalf("no Try it form signed in:\n%s", body)
	}
	before := len(partner.Hits())
	st, body := h.post("/marketplace/@try-read", url.Values{"csrf": {h.csrf()}, "action": {"try"}, "query": {"rain in Lisbon <b>"}}, false)
	if st != 200 || !strings.Contains(body, "You asked: rain in Lisbon &lt;b&gt;") || !strings.Contains(body, "Signed receipt") ||
		!strings.Contains(body, "<strong>0.002 USD</strong>") || len(partner.Hits()) != before+1 {
		t.Fatalf("try a read: %d hits %d→%d\n%s", st, before, len(partner.Hits()), body)
	}
	readID := regexp.MustCompile(`Request <code>([0-9a-f-]{36})</code>`).FindStringSubmatch(body)
	if readID == nil {
		t.Fatal("no request id shown")
	}

	// A write: bad input next to its field, then the quote, nothing sent.
	h.get("/marketplace/@try-write")
	token := h.csrf()
	if st, body := h.post("/marketplace/@try-write", url.Values{"csrf": {token}, "action": {"try"}, "arg.query": {"go"}, "arg.amount": {"lots"}}, false); st != 422 || !strings.Contains(body, `id="arg-amount-error"`) || !strings.Contains(body, `value="lots"`) {
		t.Fatalf("bad amount: %d\n%s", st, body)
	}
	before = len(partner.Hits())
	st, body = h.post("/marketplace/@try-write", url.Values{"csrf": {token}, "action": {"try"}, "arg.query": {"move it"}, "arg.amount": {"2.5"}, "arg.fast": {"on"}}, false)
	for _, want := range []string{"Confirm this call", "Partner fee (at most)", "Platform fee", "Infrastructure", "Total", "maxChargeUsd", `&#34;amount&#34;: 2.5`, `"fast": true`} {
		if !strings.Contains(body, want) && !strings.Contains(body, strings.ReplaceAll(want, `"`, "&#34;")) {
			t.Errorf("the confirmation lacks %q", want)
		}
	}
	if st != 200 || len(partner.Hits()) != before {
		t.Fatalf("quote: %d; the partner got %d requests before the confirmation", st, len(partner.Hits())-before)
	}
	m := regexp.MustCompile(`name="confirmRequestId" value="([0-9a-f-]{36})"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no confirm form:\n%s", body)
	}
	st, body = h.post("/marketplace/@try-write", url.Values{"csrf": {h.csrf()}, "action": {"confirm"}, "confirmRequestId": {m[1]}}, false)
	if st != 200 || !strings.Contains(body, "You asked: move it") || len(partner.Hits()) != before+1 {
		t.Fatalf("confirm: %d hits %d\n%s", st, len(partner.Hits())-before, body)
	}
	// Both calls are in the log at once, the write's args on its detail.
	_, body = h.get("/developer/calls")
	if !strings.Contains(body, readID[1]) || !strings.Contains(body, m[1]) {
		t.Fatalf("the call log misses the calls just made:\n%s", body)
	}
	if _, body := h.get("/developer/calls/" + m[1]); !strings.Contains(body, "&#34;amount&#34;: 2.5") || !strings.Contains(body, "Signed receipt") {
		t.Fatalf("call detail:\n%s", body)
	}
	// A flat-fee intent: its price and how an agent pays it; here no chain is configured, so
	// Try it says the payment path is not available, and nothing is sent.
	flat := weather(partner, "@try-flat", "QUERY")
	flat["feeRate"], flat["feeRateUnit"] = 0.5, "flat_usdc"
	publishLive(t, env, pub, flat, true)
	_, body = h.get("/marketplace/@try-flat")
	if !strings.Contains(body, "Flat fee of 0.5 USDC, paid on chain before the call (x402)") || !strings.Contains(body, `href="/docs/x402"`) {
		t.Fatalf("flat-fee intent page:\n%s", body)
	}
	before = len(partner.Hits())
	st, body = h.post("/marketplace/@try-flat", url.Values{"csrf": {h.csrf()}, "action": {"try"}, "query": {"x"}}, false)
	if st != 200 || !strings.Contains(body, "Flat-fee quote") || !strings.Contains(body, "not available on this deployment") || !strings.Contains(body, "PAYMENT-REQUIRED") || len(partner.Hits()) != before {
		t.Fatalf("try a flat-fee intent: %d\n%s", st, body)
	}
	// A form post without the session's token dispatches nothing.
	before = len(partner.Hits())
	if st, _ := h.post("/marketplace/@try-read", url.Values{"csrf": {"00"}, "action": {"try"}, "query": {"x"}}, false); st != 403 || len(partner.Hits()) != before {
		t.Fatalf("forged try: %d", st)
	}
}

// The charts and call logs: the caller's spend per day overall and per key, each intent's
// record for its publisher, the caller's calls filtered by key and outcome, and the
// partner's view of calls to its intents, where another partner's call is 404 and the
// caller is only the pseudonym.
func TestChartsAndCallLogs(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			env, partner := withPartnerOn(t, apptest.Options{Dialect: dialect})
			keyA := env.Onboard(t, "logs-a@example.com")["apiKey"].(string)
			keyB := env.Onboard(t, "logs-b@example.com")["apiKey"].(string)
			intentA := publishLive(t, env, keyA, weather(partner, "@logs-a", "QUERY"), true)
			intentB := publishLive(t, env, keyB, weather(partner, "@logs-b", "QUERY"), true)

			callerAcct := env.Onboard(t, "logs-c@example.com")
			caller := newHuman(t, env)
			caller.signIn("logs-c@example.com")
			caller.get("/developer/api-keys")
			st, body := caller.post("/developer/api-keys", url.Values{"csrf": {caller.csrf()}, "name": {"second agent"}, "scopes": {"partner"}}, false)
			sm := secretRe.FindStringSubmatch(body)
			if st != 200 || sm == nil {
				t.Fatalf("issue key: %d", st)
			}
			first, second := callerAcct["apiKey"].(string), sm[1]
			var reqIDs []string
			for _, c := range []struct{ key, msg string }{{first, "@logs-a one"}, {first, "@logs-a two"}, {second, "@logs-b three"}} {
				st, out := env.REST(t, "POST", "/v1/invoke", c.key, map[string]any{"message": c.msg})
				if st != 200 {
					t.Fatalf("invoke: %d %v", st, out)
				}
				reqIDs = append(reqIDs, out["requestId"].(string))
				env.Clock.Advance(time.Second)
			}

			_, body = caller.get("/developer/usage")
			if !strings.Contains(body, "0.006 USD over 3 calls") || !strings.Contains(body, `<svg class="chart"`) || !strings.Contains(body, `<rect class="bar s1"`) ||
				!strings.Contains(body, "second agent (") || !strings.Contains(body, "0.002 USD over 1 call ·") {
				t.Fatalf("usage page:\n%s", body)
			}
			var keyLink []string
			for _, m := range regexp.MustCompile(`href="(/developer/calls\?key=[^"]+)"`).FindAllStringSubmatch(body, -1) {
				if !slices.Contains(keyLink, m[1]) {
					keyLink = append(keyLink, m[1])
				}
			}
			if len(keyLink) != 2 {
				t.Fatalf("the per-key charts link their calls: %v", keyLink)
			}
			_, body = caller.get("/developer/calls")
			for _, id := range reqIDs {
				if !strings.Contains(body, id) {
					t.Fatalf("the caller's log misses %s:\n%s", id, body)
				}
			}
			if !strings.Contains(body, `<td data-label="HTTP">200</td>`) || !strings.Contains(body, "0.002 USD") {
				t.Fatalf("rows lack HTTP status or charge:\n%s", body)
			}
			// The chart's link filters by key: the busier key's two calls only.
			_, body = caller.get(keyLink[0])
			if n := strings.Count(body, "<td data-label=\"Request\"><a href=\"/developer/calls/"); n != 2 || strings.Contains(body, reqIDs[2]) {
				t.Fatalf("key filter shows %d rows", n)
			}
			// Keyset pages: two, then the last one, each call once, newest first.
			rowRe := regexp.MustCompile(`<td data-label="Request"><a href="/developer/calls/([0-9a-f-]{36})"`)
			nextRe := regexp.MustCompile(`<a href="(/developer/calls\?[^"]*cursor=[^"]+)" rel="next">`)
			var paged []string
			next := "/developer/calls?limit=2"
			for pages := 0; next != ""; pages++ {
				if pages == 3 {
					t.Fatal("the pages do not end")
				}
				_, body := caller.get(next)
				for _, m := range rowRe.FindAllStringSubmatch(body, -1) {
					paged = append(paged, m[1])
				}
				next = ""
				if m := nextRe.FindStringSubmatch(body); m != nil {
					next = strings.ReplaceAll(m[1], "&amp;", "&")
				}
			}
			if !slices.Equal(paged, []string{reqIDs[2], reqIDs[1], reqIDs[0]}) {
				t.Fatalf("paged %v, want %v newest first", paged, reqIDs)
			}
			if _, body := caller.get("/developer/calls?outcome=failed"); !strings.Contains(body, "No calls match these filters") {
				t.Fatalf("outcome filter")
			}
			if _, body := caller.get("/developer/calls/" + reqIDs[0]); !strings.Contains(body, "You asked: one") || !strings.Contains(body, "Signed receipt") {
				t.Fatalf("caller's detail:\n%s", body)
			}

			// Partner A sees the calls to its intent only, the caller as the pseudonym.
			a := newHuman(t, env)
			a.signIn("logs-a@example.com")
			_, body = a.get("/developer/calls?side=partner")
			if !strings.Contains(body, reqIDs[0]) || !strings.Contains(body, reqIDs[1]) || strings.Contains(body, reqIDs[2]) {
				t.Fatalf("partner A's log:\n%s", body)
			}
			st, body = a.get("/developer/calls/" + reqIDs[0] + "?side=partner")
			cAcct, _ := accounts.New(env.App.Store).ByEmail(context.Background(), "logs-c@example.com")
			if st != 200 || !strings.Contains(body, "You asked: one") || strings.Contains(body, cAcct.ID) || strings.Contains(body, "logs-c@example.com") {
				t.Fatalf("partner A's detail: %d\n%s", st, body)
			}
			cKeys, _ := accounts.New(env.App.Store).Keys(context.Background(), cAcct.ID)
			for _, k := range cKeys {
				if strings.Contains(body, k.ID) || strings.Contains(body, k.Prefix) {
					t.Fatalf("partner A's detail shows the caller's key %s", k.Name)
				}
			}
			pseudonym := regexp.MustCompile(`Caller \(its userId for you\)</th><td><code>([^<]+)</code>`).FindStringSubmatch(body)
			if pseudonym == nil || pseudonym[1] == cAcct.ID || !strings.Contains(body, pseudonym[1]) {
				t.Fatalf("no pseudonym on partner A's detail")
			}
			for _, path := range []string{"/developer/calls/" + reqIDs[2] + "?side=partner", "/developer/calls/" + reqIDs[2], "/developer/usage/intents/" + intentB} {
				if st, _ := a.get(path); st != 404 {
					t.Errorf("partner A opens %s: %d, want 404", path, st)
				}
			}
			_, body = a.get("/developer/usage/intents/" + intentA)
			if !strings.Contains(body, "2 calls, 2 succeeded (100.0%)") || strings.Count(body, `<svg class="chart"`) != 4 || !strings.Contains(body, `<circle class="dot s1"`) ||
				!strings.Contains(body, "/developer/calls?intent="+intentA+"&amp;side=partner") {
				t.Fatalf("intent charts:\n%s", body)
			}
		})
	}
}

// With a chain configured (anvil, the contracts deployed), Try it on a flat-fee intent shows
// the real quote, the amount and where it is paid, and how an agent pays it; nothing is sent.
func TestTryItFlatFeeQuote(t *testing.T) {
	chain := anviltest.Start(t)
	env, partner := withPartner(t, func(c *apptest.Config) {
		c.FlatFee.RPCURL, c.FlatFee.ChainID = chain.URL, anviltest.ChainID
		c.FlatFee.Token, c.FlatFee.Payer = chain.Token.Hex(), chain.Payer.Hex()
		c.FlatFee.RelayerKey, c.FlatFee.Treasury = hexutil.Encode(crypto.FromECDSA(chain.Relayer)), chain.Treasury.Hex()
	})
	pub := env.Onboard(t, "flat-pub@example.com")["apiKey"].(string)
	flat := weather(partner, "@flat-try", "QUERY")
	flat["feeRate"], flat["feeRateUnit"] = 0.5, "flat_usdc"
	publishLive(t, env, pub, flat, true)
	h := newHuman(t, env)
	h.signIn("flat-try@example.com")
	h.get("/marketplace/@flat-try")
	before := len(partner.Hits())
	st, body := h.post("/marketplace/@flat-try", url.Values{"csrf": {h.csrf()}, "action": {"try"}, "query": {"rain"}}, false)
	for _, want := range []string{"Flat-fee quote", "<strong>0.51 USD</strong>", "eip155:31337", chain.Payer.Hex(), "ReceiveWithAuthorization", `href="/docs/x402"`, "PAYMENT-REQUIRED"} {
		if !strings.Contains(body, want) {
			t.Errorf("the quote lacks %q:\n%s", want, body)
		}
	}
	if st != 200 || len(partner.Hits()) != before {
		t.Fatalf("flat-fee quote: %d, the partner got %d requests", st, len(partner.Hits())-before)
	}
}

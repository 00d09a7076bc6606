package switchboard_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/sdk/go/switchboard"
)

// Coverage maps every /v1 operationId to the Client method that calls it (docs/sdks.md's
// coverage table lists the same).
var Coverage = map[string]string{
	"agent_signup":                  "Signup",
	"agent_verify":                  "Verify",
	"api_key_create":                "CreateKey",
	"api_key_list":                  "ListKeys",
	"api_key_revoke":                "RevokeKey",
	"account_get":                   "Account",
	"credit_topup":                  "Topup",
	"x402_fetch":                    "X402Fetch",
	"wallet_send":                   "WalletSend",
	"usage_list":                    "Usage",
	"resolve_token":                 "ResolveToken",
	"get_price":                     "Price",
	"get_balances":                  "Balances",
	"connected_wallet_add":          "AddConnectedWallet",
	"connected_wallet_list":         "ListConnectedWallets",
	"connected_wallet_remove":       "RemoveConnectedWallet",
	"discover":                      "Discover",
	"invoke_partner_message":        "Invoke",
	"partner_publish_intent":        "PublishIntent",
	"partner_publish_intent_bundle": "PublishIntentBundle",
	"partner_update_intent":         "UpdateIntent",
	"partner_test_endpoint":         "TestEndpoint",
	"partner_set_active":            "SetActive",
	"partner_list_intents":          "ListIntents",
	"partner_earnings":              "Earnings",
	"partner_receipt":               "Receipt",
	"task_get":                      "Task",
	"task_cancel":                   "CancelTask",
	"partner_archive_intent":        "ArchiveIntent",
	"policy_get":                    "Policy",
	"policy_set":                    "SetPolicy",
	"approval_list":                 "Approvals",
	"approval_get":                  "Approval",
	"webhook_endpoint_create":       "CreateWebhookEndpoint",
	"webhook_endpoint_list":         "ListWebhookEndpoints",
	"webhook_endpoint_delete":       "DeleteWebhookEndpoint",
	"webhook_delivery_list":         "ListWebhookDeliveries",
	"webhook_delivery_replay":       "ReplayWebhookDelivery",
}

func TestCoverageNamesAMethodPerOperation(t *testing.T) {
	ids := switchboard.OperationIDs()
	var mapped []string
	for id := range Coverage {
		mapped = append(mapped, id)
	}
	slices.Sort(mapped)
	if !slices.Equal(ids, mapped) {
		t.Fatalf("Coverage %v differs from the client's operations %v", mapped, ids)
	}
	typ := reflect.TypeOf(&switchboard.Client{})
	for id, name := range Coverage {
		m, ok := typ.MethodByName(name)
		if !ok {
			t.Errorf("%s: no method Client.%s", id, name)
			continue
		}
		if m.Type.NumIn() < 2 || m.Type.In(1) != reflect.TypeFor[context.Context]() {
			t.Errorf("Client.%s does not take a context first", name)
		}
	}
}

var emails atomic.Int32

// onboard signs a fresh address up and verifies it with the code the development mailer
// logged, answering a client acting with the first key.
func onboard(t *testing.T) (*switchboard.Client, *switchboard.Account) {
	t.Helper()
	ctx := context.Background()
	email := fmt.Sprintf("go-client-%d-%d@example.com", time.Now().UnixNano(), emails.Add(1))
	anon := switchboard.New(switchboard.Live.URL, "")
	if err := anon.Signup(ctx, email); err != nil {
		t.Fatalf("Signup: %v", err)
	}
	code, err := switchboard.MailedCode(email)
	if err != nil {
		t.Fatal(err)
	}
	acct, err := anon.Verify(ctx, email, code)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	return anon.WithAPIKey(acct.APIKey), acct
}

// asError asserts err is a *switchboard.Error with code and status and a request id.
func asError(t *testing.T, err error, code switchboard.ErrorCode, status int) *switchboard.Error {
	t.Helper()
	var e *switchboard.Error
	if !errors.As(err, &e) {
		t.Fatalf("want a *switchboard.Error %s, got %T %v", code, err, err)
	}
	if e.Code != code || e.Status != status || e.Message == "" || e.RequestID == "" {
		t.Fatalf("want %s/%d with a message and request id, got %+v", code, status, e)
	}
	return e
}

func TestOnboardingKeysAccount(t *testing.T) {
	ctx := context.Background()
	c, acct := onboard(t)
	if !strings.HasPrefix(acct.APIKey, "sb_test_") || len(acct.Scopes) != 8 || acct.SpendLimitUSD != 50 ||
		acct.RateLimitPerMinute != 30 || !strings.HasPrefix(acct.Wallets.EVM, "0x") || acct.Wallets.SVM == "" {
		t.Fatalf("Verify: %+v", acct)
	}
	info, err := c.Account(ctx)
	if err != nil || info.UserID != acct.UserID || info.Wallets != acct.Wallets || len(info.Keys) != 1 || info.Limits.SpendLimitUSD != 50 {
		t.Fatalf("Account: %+v %v", info, err)
	}
	limit, rate := 2.5, 10
	minted, err := c.CreateKey(ctx, switchboard.CreateKeyInput{Name: "reader", Scopes: []string{"read"}, SpendLimitUSD: &limit, RateLimitPerMinute: &rate})
	if err != nil || minted.Secret == "" || minted.SpendLimitUSD != 2.5 || minted.RateLimitPerMinute != 10 || !slices.Equal(minted.Scopes, []string{"read"}) || minted.ParentID != info.KeyID {
		t.Fatalf("CreateKey: %+v %v", minted, err)
	}
	keys, err := c.ListKeys(ctx)
	if err != nil || len(keys) != 2 {
		t.Fatalf("ListKeys: %+v %v", keys, err)
	}
	for _, k := range keys {
		if k.Secret != "" {
			t.Fatalf("ListKeys shows a secret: %+v", k)
		}
	}
	// The read-only key works for reads and is refused the partner routes.
	reader := c.WithAPIKey(minted.Secret)
	if _, err := reader.Account(ctx); err != nil {
		t.Fatalf("Account with the minted key: %v", err)
	}
	_, err = reader.ListIntents(ctx, false)
	asError(t, err, switchboard.CodeForbidden, 403)

	revoked, err := c.RevokeKey(ctx, minted.ID)
	if err != nil || revoked.RevokedAt == nil || revoked.ID != minted.ID {
		t.Fatalf("RevokeKey: %+v %v", revoked, err)
	}
	_, err = reader.Account(ctx)
	if e := asError(t, err, switchboard.CodeUnauthenticated, 401); !strings.Contains(e.Message, "revoked") {
		t.Fatalf("revoked key: %v", e)
	}
	_, err = c.RevokeKey(ctx, "no-such-key")
	asError(t, err, switchboard.CodeNotFound, 404)

	// A wrong code is UNAUTHENTICATED; a malformed e-mail is BAD_INPUT with details.
	anon := switchboard.New(switchboard.Live.URL, "")
	_, err = anon.Verify(ctx, "nobody@example.com", "00000000")
	asError(t, err, switchboard.CodeUnauthenticated, 401)
	err = anon.Signup(ctx, "not an e-mail")
	asError(t, err, switchboard.CodeBadInput, 400)
	_, err = anon.Account(ctx)
	if e := asError(t, err, switchboard.CodeUnauthenticated, 401); !strings.Contains(e.Message, "agent_signup") {
		t.Fatalf("no key: %v", e)
	}
}

func TestLookupsAndWallets(t *testing.T) {
	ctx := context.Background()
	c, acct := onboard(t)
	toks, err := c.ResolveToken(ctx, switchboard.TokenQuery{Query: "usdc on base"})
	if err != nil || toks.Status != "OK" || len(toks.Tokens) == 0 || toks.Tokens[0].Chain != "base" || toks.Tokens[0].Ticker != "USDC" || toks.Tokens[0].Decimals != 6 {
		t.Fatalf("ResolveToken: %+v %v", toks, err)
	}
	// Every price provider is a closed port: the service says it cannot quote, typed.
	_, err = switchboard.New(switchboard.Live.URL, acct.APIKey, switchboard.WithMaxRetries(0)).Price(ctx, switchboard.TokenQuery{Query: "ETH"})
	if e := asError(t, err, switchboard.CodeUnavailable, 503); !strings.Contains(e.Message, "cannot quote") || e.Details["ticker"] != "ETH" {
		t.Fatalf("Price offline: %+v", e)
	}
	_, err = c.Balances(ctx, switchboard.BalancesQuery{Chains: []string{"base", "solana"}})
	asError(t, err, switchboard.CodeUnavailable, 503)
	_, err = c.Discover(ctx, switchboard.DiscoverQuery{Query: ""})
	asError(t, err, switchboard.CodeBadInput, 400)

	const addr = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"
	w, err := c.AddConnectedWallet(ctx, addr, "cold")
	if err != nil || w.Family != "evm" || w.Label != "cold" {
		t.Fatalf("AddConnectedWallet: %+v %v", w, err)
	}
	list, err := c.ListConnectedWallets(ctx)
	if err != nil || len(list.Wallets) != 1 || list.Max == 0 {
		t.Fatalf("ListConnectedWallets: %+v %v", list, err)
	}
	if _, err := c.RemoveConnectedWallet(ctx, list.Wallets[0].Address); err != nil {
		t.Fatalf("RemoveConnectedWallet: %v", err)
	}
	_, err = c.RemoveConnectedWallet(ctx, list.Wallets[0].Address)
	asError(t, err, switchboard.CodeNotFound, 404)
}

// publish publishes a REST intent on the example partner with a fresh handle.
func publish(t *testing.T, c *switchboard.Client, category, endpoint string) *switchboard.Intent {
	t.Helper()
	handle := fmt.Sprintf("@go-%s-%d", strings.ToLower(category), emails.Add(1))
	in, err := c.PublishIntent(context.Background(), switchboard.IntentInput{
		PublicIdentifier: handle, Name: "Echo " + category, Description: "echoes a query", Category: category,
		ToolEndpoint:     endpoint,
		ParametersSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`),
	})
	if err != nil {
		t.Fatalf("PublishIntent %s: %v", handle, err)
	}
	return in
}

func TestPartnerRoutesAndInvoke(t *testing.T) {
	ctx := context.Background()
	c, acct := onboard(t)
	intent := publish(t, c, "QUERY", switchboard.Live.PartnerURL+"/rest")
	if intent.IsActive || intent.VerificationStatus != "UNVERIFIED" || intent.OwnerID != acct.UserID || intent.TimeoutMs != 30000 {
		t.Fatalf("published: %+v", intent)
	}
	_, err := c.PublishIntent(ctx, switchboard.IntentInput{PublicIdentifier: intent.PublicIdentifier, Name: "dup", Description: "dup",
		Category: "QUERY", ToolEndpoint: switchboard.Live.PartnerURL + "/rest"})
	asError(t, err, switchboard.CodeConflict, 409)

	test, err := c.TestEndpoint(ctx, switchboard.TestEndpointInput{IntentID: intent.ID})
	if err != nil || test.RoundTrip.Verdict != "OK" || test.Probe.Verdict != "PASS" || !test.ReadyToActivate {
		t.Fatalf("TestEndpoint: %+v %v", test, err)
	}
	act, err := c.SetActive(ctx, intent.ID, true)
	if err != nil || !act.Intent.IsActive {
		t.Fatalf("SetActive: %+v %v", act, err)
	}
	found, err := c.Discover(ctx, switchboard.DiscoverQuery{Query: "echoes a query", Limit: 50})
	if err != nil || !slices.ContainsFunc(found, func(r switchboard.DiscoverResult) bool { return r.Handle == intent.PublicIdentifier && r.Own }) {
		t.Fatalf("Discover: %+v %v", found, err)
	}
	inv, err := c.Invoke(ctx, switchboard.InvokeInput{Message: intent.PublicIdentifier + " hello from Go"})
	if err != nil || !inv.Success || inv.Handle != intent.PublicIdentifier || inv.Attempts != 1 {
		t.Fatalf("Invoke: %+v %v", inv, err)
	}
	var result struct{ Answer, Query, RequestID string }
	json.Unmarshal(inv.Result, &result)
	if result.Query != "hello from Go" || result.RequestID != inv.RequestID {
		t.Fatalf("Invoke result: %s", inv.Result)
	}

	name := "Echo (renamed)"
	upd, err := c.UpdateIntent(ctx, intent.ID, switchboard.IntentUpdate{Name: &name})
	if err != nil || upd.Intent.Name != name || upd.Deactivated {
		t.Fatalf("UpdateIntent: %+v %v", upd, err)
	}
	cat := "PRICE"
	_, err = c.UpdateIntent(ctx, intent.ID, switchboard.IntentUpdate{Category: &cat})
	if e := asError(t, err, switchboard.CodeBadInput, 400); !strings.Contains(e.Message, "immutable") {
		t.Fatalf("immutable: %v", e)
	}
	earn, err := c.Earnings(ctx, switchboard.EarningsQuery{IntentID: intent.ID, Since: time.Now().Add(-time.Hour)})
	if err != nil || len(earn.ByIntent) != 1 || earn.ByIntent[0].Calls != 1 || earn.ByIntent[0].Succeeded != 1 {
		t.Fatalf("Earnings: %+v %v", earn, err)
	}
	// A short intent is never a task: InvokeAndWait answers as Invoke does, progress untold.
	waited, err := c.InvokeAndWait(ctx, switchboard.InvokeInput{Message: intent.PublicIdentifier + " hello again"}, func(*switchboard.Task) {
		t.Error("progress told for a call that is no task")
	})
	if err != nil || !waited.Success || waited.Handle != intent.PublicIdentifier {
		t.Fatalf("InvokeAndWait: %+v %v", waited, err)
	}
	_, err = c.Task(ctx, "no-such-task")
	asError(t, err, switchboard.CodeNotFound, 404)
	_, err = c.CancelTask(ctx, "no-such-task")
	asError(t, err, switchboard.CodeNotFound, 404)
	bundle, err := c.PublishIntentBundle(ctx, []switchboard.IntentInput{
		{PublicIdentifier: fmt.Sprintf("@go-b1-%d", emails.Add(1)), Name: "B1", Description: "first", Category: "QUERY", ToolEndpoint: switchboard.Live.PartnerURL + "/rest"},
		{PublicIdentifier: fmt.Sprintf("@go-b2-%d", emails.Add(1)), Name: "B2", Description: "second", Category: "ANALYZE", ToolEndpoint: switchboard.Live.PartnerURL + "/rest"},
	})
	if err != nil || len(bundle) != 2 {
		t.Fatalf("PublishIntentBundle: %+v %v", bundle, err)
	}
	list, err := c.ListIntents(ctx, false)
	if err != nil || len(list.Intents) != 3 {
		t.Fatalf("ListIntents: %+v %v", list, err)
	}
	arch, err := c.ArchiveIntent(ctx, intent.ID)
	if err != nil || arch.ArchivedAt == nil {
		t.Fatalf("ArchiveIntent: %+v %v", arch, err)
	}
	if list, err := c.ListIntents(ctx, false); err != nil || len(list.Intents) != 2 {
		t.Fatalf("ListIntents after archive: %+v %v", list, err)
	}
	if list, err := c.ListIntents(ctx, true); err != nil || len(list.Intents) != 3 {
		t.Fatalf("ListIntents with archived: %+v %v", list, err)
	}
	_, err = c.Invoke(ctx, switchboard.InvokeInput{Message: intent.PublicIdentifier + " again"})
	asError(t, err, switchboard.CodeNotFound, 404)
	_, err = c.SetActive(ctx, "no-such-intent", true)
	asError(t, err, switchboard.CodeNotFound, 404)
}

func TestWriteConfirmation(t *testing.T) {
	ctx := context.Background()
	c, _ := onboard(t)
	intent := publish(t, c, "EXECUTE", switchboard.Live.PartnerURL+"/rest")
	if _, err := c.SetActive(ctx, intent.ID, true); err != nil {
		t.Fatal(err)
	}
	in := switchboard.InvokeInput{Message: intent.PublicIdentifier + " do the thing"}
	_, err := c.Invoke(ctx, in)
	asError(t, err, switchboard.CodeConfirmationRequired, 409)
	conf, ok := switchboard.ConfirmationFrom(err)
	if !ok || conf.Handle != intent.PublicIdentifier || conf.Category != "EXECUTE" || conf.Args["query"] != "do the thing" || conf.ExpiresAt.IsZero() {
		t.Fatalf("ConfirmationFrom: %+v %v", conf, ok)
	}

	// Declined: nothing is sent.
	_, err = c.InvokeWithConfirmation(ctx, in, func(context.Context, *switchboard.Confirmation) (bool, error) { return false, nil })
	if !errors.Is(err, switchboard.ErrNotApproved) || !switchboard.IsCode(err, switchboard.CodeConfirmationRequired) {
		t.Fatalf("declined: %v", err)
	}
	// Approved: dispatched with the confirmed request id.
	var asked *switchboard.Confirmation
	inv, err := c.InvokeWithConfirmation(ctx, in, func(_ context.Context, cf *switchboard.Confirmation) (bool, error) { asked = cf; return true, nil })
	if err != nil || !inv.Success || asked == nil || inv.RequestID != asked.RequestID {
		t.Fatalf("approved: %+v %+v %v", inv, asked, err)
	}
	// Confirming again answers the same invocation (the same requestId), not a new one.
	again, err := c.Invoke(ctx, switchboard.InvokeInput{Message: in.Message, ConfirmRequestID: asked.RequestID})
	if err != nil || again.RequestID != inv.RequestID {
		t.Fatalf("confirming again: %+v %v", again, err)
	}
}

func TestErrorPaths(t *testing.T) {
	ctx := context.Background()
	c, _ := onboard(t)
	intent := publish(t, c, "QUERY", switchboard.Live.PartnerURL+"/rest")
	if _, err := c.SetActive(ctx, intent.ID, true); err != nil {
		t.Fatal(err)
	}

	// 413: a body over 1 MiB.
	_, err := c.Invoke(ctx, switchboard.InvokeInput{Message: intent.PublicIdentifier + " big", Args: map[string]any{"query": strings.Repeat("x", 1<<20+1)}})
	asError(t, err, switchboard.CodePayloadTooLarge, 413)

	// 402: a key whose spend limit is below the call's worst case.
	tiny, one := 0.0001, 1
	k, err := c.CreateKey(ctx, switchboard.CreateKeyInput{Name: "tiny", Scopes: []string{"partner", "read"}, SpendLimitUSD: &tiny, RateLimitPerMinute: &one})
	if err != nil {
		t.Fatal(err)
	}
	limited := c.WithAPIKey(k.Secret)
	_, err = limited.Invoke(ctx, switchboard.InvokeInput{Message: intent.PublicIdentifier + " hi"})
	asError(t, err, switchboard.CodeSpendLimit, 402)

	// 429 with Retry-After: the key allows one request a minute. The wait is longer than the
	// client waits by itself, so the error comes back at once with RetryAfter set.
	_, err = limited.ListKeys(ctx)
	if e := asError(t, err, switchboard.CodeRateLimited, 429); e.RetryAfter <= 0 || e.RetryAfter > time.Minute {
		t.Fatalf("RetryAfter %v", e.RetryAfter)
	}

	// 503: the partner is gone after activation; invoke is not retried by the client.
	url, stop, err := switchboard.StartPartner(switchboard.PartnerBin)
	if err != nil {
		t.Fatal(err)
	}
	gone := publish(t, c, "QUERY", url+"/rest")
	if _, err := c.SetActive(ctx, gone.ID, true); err != nil {
		stop()
		t.Fatal(err)
	}
	stop()
	_, err = c.Invoke(ctx, switchboard.InvokeInput{Message: gone.PublicIdentifier + " anyone there?"})
	if e := asError(t, err, switchboard.CodeUnavailable, 503); !strings.Contains(e.Message, "could not be reached") {
		t.Fatalf("partner gone: %v", e)
	}
}

// faultProxy answers the first `faults` requests itself with status (and Retry-After 0),
// and forwards the rest to the live service.
type faultProxy struct {
	faults   atomic.Int32
	status   int
	requests atomic.Int32
	hang     bool
}

func (p *faultProxy) start(t *testing.T) string {
	target, _ := url.Parse(switchboard.Live.URL)
	rp := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.requests.Add(1)
		if p.hang {
			<-r.Context().Done()
			return
		}
		if p.faults.Add(-1) >= 0 {
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Retry-After", "0")
			w.Header().Set("X-Request-Id", "injected")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(p.status)
			fmt.Fprintf(w, `{"error":{"code":%q,"message":"injected","hint":"wait a moment"}}`, map[int]string{429: "RATE_LIMITED", 503: "UNAVAILABLE"}[p.status])
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestRetries(t *testing.T) {
	ctx := context.Background()
	_, acct := onboard(t)
	key := acct.APIKey
	for _, status := range []int{429, 503} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			p := &faultProxy{status: status}
			via := switchboard.New(p.start(t), key, switchboard.WithRetryBackoff(time.Millisecond))

			// A GET is retried until it succeeds.
			p.faults.Store(2)
			if _, err := via.ListKeys(ctx); err != nil {
				t.Fatalf("GET after 2 faults: %v", err)
			}
			if n := p.requests.Load(); n != 3 {
				t.Fatalf("GET: %d requests, want 3", n)
			}
			// ... but not more than WithMaxRetries allows; the last answer is returned typed.
			p.requests.Store(0)
			p.faults.Store(5)
			_, err := via.ListKeys(ctx)
			e := asError(t, err, map[int]switchboard.ErrorCode{429: switchboard.CodeRateLimited, 503: switchboard.CodeUnavailable}[status], status)
			if e.Hint != "wait a moment" || e.RequestID != "injected" {
				t.Fatalf("hint/request id: %+v", e)
			}
			if n := p.requests.Load(); n != 1+switchboard.DefaultMaxRetries {
				t.Fatalf("GET with persistent faults: %d requests", n)
			}
			// An idempotent POST (set-active) is retried.
			p.requests.Store(0)
			p.faults.Store(1)
			_, err = via.SetActive(ctx, "no-such-intent", false)
			asError(t, err, switchboard.CodeNotFound, 404)
			if n := p.requests.Load(); n != 2 {
				t.Fatalf("idempotent POST: %d requests, want 2", n)
			}
			// A non-idempotent call (invoke, create key) is never retried.
			p.requests.Store(0)
			p.faults.Store(1)
			_, err = via.Invoke(ctx, switchboard.InvokeInput{Message: "@nobody hi"})
			asError(t, err, e.Code, status)
			p.faults.Store(1)
			_, err = via.CreateKey(ctx, switchboard.CreateKeyInput{Name: "x", Scopes: []string{"read"}})
			asError(t, err, e.Code, status)
			if n := p.requests.Load(); n != 2 {
				t.Fatalf("non-idempotent calls: %d requests, want 2", n)
			}
		})
	}
}

func TestTimeoutAndCancel(t *testing.T) {
	p := &faultProxy{hang: true}
	base := p.start(t)
	c := switchboard.New(base, "sb_test_x", switchboard.WithTimeout(50*time.Millisecond))
	if _, err := c.Account(context.Background()); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("per-call timeout: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := switchboard.New(base, "sb_test_x").Account(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: %v", err)
	}
}

func TestPolicyNarrowedByTheKey(t *testing.T) {
	ctx := context.Background()
	c, _ := onboard(t)
	p := &switchboard.Policy{DenyByDefault: true, Allow: switchboard.PolicyLists{Categories: []string{"QUERY"}},
		Caps: []switchboard.Cap{{Window: "day", USD: "1"}}}
	got, err := c.SetPolicy(ctx, "", p)
	if err != nil {
		t.Fatal(err)
	}
	if got.Key == nil || !got.Key.DenyByDefault || len(got.AllowOnly) != 1 || !slices.Equal(got.AllowOnly[0].Allow.Categories, []string{"QUERY"}) ||
		len(got.Effective.Allow.Categories) != 0 || len(got.Windows) == 0 {
		t.Fatalf("the key's policy as set: %+v", got)
	}
	read, err := c.Policy(ctx, "")
	if err != nil || len(read.AllowOnly) != 1 || read.AllowOnly[0].Policy == "" {
		t.Fatalf("read back: %+v %v", read, err)
	}
	// Loosening is the owner's, on the portal: a key cannot.
	_, err = c.SetPolicy(ctx, "", &switchboard.Policy{Caps: []switchboard.Cap{{Window: "day", USD: "2"}}})
	asError(t, err, switchboard.CodeForbidden, 403)
}

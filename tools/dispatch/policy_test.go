package dispatch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/contracts"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/dispatch"
	"github.com/switchboard-hq/switchboard/tools/policies"
)

// A key's policy caps its hour at 0.05 USD; 100 calls of 0.003 USD each go out at once. At
// most 16 fit (16 × 3000 = 48,000 micro-USD ≤ 50,000), and exactly 16 may: each call is held
// at its worst case under the account's credit lock, where the cap is checked with every call
// in flight counted. The rest are POLICY_DENIED naming the window, what it spent and what is
// left, and the partner never hears of them.
func TestPolicyCapHoldsUnderConcurrentCalls(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newWorld(t, dialect, func(c *apptest.Config) { c.DefaultRateLimit = 1 << 30 })
			w.publish(t, "@costly", "/cost", nil)
			status, pol := w.env.REST(t, "PUT", "/v1/policy", w.caller, map[string]any{"policy": map[string]any{
				"caps": []map[string]any{{"window": "hour", "usd": "0.05"}, {"window": "day", "usd": "20"}}}})
			if status != 200 {
				t.Fatalf("set the policy: %d %v", status, pol)
			}
			const attempts, cap, each = 100, 50_000, 3_000
			var (
				mu                sync.Mutex
				allowed, refused  int
				spent             int64
				wg                sync.WaitGroup
				lastRefusal       map[string]any
				otherRefusalCodes []string
			)
			for range attempts {
				wg.Go(func() {
					status, out := w.invoke(t, w.caller, map[string]any{"message": "@costly what is the answer"})
					mu.Lock()
					defer mu.Unlock()
					switch {
					case status == 200:
						allowed++
						spent += int64(charge(out)["totalMicro"].(float64))
					case status == 403 && errCode(out) == "POLICY_DENIED":
						refused++
						lastRefusal = out["error"].(map[string]any)["details"].(map[string]any)
					default:
						otherRefusalCodes = append(otherRefusalCodes, errCode(out))
					}
				})
			}
			wg.Wait()
			t.Logf("%s: %d calls attempted, %d allowed, %d refused, %d micro-USD spent against a cap of %d", dialect, attempts, allowed, refused, spent, cap)
			if len(otherRefusalCodes) > 0 {
				t.Fatalf("calls refused otherwise than POLICY_DENIED: %v", otherRefusalCodes)
			}
			if spent > cap {
				t.Fatalf("the calls spent %d micro-USD past the hour's cap of %d", spent, cap)
			}
			if allowed != cap/each || refused != attempts-cap/each {
				t.Fatalf("%d allowed and %d refused; the cap fits exactly %d calls of %d", allowed, refused, cap/each, each)
			}
			// The partner heard of the allowed calls only (a call may be tried twice: count calls).
			if got := w.calls("/cost"); got != allowed {
				t.Fatalf("the partner was called for %d requests, %d calls were allowed", got, allowed)
			}
			var denied int
			if err := w.settledStore(t).DB().NewSelect().Table("webhook_events").ColumnExpr("count(*)").
				Where("account_id = ? AND type = 'policy.denied'", w.callerID).Scan(context.Background(), &denied); err != nil || denied != refused {
				t.Fatalf("%d policy.denied events for %d refusals (%v)", denied, refused, err)
			}
			var callEvents int // the account has no endpoint: nobody would receive them
			if err := w.settledStore(t).DB().NewSelect().Table("webhook_events").ColumnExpr("count(*)").
				Where("type LIKE 'call.%'").Scan(context.Background(), &callEvents); err != nil || callEvents != 0 {
				t.Fatalf("%d call events written for accounts without endpoints (%v)", callEvents, err)
			}
			if lastRefusal["rule"] != "caps.hour" || lastRefusal["window"] != "hour" || lastRefusal["spentUsd"] != "0.048" || lastRefusal["leftUsd"] != "0.002" {
				t.Fatalf("a refusal's details: %v", lastRefusal)
			}
			status, got := w.env.REST(t, "GET", "/v1/policy", w.caller, nil)
			if status != 200 {
				t.Fatalf("policy_get: %d %v", status, got)
			}
			windows := got["windows"].([]any)
			if hour := windows[0].(map[string]any); hour["window"] != "hour" || hour["spentUsd"] != "0.048" || hour["leftUsd"] != "0.002" {
				t.Fatalf("policy_get's hour: %v", hour)
			}
			w.ledgerOK(t)
		})
	}
}

// Lists, the per-call maximum and deny-by-default refuse before anything is quoted or sent;
// a key may only narrow its own policy; a malformed policy is refused saying what to fix.
func TestPolicyRulesAndNarrowing(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newWorld(t, dialect, nil)
			w.publish(t, "@costly", "/cost", nil)
			w.publish(t, "@cheap", "/cheap", nil)
			put := func(p map[string]any) (int, map[string]any) {
				return w.env.REST(t, "PUT", "/v1/policy", w.caller, map[string]any{"policy": p})
			}
			for _, bad := range []struct {
				policy map[string]any
				says   string
			}{
				{map[string]any{"caps": []map[string]any{{"window": "hour", "usd": "0"}}}, "caps[0].usd is 0"},
				{map[string]any{"caps": []map[string]any{{"window": "week", "usd": "1"}}}, "must be one of \"hour\", \"day\", \"30d\""},
				{map[string]any{"deny": map[string]any{"handles": []string{"@nobody_here"}}}, "no partner @nobody_here"},
				{map[string]any{"deny": map[string]any{"categories": []string{"GOSSIP"}}}, "not a category"},
				{map[string]any{"perCallMaxUsd": "0.0000001"}, "at most 6 decimals"},
			} {
				status, out := put(bad.policy)
				if status != 400 || errCode(out) != "BAD_INPUT" || !contains(errMessage(out), bad.says) {
					t.Fatalf("policy %v: %d %v (want BAD_INPUT saying %q)", bad.policy, status, out, bad.says)
				}
			}
			if status, out := put(map[string]any{"perCallMaxUsd": "0.002", "deny": map[string]any{"handles": []string{"@cheap"}}}); status != 200 {
				t.Fatalf("set: %d %v", status, out)
			}
			status, out := w.invoke(t, w.caller, map[string]any{"message": "@cheap hello"})
			if status != 403 || errCode(out) != "POLICY_DENIED" || details(out)["rule"] != "deny.handles" {
				t.Fatalf("a denied handle: %d %v", status, out)
			}
			status, out = w.invoke(t, w.caller, map[string]any{"message": "@costly hello"})
			if status != 403 || details(out)["rule"] != "perCallMaxUsd" || details(out)["maxChargeUsd"] != "0.003" {
				t.Fatalf("over the per-call maximum: %d %v", status, out)
			}
			if w.hits("/cost")+w.hits("/cheap") != 0 {
				t.Fatal("a refused call reached a partner")
			}
			// Loosening is the owner's: a key may not raise its maximum nor drop a deny.
			if status, out := put(map[string]any{"perCallMaxUsd": "0.01", "deny": map[string]any{"handles": []string{"@cheap"}}}); status != 403 || details(out)["rule"] != "perCallMaxUsd" {
				t.Fatalf("raising the maximum: %d %v", status, out)
			}
			if status, out := put(map[string]any{"perCallMaxUsd": "0.002"}); status != 403 || details(out)["rule"] != "deny.handles" {
				t.Fatalf("dropping a deny: %d %v", status, out)
			}
			if status, out := w.env.REST(t, "PUT", "/v1/policy", w.caller, map[string]any{"policy": nil}); status != 403 {
				t.Fatalf("removing the policy: %d %v", status, out)
			}
			// Deny-by-default: only what allow names.
			if status, out := put(map[string]any{"perCallMaxUsd": "0.001", "denyByDefault": true, "allow": map[string]any{"categories": []string{"QUERY"}},
				"deny": map[string]any{"handles": []string{"@cheap"}}}); status != 200 {
				t.Fatalf("narrowing: %d %v", status, out)
			}
			status, got := w.env.REST(t, "GET", "/v1/policy", w.caller, nil)
			eff := got["effective"].(map[string]any)
			if status != 200 || eff["denyByDefault"] != true || eff["perCallMaxUsd"] != "0.001" || got["key"] == nil || got["account"] != nil {
				t.Fatalf("policy_get: %d %v", status, got)
			}
		})
	}
}

func errMessage(out map[string]any) string {
	e, _ := out["error"].(map[string]any)
	m, _ := e["message"].(string)
	return m
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// A call above the policy's approval amount waits for the owner: APPROVAL_REQUIRED with the
// rule, the itemized charge and an expiry, an e-mail to the owner, APPROVAL_PENDING (with
// Retry-After) until decided; only a portal session decides; approved dispatches once,
// declined or expired dispatches nothing and holds nothing.
func TestApprovalByTheOwner(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newWorldAt(t, dialect, time.Now().UTC(), nil)
			w.publish(t, "@costly", "/cost", nil)
			if status, out := w.env.REST(t, "PUT", "/v1/policy", w.caller, map[string]any{"policy": map[string]any{"approval": map[string]any{"aboveUsd": "0.002"}}}); status != 200 {
				t.Fatalf("set the policy: %d %v", status, out)
			}
			kernel := w.env.App.Parts().Kernel
			decide := func(requestID string, approve bool, p *tools.Principal, key string) *tools.Error {
				args, _ := json.Marshal(map[string]any{"requestId": requestID, "approve": approve})
				_, err := kernel.Call(context.Background(), tools.Request{Tool: "approval_decide", Args: args, Principal: p, APIKey: key})
				return err
			}
			owner := &tools.Principal{AccountID: w.callerID, Method: tools.AuthSession, SessionID: "the owner's", RateLimitPerMinute: 600, SpendLimitMicro: 1 << 40}
			ask := func() string {
				status, out := w.invoke(t, w.caller, map[string]any{"message": "@costly what is the answer"})
				d := details(out)
				ch, _ := d["charge"].(map[string]any)
				if status != 409 || errCode(out) != "APPROVAL_REQUIRED" || d["rule"] != "approval.aboveUsd" || ch["maxChargeUsd"] != "0.003" || d["expiresAt"] == nil {
					t.Fatalf("a call above the approval amount: %d %v", status, out)
				}
				return d["requestId"].(string)
			}
			credit := w.credit(t)
			first := ask()
			if w.hits("/cost") != 0 {
				t.Fatal("a call waiting for approval reached the partner")
			}
			if msgs := w.env.Inbox.Messages(); len(msgs) == 0 || !strings.Contains(msgs[len(msgs)-1].Subject, "Approve a call of @costly") || !strings.Contains(msgs[len(msgs)-1].Text, first) {
				t.Fatalf("the owner's e-mail: %+v", msgs)
			}
			status, list := w.env.REST(t, "GET", "/v1/approvals?pending=true", w.caller, nil)
			if items := list["approvals"].([]any); status != 200 || len(items) != 1 || items[0].(map[string]any)["state"] != "pending" {
				t.Fatalf("approval_list: %d %v", status, list)
			}
			confirm := map[string]any{"message": "@costly what is the answer", "confirmRequestId": first}
			// A key minted under the caller acts on its own calls only: the caller's approval is
			// not found for it.
			status, child := w.env.REST(t, "POST", "/v1/keys", w.caller, map[string]any{"name": "child", "scopes": []string{"partner", "read"}})
			if status != 201 {
				t.Fatalf("mint a child: %d %v", status, child)
			}
			if status, out := w.invoke(t, child["secret"].(string), confirm); status != 404 || errCode(out) != "NOT_FOUND" {
				t.Fatalf("a child key confirming its parent's call: %d %v", status, out)
			}
			// Asked again under an Idempotency-Key: "come back later" is not the key's answer,
			// so the same key asked after the decision gets the call.
			idem := map[string]string{"Idempotency-Key": "approval-" + first}
			for range 2 {
				status, hdr, out := apptest.DoWith(t, "POST", w.env.URL+"/v1/invoke", w.caller, confirm, idem)
				if status != 409 || errCode(out) != "APPROVAL_PENDING" || hdr.Get("Retry-After") != "30" {
					t.Fatalf("asked again before the decision: %d %v %v", status, hdr, out)
				}
			}
			if err := decide(first, true, nil, w.caller); err == nil {
				t.Fatal("an API key approved its own spending")
			}
			if err := decide(first, true, owner, ""); err != nil {
				t.Fatalf("the owner approves: %v", err)
			}
			if err := decide(first, false, owner, ""); err == nil || err.Code != tools.CodeConflict {
				t.Fatalf("deciding twice: %v", err)
			}
			for i := range 3 { // dispatched once; the later answers are the first's
				var status int
				var out map[string]any
				if i == 0 {
					status, _, out = apptest.DoWith(t, "POST", w.env.URL+"/v1/invoke", w.caller, confirm, idem)
				} else {
					status, out = w.invoke(t, w.caller, confirm)
				}
				if status != 200 || out["success"] != true || out["requestId"] != first {
					t.Fatalf("the approved call (%d): %d %v", i, status, out)
				}
			}
			if w.hits("/cost") != 1 {
				t.Fatalf("the approved call reached the partner %d times", w.hits("/cost"))
			}
			spentOnce := credit - w.credit(t)

			second := ask()
			if err := decide(second, false, owner, ""); err != nil {
				t.Fatalf("the owner declines: %v", err)
			}
			status, out := w.invoke(t, w.caller, map[string]any{"message": "@costly what is the answer", "confirmRequestId": second})
			if status != 409 || errCode(out) != "CONFLICT" || details(out)["approval"] != "declined" {
				t.Fatalf("the declined call: %d %v", status, out)
			}
			third := ask()
			w.env.Clock.Advance(dispatch.ApprovalWindow + time.Minute)
			status, out = w.invoke(t, w.caller, map[string]any{"message": "@costly what is the answer", "confirmRequestId": third})
			if status != 409 || details(out)["approval"] != "expired" {
				t.Fatalf("the expired call: %d %v", status, out)
			}
			if err := decide(third, true, owner, ""); err == nil {
				t.Fatal("an expired approval was approved")
			}
			if w.hits("/cost") != 1 || credit-w.credit(t) != spentOnce {
				t.Fatalf("declined and expired calls: %d partner calls, %d spent (one call: %d)", w.hits("/cost"), credit-w.credit(t), spentOnce)
			}
			w.ledgerOK(t)
			// The owner's backend heard of each request and decision once, in order.
			var bodies []string
			if err := w.settledStore(t).DB().NewSelect().Table("webhook_events").Column("body").
				Where("account_id = ? AND type LIKE 'approval.%'", w.callerID).OrderExpr("created_at, id").Scan(context.Background(), &bodies); err != nil {
				t.Fatal(err)
			}
			var seen []string
			for _, b := range bodies {
				var ev struct {
					Type string `json:"type"`
					Data struct {
						RequestID, Decision, MaxChargeUsd string
					} `json:"data"`
				}
				json.Unmarshal([]byte(b), &ev)
				step := ev.Type + ":" + map[string]string{first: "1", second: "2", third: "3"}[ev.Data.RequestID] + ev.Data.Decision
				if ev.Type == "approval.requested" && ev.Data.MaxChargeUsd != "0.003" {
					t.Fatalf("approval.requested: %s", b)
				}
				seen = append(seen, step)
			}
			want := "approval.requested:1 approval.decided:1approved approval.requested:2 approval.decided:2declined approval.requested:3 approval.decided:3expired"
			if strings.Join(seen, " ") != want {
				t.Fatalf("approval events: %v\nwant %s", seen, want)
			}
		})
	}
}

// A call counts in the spend windows from when it goes out, not from when it was asked for:
// approved calls dispatched an hour after they were asked for still meet the hour cap, and an
// approved call asked for again after policies.Lag is closed, nothing sent.
func TestApprovedCallCountsWhenItGoesOut(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newWorldAt(t, dialect, time.Now().UTC(), nil)
			w.publish(t, "@costly", "/cost", nil)
			policy := map[string]any{"approval": map[string]any{"aboveUsd": "0.002"}, "caps": []map[string]any{{"window": "hour", "usd": "0.004"}}}
			if status, out := w.env.REST(t, "PUT", "/v1/policy", w.caller, map[string]any{"policy": policy}); status != 200 {
				t.Fatalf("set the policy: %d %v", status, out)
			}
			owner := &tools.Principal{AccountID: w.callerID, Method: tools.AuthSession, SessionID: "the owner's", RateLimitPerMinute: 600, SpendLimitMicro: 1 << 40}
			msg := "@costly what is the answer"
			var ids []string
			for range 3 { // each fits the hour when asked for: nothing has gone out yet
				status, out := w.invoke(t, w.caller, map[string]any{"message": msg})
				if status != 409 || errCode(out) != "APPROVAL_REQUIRED" {
					t.Fatalf("ask: %d %v", status, out)
				}
				id := details(out)["requestId"].(string)
				args, _ := json.Marshal(map[string]any{"requestId": id, "approve": true})
				if _, err := w.env.App.Parts().Kernel.Call(context.Background(), tools.Request{Tool: "approval_decide", Args: args, Principal: owner}); err != nil {
					t.Fatalf("approve: %v", err)
				}
				ids = append(ids, id)
			}
			w.env.Clock.Advance(time.Hour + time.Minute) // asked for outside the hour now
			if status, out := w.invoke(t, w.caller, map[string]any{"message": msg, "confirmRequestId": ids[0]}); status != 200 {
				t.Fatalf("the first approved call: %d %v", status, out)
			}
			status, out := w.invoke(t, w.caller, map[string]any{"message": msg, "confirmRequestId": ids[1]})
			if status != 403 || errCode(out) != "POLICY_DENIED" || details(out)["rule"] != "caps.hour" {
				t.Fatalf("the second approved call, over the hour's cap with the first gone out this hour: %d %v", status, out)
			}
			w.env.Clock.Advance(policies.Lag)
			status, out = w.invoke(t, w.caller, map[string]any{"message": msg, "confirmRequestId": ids[2]})
			if status != 409 || errCode(out) != "CONFLICT" || details(out)["approval"] != "lapsed" {
				t.Fatalf("an approved call asked for again too late: %d %v", status, out)
			}
			if w.hits("/cost") != 1 {
				t.Fatalf("%d calls reached the partner, want 1", w.hits("/cost"))
			}
			w.ledgerOK(t)
		})
	}
}

// One policy covers the flat fees paid on chain too: two quotes are each within a 2 USD day
// when asked for, but the second payment is refused (nothing sent to the chain) once the first
// has been paid, checked as the payment is marked as being made. An approval rule sends a flat
// fee to the owner first; approved, it answers its quote, and paid, it is dispatched.
func TestPolicyCoversFlatFees(t *testing.T) {
	w, chain := flatWorld(t)
	w.publish(t, "@flatweather", "/free", map[string]any{"feeRate": 1.2, "feeRateUnit": "flat_usdc", "payoutAddresses": map[string]string{"evm": partnerWallet.Hex()}})
	payer := chain.NewKey(t)
	from := crypto.PubkeyToAddress(payer.PublicKey)
	chain.Mint(t, from, 5_000_000)
	if status, out := w.env.REST(t, "PUT", "/v1/policy", w.caller, map[string]any{"policy": map[string]any{"caps": []map[string]any{{"window": "day", "usd": "2"}}}}); status != 200 {
		t.Fatalf("set the policy: %d %v", status, out)
	}
	first, _ := w.quote(t, "@flatweather forecast for Lisbon")
	second, _ := w.quote(t, "@flatweather forecast for Porto")
	third, _ := w.quote(t, "@flatweather forecast for Braga")
	status, out := w.invoke(t, w.caller, map[string]any{"message": "@flatweather forecast for Lisbon", "confirmRequestId": first["requestId"], "payment": sign(t, chain, first, payer, nil)})
	if status != 200 || out["success"] != true {
		t.Fatalf("the first paid call: %d %v", status, out)
	}
	status, out = w.invoke(t, w.caller, map[string]any{"message": "@flatweather forecast for Porto", "confirmRequestId": second["requestId"], "payment": sign(t, chain, second, payer, nil)})
	if status != 403 || errCode(out) != "POLICY_DENIED" || details(out)["rule"] != "caps.day" || details(out)["spentUsd"] != "1.21" || details(out)["leftUsd"] != "0.79" {
		t.Fatalf("the second payment: %d %v", status, out)
	}
	if w.hits("/free") != 1 || chain.Balance(t, from) != 5_000_000-1_210_000 {
		t.Fatalf("after the refusal: %d partner calls, payer holds %d", w.hits("/free"), chain.Balance(t, from))
	}
	// The payer submits the third authorization to the token itself, then asks for the call:
	// the adopted payment is judged as any other, refused, and its money returned.
	paid := sign(t, chain, third, payer, func(f *signed) {
		f.primary, f.after, f.nonce = contracts.TransferWithAuthorization, 0, hexutil.Encode(bytes.Repeat([]byte{3}, 32))
	})
	frontRun(t, chain, paid)
	status, out = w.invoke(t, w.caller, map[string]any{"message": "@flatweather forecast for Braga", "confirmRequestId": third["requestId"], "payment": paid})
	if status != 403 || errCode(out) != "POLICY_DENIED" || details(out)["rule"] != "caps.day" {
		t.Fatalf("a payment submitted to the token directly, over the cap: %d %v", status, out)
	}
	if w.hits("/free") != 1 || chain.Balance(t, from) != 5_000_000-1_210_000 {
		t.Fatalf("after refusing an adopted payment: %d partner calls, payer holds %d", w.hits("/free"), chain.Balance(t, from))
	}
	status, out = w.invoke(t, w.caller, map[string]any{"message": "@flatweather forecast for Faro"})
	if status != 403 || details(out)["rule"] != "caps.day" {
		t.Fatalf("a new quote past the cap: %d %v", status, out)
	}
	// The owner heard of each refusal: two payments, one quote.
	var denied int
	if err := w.settledStore(t).DB().NewSelect().Table("webhook_events").ColumnExpr("COUNT(*)").
		Where("account_id = ? AND type = 'policy.denied'", w.callerID).Scan(context.Background(), &denied); err != nil || denied != 3 {
		t.Fatalf("%d policy.denied events for 3 refusals (%v)", denied, err)
	}

	// The owner raises the cap on the portal and asks to approve anything above 1 USD.
	owner := &tools.Principal{AccountID: w.callerID, Method: tools.AuthSession, SessionID: "the owner's", RateLimitPerMinute: 600, SpendLimitMicro: 1 << 40}
	call := func(tool string, args map[string]any) (any, *tools.Error) {
		raw, _ := json.Marshal(args)
		return w.env.App.Parts().Kernel.Call(context.Background(), tools.Request{Tool: tool, Args: raw, Principal: owner})
	}
	_, list := w.env.REST(t, "GET", "/v1/keys", w.caller, nil)
	keyID := list["keys"].([]any)[0].(map[string]any)["id"].(string)
	if _, err := call("policy_set", map[string]any{"keyId": keyID, "policy": map[string]any{"caps": []map[string]any{{"window": "day", "usd": "5"}}}}); err != nil {
		t.Fatalf("the owner loosens the key's cap: %v", err)
	}
	if _, err := call("policy_set", map[string]any{"policy": map[string]any{"approval": map[string]any{"aboveUsd": "1"}}}); err != nil {
		t.Fatalf("the owner sets the account's policy: %v", err)
	}
	status, out = w.invoke(t, w.caller, map[string]any{"message": "@flatweather forecast for Faro"})
	if status != 409 || errCode(out) != "APPROVAL_REQUIRED" || details(out)["charge"].(map[string]any)["flatFeeUsd"] != "1.21" {
		t.Fatalf("a flat fee above the approval amount: %d %v", status, out)
	}
	rid := details(out)["requestId"].(string)
	if _, err := call("approval_decide", map[string]any{"requestId": rid, "approve": true}); err != nil {
		t.Fatalf("approve: %v", err)
	}
	status, out = w.invoke(t, w.caller, map[string]any{"message": "@flatweather forecast for Faro", "confirmRequestId": rid})
	if status != 402 || errCode(out) != "PAYMENT_REQUIRED" || details(out)["requestId"] != rid {
		t.Fatalf("the approved flat fee before it is paid: %d %v", status, out)
	}
	q := details(out)["quote"].(map[string]any)
	status, out = w.invoke(t, w.caller, map[string]any{"message": "@flatweather forecast for Faro", "confirmRequestId": rid, "payment": sign(t, chain, q, payer, nil)})
	if status != 200 || out["success"] != true || w.hits("/free") != 2 {
		t.Fatalf("the approved, paid call: %d %v (partner calls %d)", status, out, w.hits("/free"))
	}
}

// calls counts the distinct requests (by requestId) the partner at path was called for.
func (w *world) calls(path string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	ids := map[string]bool{}
	for _, env := range w.seen[path] {
		ids[env.RequestID] = true
	}
	return len(ids)
}

package portal_test

import (
	"context"
	"math/big"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/contracts/anviltest"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools/partners/demo"
	"github.com/switchboard-hq/switchboard/tools/tokens/tokenstest"
)

// errCodeOf is the code of a REST error answer.
func errCodeOf(out map[string]any) string {
	e, _ := out["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func errDetails(out map[string]any) map[string]any {
	e, _ := out["error"].(map[string]any)
	d, _ := e["details"].(map[string]any)
	return d
}

// The owner sets an approval rule on /developer/policy; an agent's call above it waits
// (APPROVAL_REQUIRED) and shows in /developer/approvals with its handle, rule, itemized charge,
// key and expiry. Approving it there dispatches the agent's next call once (asked twice, the
// partner hears it once); declining another answers the agent CONFLICT and sends nothing. A
// forged cross-site decision is refused, and deciding twice changes nothing.
func TestApprovalsPage(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			env, partner := withPartnerOn(t, apptest.Options{Dialect: dialect})
			pub := env.Onboard(t, "pol-pub@example.com")["apiKey"].(string)
			publishLive(t, env, pub, weather(partner, "@pol-quotes", "QUERY"), true)
			const email = "owner@example.com"
			agent := env.Onboard(t, email)["apiKey"].(string)
			_, keys := env.REST(t, "GET", "/v1/keys", agent, nil)
			keyName := keys["keys"].([]any)[0].(map[string]any)["name"].(string)

			h := newHuman(t, env)
			h.signIn(email)
			if st, body := h.get("/developer/approvals"); st != 200 || !strings.Contains(body, "Nothing is waiting for you") || !strings.Contains(body, `aria-current="page">Approvals`) {
				t.Fatalf("empty inbox: %d\n%s", st, body)
			}
			h.get("/developer/policy")
			token := h.csrf()
			if st, body := h.post("/developer/policy", url.Values{"csrf": {token}, "approval_aboveUsd": {"0.001"}}, false); st != 200 ||
				!strings.Contains(body, "Saved") || !strings.Contains(body, "calls that may cost more than 0.001 USD") {
				t.Fatalf("set the approval rule: %d\n%s", st, body)
			}

			ask := func() string {
				t.Helper()
				st, out := env.REST(t, "POST", "/v1/invoke", agent, map[string]any{"message": "@pol-quotes rain in Lisbon"})
				if st != 409 || errCodeOf(out) != "APPROVAL_REQUIRED" {
					t.Fatalf("a call above the approval amount: %d %v", st, out)
				}
				return errDetails(out)["requestId"].(string)
			}
			confirm := func(id string) (int, map[string]any) {
				t.Helper()
				return env.REST(t, "POST", "/v1/invoke", agent, map[string]any{"message": "@pol-quotes rain in Lisbon", "confirmRequestId": id})
			}
			hits := len(partner.Hits())
			first := ask()
			_, body := h.get("/developer/approvals")
			for _, want := range []string{"Waiting for you (1)", "@pol-quotes", first, "Costs more than your approval amount", "at most 0.00", "Expected total:", "<time datetime=",
				`data-label="Key">` + keyName + "<"} {
				if !strings.Contains(body, want) {
					t.Fatalf("the pending approval lacks %q:\n%s", want, body)
				}
			}
			if st, _ := h.post("/developer/approvals/"+first, url.Values{"csrf": {token}, "decision": {"approve"}}, true); st != 403 {
				t.Fatalf("a cross-site approval: %d", st)
			}
			if st, _ := confirm(first); st != 409 {
				t.Fatalf("asked again before the decision: %d", st)
			}
			if st, body := h.post("/developer/approvals/"+first, url.Values{"csrf": {token}, "decision": {"approve"}}, false); st != 200 ||
				!strings.Contains(body, "Approved @pol-quotes") || !strings.Contains(body, "Nothing is waiting for you") {
				t.Fatalf("approve: %d\n%s", st, body)
			}
			for range 2 {
				if st, out := confirm(first); st != 200 || out["success"] != true || out["requestId"] != first {
					t.Fatalf("the approved call: %d %v", st, out)
				}
			}
			if got := len(partner.Hits()) - hits; got != 1 {
				t.Fatalf("the approved call reached the partner %d times", got)
			}

			second := ask()
			if st, body := h.post("/developer/approvals/"+second, url.Values{"csrf": {token}, "decision": {"decline"}}, false); st != 200 || !strings.Contains(body, "Declined @pol-quotes") {
				t.Fatalf("decline: %d\n%s", st, body)
			}
			if st, out := confirm(second); st != 409 || errCodeOf(out) != "CONFLICT" || errDetails(out)["approval"] != "declined" {
				t.Fatalf("the declined call: %d %v", st, out)
			}
			if got := len(partner.Hits()) - hits; got != 1 {
				t.Fatalf("the declined call reached the partner (%d calls in all)", got)
			}
			if st, body := h.post("/developer/approvals/"+second, url.Values{"csrf": {token}, "decision": {"approve"}}, false); st != 200 || !strings.Contains(body, "decided already") {
				t.Fatalf("approving a declined call: %d\n%s", st, body)
			}
			if st, out := confirm(second); st != 409 || errCodeOf(out) != "CONFLICT" {
				t.Fatalf("the declined call after a late approve: %d %v", st, out)
			}
			_, body = h.get("/developer/approvals")
			decided := body[strings.Index(body, "Decided and expired"):]
			if !strings.Contains(decided, first) || !strings.Contains(decided, second) || !strings.Contains(decided, "Approved") || !strings.Contains(decided, "Declined") {
				t.Fatalf("the decided calls:\n%s", body)
			}
		})
	}
}

// The policy form: bad input is refused next to its field with what to fix, keeps what was
// typed and writes nothing; a deny set there refuses the agent's call with POLICY_DENIED
// before the partner hears of it; the page shows the effective policy and the windows; a key's
// policy is shown under the account's; emptying the form removes the policy (the owner may
// loosen it) and the call goes through.
func TestPolicyPage(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			env, partner := withPartnerOn(t, apptest.Options{Dialect: dialect})
			pub := env.Onboard(t, "pol-pub2@example.com")["apiKey"].(string)
			publishLive(t, env, pub, weather(partner, "@pol-denied", "QUERY"), true)
			const email = "policy@example.com"
			acct := env.Onboard(t, email)
			agent := acct["apiKey"].(string)
			_, me := env.REST(t, "GET", "/v1/account", agent, nil)
			keyID := me["keyId"].(string)
			invoke := func() (int, map[string]any) {
				return env.REST(t, "POST", "/v1/invoke", agent, map[string]any{"message": "@pol-denied is it raining"})
			}

			h := newHuman(t, env)
			h.signIn(email)
			st, body := h.get("/developer/policy")
			if st != 200 || !strings.Contains(body, "for the account") || !strings.Contains(body, `aria-current="page">Policy`) || !strings.Contains(body, "no cap") {
				t.Fatalf("the policy page: %d\n%s", st, body)
			}
			token := h.csrf()
			for _, c := range []struct {
				form        url.Values
				field, says string
			}{
				{url.Values{"cap_hour": {"0"}}, "cap_hour", "this amount is 0, which would allow nothing"},
				{url.Values{"cap_hour": {"5"}, "cap_day": {"lots"}}, "cap_day", "decimal USD amount"},
				{url.Values{"deny_handles": {"@nobody_here"}}, "deny_handles", "no partner @nobody_here; use discover"},
				{url.Values{"perCallMaxUsd": {"0.0000001"}}, "perCallMaxUsd", "at most 6 decimals"},
				{url.Values{"denyByDefault": {"on"}}, "denyByDefault", "nothing in allow"},
			} {
				c.form.Set("csrf", token)
				st, body := h.post("/developer/policy", c.form, false)
				m := regexp.MustCompile(`id="` + c.field + `-error">([^<]*)<`).FindStringSubmatch(body)
				if st != 422 || m == nil || !strings.Contains(m[1], c.says) {
					t.Fatalf("%v: %d, want an error at %s saying %q:\n%s", c.form, st, c.field, c.says, body)
				}
				for k, v := range c.form {
					if k != "csrf" && k != "denyByDefault" && !strings.Contains(body, `value="`+v[0]+`"`) {
						t.Fatalf("%v: the typed %s is not kept", c.form, k)
					}
				}
			}
			if st, got := env.REST(t, "GET", "/v1/policy", agent, nil); st != 200 || got["account"] != nil {
				t.Fatalf("a refused form wrote a policy: %d %v", st, got)
			}

			hits := len(partner.Hits())
			st, body = h.post("/developer/policy", url.Values{"csrf": {token}, "deny_handles": {"@pol-denied"}, "cap_day": {"20"}, "approval_categories": {"SWAP"}}, false)
			if st != 200 || !strings.Contains(body, "Saved") || !strings.Contains(body, "20 USD per day") || !strings.Contains(body, `value="@pol-denied"`) ||
				!strings.Contains(body, `value="SWAP" checked`) || !strings.Contains(body, "20 USD</td>") {
				t.Fatalf("set the account's policy: %d\n%s", st, body)
			}
			st, out := invoke()
			if st != 403 || errCodeOf(out) != "POLICY_DENIED" || errDetails(out)["rule"] != "deny.handles" {
				t.Fatalf("a call the account's policy denies: %d %v", st, out)
			}
			if len(partner.Hits()) != hits {
				t.Fatal("a denied call reached the partner")
			}
			if st, body := h.get("/developer/policy?key=" + keyID); st != 200 || !strings.Contains(body, "for the key") || !strings.Contains(body, "Governed by: account") ||
				!strings.Contains(body, "@pol-denied") {
				t.Fatalf("the key's page: %d\n%s", st, body)
			}
			if st, _ := h.get("/developer/policy?key=nope"); st != 404 {
				t.Fatalf("another key: %d", st)
			}

			if st, body := h.post("/developer/policy", url.Values{"csrf": {token}}, false); st != 200 || !strings.Contains(body, "Saved") || strings.Contains(body, "Governed by") {
				t.Fatalf("remove the policy: %d\n%s", st, body)
			}
			if st, out := invoke(); st != 200 || len(partner.Hits()) != hits+1 {
				t.Fatalf("the call once the policy is removed: %d %v", st, out)
			}

			// The key's own policy, set on its page; the owner removes it, which its key may not.
			// (A minute passes: the pages' tool calls count against the session's 30 a minute.)
			env.Clock.Advance(time.Minute)
			if st, body := h.post("/developer/policy", url.Values{"csrf": {token}, "keyId": {keyID}, "perCallMaxUsd": {"0.001"}}, false); st != 200 ||
				!strings.Contains(body, "Saved") || !strings.Contains(body, "for the key") || !strings.Contains(body, "at most 0.001 USD") {
				t.Fatalf("set the key's policy: %d\n%s", st, body)
			}
			if st, out := invoke(); st != 403 || errDetails(out)["rule"] != "perCallMaxUsd" {
				t.Fatalf("a call over the key's per-call maximum: %d %v", st, out)
			}
			if st, out := env.REST(t, "PUT", "/v1/policy", agent, map[string]any{"policy": nil}); st != 403 {
				t.Fatalf("the key removed its own policy: %d %v", st, out)
			}
			if st, _ := h.post("/developer/policy", url.Values{"csrf": {token}, "keyId": {keyID}}, false); st != 200 {
				t.Fatalf("remove the key's policy: %d", st)
			}
			if st, out := invoke(); st != 200 || len(partner.Hits()) != hits+2 {
				t.Fatalf("the call once the key's policy is removed: %d %v", st, out)
			}

			// Deny-by-default shown as the calls are judged: the account allows a category, the
			// key a handle; the key's page shows each list under its policy (not one list
			// combined kind by kind, which would name nothing), and a call both name goes through.
			env.Clock.Advance(time.Minute)
			if st, _ := h.post("/developer/policy", url.Values{"csrf": {token}, "denyByDefault": {"on"}, "allow_categories": {"QUERY"}}, false); st != 200 {
				t.Fatalf("the account allows QUERY only: %d", st)
			}
			if st, _ := h.post("/developer/policy", url.Values{"csrf": {token}, "keyId": {keyID}, "denyByDefault": {"on"}, "allow_handles": {"@pol-denied"}}, false); st != 200 {
				t.Fatalf("the key allows @pol-denied only: %d", st)
			}
			want := "only what each of these policies names (by partner, publisher or category): account: QUERY; key " + keyID + ": @pol-denied"
			if st, body := h.get("/developer/policy?key=" + keyID); st != 200 || !strings.Contains(body, want) {
				t.Fatalf("the key's page under two allow lists: %d, want %q\n%s", st, want, body)
			}
			if st, out := invoke(); st != 200 || len(partner.Hits()) != hits+3 {
				t.Fatalf("a call both allow lists name: %d %v", st, out)
			}
		})
	}
}

// A partner's proposed transactions that a policy sends to the owner show on the approvals
// page decoded (what the wallet signs, what it sends and the fee), and once approved there the
// agent's confirmation signs them: the transfer lands once; on both databases.
func TestApprovalShowsProposedEffect(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			usdc := common.HexToAddress(demo.SendToken.Address)
			ch := anviltest.StartOn(t, 8453)
			ch.PlaceMulticall(t)
			ch.PlaceToken(t, usdc)
			up := tokenstest.Start(t, map[string]int64{})
			env := apptest.Start(t, apptest.Options{Dialect: dialect, Start: tokenstest.T0, Config: func(c *apptest.Config) {
				c.Tokens.RPCBase, c.DemoPartner = ch.URL, true
				c.Tokens.CoinGeckoURL, c.Tokens.DefiLlamaURL, c.Tokens.JupiterURL = up.CoinGecko.URL+"/api/v3", up.DefiLlama.URL, up.Jupiter.URL
			}})
			const email = "proposals@example.com"
			acct := env.Onboard(t, email)
			agent := acct["apiKey"].(string)
			wallet := common.HexToAddress(acct["wallets"].(map[string]any)["evm"].(string))
			ch.SetBalance(t, wallet, big.NewInt(1e18))
			ch.MintAt(t, usdc, wallet, 10_000_000)
			if err := accounts.New(env.App.Store).SetSigning(context.Background(), acct["userId"].(string), true); err != nil {
				t.Fatal(err)
			}
			h := newHuman(t, env)
			h.signIn(email)
			h.get("/developer/policy")
			token := h.csrf()
			if st, body := h.post("/developer/policy", url.Values{"csrf": {token}, "approval_aboveUsd": {"1"}}, false); st != 200 || !strings.Contains(body, "Saved") {
				t.Fatalf("set the approval rule: %d\n%s", st, body)
			}
			bob := strings.ToLower(crypto.PubkeyToAddress(ch.NewKey(t).PublicKey).Hex())
			msg := "@demo_send 2.5 USDC to bob"
			invoke := func(id string) (int, map[string]any) {
				body := map[string]any{"message": msg, "args": map[string]any{"to": bob, "amount": "2.5", "token": "USDC", "chain": "base"}}
				if id != "" {
					body = map[string]any{"message": msg, "confirmRequestId": id}
				}
				return env.REST(t, "POST", "/v1/invoke", agent, body)
			}
			st, out := invoke("")
			if st != 409 || errCodeOf(out) != "CONFIRMATION_REQUIRED" {
				t.Fatalf("the write's quote: %d %v", st, out)
			}
			st, out = invoke(errDetails(out)["requestId"].(string))
			if st != 409 || errCodeOf(out) != "APPROVAL_REQUIRED" {
				t.Fatalf("the proposals above the approval amount: %d %v", st, out)
			}
			id := errDetails(out)["requestId"].(string)
			_, body := h.get("/developer/approvals")
			for _, want := range []string{"Waiting for you (1)", "@demo_send", id, "What your wallet signs:", "send 2500000 units of token " + strings.ToLower(usdc.Hex()) + " to " + bob,
				"Sent from the wallet: 2.49953 USD", "Gas estimate:"} {
				if !strings.Contains(body, want) {
					t.Fatalf("the pending approval lacks %q:\n%s", want, body)
				}
			}
			if st, _ := invoke(id); st != 409 {
				t.Fatalf("confirmed before the decision: %d", st)
			}
			if st, body := h.post("/developer/approvals/"+id, url.Values{"csrf": {token}, "decision": {"approve"}}, false); st != 200 || !strings.Contains(body, "Approved @demo_send") {
				t.Fatalf("approve: %d\n%s", st, body)
			}
			st, out = invoke(id)
			sent, _ := out["transactions"].([]any)
			if st != 200 || len(sent) != 1 || sent[0].(map[string]any)["txHash"] == "" {
				t.Fatalf("the approved proposals: %d %v", st, out)
			}
			if got := ch.BalanceAt(t, usdc, common.HexToAddress(bob)); got != 2_500_000 {
				t.Fatalf("bob holds %d, want 2500000", got)
			}
		})
	}
}

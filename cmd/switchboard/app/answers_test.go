package app_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/integrations"
	"github.com/switchboard-hq/switchboard/tools/partners/partnertest"
	"github.com/switchboard-hq/switchboard/tools/tokens"
	"github.com/switchboard-hq/switchboard/tools/tokens/tokenstest"
)

// answeredElsewhere are the tools whose success needs what this test does not build, and
// the test whose run (its answers checked by apptest like every test's) covers them.
var answeredElsewhere = map[string]string{
	"session_revoke":    "a second portal sign-in: portal's TestSessionOnlyToolsAreThePortals",
	"connection_revoke": "an MCP host's OAuth grant: portal's TestSessionOnlyToolsAreThePortals",
	"wallet_export":     "the code mailed to a signed-in human: portal's TestSessionOnlyToolsAreThePortals",
	"credit_topup":      "a payment settled on a chain (anvil): tools/payments' TestTopupBuysCreditOncePerAuthorization",
	"x402_fetch":        "an x402 seller paid on a chain (anvil): tools/payments' TestX402FetchPaysASeller",
	"wallet_send":       "a send signed and broadcast on a chain (anvil, litesvm): tools/send's TestWalletSendMovesUSDCOnce and TestWalletSendSOLOverMCP",
}

// answers drives a whole service's tools for TestEveryToolAnswersWithinItsOutputSchema.
type answers struct {
	t        *testing.T
	env      *apptest.Env
	answered map[string]int // successful answers by tool
}

// call calls tool over MCP with key; a success is checked against the tool's output schema
// (as the TypeScript SDK checks structuredContent) and counted. want is the error code
// expected, "" for success.
func (a *answers) call(cs *mcp.ClientSession, tool string, args map[string]any, want tools.Code) map[string]any {
	a.t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	out, e := callTool(a.t, cs, tool, args)
	return a.check(tool, out, e, want)
}

// session calls tool as the portal's signed-in human of p's account.
func (a *answers) session(p *tools.Principal, tool string, args map[string]any, want tools.Code) map[string]any {
	a.t.Helper()
	raw, _ := json.Marshal(args)
	res, e := a.env.App.Kernel.Call(context.Background(), tools.Request{Tool: tool, Args: raw, Principal: p})
	var out map[string]any
	if e == nil {
		b, _ := json.Marshal(res)
		json.Unmarshal(b, &out)
	}
	return a.check(tool, out, e, want)
}

func (a *answers) check(tool string, out map[string]any, e *tools.Error, want tools.Code) map[string]any {
	a.t.Helper()
	switch {
	case e != nil && e.Code == want:
		return nil
	case e != nil:
		a.t.Fatalf("%s: %s %s, want %v", tool, e.Code, e.Message, want)
	case want != "":
		a.t.Fatalf("%s answered %v, want %s", tool, out, want)
	}
	if err := a.env.App.Kernel.Tool(tool).ValidateOutput(out); err != nil {
		a.t.Errorf("%s: the answer breaks its output schema: %v\n%v", tool, err, out)
	}
	a.answered[tool]++
	return out
}

// Every tool answers within its own output schema, in the empty states a new account is in
// (no policy, no approvals, no webhooks, no intents, no child keys, no calls) and once each
// is set: what the TypeScript MCP SDK refused on policy_get (issue 46). Each tool must answer
// successfully here at least once, or be named in answeredElsewhere.
func TestEveryToolAnswersWithinItsOutputSchema(t *testing.T) {
	var pub ed25519.PublicKey
	verifier := signing.NewVerifier(signing.KeySourceFunc(func(context.Context) (ed25519.PublicKey, error) { return pub, nil }))
	partner := partnertest.Start(t, signing.Middleware(verifier, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"success":true,"result":{"answer":42},"providerCostMicro":100}`)
	})))
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, partnertest.CAPEM(partner.Server), 0o600); err != nil {
		t.Fatal(err)
	}
	chains := map[string]int64{}
	for _, c := range tokens.Chains {
		if c.Family == tokens.FamilyEVM {
			chains[c.Name] = c.ID
		}
	}
	up := tokenstest.Start(t, chains)
	env := apptest.Start(t, apptest.Options{Start: tokenstest.T0, Config: func(c *apptest.Config) {
		c.AllowLocalEndpoints = true
		c.PartnerCAFile = caFile
		c.Tokens.RPCEthereum, c.Tokens.RPCArbitrum, c.Tokens.RPCBase = up.EVM["ethereum"].URL, up.EVM["arbitrum"].URL, up.EVM["base"].URL
		c.Tokens.RPCPolygon, c.Tokens.RPCOptimism = up.EVM["polygon"].URL, up.EVM["optimism"].URL
		c.Tokens.RPCAvalanche, c.Tokens.RPCBSC = up.EVM["avalanche"].URL, up.EVM["bsc"].URL
		c.Tokens.SolanaRPC, c.Tokens.CoinGeckoURL = up.Solana.URL, up.CoinGecko.URL+"/api/v3"
		c.Tokens.DefiLlamaURL, c.Tokens.JupiterURL = up.DefiLlama.URL, up.Jupiter.URL
	}})
	pub = env.App.SigningKey.Public().(ed25519.PublicKey)
	a := &answers{t: t, env: env, answered: map[string]int{}}

	// Onboarding over MCP, without a key.
	anon := connect(t, env.URL, "")
	const email = "answers@example.com"
	a.call(anon, "agent_signup", map[string]any{"email": email}, "")
	acct := a.call(anon, "agent_verify", map[string]any{"email": email, "code": env.Inbox.Code(t, email, 1)}, "")
	root, accountID := acct["apiKey"].(string), acct["userId"].(string)
	cs := apptest.ConnectMCP(t, env.URL+"/mcp?toolsets=onboarding,agent,partner,owner", root, http.DefaultTransport)
	owner := &tools.Principal{AccountID: accountID, Method: tools.AuthSession, SessionID: "the owner's", RateLimitPerMinute: 600, SpendLimitMicro: 1 << 40}

	// The empty states.
	a.call(cs, "account_get", nil, "")
	a.call(cs, "usage_list", nil, "")
	if keys := a.call(cs, "api_key_list", nil, "")["keys"].([]any); len(keys) != 1 {
		t.Fatalf("a new account's keys: %v", keys)
	}
	if got := a.call(cs, "policy_get", nil, ""); got["account"] != nil || got["key"] != nil {
		t.Fatalf("policy_get with no policy: %v", got)
	}
	a.call(cs, "approval_list", nil, "")
	a.call(cs, "approval_list", map[string]any{"pending": true}, "")
	a.call(cs, "connected_wallet_list", nil, "")
	a.call(cs, "webhook_endpoint_list", nil, "")
	a.call(cs, "webhook_delivery_list", nil, "")
	a.call(cs, "partner_list_intents", nil, "")
	a.call(cs, "partner_earnings", nil, "")
	a.call(cs, "discover", map[string]any{"query": "nothing anyone publishes xyzzy"}, "")
	a.call(cs, "get_balances", nil, "")
	a.call(cs, "get_price", map[string]any{"query": "ETH"}, "")
	a.call(cs, "resolve_token", map[string]any{"query": "USDC"}, "")
	for _, tool := range []string{"session_list", "connection_list", "integration_list", "usage_spend"} {
		a.session(owner, tool, nil, "")
	}
	a.session(owner, "usage_calls", map[string]any{"side": "caller"}, "")
	a.session(owner, "usage_calls", map[string]any{"side": "partner"}, "")

	// Keys minted, listed, limited by a policy and revoked.
	child := a.call(cs, "api_key_create", map[string]any{"name": "child", "scopes": []string{"read", "partner"}}, "")
	childID := child["id"].(string)
	a.call(cs, "api_key_list", nil, "")
	policy := map[string]any{"caps": []any{map[string]any{"window": "day", "usd": "5"}}, "perCallMaxUsd": "1",
		"deny": map[string]any{"categories": []string{"SWAP"}}, "approval": map[string]any{"aboveUsd": "0.5"}}
	a.call(cs, "policy_set", map[string]any{"policy": policy}, "")
	a.call(cs, "policy_get", nil, "")
	a.call(cs, "policy_set", map[string]any{"keyId": childID, "policy": map[string]any{"denyByDefault": true, "allow": map[string]any{"categories": []string{"QUERY"}}}}, "")
	if got := a.call(cs, "policy_get", map[string]any{"keyId": childID}, ""); got["key"] == nil || len(got["allowOnly"].([]any)) != 1 {
		t.Fatalf("policy_get of a key with its own policy: %v", got)
	}
	a.session(owner, "policy_set", map[string]any{"keyId": childID, "policy": nil}, "") // removing loosens: the owner only
	a.session(owner, "policy_get", nil, "")
	a.call(cs, "api_key_revoke", map[string]any{"keyId": childID}, "")

	// A connected wallet.
	const watched = "0x2B5AD5c4795c026514f8317c7a215E218DcCD6cF"
	a.call(cs, "connected_wallet_add", map[string]any{"address": watched, "label": "cold"}, "")
	a.call(cs, "connected_wallet_list", nil, "")
	a.call(cs, "get_balances", nil, "")
	a.call(cs, "connected_wallet_remove", map[string]any{"address": watched}, "")

	// A partner: tested, published, activated, updated, called, paid, archived.
	intent := func(handle string) map[string]any {
		return map[string]any{"publicIdentifier": handle, "name": handle[1:], "description": "answers the schema test",
			"category": "QUERY", "toolEndpoint": partner.URL + "/ok", "timeoutMs": 1000, "feeRate": 0.001,
			"payoutAddresses": map[string]string{"evm": "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"}}
	}
	a.call(cs, "partner_test_endpoint", map[string]any{"toolEndpoint": partner.URL + "/ok", "args": map[string]any{"query": "hi"}}, "")
	first := a.call(cs, "partner_publish_intent", intent("@answers_one"), "")
	firstID := first["id"].(string)
	a.call(cs, "partner_list_intents", nil, "")
	a.call(cs, "partner_test_endpoint", map[string]any{"intentId": firstID}, "")
	env.Clock.Advance(13 * time.Minute) // publishing is limited to 5 an hour
	a.call(cs, "partner_set_active", map[string]any{"intentId": firstID, "active": true}, "")
	a.call(cs, "partner_update_intent", map[string]any{"intentId": firstID, "description": "answers the schema test, updated"}, "")
	env.Clock.Advance(13 * time.Minute)
	bundle := a.call(cs, "partner_publish_intent_bundle", map[string]any{"intents": []any{intent("@answers_two")}}, "")
	secondID := bundle["intents"].([]any)[0].(map[string]any)["id"].(string)
	env.Clock.Advance(13 * time.Minute)
	a.call(cs, "partner_set_active", map[string]any{"intentId": secondID, "active": true}, "")
	a.call(cs, "discover", map[string]any{"query": "answers the schema test"}, "")

	caller := env.Onboard(t, "answers-caller@example.com")
	callerKey, callerID := caller["apiKey"].(string), caller["userId"].(string)
	callerCS := connect(t, env.URL, callerKey)
	called := a.call(callerCS, "invoke_partner_message", map[string]any{"message": "@answers_one what is the answer", "args": map[string]any{"query": "the answer"}}, "")
	requestID := called["requestId"].(string)
	if err := env.App.Settled(context.Background()); err != nil {
		t.Fatal(err)
	}
	a.call(cs, "partner_receipt", map[string]any{"requestId": requestID}, "")
	a.call(cs, "partner_earnings", nil, "")
	a.call(cs, "partner_earnings", map[string]any{"intentId": firstID}, "")
	a.call(callerCS, "account_get", nil, "")
	callerOwner := &tools.Principal{AccountID: callerID, Method: tools.AuthSession, SessionID: "the caller's", RateLimitPerMinute: 600, SpendLimitMicro: 1 << 40}
	a.session(callerOwner, "usage_call", map[string]any{"side": "caller", "requestId": requestID}, "")
	a.session(callerOwner, "usage_calls", map[string]any{"side": "caller"}, "")
	a.session(callerOwner, "task_list", nil, "") // none running: the list is [] (a running one: portal's TestCallLogRunningTasks)
	a.session(callerOwner, "usage_spend", nil, "")
	a.session(owner, "usage_call", map[string]any{"side": "partner", "requestId": requestID}, "")
	a.session(owner, "usage_calls", map[string]any{"side": "partner"}, "")
	a.session(owner, "usage_intent", map[string]any{"intentId": firstID}, "")

	// An approval: the caller's owner asks to approve every first call to a partner.
	a.call(callerCS, "policy_set", map[string]any{"policy": map[string]any{"approval": map[string]any{"firstCallToPartner": true}}}, "")
	a.call(callerCS, "invoke_partner_message", map[string]any{"message": "@answers_two what is the answer"}, tools.CodeApprovalRequired)
	pending := a.call(callerCS, "approval_list", map[string]any{"pending": true}, "")["approvals"].([]any)
	if len(pending) != 1 {
		t.Fatalf("pending approvals: %v", pending)
	}
	approvalID := pending[0].(map[string]any)["requestId"].(string)
	a.call(callerCS, "approval_get", map[string]any{"requestId": approvalID}, "")
	a.session(callerOwner, "approval_decide", map[string]any{"requestId": approvalID, "approve": false}, "")
	a.call(callerCS, "approval_get", map[string]any{"requestId": approvalID}, "")
	a.call(callerCS, "approval_list", nil, "")

	// A webhook endpoint, its deliveries and a replay.
	hook := a.call(cs, "webhook_endpoint_create", map[string]any{"url": partner.URL + "/hook", "description": "schema test"}, "")
	a.call(cs, "webhook_endpoint_list", nil, "")
	a.call(callerCS, "invoke_partner_message", map[string]any{"message": "@answers_one again"}, "")
	if err := env.App.Settled(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := env.App.Webhooks.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	deliveries := a.call(cs, "webhook_delivery_list", nil, "")["deliveries"].([]any)
	if len(deliveries) == 0 {
		t.Fatalf("no delivery to the endpoint after a call")
	}
	a.call(cs, "webhook_delivery_replay", map[string]any{"deliveryId": deliveries[0].(map[string]any)["id"]}, "")
	a.call(cs, "webhook_endpoint_delete", map[string]any{"endpointId": hook["endpoint"].(map[string]any)["id"]}, "")
	a.call(cs, "partner_archive_intent", map[string]any{"intentId": secondID}, "")
	a.call(cs, "partner_list_intents", map[string]any{"includeArchived": true}, "")

	// The portal's own: an integration, the signing switch.
	a.session(owner, "integration_create", map[string]any{"slug": "answers", "name": "Answers", "scopes": []string{"read"}, "methods": []string{integrations.MethodPasteKey}}, "")
	a.session(owner, "integration_list", nil, "")
	a.session(owner, "signing_set", map[string]any{"on": false}, "")

	var missing []string
	for _, tool := range slices.Concat(env.App.Kernel.Tools(), env.App.Kernel.SessionTools()) {
		_, elsewhere := answeredElsewhere[tool.Name]
		switch {
		case a.answered[tool.Name] == 0 && !elsewhere:
			missing = append(missing, tool.Name)
		case a.answered[tool.Name] > 0 && elsewhere:
			t.Errorf("%s answered here: remove it from answeredElsewhere", tool.Name)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("no successful answer checked for %v: call each here on the paths a caller reaches", missing)
	}
}

package app_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/rest"
	"github.com/switchboard-hq/switchboard/tools"
)

// The tools that take an idempotency key are the ones every door took it for when the REST
// route table decided (a keyed tool routed by POST), now each declared in its own
// definition; the tools that take a payment are the REST routes that answer 402. Each
// idempotent tool's input has idempotencyKey, and no other tool's does.
func TestToolsDeclareIdempotencyAndPayment(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	wantIdem := []string{"api_key_create", "connected_wallet_add", "credit_topup", "invoke_partner_message", "partner_publish_intent",
		"partner_publish_intent_bundle", "partner_set_active", "partner_test_endpoint", "wallet_send", "webhook_delivery_replay", "webhook_endpoint_create", "x402_fetch"}
	wantPay := []string{"credit_topup", "invoke_partner_message"}
	var idem, pay, keyedPosts, paid []string
	for _, rt := range rest.Routes() {
		t := env.App.Kernel.Tool(rt.Tool)
		if t != nil && rt.Method == http.MethodPost && t.Access.NeedsKey() {
			keyedPosts = append(keyedPosts, rt.Tool)
		}
		if slices.Contains(rt.Errors, tools.CodePaymentRequired) {
			paid = append(paid, rt.Tool)
		}
	}
	for _, tool := range slices.Concat(env.App.Kernel.Tools(), env.App.Kernel.SessionTools()) {
		var in struct {
			Properties map[string]any `json:"properties"`
		}
		json.Unmarshal(tool.InputSchema, &in)
		_, has := in.Properties[tools.IdempotencyKeyProperty]
		if has != tool.TakesIdempotencyKey {
			t.Errorf("%s: declares TakesIdempotencyKey %v, but its input has idempotencyKey: %v", tool.Name, tool.TakesIdempotencyKey, has)
		}
		if tool.TakesIdempotencyKey {
			idem = append(idem, tool.Name)
		}
		if tool.TakesPayment {
			pay = append(pay, tool.Name)
		}
	}
	for _, s := range [][]string{idem, pay, keyedPosts, paid} {
		slices.Sort(s)
	}
	if !slices.Equal(idem, wantIdem) || !slices.Equal(keyedPosts, wantIdem) {
		t.Errorf("tools taking an idempotency key: %v; keyed POST routes %v; want %v", idem, keyedPosts, wantIdem)
	}
	if !slices.Equal(pay, wantPay) || !slices.Equal(paid, wantPay) {
		t.Errorf("tools taking a payment: %v; routes answering 402 %v; want %v", pay, paid, wantPay)
	}
}

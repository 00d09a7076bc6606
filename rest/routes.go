// Package rest is the thin HTTP adapter: a /v1 route table onto the same kernel tools, the
// error model mapped to HTTP statuses, and the public documents (llms.txt, the service public
// key, the OpenAPI document, health).
package rest

import (
	"net/http"

	"github.com/switchboard-hq/switchboard/tools"
)

// Route maps one HTTP route onto a tool. Path parameters are copied into the tool's input
// under the names in Params; GET query parameters become input fields by name.
type Route struct {
	Method  string
	Path    string            // net/http pattern path, e.g. /v1/keys/{key_id}
	Tool    string            // kernel tool name
	Params  map[string]string // path parameter -> input field
	Created bool              // answer 201 instead of 200
	// Errors are the codes the tool itself can answer, documented in OpenAPI beside the
	// kernel's own (BAD_INPUT; UNAUTHENTICATED, FORBIDDEN, RATE_LIMITED for keyed tools;
	// UNAVAILABLE and INTERNAL everywhere).
	// A tool that takes payment (tools.Def.TakesPayment) lists PAYMENT_REQUIRED here; the
	// headers that carry the payment are a wrapper's (WithWrap).
	Errors []tools.Code
}

const (
	unauth           = tools.CodeUnauthenticated
	notFound         = tools.CodeNotFound
	conflict         = tools.CodeConflict
	confirm          = tools.CodeConfirmationRequired
	approvalRequired = tools.CodeApprovalRequired
	approvalPending  = tools.CodeApprovalPending
	policyDenied     = tools.CodePolicyDenied
	payment          = tools.CodePaymentRequired
	spendLimit       = tools.CodeSpendLimit
	noCredits        = tools.CodeInsufficientCredits
	rateLimited      = tools.CodeRateLimited
	upstream         = tools.CodeUpstream
)

// Routes is the /v1 table, a fresh copy on each call (no caller can change another's). A
// route whose tool is not registered is skipped, so a capability lands by adding its tools
// and its rows here.
func Routes() []Route {
	return []Route{
		{Method: http.MethodPost, Path: "/v1/agents/signup", Tool: "agent_signup", Errors: []tools.Code{rateLimited}},
		{Method: http.MethodPost, Path: "/v1/agents/verify", Tool: "agent_verify", Errors: []tools.Code{unauth, rateLimited}},
		{Method: http.MethodPost, Path: "/v1/keys", Tool: "api_key_create", Created: true, Errors: []tools.Code{notFound, conflict}}, // notFound: an unknown integrationId; conflict: the live-key cap
		{Method: http.MethodGet, Path: "/v1/keys", Tool: "api_key_list"},
		{Method: http.MethodDelete, Path: "/v1/keys/{key_id}", Tool: "api_key_revoke", Params: map[string]string{"key_id": "keyId"}, Errors: []tools.Code{notFound}},
		{Method: http.MethodGet, Path: "/v1/account", Tool: "account_get"},
		{Method: http.MethodPost, Path: "/v1/credit/topup", Tool: "credit_topup", Errors: []tools.Code{notFound, conflict, payment, upstream}},
		{Method: http.MethodPost, Path: "/v1/wallet/send", Tool: "wallet_send", Errors: []tools.Code{notFound, conflict, confirm, approvalRequired, approvalPending, policyDenied, upstream}},
		{Method: http.MethodPost, Path: "/v1/x402/fetch", Tool: "x402_fetch", Errors: []tools.Code{notFound, conflict, approvalRequired, approvalPending, policyDenied, upstream}},
		{Method: http.MethodGet, Path: "/v1/tokens/resolve", Tool: "resolve_token", Errors: []tools.Code{upstream}},
		{Method: http.MethodGet, Path: "/v1/tokens/price", Tool: "get_price", Errors: []tools.Code{notFound, upstream}},
		{Method: http.MethodGet, Path: "/v1/balances", Tool: "get_balances", Errors: []tools.Code{upstream}},
		{Method: http.MethodPost, Path: "/v1/wallets/connected", Tool: "connected_wallet_add", Errors: []tools.Code{conflict}},
		{Method: http.MethodGet, Path: "/v1/wallets/connected", Tool: "connected_wallet_list"},
		{Method: http.MethodDelete, Path: "/v1/wallets/connected/{address}", Tool: "connected_wallet_remove", Params: map[string]string{"address": "address"}, Errors: []tools.Code{notFound}},
		{Method: http.MethodGet, Path: "/v1/discover", Tool: "discover"},
		{Method: http.MethodPost, Path: "/v1/invoke", Tool: "invoke_partner_message", Errors: []tools.Code{notFound, conflict, confirm, approvalRequired, approvalPending, policyDenied, payment, spendLimit, noCredits, upstream}},
		{Method: http.MethodPost, Path: "/v1/partner/intents", Tool: "partner_publish_intent", Created: true, Errors: []tools.Code{conflict}},
		{Method: http.MethodPost, Path: "/v1/partner/intents/bundle", Tool: "partner_publish_intent_bundle", Created: true, Errors: []tools.Code{conflict}},
		{Method: http.MethodPatch, Path: "/v1/partner/intents/{id}", Tool: "partner_update_intent", Params: map[string]string{"id": "intentId"}, Errors: []tools.Code{notFound, conflict}},
		{Method: http.MethodPost, Path: "/v1/partner/test-endpoint", Tool: "partner_test_endpoint", Errors: []tools.Code{notFound}},
		{Method: http.MethodPost, Path: "/v1/partner/intents/{id}/active", Tool: "partner_set_active", Params: map[string]string{"id": "intentId"}, Errors: []tools.Code{notFound, conflict}},
		{Method: http.MethodGet, Path: "/v1/partner/intents", Tool: "partner_list_intents"},
		{Method: http.MethodGet, Path: "/v1/partner/earnings", Tool: "partner_earnings", Errors: []tools.Code{notFound}},
		{Method: http.MethodGet, Path: "/v1/tasks/{task_id}", Tool: "task_get", Params: map[string]string{"task_id": "taskId"}, Errors: []tools.Code{notFound}},
		{Method: http.MethodDelete, Path: "/v1/tasks/{task_id}", Tool: "task_cancel", Params: map[string]string{"task_id": "taskId"}, Errors: []tools.Code{notFound}},
		{Method: http.MethodGet, Path: "/v1/partner/receipts/{request_id}", Tool: "partner_receipt", Params: map[string]string{"request_id": "requestId"}, Errors: []tools.Code{notFound}},
		{Method: http.MethodDelete, Path: "/v1/partner/intents/{id}", Tool: "partner_archive_intent", Params: map[string]string{"id": "intentId"}, Errors: []tools.Code{notFound}},
		{Method: http.MethodGet, Path: "/v1/usage", Tool: "usage_list"},
		{Method: http.MethodGet, Path: "/v1/policy", Tool: "policy_get", Errors: []tools.Code{notFound}},
		{Method: http.MethodPut, Path: "/v1/policy", Tool: "policy_set", Errors: []tools.Code{notFound}},
		{Method: http.MethodGet, Path: "/v1/approvals", Tool: "approval_list"},
		{Method: http.MethodGet, Path: "/v1/approvals/{request_id}", Tool: "approval_get", Params: map[string]string{"request_id": "requestId"}, Errors: []tools.Code{notFound}},
		{Method: http.MethodPost, Path: "/v1/webhooks/endpoints", Tool: "webhook_endpoint_create", Created: true, Errors: []tools.Code{conflict}}, // conflict: the endpoint cap
		{Method: http.MethodGet, Path: "/v1/webhooks/endpoints", Tool: "webhook_endpoint_list"},
		{Method: http.MethodDelete, Path: "/v1/webhooks/endpoints/{endpoint_id}", Tool: "webhook_endpoint_delete", Params: map[string]string{"endpoint_id": "endpointId"}, Errors: []tools.Code{notFound}},
		{Method: http.MethodGet, Path: "/v1/webhooks/deliveries", Tool: "webhook_delivery_list"},
		{Method: http.MethodPost, Path: "/v1/webhooks/deliveries/{delivery_id}/replay", Tool: "webhook_delivery_replay", Params: map[string]string{"delivery_id": "deliveryId"}, Errors: []tools.Code{notFound}},
	}
}

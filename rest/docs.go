package rest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/switchboard-hq/switchboard/tools"
)

// llmsTxt renders the onboarding instructions for agents. It lists exactly the onboarding
// methods this deployment has enabled, each with URLs that answer: paste-a-key only when the
// portal (its issuance page) is served.
func llmsTxt(o Docs) string {
	var b strings.Builder
	base := o.BaseURL
	fmt.Fprintf(&b, "# Switchboard\n\n")
	fmt.Fprintf(&b, "> MCP-native onboarding, API keys, token lookups and signed partner intents for AI agents.\n\n")
	fmt.Fprintf(&b, "MCP (Streamable HTTP): %s/mcp — send your key as the `x-api-key` header (or `Authorization: Bearer`).\n", base)
	if o.Portal { // the reference in Markdown fits an agent's context; the OpenAPI document is many times larger
		fmt.Fprintf(&b, "REST: %s/v1/... — every route, its input and its errors in %s/docs/api.md (read this one); the full OpenAPI document, many times larger, is %s/openapi.json.\n\n", base, base, base)
	} else {
		fmt.Fprintf(&b, "REST: %s/v1/... — every route and its errors in %s/openapi.json.\n\n", base, base)
	}
	fmt.Fprintf(&b, "## Onboarding methods enabled here\n\n")
	if o.Portal {
		fmt.Fprintf(&b, "Paste a key (no inbox needed): ask a human to sign in at %s/developer/sign-in, issue a key at %s/developer/api-keys and paste it to you. Do not retry signup.\n\n", base, base)
	}
	if o.EmailSignup {
		fmt.Fprintf(&b, "E-mail one-time code (needs an inbox you can read):\n\n")
		fmt.Fprintf(&b, "1. MCP tool `agent_signup {\"email\": \"you@example.com\"}` or `POST %s/v1/agents/signup` — always answers {\"ok\":true} and e-mails a 8-digit code valid 10 minutes.\n", base)
		fmt.Fprintf(&b, "2. MCP tool `agent_verify {\"email\": ..., \"code\": \"12345678\"}` or `POST %s/v1/agents/verify` — returns userId, wallets (evm, svm), apiKey (shown once: store it), scopes, spendLimitUsd, rateLimitPerMinute.\n", base)
		fmt.Fprintf(&b, "3. Each client address has 5 guesses at a code (then 429 until the code expires); wrong guesses never void it, and signing up again while it is valid re-sends the same code. Verifying again later recovers the same account with a new key.\n\n")
		fmt.Fprintf(&b, "Without an inbox you can read, do not retry signup: ask a human for a key (they can get one with the same two calls from their own inbox) and use the key they paste to you.\n")
	} else {
		fmt.Fprintf(&b, "None: e-mail onboarding is off on this deployment (sign-up by e-mail answers 404). Do not retry signup: ask a human (the operator) for an API key (they issue one with `switchboard admin key issue`) and use the key they paste to you.\n")
	}
	fmt.Fprintf(&b, "\n## With a key\n\n")
	fmt.Fprintf(&b, "- `api_key_create` (POST /v1/keys), `api_key_list` (GET /v1/keys), `api_key_revoke` (DELETE /v1/keys/{key_id}), `account_get` (GET /v1/account).\n")
	fmt.Fprintf(&b, "- Lookups: `resolve_token`, `get_price`, `get_balances`; the marketplace: `discover`, then `invoke_partner_message` with the partner's @handle.\n")
	fmt.Fprintf(&b, "- Errors are {\"error\": {\"code\", \"message\", \"details\"}}; the message says what to do next. RATE_LIMITED comes with Retry-After.\n")
	fmt.Fprintf(&b, "- Flat-fee intents are paid with x402 (v2, scheme exact on EVM): POST /v1/invoke answers 402 with PAYMENT-REQUIRED; any stock x402 client (e.g. @x402/fetch) pays and retries the same request with PAYMENT-SIGNATURE. Over MCP: invoke_partner_message returns the PaymentRequired as structuredContent; retry with _meta[\"x402/payment\"].\n")
	if o.Portal {
		fmt.Fprintf(&b, "  Step by step, over HTTP and MCP: %s/docs/x402.md\n", base)
	}
	fmt.Fprintf(&b, "- Buying credit: `credit_topup` (POST /v1/credit/topup with {\"amountUsd\": 5}) answers 402 with PAYMENT-REQUIRED payable to the treasury, the same way: any x402 client pays it (or payWithWallet: true, with signing on); the credit lands once the transfer is confirmed, once per payment; `account_get` shows creditUsd.\n")
	fmt.Fprintf(&b, "- Spend policies and approvals: `policy_get` (GET /v1/policy), `policy_set` (PUT /v1/policy: a key only narrows its own policy or a descendant's), `approval_list` (GET /v1/approvals), `approval_get` (GET /v1/approvals/{request_id}). POLICY_DENIED (403) names the rule, window, spent and left; APPROVAL_REQUIRED (409) means the account's owner approves the call in the portal: tell the user, then call again with confirmRequestId (APPROVAL_PENDING, with Retry-After, until decided).\n")
	fmt.Fprintf(&b, "- Signed events (Standard Webhooks, scope publish, a root key): `webhook_endpoint_create` (POST /v1/webhooks/endpoints), `webhook_endpoint_list` (GET /v1/webhooks/endpoints), `webhook_endpoint_delete` (DELETE /v1/webhooks/endpoints/{endpoint_id}), `webhook_delivery_list` (GET /v1/webhooks/deliveries), `webhook_delivery_replay` (POST /v1/webhooks/deliveries/{delivery_id}/replay). Each POST carries webhook-id (process each once), webhook-timestamp and webhook-signature: `v1,` HMAC-SHA256 under the endpoint's whsec_ secret, `v1a,` Ed25519 under the service key.\n")
	fmt.Fprintf(&b, "- Retrying safely: send `Idempotency-Key: <a fresh UUID>` on a POST (MCP: the `idempotencyKey` argument) and the same key when you retry after a lost answer: the same key and body within 24 hours answer the first call's answer without calling or charging again; 409 CONFLICT with Retry-After while the first call still runs; a different body under the key is 409.\n")
	fmt.Fprintf(&b, "\nPartners verify Switchboard's Ed25519 signatures with the key at %s/.well-known/service-public-key.\n", base)
	if o.Portal {
		fmt.Fprintf(&b, "\n## Documentation (Markdown)\n\n")
		for _, page := range []string{"agents", "mcp-hosts", "partners", "x402", "policies", "webhooks", "errors", "limits", "api"} {
			fmt.Fprintf(&b, "- %s/docs/%s.md\n", base, page)
		}
	}
	return b.String()
}

// OpenAPI builds the OpenAPI 3.1 document from the route table and the same generated schemas
// the MCP tools publish.
func OpenAPI(k *tools.Kernel, o Docs) ([]byte, error) {
	paths := map[string]map[string]any{}
	tagsUsed := map[string]bool{}
	for _, rt := range Routes() {
		t := k.Tool(rt.Tool)
		if t == nil {
			continue
		}
		var in map[string]any
		if err := json.Unmarshal(t.InputSchema, &in); err != nil {
			return nil, err
		}
		var out any
		if err := json.Unmarshal(t.OutputSchema, &out); err != nil {
			return nil, err
		}
		withArrayItems(in)
		withArrayItems(out)
		tag := string(t.Toolset())
		tagsUsed[tag] = true
		op := map[string]any{
			"operationId": t.Name,
			"summary":     t.Title,
			"description": t.Description,
			"tags":        []any{tag},
			"x-mcp-tool":  t.Name,
		}
		var params []any
		pathFields := map[string]bool{}
		for param, field := range rt.Params {
			pathFields[field] = true
			params = append(params, map[string]any{"name": param, "in": "path", "required": true, "schema": property(in, field)})
		}
		props, _ := in["properties"].(map[string]any)
		idem := t.TakesIdempotencyKey && props[tools.IdempotencyKeyProperty] != nil
		if idem { // the header carries it (the body may too)
			pathFields[tools.IdempotencyKeyProperty] = true
			params = append(params, map[string]any{"name": IdempotencyHeader, "in": "header", "required": false,
				"description": "a unique key for this call (a UUID): a retry with the same key and the same body within 24 hours answers the first call's answer without running it again; " +
					"the same key with a different body is 409 CONFLICT, and while the first call is still running 409 CONFLICT with Retry-After",
				"schema": property(in, tools.IdempotencyKeyProperty)})
		}
		body := withoutFields(in, pathFields)
		if rt.Method == http.MethodGet || rt.Method == http.MethodDelete {
			props, _ := body["properties"].(map[string]any)
			names := make([]string, 0, len(props))
			for name := range props {
				names = append(names, name)
			}
			sort.Strings(names)
			for _, name := range names {
				params = append(params, map[string]any{"name": name, "in": "query", "required": isRequired(body, name), "schema": props[name]})
			}
		} else {
			op["requestBody"] = map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": body}}}
		}
		if len(params) > 0 {
			op["parameters"] = params
		}
		status := "200"
		if rt.Created {
			status = "201"
		}
		responses := errorResponses(t, rt, idem)
		responses[status] = map[string]any{"description": "success", "content": map[string]any{"application/json": map[string]any{"schema": out}}}
		if task := k.Tool("task_get"); t.AnswersTasks && task != nil {
			if err := taskAnswer(op, responses, task); err != nil {
				return nil, err
			}
		}
		op["responses"] = responses
		if !t.Access.NeedsKey() {
			op["security"] = []any{}
		} else if s := t.Access.Scope(); s != "" {
			op["x-required-scope"] = s
		}
		if paths[rt.Path] == nil {
			paths[rt.Path] = map[string]any{}
		}
		paths[rt.Path][strings.ToLower(rt.Method)] = op
	}
	servers := []any{map[string]any{"url": o.BaseURL, "description": o.Env + " environment"}}
	if o.TestBaseURL != "" && o.TestBaseURL != o.BaseURL {
		servers = append(servers, map[string]any{"url": o.TestBaseURL, "description": "test environment: its own data and keys, no real users or funds"})
	}
	var tags []any
	for _, ts := range tools.Toolsets() {
		if tagsUsed[string(ts)] {
			tags = append(tags, map[string]any{"name": string(ts), "description": toolsetTags[ts]})
		}
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":       "Switchboard",
			"version":     o.Version,
			"description": "Every operation is also an MCP tool at /mcp with the same schemas (x-mcp-tool). Errors share one body: {\"error\": {\"code\", \"message\", \"details\"}}; the message says what to do next.",
			"license":     map[string]any{"name": "Proprietary (all rights reserved)"},
		},
		"servers": servers,
		"tags":    tags,
		"paths":   paths,
		"components": map[string]any{
			"securitySchemes": map[string]any{
				"apiKey": map[string]any{"type": "apiKey", "in": "header", "name": "x-api-key"},
				"bearer": map[string]any{"type": "http", "scheme": "bearer"},
			},
			"schemas": map[string]any{"Error": errorSchema},
		},
		"security": []any{map[string]any{"apiKey": []any{}}, map[string]any{"bearer": []any{}}},
	}
	return json.MarshalIndent(doc, "", "  ")
}

// toolsetTags describe the OpenAPI tags: each operation is tagged with its tool's MCP
// toolset, so the REST reference groups the operations as a host narrows tools/list.
var toolsetTags = map[tools.Toolset]string{
	tools.ToolsetOnboarding: "No key needed: sign up and verify an e-mail address to get an API key",
	tools.ToolsetAgent:      "An agent's key: account, keys, look-ups, discovery, invoking partners, wallets",
	tools.ToolsetPartner:    "A partner's key (scope publish): publishing, testing and running intents, receipts, earnings",
	tools.ToolsetOwner:      "The account owner's controls: spend policies and approvals",
}

// Keywords whose values are schemas, by shape (as tools' own schema walk has them).
var (
	subschemaOne   = []string{"items", "additionalProperties", "not", "contains", "if", "then", "else", "propertyNames", "unevaluatedItems", "unevaluatedProperties"}
	subschemaMaps  = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
	subschemaLists = []string{"anyOf", "oneOf", "allOf", "prefixItems"}
)

// withArrayItems gives every array schema without items (the array branch of an any-JSON
// union) an explicit "items": {} (any item), the same meaning in JSON Schema, which OpenAPI
// linters require (Spectral's array-items). The MCP tools keep their schemas as they are:
// strict MCP clients want a type on every schema, and {} has none.
func withArrayItems(s any) {
	m, ok := s.(map[string]any)
	if !ok {
		return
	}
	if m["type"] == "array" && m["items"] == nil && m["prefixItems"] == nil {
		m["items"] = map[string]any{}
	}
	for _, k := range subschemaOne {
		withArrayItems(m[k])
	}
	for _, k := range subschemaMaps {
		if sub, ok := m[k].(map[string]any); ok {
			for _, v := range sub {
				withArrayItems(v)
			}
		}
	}
	for _, k := range subschemaLists {
		if list, ok := m[k].([]any); ok {
			for _, v := range list {
				withArrayItems(v)
			}
		}
	}
}

// errorResponses documents every error an operation can answer, by HTTP status, each with
// the codes behind it and the error body.
func errorResponses(t *tools.Tool, rt Route, idem bool) map[string]any {
	codes := []tools.Code{tools.CodeBadInput}
	if rt.Method == http.MethodPost || rt.Method == http.MethodPatch {
		codes = append(codes, tools.CodePayloadTooLarge)
	}
	if t.Access.NeedsKey() {
		codes = append(codes, tools.CodeUnauthenticated, tools.CodeForbidden, tools.CodeRateLimited)
	}
	codes = append(codes, rt.Errors...)
	if idem {
		codes = append(codes, tools.CodeConflict) // an idempotency key reused or in flight
	}
	codes = append(codes, tools.CodeUnavailable, tools.CodeInternal)
	byStatus := map[int][]string{}
	for _, c := range codes {
		st := Status(c)
		if !slices.Contains(byStatus[st], string(c)) {
			byStatus[st] = append(byStatus[st], string(c))
		}
	}
	out := map[string]any{}
	for st, cs := range byStatus {
		r := map[string]any{
			"description": http.StatusText(st) + ": " + strings.Join(cs, ", "),
			"content":     map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Error"}}},
		}
		if st == http.StatusTooManyRequests || st == http.StatusServiceUnavailable || (idem && st == http.StatusConflict) {
			what := "seconds to wait before retrying (always sent with RATE_LIMITED)"
			if st == http.StatusConflict {
				what = "seconds to wait before retrying, sent when a call with the same Idempotency-Key is still running"
			}
			r["headers"] = map[string]any{"Retry-After": map[string]any{
				"description": what,
				"schema":      map[string]any{"type": "integer", "minimum": 0},
			}}
		}
		out[strconv.Itoa(st)] = r
	}
	return out
}

var errorSchema = map[string]any{
	"type":     "object",
	"required": []any{"error"},
	"properties": map[string]any{"error": map[string]any{
		"type":     "object",
		"required": []any{"code", "message"},
		"properties": map[string]any{
			"code":    map[string]any{"type": "string", "enum": []any{"BAD_INPUT", "PAYLOAD_TOO_LARGE", "UNAUTHENTICATED", "FORBIDDEN", "NOT_FOUND", "CONFLICT", "CONFIRMATION_REQUIRED", "PAYMENT_REQUIRED", "SPEND_LIMIT", "INSUFFICIENT_CREDITS", "RATE_LIMITED", "UPSTREAM", "UNAVAILABLE", "INTERNAL"}},
			"message": map[string]any{"type": "string"},
			"details": map[string]any{"type": "object", "description": "what the code needs to act on (field problems, a quote, the partner's own error)", "additionalProperties": true},
		},
	}},
}

func property(schema map[string]any, name string) any {
	props, _ := schema["properties"].(map[string]any)
	if p, ok := props[name]; ok {
		return p
	}
	return map[string]any{"type": "string"}
}

func isRequired(schema map[string]any, name string) bool {
	req, _ := schema["required"].([]any)
	for _, r := range req {
		if r == name {
			return true
		}
	}
	return false
}

// withoutFields copies an object schema without the given properties (they travel in the path).
func withoutFields(schema map[string]any, drop map[string]bool) map[string]any {
	out := make(map[string]any, len(schema))
	for k, v := range schema {
		out[k] = v
	}
	if len(drop) == 0 {
		return out
	}
	props, _ := schema["properties"].(map[string]any)
	kept := map[string]any{}
	for name, p := range props {
		if !drop[name] {
			kept[name] = p
		}
	}
	out["properties"] = kept
	var req []any
	reqs, _ := schema["required"].([]any)
	for _, r := range reqs {
		if name, _ := r.(string); !drop[name] {
			req = append(req, r)
		}
	}
	if req == nil {
		delete(out, "required")
	} else {
		out["required"] = req
	}
	return out
}

// taskAnswer documents a call answered with a task: the Prefer header that asks for one, and
// the 202 with the task (task_get's answer) and its Location.
func taskAnswer(op, responses map[string]any, task *tools.Tool) error {
	var schema any
	if err := json.Unmarshal(task.OutputSchema, &schema); err != nil {
		return err
	}
	withArrayItems(schema)
	params, _ := op["parameters"].([]any)
	op["parameters"] = append(params, map[string]any{"name": "Prefer", "in": "header", "required": false,
		"description": "respond-async: a call that may run long (an intent whose timeoutMs is above the deployment's task threshold) is answered 202 with a task at once; " +
			"poll its Location (GET " + TaskPath + "{task_id}) until its status leaves working, or DELETE it to cancel. Other calls answer as usual",
		"schema": map[string]any{"type": "string"}})
	responses["202"] = map[string]any{"description": "accepted: the call runs as a task (Prefer: respond-async); its hold is taken, and it is charged only if it succeeds",
		"headers": map[string]any{"Location": map[string]any{"description": "where the task is polled and cancelled", "schema": map[string]any{"type": "string"}}},
		"content": map[string]any{"application/json": map[string]any{"schema": schema}}}
	return nil
}

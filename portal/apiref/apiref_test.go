package apiref_test

import (
	"strings"
	"testing"

	"github.com/switchboard-hq/switchboard/portal/apiref"
)

func TestMarkdownListsEachOperationWithItsAccessInputAndErrors(t *testing.T) {
	doc := []byte(`{"paths": {
	  "/v1/agents/signup": {"post": {"operationId": "agent_signup", "summary": "Sign up", "description": "Sends a code.", "security": [],
	    "requestBody": {"content": {"application/json": {"schema": {"properties": {"email": {}, "name": {}}, "required": ["email"]}}}},
	    "responses": {"200": {"description": "sent"}, "400": {"description": "bad input"}}}},
	  "/v1/partner/intents/{id}": {"patch": {"operationId": "partner_update_intent", "summary": "Update", "description": "Edits.", "x-required-scope": "publish",
	    "parameters": [{"name": "id", "in": "path", "required": true}], "responses": {"404": {"description": "no such intent"}}}},
	  "/v1/account": {"get": {"operationId": "account_get", "summary": "Account", "description": "Reads.", "responses": {"200": {"description": "ok"}}}}
	}}`)
	md := string(apiref.Markdown(doc, "https://sb.example"))
	for _, want := range []string{
		"Rendered from [openapi.json](https://sb.example/openapi.json)",
		"at `https://sb.example/mcp`",
		"## `account_get` — Account\n\n`GET /v1/account` · any valid key",
		"## `agent_signup` — Sign up\n\n`POST /v1/agents/signup` · no key needed",
		"Input: `email` (body, required), `name` (body).",
		"| 400 | bad input |",
		"`PATCH /v1/partner/intents/{id}` · scope `publish`",
		"Input: `id` (path, required).",
		"| 404 | no such intent |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the reference lacks %q:\n%s", want, md)
		}
	}
	// Sorted by operationId: the reader finds a tool where its name says.
	if a, s, u := strings.Index(md, "`account_get`"), strings.Index(md, "`agent_signup`"), strings.Index(md, "`partner_update_intent`"); !(a < s && s < u) {
		t.Errorf("operations out of order: account_get at %d, agent_signup at %d, partner_update_intent at %d", a, s, u)
	}
}

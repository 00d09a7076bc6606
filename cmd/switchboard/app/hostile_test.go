package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

// rawPOST sends body as is (Go clients refuse to write some of these bytes) and decodes the
// answer.
func rawPOST(t *testing.T, url, key, body string, headers ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if key != "" {
		req.Header.Set("x-api-key", key)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// mcpCall is a raw JSON-RPC tools/call on the stateless /mcp endpoint with args written as
// given, so duplicate keys, lone surrogates and invalid UTF-8 reach the server unchanged. A
// JSON-RPC error (a refused envelope answers 400 with one) comes back as isError with its
// message.
func mcpCall(t *testing.T, env *apptest.Env, key, tool, args string) (isError bool, text string) {
	t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, tool, args)
	status, out := rawPOST(t, env.URL+"/mcp", key, body, "Mcp-Protocol-Version", "2025-06-18")
	var resp struct {
		Result struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(out), &resp); err != nil || (status != 200 && (status != 400 || resp.Error == nil)) {
		t.Fatalf("MCP %s: %d %q", tool, status, out)
	}
	if resp.Error != nil {
		return true, resp.Error.Message
	}
	return resp.Result.IsError, resp.Result.Content[0].Text
}

// Hostile text is refused at the kernel (once, for every tool) and at the REST door's own
// parameters, with BAD_INPUT naming where: NUL characters, duplicate keys, invalid UTF-8 and
// unpaired surrogates never reach a handler, a database or a partner.
func TestHostileInputIsRefusedAtEveryDoor(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			env := apptest.Start(t, apptest.Options{Dialect: dialect})
			key := env.Onboard(t, "hostile@example.com")["apiKey"].(string)

			rest := []struct{ method, path, body, want string }{
				{"DELETE", "/v1/keys/%00", "", "path parameter key_id contains a NUL"},
				{"DELETE", "/v1/partner/intents/%00", "", "path parameter id contains a NUL"},
				{"PATCH", "/v1/partner/intents/a%00b", `{"name":"x"}`, "path parameter id contains a NUL"},
				{"POST", "/v1/partner/intents/%00/active", `{"active":true}`, "path parameter id contains a NUL"},
				{"DELETE", "/v1/keys/%FF", "", "path parameter key_id is not valid UTF-8"},
				{"GET", "/v1/tokens/resolve?query=usdc%00on+base", "", "query parameter query contains a NUL"},
				{"GET", "/v1/tokens/price?query=%FF", "", "query parameter query is not valid UTF-8"},
				{"POST", "/v1/keys", `{"name":"a\u0000b","scopes":["read"]}`, "/name contains a NUL"},
				{"POST", "/v1/wallets/connected", `{"address":"0x0000000000000000000000000000000000000001","label":"\u0000"}`, "/label contains a NUL"},
				{"POST", "/v1/invoke", `{"message":"@a hi","message":"@pricey hi"}`, `has the key \"message\" twice`},
				{"POST", "/v1/invoke", `{"message":"@a \ud800 hi"}`, "/message has an unpaired UTF-16 surrogate"},
				{"POST", "/v1/invoke", "{\"message\":\"@a \xff hi\"}", "/message is not valid UTF-8"},
				{"POST", "/v1/keys", `{"name":"n","scopes":["read"],"nested":{"a":1,"a":2}}`, `/nested has the key \"a\" twice`},
			}
			for _, c := range rest {
				req, _ := http.NewRequest(c.method, env.URL+c.path, strings.NewReader(c.body))
				req.Header.Set("x-api-key", key)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 400 || !strings.Contains(string(b), `"BAD_INPUT"`) || !strings.Contains(string(b), c.want) {
					t.Errorf("REST %s %s %q: %d %s, want 400 BAD_INPUT saying %q", c.method, c.path, c.body, resp.StatusCode, b, c.want)
				}
			}

			// NUL is unambiguous JSON: the kernel refuses it as a tool error naming the field. What
			// readers would read differently is refused whole by the envelope check, as a
			// JSON-RPC parse error (TestMCPEnvelopeIsReadOneWay).
			mcp := []struct{ tool, args, kind, want string }{
				{"api_key_create", `{"name":"a\u0000b","scopes":["read"]}`, "BAD_INPUT", "/name contains a NUL"},
				{"api_key_revoke", `{"keyId":"\u0000"}`, "BAD_INPUT", "/keyId contains a NUL"},
				{"resolve_token", `{"query":"usdc\u0000"}`, "BAD_INPUT", "/query contains a NUL"},
				{"invoke_partner_message", `{"message":"@a hi","message":"@pricey hi"}`, "Parse error", `/params/arguments has the key "message" twice`},
				{"invoke_partner_message", `{"message":"@a \udc00"}`, "Parse error", "/params/arguments/message has an unpaired UTF-16 surrogate"},
				{"invoke_partner_message", "{\"message\":\"@a \xc3\x28\"}", "Parse error", "not valid UTF-8"},
			}
			for _, c := range mcp {
				isErr, text := mcpCall(t, env, key, c.tool, c.args)
				if !isErr || !strings.Contains(text, c.kind) || !strings.Contains(text, c.want) {
					t.Errorf("MCP %s %s: isError=%v %s, want %s saying %q", c.tool, c.args, isErr, text, c.kind, c.want)
				}
			}
			// Nothing was written: the account still has only its first key.
			if _, out := env.REST(t, "GET", "/v1/keys", key, nil); len(out["keys"].([]any)) != 1 {
				t.Errorf("a refused call wrote a key: %v", out)
			}
		})
	}
}

// A body over the limit is 413 PAYLOAD_TOO_LARGE on both doors, with the limit in the message,
// whether or not the client announced its length.
func TestOversizedBodyIs413OnEveryDoor(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	big := `{"email":"` + strings.Repeat("a", 2<<20) + `@example.com"}`
	rpc := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"agent_signup","arguments":` + big + `}}`
	for name, c := range map[string]struct{ url, body string }{
		"REST": {env.URL + "/v1/agents/signup", big},
		"MCP":  {env.URL + "/mcp", rpc},
	} {
		status, out := rawPOST(t, c.url, "", c.body)
		if status != 413 || !strings.Contains(out, "PAYLOAD_TOO_LARGE") || !strings.Contains(out, "1048576") {
			t.Errorf("%s: %d %.200s", name, status, out)
		}
	}
	// Chunked, so the length is learned only by reading.
	req, _ := http.NewRequest("POST", env.URL+"/v1/agents/signup", io.MultiReader(bytes.NewReader([]byte(big))))
	req.ContentLength = -1
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 413 || !strings.Contains(string(b), "PAYLOAD_TOO_LARGE") {
		t.Errorf("chunked REST: %d %.200s", resp.StatusCode, b)
	}
}

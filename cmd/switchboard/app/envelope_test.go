package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/mcpserver"
)

// rpcError is a JSON-RPC error answer.
type rpcError struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    struct {
			Code string `json:"code"`
		} `json:"data"`
	} `json:"error"`
}

// keyCount is how many keys the account of key has.
func keyCount(t *testing.T, env *apptest.Env, key string) int {
	t.Helper()
	status, out := env.REST(t, "GET", "/v1/keys", key, nil)
	if status != 200 {
		t.Fatalf("list keys: %d %v", status, out)
	}
	return len(out["keys"].([]any))
}

// A JSON-RPC message that readers could read differently is refused whole with a JSON-RPC
// parse error, before anything reads it: duplicate keys anywhere (method, params, params.name,
// id, inside a batch), invalid UTF-8 and unpaired surrogate escapes (which the go-sdk would
// turn into U+FFFD), and trailing data (which it would ignore). Each hostile body, read the
// go-sdk's way, would create a key; none does. The same call sent once, plainly, runs.
func TestMCPEnvelopeIsReadOneWay(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	key := env.Onboard(t, "envelope@example.com")["apiKey"].(string)
	const create = `"arguments":{"name":"sneaky","scopes":["read"]}`
	cases := []struct{ name, body, version, want string }{
		{"params.name twice", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"api_key_list","name":"api_key_create",` + create + `}}`,
			"", `/params has the key \"name\" twice`},
		{"method twice", `{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{"name":"api_key_create",` + create + `}}`,
			"", `/ has the key \"method\" twice`},
		{"params twice", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"api_key_list"},"params":{"name":"api_key_create",` + create + `}}`,
			"", `/ has the key \"params\" twice`},
		{"id twice", `{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"api_key_create",` + create + `}}`,
			"", `/ has the key \"id\" twice`},
		{"arguments key twice", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"api_key_create","arguments":{"name":"a","name":"sneaky","scopes":["read"]}}}`,
			"", `/params/arguments has the key \"name\" twice`},
		{"invalid UTF-8 in the tool name", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"api_key_create\xff\"," + create + "}}",
			"", "not valid UTF-8 (byte 0xff at offset"},
		{"invalid UTF-8 in an argument", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"api_key_create\",\"arguments\":{\"name\":\"\xc0\xaf\",\"scopes\":[\"read\"]}}}",
			"", "not valid UTF-8"},
		{"lone surrogate in the tool name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"api_key_create\ud800",` + create + `}}`,
			"", `/params/name has an unpaired UTF-16 surrogate escape (\\ud800)`},
		{"trailing data", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"api_key_create",` + create + `}} {"id":2}`,
			"", "not one JSON value"},
		{"a key twice inside a batch", `[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"api_key_list","name":"api_key_create",` + create + `}}]`,
			"2025-03-26", `/1/params has the key \"name\" twice`},
	}
	for _, c := range cases {
		version := c.version
		if version == "" {
			version = "2025-06-18"
		}
		for _, cred := range []string{key, ""} { // with a key, and without (the OAuth challenge reads bodies too)
			status, out := rawPOST(t, env.URL+"/mcp", cred, c.body, "Mcp-Protocol-Version", version)
			var resp rpcError
			if err := json.Unmarshal([]byte(out), &resp); err != nil || status != 400 || resp.JSONRPC != "2.0" || string(resp.ID) != "null" || resp.Error == nil ||
				resp.Error.Code != -32700 || !strings.HasPrefix(resp.Error.Message, "Parse error: ") || !strings.Contains(out, c.want) || resp.Error.Data.Code != "BAD_INPUT" {
				t.Errorf("%s (key %v): %d %.300s, want 400 with a JSON-RPC parse error (-32700, id null) saying %s", c.name, cred != "", status, out, c.want)
			}
		}
	}
	if n := keyCount(t, env, key); n != 1 {
		t.Fatalf("a refused message ran: the account has %d keys", n)
	}

	// The plain call runs: this is what each hostile body would have done.
	status, out := rawPOST(t, env.URL+"/mcp", key, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"api_key_create",`+create+`}}`,
		"Mcp-Protocol-Version", "2025-06-18")
	if status != 200 || strings.Contains(out, `"isError":true`) || keyCount(t, env, key) != 2 {
		t.Fatalf("plain api_key_create: %d %.300s", status, out)
	}
	// Escaped characters, surrogate pairs and a NUL in arguments are unambiguous: they pass the
	// envelope (the NUL is then the kernel's BAD_INPUT, a tool error).
	isErr, text := mcpCall(t, env, key, "resolve_token", `{"query":"\u0055SDC \ud83d\ude00 é"}`)
	if strings.Contains(text, "Parse error") {
		t.Fatalf("an unambiguous message was refused: %v %s", isErr, text)
	}
	// The go-sdk client's own messages pass.
	cs := env.MCP(t, key)
	if _, e := apptest.CallTool(t, cs, "api_key_list", nil); e != nil {
		t.Fatalf("api_key_list over the go-sdk client: %v", e)
	}
}

// Over stdio each line is checked the same way: a refused line is answered with a parse error
// (id null) and never runs, and the session goes on to answer the next line.
func TestStdioEnvelopeIsReadOneWay(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	key := env.Onboard(t, "stdio-envelope@example.com")["apiKey"].(string)
	srv := mcpserver.New(env.App.Kernel, mcpserver.Options{Name: "switchboard", Version: "test", Stdio: true, APIKey: key, Log: env.App.Log})
	const create = `"arguments":{"name":"sneaky","scopes":["read"]}`
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"api_key_list","name":"api_key_create",` + create + `}}`,
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"api_key_create\xff\"," + create + "}}",
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"api_key_create\udfff",` + create + `}}`,
		`{"jsonrpc":"2.0","id":4,`, // a message split over lines: the stdio transport is one message a line
		`"method":"tools/call","params":{"name":"api_key_create",` + create + `}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"api_key_list"}}`,
	}, "\n") + "\n"
	var out strings.Builder
	if err := mcpserver.ServeStdio(context.Background(), srv, strings.NewReader(in), &out); err != nil {
		t.Fatalf("ServeStdio: %v", err)
	}
	var parseErrors []string
	answered := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var resp rpcError
		if err := json.Unmarshal([]byte(line), &resp); err != nil {
			t.Fatalf("stdout line is not JSON-RPC: %q", line)
		}
		if string(resp.ID) == "null" && resp.Error != nil && resp.Error.Code == -32700 {
			parseErrors = append(parseErrors, resp.Error.Message)
			continue
		}
		answered[string(resp.ID)] = true
	}
	if len(parseErrors) != 5 || !strings.Contains(parseErrors[0], `has the key "name" twice`) || !strings.Contains(parseErrors[1], "not valid UTF-8") ||
		!strings.Contains(parseErrors[2], "unpaired UTF-16 surrogate") || !strings.Contains(parseErrors[3], "not one JSON value") {
		t.Errorf("parse errors: %q, want 5 (two keys, invalid UTF-8, lone surrogate, two halves of a split message)", parseErrors)
	}
	if !answered["0"] || !answered["5"] || len(answered) != 2 {
		t.Errorf("answered ids %v, want 0 and 5 (the session goes on after a refused line)", answered)
	}
	if n := keyCount(t, env, key); n != 1 {
		t.Fatalf("a refused line ran: the account has %d keys", n)
	}
}

// Two different credentials in one request are refused with 400 BAD_INPUT on every door that
// takes keys, whatever the pair (x-api-key and Bearer, two of either, a key and an OAuth access
// token), before anything runs; repeats of one key pass and act as it.
func TestConflictingCredentialsAreRefused(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	x := env.Onboard(t, "x@example.com")["apiKey"].(string)
	y := env.Onboard(t, "y@example.com")["apiKey"].(string)
	send := func(method, path, body string, headers [][2]string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, env.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		for _, h := range headers {
			req.Header.Add(h[0], h[1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	const mcpCreate = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"api_key_create","arguments":{"name":"n","scopes":["read"]}}}`
	conflicts := map[string][][2]string{
		"x-api-key and Bearer":          {{"x-api-key", x}, {"Authorization", "Bearer " + y}},
		"two x-api-key":                 {{"x-api-key", x}, {"x-api-key", y}},
		"two Bearer":                    {{"Authorization", "Bearer " + x}, {"Authorization", "bearer " + y}},
		"a key and an access token":     {{"x-api-key", x}, {"Authorization", "Bearer sbat_someoneelse"}},
		"a key among identical repeats": {{"x-api-key", x}, {"Authorization", "Bearer " + x}, {"x-api-key", y}},
	}
	for name, headers := range conflicts {
		for _, door := range []struct{ method, path, body string }{
			{"POST", "/v1/keys", `{"name":"n","scopes":["read"]}`},
			{"GET", "/v1/account", ""},
			{"POST", "/mcp", mcpCreate},
			{"POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"agent_signup","arguments":{"email":"z@example.com"}}}`},
		} {
			status, out := send(door.method, door.path, door.body, headers)
			if status != 400 || !strings.Contains(out, `"BAD_INPUT"`) || !strings.Contains(out, "two different credentials in one request") {
				t.Errorf("%s, %s %s: %d %s, want 400 BAD_INPUT naming the two credentials", name, door.method, door.path, status, out)
			}
		}
	}
	if keyCount(t, env, x) != 1 || keyCount(t, env, y) != 1 || len(env.Inbox.Messages()) != 2 {
		t.Fatalf("a refused request ran (keys %d and %d, %d mails)", keyCount(t, env, x), keyCount(t, env, y), len(env.Inbox.Messages()))
	}

	// Repeats of one key, and an Authorization of another scheme beside it, act as that key.
	for name, headers := range map[string][][2]string{
		"x-api-key and Bearer, the same": {{"x-api-key", x}, {"Authorization", "Bearer " + x}},
		"two x-api-key, the same":        {{"x-api-key", x}, {"x-api-key", " " + x}},
		"a key and Basic":                {{"x-api-key", x}, {"Authorization", "Basic dXNlcjpwYXNz"}},
	} {
		status, out := send("GET", "/v1/account", "", headers)
		if status != 200 || !strings.Contains(out, "x@example.com") {
			t.Errorf("%s: %d %s, want 200 as x", name, status, out)
		}
		status, out = send("POST", "/mcp", mcpCreate, headers)
		if status != 200 || strings.Contains(out, `"isError":true`) {
			t.Errorf("%s over MCP: %d %s", name, status, out)
		}
	}
	if n := keyCount(t, env, x); n != 4 {
		t.Fatalf("x has %d keys, want 4 (one per accepted api_key_create)", n)
	}

	// A go-sdk client configured with both headers cannot even initialize.
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	_, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint:             env.URL + "/mcp",
		HTTPClient:           &http.Client{Transport: headerTransport{"x-api-key": x, "Authorization": "Bearer " + y}},
		DisableStandaloneSSE: true,
	}, nil)
	if err == nil || !strings.Contains(err.Error(), "Bad Request") {
		t.Fatalf("go-sdk client with two keys connected: %v", err)
	}
}

// headerTransport adds headers to every request.
type headerTransport map[string]string

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Add(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

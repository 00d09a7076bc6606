package rest_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/rest"
	"github.com/switchboard-hq/switchboard/tools"
)

// searchIn has one field of each type a query parameter is converted to.
type searchIn struct {
	Query           string   `json:"query"`
	Limit           int      `json:"limit,omitempty" jsonschema:"minimum=1,maximum=50"`
	Chains          []string `json:"chains,omitempty"`
	IncludeArchived bool     `json:"includeArchived,omitempty"`
}

type updateIn struct {
	IntentID string `json:"intentId"`
	Name     string `json:"name,omitempty"`
}

type revokeIn struct {
	KeyID string `json:"keyId"`
}

type createIn struct {
	Name string `json:"name"`
}

// echo is a public tool under a name the route table maps, answering with the input it got:
// what the route made of the request.
func echo[In any](name string) *tools.Tool {
	return tools.New(tools.Def{Name: name, Title: name, Description: "echoes its input", Access: tools.Public,
		Annotations: tools.Annotations{ReadOnly: tools.Bool(true), OpenWorld: tools.Bool(false)}},
		func(_ context.Context, _ *tools.Caller, in In) (In, error) { return in, nil })
}

// server serves rest.Handler on a real kernel, behind the body limit the app's front sets.
func server(t *testing.T) *httptest.Server {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	k, err := tools.NewKernel(nil, nil, nil, log, time.Now,
		echo[searchIn]("discover"), echo[updateIn]("partner_update_intent"), echo[revokeIn]("api_key_revoke"), echo[createIn]("api_key_create"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.MaxBytesHandler(rest.Handler(k), rest.MaxBody))
	t.Cleanup(srv.Close)
	return srv
}

func do(t *testing.T, method, url, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s %s: answer is not JSON: %v", method, url, err)
	}
	return resp.StatusCode, out
}

// mustJSON is v as compact JSON, object keys sorted.
func mustJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// A route turns the request into the tool's input: query parameters typed by the input
// schema (GET, DELETE), the JSON body (POST, PATCH), and path parameters, which win.
func TestRouteArguments(t *testing.T) {
	srv := server(t)
	cases := []struct {
		name, method, path, body string
		status                   int
		want                     string
	}{
		{"query typed by the schema", "GET", "/v1/discover?query=price%20of%20SOL&limit=5&includeArchived=true", "", 200,
			`{"includeArchived":true,"limit":5,"query":"price of SOL"}`},
		{"array from commas and repeats", "GET", "/v1/discover?query=q&chains=base,solana&chains=ethereum", "", 200,
			`{"chains":["base","solana","ethereum"],"query":"q"}`},
		{"path parameter wins over the query", "DELETE", "/v1/keys/k-123?keyId=other", "", 200, `{"keyId":"k-123"}`},
		{"path parameter wins over the body", "PATCH", "/v1/partner/intents/i-1", `{"intentId":"other","name":"renamed"}`, 200,
			`{"intentId":"i-1","name":"renamed"}`},
		{"body of a created resource", "POST", "/v1/keys", `{"name":"ci"}`, 201, `{"name":"ci"}`},
	}
	for _, c := range cases {
		status, out := do(t, c.method, srv.URL+c.path, c.body)
		if got := mustJSON(t, out); status != c.status || got != c.want {
			t.Errorf("%s: %s %s answered %d %s, want %d %s", c.name, c.method, c.path, status, got, c.status, c.want)
		}
	}
}

// What cannot become the tool's input is refused in the error model, saying what is wrong.
func TestRouteRefusals(t *testing.T) {
	srv := server(t)
	cases := []struct {
		name, method, path, body string
		status                   int
		code, msg                string
	}{
		{"not a number", "GET", "/v1/discover?query=q&limit=five", "", 400, "BAD_INPUT", `query parameter limit: "five" is not a number`},
		{"not a boolean", "GET", "/v1/discover?query=q&includeArchived=maybe", "", 400, "BAD_INPUT", "is not true or false"},
		{"out of the schema's range", "GET", "/v1/discover?query=q&limit=51", "", 400, "BAD_INPUT", "/limit"},
		{"unknown query parameter", "GET", "/v1/discover?query=q&color=red", "", 400, "BAD_INPUT", "color"},
		{"NUL in a query value", "GET", "/v1/discover?query=a%00b", "", 400, "BAD_INPUT", "query parameter query"},
		{"body not an object", "POST", "/v1/keys", `[1]`, 400, "BAD_INPUT", "must be a JSON object"},
		{"body not JSON", "POST", "/v1/keys", `{"name":`, 400, "BAD_INPUT", "request body"},
		{"empty body is an empty input", "POST", "/v1/keys", ``, 400, "BAD_INPUT", "name"},
		{"body over the limit", "POST", "/v1/keys", `{"name":"` + strings.Repeat("x", rest.MaxBody) + `"}`, 413, "PAYLOAD_TOO_LARGE", "1 MiB"},
		{"unknown route", "GET", "/v1/nothing", "", 404, "NOT_FOUND", "openapi.json"},
		{"route of an unregistered tool", "GET", "/v1/keys", "", 404, "NOT_FOUND", "no route GET /v1/keys"},
	}
	for _, c := range cases {
		status, out := do(t, c.method, srv.URL+c.path, c.body)
		e, _ := out["error"].(map[string]any)
		msg, _ := e["message"].(string)
		if status != c.status || e["code"] != c.code || !strings.Contains(msg, c.msg) {
			t.Errorf("%s: answered %d %v, want %d %s containing %q", c.name, status, out, c.status, c.code, c.msg)
		}
	}
}

type publishIn struct {
	Doc json.RawMessage `json:"doc"`
}

type publishOut struct {
	Got string `json:"got"`
}

// A body with no path parameters reaches the tool as it was sent, byte for byte (a partner's
// document keeps its key order, spacing and characters), not decoded and re-marshalled.
func TestBodyReachesTheToolAsSent(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	k, err := tools.NewKernel(nil, nil, nil, log, time.Now, tools.New(tools.Def{Name: "partner_publish_intent", Title: "publish",
		Description: "echoes its document's bytes", Access: tools.Public,
		Annotations: tools.Annotations{ReadOnly: tools.Bool(true), OpenWorld: tools.Bool(false)}},
		func(_ context.Context, _ *tools.Caller, in publishIn) (publishOut, error) {
			return publishOut{Got: string(in.Doc)}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rest.Handler(k))
	t.Cleanup(srv.Close)
	const doc = `{"z": 1,  "a": "<b> & é", "n": 1.50}`
	status, out := do(t, "POST", srv.URL+"/v1/partner/intents", ` {"doc": `+doc+`} `)
	if status != 201 || out["got"] != doc {
		t.Fatalf("%d: the tool got %q, want %q", status, out["got"], doc)
	}
}

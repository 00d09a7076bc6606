package switchboard

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TestOperationsCoverOpenAPI checks the client's route table against the live /openapi.json:
// every operation the service documents has an entry with the same method, path and
// success status, and the table has nothing the document lacks.
func TestOperationsCoverOpenAPI(t *testing.T) {
	resp, err := http.Get(Live.URL + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string                     `json:"operationId"`
			Responses   map[string]json.RawMessage `json:"responses"`
		} `json:"paths"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for path, ops := range doc.Paths {
		if !strings.HasPrefix(path, "/v1/") {
			continue
		}
		for method, op := range ops {
			seen[op.OperationID] = true
			got, ok := operations[op.OperationID]
			if !ok {
				t.Errorf("%s %s (%s) has no client method: add it to operations and to the Client", strings.ToUpper(method), path, op.OperationID)
				continue
			}
			if got.Method != strings.ToUpper(method) || got.Path != path {
				t.Errorf("%s: client calls %s %s, the document says %s %s", op.OperationID, got.Method, got.Path, strings.ToUpper(method), path)
			}
			if _, ok := op.Responses[strconv.Itoa(got.Status)]; !ok {
				t.Errorf("%s: client expects %d, the document's responses are %v", op.OperationID, got.Status, keys(op.Responses))
			}
		}
	}
	for id := range operations {
		if !seen[id] {
			t.Errorf("operations has %s, which /openapi.json does not document", id)
		}
	}
	if len(seen) < 20 {
		t.Fatalf("only %d operations in /openapi.json", len(seen))
	}
}

// TestRetriedOnlyWhenIdempotent checks which calls the client retries against the
// idempotentHint of each tool the live MCP server lists: a call is retried only when the
// service marks it idempotent (or it is a GET, which must be marked so too).
func TestRetriedOnlyWhenIdempotent(t *testing.T) {
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	// Every toolset, so the partner tools are listed too (a keyless host sees onboarding and agent).
	req, _ := http.NewRequest("POST", Live.URL+"/mcp?toolsets=onboarding,agent,partner,owner", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	buf.ReadFrom(resp.Body)
	raw := buf.Bytes()
	if i := bytes.Index(raw, []byte("data: ")); i >= 0 { // an SSE answer: one event
		raw = bytes.TrimSpace(raw[i+len("data: "):])
	}
	var list struct {
		Result struct {
			Tools []struct {
				Name        string `json:"name"`
				Annotations struct {
					IdempotentHint bool `json:"idempotentHint"`
				} `json:"annotations"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatalf("tools/list: %v: %s", err, raw)
	}
	hints := map[string]bool{}
	for _, tool := range list.Result.Tools {
		hints[tool.Name] = tool.Annotations.IdempotentHint
	}
	for id, op := range operations {
		hint, ok := hints[id]
		if methods[id] { // MCP's tasks/get and tasks/cancel, not tools: both idempotent
			hint, ok = true, true
		}
		if !ok {
			t.Errorf("%s: no such MCP tool", id)
			continue
		}
		if op.Idempotent != hint {
			t.Errorf("%s: client idempotent=%v, the tool's idempotentHint=%v", id, op.Idempotent, hint)
		}
		if op.Method == "GET" && !hint {
			t.Errorf("%s: a GET the service does not mark idempotent", id)
		}
	}
}

// methods are the operations MCP serves as methods of the Tasks extension, not as tools.
var methods = map[string]bool{"task_get": true, "task_cancel": true}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

package app_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/tools"
)

var update = flag.Bool("update", false, "rewrite the golden files: testdata/schemas (TestToolSchemas) and testdata/openapi.json (TestOpenAPI)")

const goldenDir = "../../../testdata/schemas"

// TestToolSchemas snapshots every tool's published surface (description, access, hints,
// input and output schemas). An accidental change to the public surface fails here; an
// intended one is recorded with -update and reviewed in the diff.
func TestToolSchemas(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	seen := map[string]bool{}
	for _, tool := range slices.Concat(env.App.Kernel.Tools(), env.App.Kernel.SessionTools()) {
		seen[tool.Name+".json"] = true
		var in, out any
		json.Unmarshal(tool.InputSchema, &in)
		json.Unmarshal(tool.OutputSchema, &out)
		surface := map[string]any{
			"name": tool.Name, "title": tool.Title, "description": tool.Description,
			"access": tool.Access.String(),
			"annotations": map[string]any{
				"readOnly": *tool.Annotations.ReadOnly, "destructive": tool.Annotations.Destructive,
				"idempotent": tool.Annotations.Idempotent, "openWorld": tool.Annotations.OpenWorld,
			},
			"inputSchema": in, "outputSchema": out,
		}
		got, err := json.MarshalIndent(surface, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, '\n')
		apptest.Golden(t, filepath.Join(goldenDir, tool.Name+".json"), got, *update, "go test ./cmd/switchboard/app -run TestToolSchemas -update")
	}
	// A golden file without a tool is a tool that disappeared.
	entries, _ := os.ReadDir(goldenDir)
	for _, e := range entries {
		if !seen[e.Name()] && !*update {
			t.Errorf("golden %s has no registered tool: a tool was removed or renamed", e.Name())
		}
	}
}

// TestOpenAPI snapshots /openapi.json as served (the REST surface: routes, parameters, error
// responses, scopes), with the test server's address replaced by a fixed one. Like the tool
// schemas, a change is recorded with -update and reviewed in the diff.
func TestOpenAPI(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	resp, err := http.Get(env.URL + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /openapi.json: %d %v", resp.StatusCode, err)
	}
	got = append(bytes.ReplaceAll(got, []byte(env.URL), []byte("http://switchboard.test")), '\n')
	apptest.Golden(t, "../../../testdata/openapi.json", got, *update, "go test ./cmd/switchboard/app -run TestOpenAPI -update")
}

// TestToolsAreWellFormed guards the rules every tool must keep: a title and every hint,
// schemas strict MCP clients accept (no boolean subschemas, typed properties, no oneOf with
// null, no bare objects),
// object schemas with no root $ref, unknown input fields refused, an LLM-usable description.
func TestToolsAreWellFormed(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	for _, tool := range slices.Concat(env.App.Kernel.Tools(), env.App.Kernel.SessionTools()) {
		if tool.Annotations.ReadOnly == nil {
			t.Errorf("%s: readOnlyHint not set deliberately", tool.Name)
		}
		if len(tool.Description) < 40 {
			t.Errorf("%s: description too thin for an LLM: %q", tool.Name, tool.Description)
		}
		for which, raw := range map[string][]byte{"input": tool.InputSchema, "output": tool.OutputSchema} {
			var s map[string]any
			if err := json.Unmarshal(raw, &s); err != nil {
				t.Fatalf("%s %s schema: %v", tool.Name, which, err)
			}
			if s["type"] != "object" {
				t.Errorf("%s %s schema: root type %v, want object", tool.Name, which, s["type"])
			}
			if _, ok := s["$ref"]; ok {
				t.Errorf("%s %s schema has a root $ref", tool.Name, which)
			}
			if strings.Contains(string(raw), `"$ref"`) {
				t.Errorf("%s %s schema has a $ref; schemas are inlined so OpenAPI can embed them", tool.Name, which)
			}
		}
		if tool.Title == "" {
			t.Errorf("%s: no title", tool.Name)
		}
		if a := tool.Annotations; a.Destructive == nil || a.OpenWorld == nil {
			t.Errorf("%s: annotations incomplete: destructive %v, openWorld %v", tool.Name, a.Destructive, a.OpenWorld)
		}
		var in, out map[string]any
		json.Unmarshal(tool.InputSchema, &in)
		json.Unmarshal(tool.OutputSchema, &out)
		for which, doc := range map[string]any{"input": in, "output": out} {
			for _, p := range tools.StrictProblems(doc) {
				t.Errorf("%s %s schema: %s", tool.Name, which, p)
			}
		}
		if in["additionalProperties"] != false {
			t.Errorf("%s: input schema does not refuse unknown fields", tool.Name)
		}
	}
}

package tools_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	invopop "github.com/invopop/jsonschema"
	"github.com/switchboard-hq/switchboard/tools"
)

// The guard must bite: each schema below is one strict MCP clients or model providers reject.
func TestStrictProblemsFindsWhatStrictClientsReject(t *testing.T) {
	cases := map[string]string{
		"boolean property":           `{"type":"object","properties":{"result":true}}`,
		"boolean false property":     `{"type":"object","properties":{"result":false}}`,
		"boolean items":              `{"type":"object","properties":{"list":{"type":"array","items":true}}}`,
		"boolean in anyOf":           `{"type":"object","properties":{"x":{"anyOf":[true,{"type":"null"}]}}}`,
		"additionalProperties true":  `{"type":"object","additionalProperties":true}`,
		"untyped property":           `{"type":"object","properties":{"x":{"description":"immutable: refused"}}}`,
		"oneOf with null":            `{"type":"object","properties":{"x":{"oneOf":[{"type":"string"},{"type":"null"}]}}}`,
		"bare object":                `{"type":"object","properties":{"x":{"type":"object"}}}`,
		"nested untyped":             `{"type":"object","properties":{"o":{"type":"object","properties":{"y":{}}}}}`,
		"anyOf with untyped branch":  `{"type":"object","properties":{"x":{"anyOf":[{"type":"string"},{"minLength":1}]}}}`,
		"untyped additionalProperty": `{"type":"object","additionalProperties":{"description":"d"}}`,
		"type array":                 `{"type":"object","properties":{"x":{"type":["string","null"]}}}`,
		"bare object beside null":    `{"type":"object","properties":{"x":{"anyOf":[{"type":"object"},{"type":"null"}]}}}`,
	}
	for name, raw := range cases {
		var doc any
		if err := json.Unmarshal([]byte(raw), &doc); err != nil {
			t.Fatal(err)
		}
		if got := tools.StrictProblems(doc); len(got) == 0 {
			t.Errorf("%s: %s passed the guard", name, raw)
		}
	}
	good := []string{
		`{"type":"object","properties":{},"additionalProperties":false}`,
		`{"type":"object","properties":{"x":{"anyOf":[{"type":"string"},{"type":"null"}]}}}`,
		`{"type":"object","properties":{"x":{"anyOf":[{"type":"string","enum":["a"]},{"type":"null"}]}}}`,
		`{"type":"object","properties":{"x":{"anyOf":[{"type":"object"},{"type":"array"},{"type":"string"},{"type":"number"},{"type":"boolean"},{"type":"null"}]}}}`,
		`{"type":"object","additionalProperties":{"type":"string"}}`,
		`{"type":"object","properties":{"e":{"enum":["A","B"]}}}`,
	}
	for _, raw := range good {
		var doc any
		json.Unmarshal([]byte(raw), &doc)
		if got := tools.StrictProblems(doc); len(got) > 0 {
			t.Errorf("%s: flagged %v", raw, got)
		}
	}
}

// bad is a type whose schema is the boolean true (invopop marshals an empty schema that way).
type bad struct{}

func (bad) JSONSchema() *invopop.Schema { return &invopop.Schema{} }

type untypedObject struct{}

func (untypedObject) JSONSchema() *invopop.Schema { return &invopop.Schema{Type: "object"} }

// A tool whose generated schema a strict client would reject cannot be built: the failure is
// at start-up (and in every test that builds the app), never in a host's tools/list.
func TestNewRefusesASchemaStrictClientsReject(t *testing.T) {
	type withUntyped struct {
		Doc untypedObject `json:"doc"`
	}
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(r.(string), "object without properties") {
			t.Fatalf("New accepted a bare object property: %v", r)
		}
	}()
	tools.New(tools.Def{Name: "bad_tool", Annotations: tools.Annotations{ReadOnly: tools.Bool(true)}},
		func(context.Context, *tools.Caller, withUntyped) (struct{}, error) { return struct{}{}, nil })
}

// The boolean schema true and invopop's nullable oneOf are rewritten into the forms strict
// clients accept, with the same meaning.
func TestGeneratedSchemasAreStrict(t *testing.T) {
	type out struct {
		Result  bad             `json:"result"`
		Raw     json.RawMessage `json:"raw" jsonschema_description:"any value"`
		Maybe   *string         `json:"maybe" jsonschema:"nullable"`
		Choice  *string         `json:"choice" jsonschema:"nullable,enum=a,enum=b"`
		Anyway  map[string]any  `json:"anyway"`
		Listing []any           `json:"listing"`
	}
	tool := tools.New(tools.Def{Name: "strict_tool", Annotations: tools.Annotations{ReadOnly: tools.Bool(true)}},
		func(context.Context, *tools.Caller, struct{}) (out, error) { return out{}, nil })
	var doc struct {
		Properties map[string]map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(tool.OutputSchema, &doc); err != nil {
		t.Fatal(err)
	}
	var whole any
	json.Unmarshal(tool.OutputSchema, &whole)
	if p := tools.StrictProblems(whole); len(p) > 0 {
		t.Fatalf("generated schema has problems: %v\n%s", p, tool.OutputSchema)
	}
	props := doc.Properties
	for _, name := range []string{"result", "raw", "anyway"} {
		if !strings.Contains(jsonOf(props[name]), `{"anyOf":[{"type":"object"},{"type":"array"},{"type":"string"},{"type":"number"},{"type":"boolean"},{"type":"null"}]`) {
			t.Errorf("%s: %s, want every JSON type as anyOf branches", name, jsonOf(props[name]))
		}
	}
	for _, name := range []string{"maybe", "choice"} {
		if got := jsonOf(props[name]["anyOf"]); !strings.HasSuffix(got, `{"type":"null"}]`) {
			t.Errorf("nullable %s: %s, want anyOf with a null branch", name, jsonOf(props[name]))
		}
	}
	// The rewritten schema still validates what it promises.
	for _, v := range []string{`{"result":{"a":1},"raw":[1],"maybe":null,"choice":null,"anyway":{},"listing":[]}`,
		`{"result":"x","raw":null,"maybe":"s","choice":"a","anyway":{"k":[1]},"listing":[1,"a"]}`} {
		var val any
		json.Unmarshal([]byte(v), &val)
		if err := tool.ValidateOutput(val); err != nil {
			t.Errorf("%s: %v", v, err)
		}
	}
	var val any
	json.Unmarshal([]byte(`{"result":1,"raw":1,"maybe":null,"choice":"c","anyway":{},"listing":[]}`), &val)
	if err := tool.ValidateOutput(val); err == nil {
		t.Errorf("choice outside its enum validated")
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

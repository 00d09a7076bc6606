package tools_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchboard-hq/switchboard/tools"
)

type onceLists struct {
	Handles     []string `json:"handles,omitempty" jsonschema:"maxItems=2" jsonschema_description:"the handles"`
	Description string   `json:"description,omitempty" jsonschema_description:"a member named description"`
}

type oncePolicy struct {
	Allow onceLists `json:"allow" jsonschema_description:"allowed"`
	Deny  onceLists `json:"deny" jsonschema_description:"denied"`
}

type onceOut struct {
	Account   *oncePolicy `json:"account" jsonschema_description:"the account's"`
	Effective oncePolicy  `json:"effective" jsonschema_description:"combined"`
}

// A type repeated in one output schema is described once: its first appearance keeps its
// fields' descriptions, the repeats keep only their own field's, and every keyword that
// validates (maxItems, member names, required) stays, so the same answers validate.
func TestARepeatedTypeIsDescribedOnce(t *testing.T) {
	tool := tools.New(tools.Def{Name: "once_tool", Annotations: tools.Annotations{ReadOnly: tools.Bool(true)}},
		func(context.Context, *tools.Caller, struct{}) (onceOut, error) { return onceOut{}, nil })
	s := string(tool.OutputSchema)
	for text, want := range map[string]int{`"the handles"`: 1, `"a member named description"`: 1, `"allowed"`: 1, `"denied"`: 1,
		`"the account's"`: 1, `"combined"`: 1, `"maxItems":2`: 4, `"description":{`: 4} {
		if got := strings.Count(s, text); got != want {
			t.Errorf("%s appears %d times, want %d:\n%s", text, got, want, s)
		}
	}
	for v, ok := range map[string]bool{
		`{"account":null,"effective":{"allow":{},"deny":{"handles":["@a"],"description":"d"}}}`: true,
		`{"account":{"allow":{},"deny":{}},"effective":{"allow":{},"deny":{}}}`:                 true,
		`{"account":null,"effective":{"allow":{},"deny":{"handles":["@a","@b","@c"]}}}`:         false,
		`{"account":null,"effective":{"allow":{},"deny":{"other":1}}}`:                          false,
		`{"account":null,"effective":{"allow":{}}}`:                                             false,
	} {
		var doc any
		if err := json.Unmarshal([]byte(v), &doc); err != nil {
			t.Fatal(err)
		}
		if err := tool.ValidateOutput(doc); (err == nil) != ok {
			t.Errorf("%s: validated %v, want %v (%v)", v, err == nil, ok, err)
		}
	}
}

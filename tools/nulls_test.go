package tools_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/tools"
)

type nullsInner struct {
	Tags  []string          `json:"tags"`
	Extra map[string]string `json:"extra"`
	Opt   []string          `json:"opt,omitempty"`
}

type nullsEmbedded struct {
	Promoted []int `json:"promoted"`
}

type nullsOut struct {
	nullsEmbedded
	Policy  *nullsInner            `json:"policy" jsonschema_description:"null: none"`
	Value   nullsInner             `json:"value"`
	List    []nullsInner           `json:"list"`
	Ptrs    []*nullsInner          `json:"ptrs"`
	ByName  map[string]*nullsInner `json:"byName"`
	Nested  [][]string             `json:"nested"`
	When    *time.Time             `json:"when"`
	Absent  *nullsInner            `json:"absent,omitempty"`
	Meta    map[string]any         `json:"meta"`
	Tagged  *string                `json:"tagged" jsonschema:"nullable"`
	private []string
}

// An answer's nil lists and maps are written as [] and {}, its nil pointers as null, and
// its output schema says exactly that: every zero answer validates, a null list does not.
func TestAnswersHoldNullOnlyWhereTheirSchemaSaysSo(t *testing.T) {
	var answer nullsOut
	shared := []nullsInner{{}} // a handler's slice shared with a cache: never written to
	answer.List = shared
	answer.Ptrs = []*nullsInner{nil, {}}
	answer.Nested = [][]string{nil}
	answer.private = []string{"kept"} // unexported: neither encoded nor touched
	tool := tools.New(tools.Def{Name: "nulls_tool", Annotations: tools.Annotations{ReadOnly: tools.Bool(true)}},
		func(context.Context, *tools.Caller, struct{}) (nullsOut, error) { return answer, nil })
	k, err := tools.NewKernel(nil, nil, nil, quiet, time.Now, withOpenWorld(tool))
	if err != nil {
		t.Fatal(err)
	}
	out, e := k.Call(context.Background(), tools.Request{Tool: "nulls_tool"})
	if e != nil {
		t.Fatal(e)
	}
	if len(answer.private) != 1 || answer.private[0] != "kept" {
		t.Errorf("the handler's unexported field was changed: %v", answer.private)
	}
	raw, _ := json.Marshal(out)
	want := `{"promoted":[],"policy":null,"value":{"tags":[],"extra":{}},"list":[{"tags":[],"extra":{}}],` +
		`"ptrs":[null,{"tags":[],"extra":{}}],"byName":{},"nested":[[]],"when":null,"meta":{},"tagged":null}`
	if string(raw) != want {
		t.Errorf("answer:\n%s\nwant\n%s", raw, want)
	}
	if shared[0].Tags != nil || answer.Nested[0] != nil {
		t.Errorf("the handler's own slices were written to: %+v %v", shared, answer.Nested)
	}
	if err := tool.ValidateOutput(out); err != nil {
		t.Errorf("the filled answer breaks its schema: %v\n%s", err, tool.OutputSchema)
	}
	// The schema admits null where an answer may hold it, and nowhere else.
	for _, v := range []string{
		`{"promoted":[],"policy":null,"value":{"tags":[],"extra":{}},"list":[],"ptrs":[null],"byName":{"a":null},"nested":[],"when":null,"meta":{},"tagged":null}`,
	} {
		doc, _ := tools.DecodeJSON([]byte(v))
		if err := tool.ValidateOutput(doc); err != nil {
			t.Errorf("%s: %v", v, err)
		}
	}
	for _, field := range []string{"promoted", "list", "nested", "byName", "meta", "value"} {
		var doc map[string]any
		json.Unmarshal([]byte(want), &doc)
		doc[field] = nil
		if err := tool.ValidateOutput(doc); err == nil {
			t.Errorf("%s: null validated; a list, map or struct is never null", field)
		}
	}
	if !strings.Contains(string(tool.OutputSchema), `"policy":{"anyOf":[{"additionalProperties":false,"properties":{"extra"`) || !strings.Contains(string(tool.OutputSchema), `{"type":"null"}],"description":"null: none"}`) {
		t.Errorf("policy's schema: %s", tool.OutputSchema)
	}
	// A replayed answer (DecodeOutput of stored JSON) is filled the same way.
	replayed, err := tool.DecodeOutput([]byte(`{"list":null,"value":{"tags":null}}`))
	if err != nil {
		t.Fatal(err)
	}
	if raw, _ := json.Marshal(replayed); !strings.Contains(string(raw), `"list":[]`) || !strings.Contains(string(raw), `"tags":[]`) {
		t.Errorf("replayed answer: %s", raw)
	}
}

func withOpenWorld(t *tools.Tool) *tools.Tool {
	t.Title = t.Name
	t.Annotations.OpenWorld = tools.Bool(false)
	return t
}

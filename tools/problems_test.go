package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/tools"
)

type boundIn struct {
	Tags  []string          `json:"tags,omitempty" jsonschema:"enum=alpha,enum=beta"`
	Items []boundItem       `json:"items,omitempty"`
	Named map[string]string `json:"named,omitempty" jsonschema_description:"name -> a short value"`
}

type boundItem struct {
	N int `json:"n" jsonschema:"minimum=1"`
}

// Issue 46 item 4: a validation error names the first few problems and how many there are, so
// a 100 KB body answers in a few KB whatever its shape (one answered 5.1 MB, listing every bad
// item twice).
func TestValidationErrorsAreBounded(t *testing.T) {
	tool := tools.New(tools.Def{Name: "bound_echo", Title: "Bound", Description: "test tool", Access: tools.Public,
		Annotations: tools.Annotations{ReadOnly: tools.Bool(true), OpenWorld: tools.Bool(false)}},
		func(context.Context, *tools.Caller, boundIn) (struct{}, error) { return struct{}{}, nil })
	k, err := tools.NewKernel(nil, nil, nil, quiet, time.Now, tool)
	if err != nil {
		t.Fatal(err)
	}
	const size = 100 << 10
	repeat := func(head, item, tail string) string {
		return head + strings.Repeat(item+",", (size-len(head)-len(tail))/(len(item)+1)) + item + tail
	}
	longKey := strings.Repeat("k", 1000)
	for name, body := range map[string]string{
		"bad array items":      repeat(`{"tags":[`, `10`, `]}`),
		"bad nested members":   repeat(`{"items":[`, `{"n":0}`, `]}`),
		"unknown members":      `{` + members(size, "m", "1") + `}`,
		"long keys and values": `{"named":{` + members(size, longKey, "1") + `}}`,
		"one long bad string":  `{"tags":["` + strings.Repeat("z", size) + `"]}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, e := k.Call(context.Background(), tools.Request{Tool: "bound_echo", Args: json.RawMessage(body)})
			if e == nil || e.Code != tools.CodeBadInput {
				t.Fatalf("a %d-byte body of %s: %v", len(body), name, e)
			}
			answer, _ := json.Marshal(tools.Body{Error: e})
			problems, _ := e.Details["problems"].([]string)
			total, _ := e.Details["problemCount"].(int)
			t.Logf("%d-byte body: %d-byte answer naming %d of %d problems", len(body), len(answer), len(problems), total)
			if len(answer) > 8<<10 {
				t.Fatalf("a %d-byte body of %s answered %d bytes; want under 8 KB: %.300s", len(body), name, len(answer), answer)
			}
			if len(problems) == 0 || len(problems) > tools.MaxProblems || total < len(problems) {
				t.Fatalf("%d problems named of %d: %v", len(problems), total, problems)
			}
			if total > len(problems) && !strings.Contains(e.Message, fmt.Sprintf("(%d problems; the first %d)", total, len(problems))) {
				t.Fatalf("the message does not say how many problems there are: %.300s", e.Message)
			}
		})
	}
}

// members is an object's members "<key>0":value,"<key>1":value,... to about size bytes.
func members(size int, key, value string) string {
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"%s%d":%s`, key, i, value)
	}
	return b.String()
}

package apptest_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
)

func TestJSONDiff(t *testing.T) {
	cases := []struct {
		name, old, new string
		want           []string
	}{
		{"equal up to layout", `{"a":1,"b":[1,2]}`, "{\n  \"b\": [1, 2],\n  \"a\": 1\n}", nil},
		{"changed value", `{"a":{"b":"x"}}`, `{"a":{"b":"y"}}`, []string{`/a/b: "x" → "y"`}},
		{"added and removed keys", `{"gone":true,"kept":1}`, `{"kept":1,"new":[1]}`,
			[]string{`/gone: true → (absent)`, `/new: (absent) → [1]`}},
		{"array grown and reordered", `{"enum":["a","b"]}`, `{"enum":["b","a","c"]}`,
			[]string{`/enum/0: "a" → "b"`, `/enum/1: "b" → "a"`, `/enum/2: (absent) → "c"`}},
		{"number spelling kept", `{"n":1}`, `{"n":1.0}`, []string{`/n: 1 → 1.0`}},
		{"type changed", `{"t":"string"}`, `{"t":["string","null"]}`, []string{`/t: "string" → ["string","null"]`}},
		{"pointer escaping", `{"a/b":{"c~d":1}}`, `{"a/b":{"c~d":2}}`, []string{`/a~1b/c~0d: 1 → 2`}},
		{"root replaced", `1`, `"x"`, []string{`/: 1 → "x"`}},
		{"no HTML escaping", `{"d":"a"}`, `{"d":"a <b> & c"}`, []string{`/d: "a" → "a <b> & c"`}},
	}
	for _, c := range cases {
		got, err := apptest.JSONDiff([]byte(c.old), []byte(c.new))
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s: got %q (err %v), want %q", c.name, got, err, c.want)
		}
	}
	long := `"` + strings.Repeat("é", 200) + `"`
	got, _ := apptest.JSONDiff([]byte(long), []byte(`"x"`))
	if len(got) != 1 || !strings.HasSuffix(strings.Split(got[0], " → ")[0], "…") || !strings.Contains(got[0], "éé") {
		t.Errorf("a long value is cut on a character boundary: %q", got)
	}
	if _, err := apptest.JSONDiff([]byte(`{`), []byte(`{}`)); err == nil {
		t.Error("invalid JSON compared")
	}
}

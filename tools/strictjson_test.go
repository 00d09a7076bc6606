package tools_test

import (
	"strings"
	"testing"

	"github.com/switchboard-hq/switchboard/tools"
)

func TestCheckJSON(t *testing.T) {
	bad := map[string]string{
		`{"a":1,"a":2}`:                       `/ has the key "a" twice`,
		`{"a":1,"\u0061":2}`:                  `/ has the key "a" twice`, // the same key, escaped
		`{"x":[{"k":1},{"k":1,"k":2}]}`:       `/x/1 has the key "k" twice`,
		`{"a/b":{"c":"\u0000"}}`:              `/a~1b/c contains a NUL`,
		`{"s":"\ud83d"}`:                      `/s has an unpaired UTF-16 surrogate escape (\ud83d)`,
		`{"s":"\udc00x"}`:                     `/s has an unpaired UTF-16 surrogate escape (\udc00)`,
		`{"s":"\ud83d\u0041"}`:                `/s has an unpaired`,
		"{\"s\":\"\xff\"}":                    `/s is not valid UTF-8`,
		"[1,\"ok\",\"\xed\xa0\x80\"]":         `/2 is not valid UTF-8`, // a surrogate encoded as UTF-8
		`{"list":["a","b\u0000"]}`:            `/list/1 contains a NUL`,
		`{"\u0000":1}`:                        `contains a NUL`,
		`{"deep":{"deeper":{"a":"x","a":1}}}`: `/deep/deeper has the key "a" twice`,
	}
	for in, want := range bad {
		e := tools.CheckJSON("arguments", []byte(in))
		if e == nil || e.Code != tools.CodeBadInput || !strings.Contains(e.Message, want) {
			t.Errorf("%s: %v, want BAD_INPUT saying %q", in, e, want)
		}
	}
	for _, in := range []string{`{}`, `{"a":{"a":{"a":1}},"b":[{"a":1},{"a":2}]}`, `{"s":"😀 \ud83d\ude00 é \u00e9 \"q\" \\"}`, `[]`, `"x"`, `12`, `{"a":null,"b":true,"c":-1.5e3}`} {
		if e := tools.CheckJSON("arguments", []byte(in)); e != nil {
			t.Errorf("%s: refused: %v", in, e)
		}
	}
	// Without the NUL rule, NUL passes and the rest is refused alike.
	if e := tools.CheckJSONUnambiguous("message", []byte(`{"a":"\u0000","\u0000":1}`)); e != nil {
		t.Errorf("CheckJSONUnambiguous refused NUL: %v", e)
	}
	if e := tools.CheckJSONUnambiguous("message", []byte(`{"a":{"b":1,"b":"\u0000"}}`)); e == nil || !strings.Contains(e.Message, `message: /a has the key "b" twice`) {
		t.Errorf("CheckJSONUnambiguous duplicate: %v", e)
	}
	if e := tools.CheckText("path parameter id", "a\x00"); e == nil || !strings.Contains(e.Message, "path parameter id contains a NUL") {
		t.Errorf("CheckText NUL: %v", e)
	}
	if e := tools.CheckText("q", "\xff"); e == nil || !strings.Contains(e.Message, "not valid UTF-8") {
		t.Errorf("CheckText UTF-8: %v", e)
	}
}

// BenchmarkCheckJSON measures the kernel's hostile-input check on about 1 KB of arguments.
func BenchmarkCheckJSON(b *testing.B) {
	args := []byte(`{"message":"@weather forecast for Lisbon this weekend, in celsius please","args":{"city":"Lisbon","days":3,"units":"metric","tags":["a","b","c"],"nested":{"x":1.5,"y":[1,2,3],"z":"` + strings.Repeat("é", 300) + `"}}}`)
	b.SetBytes(int64(len(args)))
	for b.Loop() {
		if e := tools.CheckJSON("arguments", args); e != nil {
			b.Fatal(e)
		}
	}
}

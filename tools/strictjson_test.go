package tools_test

import (
	"runtime"
	"strings"
	"testing"

	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/jsonlimit"
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

func TestCheckJSONRefusesDeepNesting(t *testing.T) {
	for _, depth := range []int{65, 10_000, 500_000} {
		for _, shape := range []struct{ open, close string }{{"[", "]"}, {`{"a":`, "}"}, {`[{"k":[`, "]}]"}} {
			body := []byte(strings.Repeat(shape.open, depth) + strings.Repeat(shape.close, depth))
			e := tools.CheckJSON("request body", body)
			if e == nil || e.Code != tools.CodeBadInput || !strings.Contains(e.Message, "nested deeper than 64 levels") {
				t.Fatalf("%s × %d: %v; want BAD_INPUT naming the limit of 64 levels", shape.open, depth, e)
			}
			if e.Details["maxDepth"] != jsonlimit.MaxDepth {
				t.Fatalf("details %v; want maxDepth %d", e.Details, jsonlimit.MaxDepth)
			}
		}
	}
	atLimit := []byte(strings.Repeat(`{"a":`, 64) + "1" + strings.Repeat("}", 64))
	if e := tools.CheckJSON("request body", atLimit); e != nil {
		t.Fatalf("64 levels refused: %v", e)
	}
	// The pointer to a problem at the deepest level is still exact.
	deepDup := []byte(strings.Repeat(`{"a":`, 63) + `{"k":1,"k":2}` + strings.Repeat("}", 63))
	if e := tools.CheckJSON("request body", deepDup); e == nil || !strings.Contains(e.Message, strings.Repeat("/a", 63)+` has the key "k" twice`) {
		t.Fatalf("duplicate at depth 64: %v", e)
	}
}

// hostileShapes are 1 MiB bodies of the shapes that made a checker keep state per level or per
// key: deep nesting, a huge key above 63 levels, many keys, many small objects, escapes (the
// wide ones are refused for their items, the deep ones for their depth).
func hostileShapes() map[string][]byte {
	const size = 1 << 20
	fill := func(prefix, unit, suffix string) []byte {
		n := (size - len(prefix) - len(suffix)) / len(unit)
		return []byte(prefix + strings.Repeat(unit, n) + suffix)
	}
	bigKey := strings.Repeat("k", size/2)
	var short strings.Builder // every three-letter key once: the most map entries per byte
	short.WriteString("{")
	for i := range 26 * 26 * 26 {
		short.WriteString(`"` + string(rune('a'+i/676)) + string(rune('a'+i/26%26)) + string(rune('a'+i%26)) + `":0,`)
	}
	short.WriteString(`"z":0}`)
	return map[string][]byte{
		"nested arrays":         fill("", "[", ""),
		"nested objects":        []byte(strings.Repeat(`{"a":`, size/6) + strings.Repeat("}", size/6)),
		"a huge key, 63 deep":   []byte(`{"` + bigKey + `":` + strings.Repeat(`{"b":`, 62) + "1" + strings.Repeat("}", 63)),
		"many keys":             fill(`{`, `"k0000000":1,`, `"z":1}`),
		"unique short keys":     []byte(short.String()),
		"many small objects":    fill(`[`, `{"a":1,"b":2},`, `{}]`),
		"escaped keys":          fill(`{`, `"\u00e9\u00e8\u00ea\u00eb":1,`, `"z":1}`),
		"nested arrays, opened": fill("", "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1,", ""),
	}
}

// TestCheckJSONMemoryIsBoundedBySize holds the checker to allocations proportional to the
// body, whatever its shape: at most 16 bytes allocated per byte checked, plus 64 KB (unique
// three-letter keys cost 13: a map entry each).
func TestCheckJSONMemoryIsBoundedBySize(t *testing.T) {
	for name, body := range hostileShapes() {
		t.Run(name, func(t *testing.T) {
			got := allocated(func() { tools.CheckJSON("request body", body) })
			if limit := uint64(16*len(body) + 64<<10); got > limit {
				t.Fatalf("checking %d bytes allocated %d bytes; want at most %d", len(body), got, limit)
			}
		})
	}
}

func allocated(f func()) uint64 {
	var before, after runtime.MemStats // TotalAlloc counts every byte allocated, collected or not
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// FuzzCheckJSON runs the checker on any text: it never panics, refuses every text past the
// limits (depth, items), and allocates at most 16 bytes per byte checked (plus 64 KB).
func FuzzCheckJSON(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `{"s":"\ud83d"}`, `[[[[1]]]]`, `{"a":{"b":[{"c":"\u0000"}]}}`, "{\"\xff\":1}", `"x`, `{"a"`, `[1,2`} {
		f.Add([]byte(s))
	}
	for _, body := range hostileShapes() {
		f.Add(body[:4096])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var e *tools.Error
		got := allocated(func() { e = tools.CheckJSON("body", data) })
		if limit := uint64(16*len(data) + 64<<10); got > limit {
			t.Fatalf("checking %d bytes allocated %d bytes; want at most %d", len(data), got, limit)
		}
		if jsonlimit.Request(data) != nil && (e == nil || !strings.Contains(e.Message, "nested deeper than") && !strings.Contains(e.Message, "items")) {
			t.Fatalf("text past the limits was not refused for them: %v", e)
		}
	})
}

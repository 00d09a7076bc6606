package apptest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// maxDiffLines bounds a reported diff: past it a change is too big to read line by line, and
// the -update diff in git is the place to review it.
const maxDiffLines = 40

// Golden compares got, a JSON document, with the golden file at path; with update it writes
// got there instead. A mismatch is reported as a structural diff, one line per changed value
// (path: old → new), and says how to record an intended change (regenerate).
func Golden(t testing.TB, path string, got []byte, update bool, regenerate string) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("%s: no golden file (run %s): %v", path, regenerate, err)
		return
	}
	if bytes.Equal(got, want) {
		return
	}
	lines, err := JSONDiff(want, got)
	switch {
	case err != nil:
		t.Errorf("%s changed and is not comparable as JSON (%v); if intended, run %s and review the diff", path, err, regenerate)
	case len(lines) == 0:
		t.Errorf("%s: same JSON, different bytes (layout or key order); if intended, run %s", path, regenerate)
	default:
		if len(lines) > maxDiffLines {
			lines = append(lines[:maxDiffLines], fmt.Sprintf("... and %d more", len(lines)-maxDiffLines))
		}
		t.Errorf("%s changed (path: golden → now); if intended, run %s and review the diff:\n  %s", path, regenerate, strings.Join(lines, "\n  "))
	}
}

// JSONDiff compares two JSON documents by value and returns one line per difference,
// "path: old → new", paths as JSON Pointers, in document order (object keys sorted). A value
// only on one side shows as (absent) on the other; arrays are compared index by index.
func JSONDiff(old, new []byte) ([]string, error) {
	a, err := decodeJSON(old)
	if err != nil {
		return nil, fmt.Errorf("old: %w", err)
	}
	b, err := decodeJSON(new)
	if err != nil {
		return nil, fmt.Errorf("new: %w", err)
	}
	var out []string
	diffValue("", a, b, &out)
	return out, nil
}

func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // 1.0 and 1 differ on the wire; keep them apart
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// absent marks a side that has no value at a path.
type absent struct{}

func diffValue(path string, a, b any, out *[]string) {
	switch av := a.(type) {
	case map[string]any:
		if bv, ok := b.(map[string]any); ok {
			keys := make([]string, 0, len(av)+len(bv))
			for k := range av {
				keys = append(keys, k)
			}
			for k := range bv {
				if _, ok := av[k]; !ok {
					keys = append(keys, k)
				}
			}
			sort.Strings(keys)
			for _, k := range keys {
				diffValue(path+"/"+escapePointer(k), orAbsent(av, k), orAbsent(bv, k), out)
			}
			return
		}
	case []any:
		if bv, ok := b.([]any); ok {
			for i := range max(len(av), len(bv)) {
				var x, y any = absent{}, absent{}
				if i < len(av) {
					x = av[i]
				}
				if i < len(bv) {
					y = bv[i]
				}
				diffValue(path+"/"+strconv.Itoa(i), x, y, out)
			}
			return
		}
	}
	if !reflect.DeepEqual(a, b) {
		if path == "" {
			path = "/"
		}
		*out = append(*out, fmt.Sprintf("%s: %s → %s", path, show(a), show(b)))
	}
}

func orAbsent(m map[string]any, k string) any {
	if v, ok := m[k]; ok {
		return v
	}
	return absent{}
}

// escapePointer escapes a key for a JSON Pointer (RFC 6901).
func escapePointer(k string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(k)
}

// show is a value as compact JSON, long ones cut to keep a diff line readable.
func show(v any) string {
	if _, ok := v.(absent); ok {
		return "(absent)"
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // descriptions hold < > &; show them as written
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	const maxShown = 120
	r := []rune(strings.TrimSuffix(buf.String(), "\n"))
	if len(r) > maxShown {
		return string(r[:maxShown]) + "…"
	}
	return string(r)
}

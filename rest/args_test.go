package rest

import (
	"encoding/json"
	"reflect"
	"testing"
)

// queryValue gives a query string the JSON type its input field declares.
func TestQueryValue(t *testing.T) {
	cases := []struct {
		typ  string
		vals []string
		want any
		err  bool
	}{
		{"integer", []string{"5"}, json.Number("5"), false},
		{"number", []string{"0.25"}, json.Number("0.25"), false},
		{"integer", []string{"1e3"}, json.Number("1e3"), false}, // the schema decides whether it is an integer
		{"integer", []string{"five"}, nil, true},
		{"boolean", []string{"true"}, true, false},
		{"boolean", []string{"0"}, false, false},
		{"boolean", []string{"maybe"}, nil, true},
		{"array", []string{"a,b", "c"}, []string{"a", "b", "c"}, false},
		{"string", []string{"first", "second"}, "first", false}, // a repeated scalar takes the first
		{"", []string{"untyped"}, "untyped", false},             // a field the schema does not type
	}
	for _, c := range cases {
		got, err := queryValue(c.typ, c.vals)
		if (err != nil) != c.err || !reflect.DeepEqual(got, c.want) {
			t.Errorf("queryValue(%q, %q) = %#v, %v; want %#v (error %v)", c.typ, c.vals, got, err, c.want, c.err)
		}
	}
}

// propertyTypes reads each input field's type; a union type ("string" or null) is left
// untyped, so its query value stays a string.
func TestPropertyTypes(t *testing.T) {
	got := propertyTypes(json.RawMessage(`{"type":"object","properties":{"limit":{"type":"integer"},"chains":{"type":"array"},"since":{"type":["string","null"]}}}`))
	want := map[string]string{"limit": "integer", "chains": "array"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("propertyTypes = %v, want %v", got, want)
	}
}

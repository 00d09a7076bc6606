package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	invopop "github.com/invopop/jsonschema"
)

// anyJSONTypes is every JSON type. An open value lists them all as single-type anyOf
// branches: strict MCP clients (the TypeScript SDK inside most hosts) reject the boolean
// schema true, OpenAI's and Gemini's tool formats want a type on every property, and
// Inspector's portability check flags type arrays (Gemini's single-type dialect).
var anyJSONTypes = []string{"object", "array", "string", "number", "boolean", "null"}

// AnyValue is the schema of an open value (a partner's result, a JSON document's member).
func AnyValue(description string) *invopop.Schema {
	s := &invopop.Schema{Description: description}
	for _, t := range anyJSONTypes {
		s.AnyOf = append(s.AnyOf, &invopop.Schema{Type: t})
	}
	return s
}

func anyValueMap() map[string]any {
	var branches []any
	for _, t := range anyJSONTypes {
		branches = append(branches, map[string]any{"type": t})
	}
	return map[string]any{"anyOf": branches}
}

// isAnyValue reports whether m is AnyValue's union: its object branch is bare by design.
func isAnyValue(m map[string]any) bool {
	list, _ := m["anyOf"].([]any)
	if len(list) != len(anyJSONTypes) {
		return false
	}
	for i, b := range list {
		if bm, _ := b.(map[string]any); len(bm) != 1 || bm["type"] != anyJSONTypes[i] {
			return false
		}
	}
	return true
}

// OpenObject is the schema of an object whose members are not known in advance.
func OpenObject(description string) *invopop.Schema {
	return &invopop.Schema{Type: "object", Description: description, AdditionalProperties: AnyValue("")}
}

// SchemaDocument is the schema of a JSON Schema carried as data (an intent's
// parametersSchema): the keywords an object schema starts with are typed, any other allowed.
func SchemaDocument(description string) *invopop.Schema {
	props := invopop.NewProperties()
	props.Set("type", &invopop.Schema{Description: "the JSON type(s) allowed", AnyOf: []*invopop.Schema{
		{Type: "string"}, {Type: "array", Items: &invopop.Schema{Type: "string"}}}})
	props.Set("properties", &invopop.Schema{Type: "object", Description: "member name -> the JSON Schema of that member",
		AdditionalProperties: OpenObject("a JSON Schema")})
	props.Set("required", &invopop.Schema{Type: "array", Description: "members that must be present", Items: &invopop.Schema{Type: "string"}})
	s := OpenObject(description)
	s.Properties = props
	return s
}

// mapType gives Go's open types their explicit schemas: raw JSON and interfaces hold any
// value, a map to them is an object with any members.
func mapType(t reflect.Type) *invopop.Schema {
	switch {
	case t == reflect.TypeFor[json.RawMessage](), t.Kind() == reflect.Interface:
		return AnyValue("")
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String && t.Elem().Kind() == reflect.Interface:
		return OpenObject("")
	}
	return nil
}

// strictSchema rewrites a generated schema into the forms every MCP client and model
// provider accepts, without changing what it validates: the boolean schema true becomes
// AnyValue's union, and invopop's nullable form (oneOf with a null branch, refused by OpenAI's
// strict mode and Gemini) becomes an anyOf. Anything it cannot fix is reported by
// StrictProblems.
func strictSchema(raw []byte) ([]byte, error) {
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	doc = normalize(doc)
	if problems := StrictProblems(doc); len(problems) > 0 {
		return nil, fmt.Errorf("schema strict clients reject: %s", strings.Join(problems, "; "))
	}
	return json.Marshal(doc)
}

// subschemaMaps and subschemaLists are the keywords whose values are schemas, by shape.
var (
	subschemaOne   = []string{"items", "additionalProperties", "not", "contains", "if", "then", "else", "propertyNames", "unevaluatedItems", "unevaluatedProperties"}
	subschemaMaps  = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
	subschemaLists = []string{"anyOf", "oneOf", "allOf", "prefixItems"}
)

func normalize(s any) any {
	if b, ok := s.(bool); ok && b {
		return anyValueMap()
	}
	m, ok := s.(map[string]any)
	if !ok {
		return s
	}
	for _, k := range subschemaOne {
		if v, ok := m[k]; ok {
			m[k] = normalize(v)
		}
	}
	for _, k := range subschemaMaps {
		if props, ok := m[k].(map[string]any); ok {
			for name, v := range props {
				props[name] = normalize(v)
			}
		}
	}
	for _, k := range subschemaLists {
		if list, ok := m[k].([]any); ok {
			for i, v := range list {
				list[i] = normalize(v)
			}
		}
	}
	foldNullable(m)
	return m
}

// foldNullable turns invopop's {"oneOf": [X, {"type":"null"}]} into the anyOf strict clients
// accept (null matches only its own branch, so the meaning is the same). X's description
// moves beside the anyOf, where readers of the field (generated types, hosts) look for it.
func foldNullable(m map[string]any) {
	branches, ok := m["oneOf"].([]any)
	if !ok || len(branches) != 2 {
		return
	}
	for i, b := range branches {
		if bm, _ := b.(map[string]any); len(bm) == 1 && bm["type"] == "null" {
			delete(m, "oneOf")
			m["anyOf"] = branches
			if x, _ := branches[1-i].(map[string]any); x != nil && x["description"] != nil && m["description"] == nil {
				m["description"] = x["description"]
				delete(x, "description")
			}
			return
		}
	}
}

// StrictProblems lists what strict MCP clients and model providers reject in a schema: a
// boolean subschema (other than additionalProperties: false), a property without a type (or
// an anyOf/enum/const of typed branches), a type array (Gemini's dialect has one type),
// oneOf with a null branch, and an object with neither properties nor an additionalProperties
// schema (except the object branch of AnyValue's union).
func StrictProblems(doc any) []string {
	var w strictWalker
	w.walk(doc, "#", false, "", false)
	return w.problems
}

// strictWalker collects StrictProblems' findings, walking a schema depth first.
type strictWalker struct {
	problems []string
}

// walk checks schema s found at at; property says it describes a value (a property, items,
// additionalProperties or a prefixItems entry), keyword is the keyword it sits under and open
// that it is a branch of AnyValue's union.
func (w *strictWalker) walk(s any, at string, property bool, keyword string, open bool) {
	if b, ok := s.(bool); ok {
		if b || keyword != "additionalProperties" {
			w.problems = append(w.problems, at+": boolean schema "+fmt.Sprint(b)+"; write an explicit schema")
		}
		return
	}
	m, ok := s.(map[string]any)
	if !ok {
		w.problems = append(w.problems, at+": not a schema object")
		return
	}
	w.check(m, at, property, open)
	w.subschemas(m, at)
}

// check applies the rules to one schema object, not to its subschemas.
func (w *strictWalker) check(m map[string]any, at string, property, open bool) {
	if property && !typed(m) {
		w.problems = append(w.problems, at+": no type; give it a type (an open value lists every JSON type)")
	}
	if list, ok := m["oneOf"].([]any); ok {
		for _, b := range list {
			if bm, _ := b.(map[string]any); bm["type"] == "null" {
				w.problems = append(w.problems, at+": oneOf with a null branch; use a type array or anyOf")
			}
		}
	}
	if _, ok := m["type"].([]any); ok {
		w.problems = append(w.problems, at+": type is an array; use anyOf branches with one type each")
	}
	if m["type"] == "object" && !open {
		_, props := m["properties"]
		ap, hasAP := m["additionalProperties"]
		_, apSchema := ap.(map[string]any)
		if !props && !(hasAP && apSchema) {
			w.problems = append(w.problems, at+`: object without properties; declare them or an additionalProperties schema`)
		}
	}
}

// subschemas walks the subschemas of m, properties in name order.
func (w *strictWalker) subschemas(m map[string]any, at string) {
	for _, k := range subschemaOne {
		if v, ok := m[k]; ok {
			w.walk(v, at+"/"+k, k == "items" || k == "additionalProperties", k, false)
		}
	}
	for _, k := range subschemaMaps {
		if props, ok := m[k].(map[string]any); ok {
			names := make([]string, 0, len(props))
			for n := range props {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				w.walk(props[n], at+"/"+k+"/"+n, k == "properties", k, false)
			}
		}
	}
	for _, k := range subschemaLists {
		if list, ok := m[k].([]any); ok {
			union := k == "anyOf" && isAnyValue(m)
			for i, v := range list {
				w.walk(v, fmt.Sprintf("%s/%s/%d", at, k, i), k == "prefixItems", k, union)
			}
		}
	}
}

// typed reports whether a schema says what type its values have.
func typed(m map[string]any) bool {
	if _, ok := m["type"]; ok {
		return true
	}
	if _, ok := m["enum"]; ok {
		return true
	}
	if _, ok := m["const"]; ok {
		return true
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		list, ok := m[k].([]any)
		if !ok || len(list) == 0 {
			continue
		}
		all := true
		for _, b := range list {
			bm, _ := b.(map[string]any)
			if bm == nil || !typed(bm) {
				all = false
			}
		}
		if all {
			return true
		}
	}
	return false
}

// IndentJSON re-indents stored JSON for reading, keeping its key order; raw as it is when it
// is not JSON. (Not escaped: a page escapes it.)
func IndentJSON(raw string) string {
	var b bytes.Buffer
	if json.Indent(&b, []byte(raw), "", "  ") != nil {
		return raw
	}
	return b.String()
}

package tools

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	invopop "github.com/invopop/jsonschema"
)

// AnyJSONTypes is every JSON type: the explicit form of "any value". Strict MCP clients (the
// TypeScript SDK inside most hosts) reject the boolean schema true, and OpenAI's and
// Gemini's tool formats want a type on every property, so an open value says so in full.
var AnyJSONTypes = []any{"object", "array", "string", "number", "boolean", "null"}

// AnyValue is the schema of an open value (a partner's result, a JSON document's member).
// invopop has no type arrays, so the type travels in Extras.
func AnyValue(description string) *invopop.Schema {
	return &invopop.Schema{Description: description, Extras: map[string]any{"type": AnyJSONTypes}}
}

// OpenObject is the schema of an object whose members are not known in advance.
func OpenObject(description string) *invopop.Schema {
	return &invopop.Schema{Type: "object", Description: description, AdditionalProperties: AnyValue("")}
}

// SchemaDocument is the schema of a JSON Schema carried as data (an intent's
// parametersSchema): the keywords an object schema starts with are typed, any other allowed.
func SchemaDocument(description string) *invopop.Schema {
	props := invopop.NewProperties()
	props.Set("type", &invopop.Schema{Description: "the JSON type(s) allowed", Items: &invopop.Schema{Type: "string"},
		Extras: map[string]any{"type": []any{"string", "array"}}})
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
// provider accepts, without changing what it validates: the boolean schema true becomes an
// explicit any-value schema, and invopop's nullable form (oneOf with a null branch, refused by
// OpenAI's strict mode and Gemini) becomes a type array or an anyOf. Anything it cannot fix is
// reported by StrictProblems.
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
		return map[string]any{"type": AnyJSONTypes}
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

// foldNullable turns {"oneOf": [X, {"type":"null"}]} into X with "null" added to its type,
// or into an anyOf when X has no single type or restricts values (enum, const).
func foldNullable(m map[string]any) {
	branches, ok := m["oneOf"].([]any)
	if !ok || len(branches) != 2 {
		return
	}
	var other map[string]any
	nulls := 0
	for _, b := range branches {
		bm, _ := b.(map[string]any)
		if len(bm) == 1 && bm["type"] == "null" {
			nulls++
		} else {
			other = bm
		}
	}
	if nulls != 1 || other == nil {
		return
	}
	delete(m, "oneOf")
	typ, single := other["type"].(string)
	_, enum := other["enum"]
	_, cnst := other["const"]
	if !single || enum || cnst {
		m["anyOf"] = branches
		return
	}
	for k, v := range other {
		if _, taken := m[k]; !taken {
			m[k] = v
		}
	}
	m["type"] = []any{typ, "null"}
}

// StrictProblems lists what strict MCP clients and model providers reject in a schema: a
// boolean subschema (other than additionalProperties: false), a property without a type (or
// an anyOf/enum/const of typed branches), oneOf with a null branch, and an object with
// neither properties nor an additionalProperties schema.
func StrictProblems(doc any) []string {
	var out []string
	var walk func(s any, at string, property bool, keyword string)
	walk = func(s any, at string, property bool, keyword string) {
		if b, ok := s.(bool); ok {
			if b || keyword != "additionalProperties" {
				out = append(out, at+": boolean schema "+fmt.Sprint(b)+"; write an explicit schema")
			}
			return
		}
		m, ok := s.(map[string]any)
		if !ok {
			out = append(out, at+": not a schema object")
			return
		}
		if property && !typed(m) {
			out = append(out, at+": no type; give it a type (an open value lists every JSON type)")
		}
		if list, ok := m["oneOf"].([]any); ok {
			for _, b := range list {
				if bm, _ := b.(map[string]any); bm["type"] == "null" {
					out = append(out, at+": oneOf with a null branch; use a type array or anyOf")
				}
			}
		}
		if hasType(m, "object") {
			_, props := m["properties"]
			ap, hasAP := m["additionalProperties"]
			_, apSchema := ap.(map[string]any)
			if !props && !(hasAP && apSchema) {
				out = append(out, at+`: object without properties; declare them or an additionalProperties schema`)
			}
		}
		for _, k := range subschemaOne {
			if v, ok := m[k]; ok {
				walk(v, at+"/"+k, k == "items" || k == "additionalProperties", k)
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
					walk(props[n], at+"/"+k+"/"+n, k == "properties", k)
				}
			}
		}
		for _, k := range subschemaLists {
			if list, ok := m[k].([]any); ok {
				for i, v := range list {
					walk(v, fmt.Sprintf("%s/%s/%d", at, k, i), k == "prefixItems", k)
				}
			}
		}
	}
	walk(doc, "#", false, "")
	return out
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

func hasType(m map[string]any, t string) bool {
	switch v := m["type"].(type) {
	case string:
		return v == t
	case []any:
		if len(v) == len(AnyJSONTypes) {
			return false // an open value, not an object schema
		}
		for _, x := range v {
			if x == t {
				return true
			}
		}
	}
	return false
}

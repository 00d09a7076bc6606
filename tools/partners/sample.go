package partners

import (
	"encoding/json"

	"github.com/switchboard-hq/switchboard/tools"
)

// SampleArgs makes example args from a parametersSchema for a test call: the required
// properties only, each from its examples, default, const or first enum value, else a
// plain value of its type within its bounds. It returns nil when the result would not
// validate against the schema (the caller then asks for args).
func SampleArgs(schema string) json.RawMessage {
	var root map[string]any
	if json.Unmarshal([]byte(schema), &root) != nil {
		return nil
	}
	v := sampleValue(root, 0)
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	compiled, err := tools.CompileSchema([]byte(schema))
	if err != nil {
		return nil
	}
	decoded, err := tools.DecodeJSON(raw)
	if err != nil || compiled.Validate(decoded) != nil {
		return nil
	}
	return raw
}

func sampleValue(s map[string]any, depth int) any {
	if depth > 8 {
		return nil
	}
	if ex, ok := s["examples"].([]any); ok && len(ex) > 0 {
		return ex[0]
	}
	for _, k := range []string{"default", "const"} {
		if v, ok := s[k]; ok {
			return v
		}
	}
	if enum, ok := s["enum"].([]any); ok && len(enum) > 0 {
		return enum[0]
	}
	typ, _ := s["type"].(string)
	if types, ok := s["type"].([]any); ok && len(types) > 0 {
		typ, _ = types[0].(string)
	}
	num := func(k string) (float64, bool) {
		f, ok := s[k].(float64)
		return f, ok
	}
	switch typ {
	case "object":
		out := map[string]any{}
		props, _ := s["properties"].(map[string]any)
		req, _ := s["required"].([]any)
		for _, r := range req {
			name, _ := r.(string)
			ps, _ := props[name].(map[string]any)
			if ps == nil {
				ps = map[string]any{}
			}
			out[name] = sampleValue(ps, depth+1)
		}
		return out
	case "array":
		items, _ := s["items"].(map[string]any)
		n, _ := num("minItems")
		out := []any{}
		for range int(n) {
			out = append(out, sampleValue(items, depth+1))
		}
		return out
	case "integer", "number":
		v := 1.0
		if lo, ok := num("minimum"); ok {
			v = lo
		} else if lo, ok := num("exclusiveMinimum"); ok {
			v = lo + 1
		}
		if hi, ok := num("maximum"); ok && v > hi {
			v = hi
		}
		if typ == "integer" {
			return int64(v)
		}
		return v
	case "boolean":
		return false
	case "null":
		return nil
	default: // string or untyped
		n, _ := num("minLength")
		out := "example"
		for len(out) < int(n) {
			out += " example"
		}
		return out
	}
}

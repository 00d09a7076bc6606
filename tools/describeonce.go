package tools

import (
	"encoding/json"
	"sort"
)

// describeOnce removes the repetition schemas are inlined with (no $ref, so OpenAPI can embed
// them): an object type that appears again in the same output schema (policy_get's account,
// key and effective policies; the allow and deny lists in each) keeps its field descriptions
// at its first appearance, in document order, and is repeated without them. The schema
// validates exactly what it did: only descriptions inside a repeat go, never the repeat's own
// (its field's) description nor any keyword that constrains a value.
func describeOnce(raw []byte) ([]byte, error) {
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	walkDescribed(doc, false, seen)
	return json.Marshal(doc)
}

// walkDescribed visits s depth first in key order, stripping the descriptions inside each
// object schema whose shape (descriptions aside) it has met before. names says s is a
// properties map (its keys are member names, not keywords).
func walkDescribed(s any, names bool, seen map[string]bool) {
	m, ok := s.(map[string]any)
	if !ok {
		if list, ok := s.([]any); ok {
			for _, v := range list {
				walkDescribed(v, false, seen)
			}
		}
		return
	}
	if _, props := m["properties"].(map[string]any); props && !names {
		shape := shapeOf(m)
		if seen[shape] {
			for k, v := range m {
				if k != "description" {
					stripDescriptions(v, k == "properties")
				}
			}
			return
		}
		seen[shape] = true
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		walkDescribed(m[k], k == "properties" && !names, seen)
	}
}

// shapeOf is m's JSON without any description: what it validates.
func shapeOf(m map[string]any) string {
	var bare func(v any, names bool) any
	bare = func(v any, names bool) any {
		switch x := v.(type) {
		case map[string]any:
			out := make(map[string]any, len(x))
			for k, e := range x {
				if k == "description" && !names {
					continue
				}
				out[k] = bare(e, k == "properties" && !names)
			}
			return out
		case []any:
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = bare(e, false)
			}
			return out
		}
		return v
	}
	b, _ := json.Marshal(bare(m, false))
	return string(b)
}

// stripDescriptions removes every description keyword under v. names says v is a properties
// map, whose keys are member names (a member may be called "description").
func stripDescriptions(v any, names bool) {
	switch x := v.(type) {
	case map[string]any:
		if !names {
			delete(x, "description")
		}
		for k, e := range x {
			stripDescriptions(e, k == "properties" && !names)
		}
	case []any:
		for _, e := range x {
			stripDescriptions(e, false)
		}
	}
}

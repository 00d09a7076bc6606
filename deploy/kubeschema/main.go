// Command kubeschema writes kubeconform's JSON schemas, one file per kind, from a Kubernetes
// release's OpenAPI v2 document (api/openapi-spec/swagger.json in the k8s.io/kubernetes Go
// module), so deploy/k8s is validated with no download beyond the Go module proxy:
//
//	go run ./deploy/kubeschema -o DIR path/to/swagger.json
//	kubeconform -schema-location 'DIR/{{ .ResourceKind }}{{ .KindSuffix }}.json' deploy/k8s
//
// The schemas are strict, as kubeconform's own "-strict" ones: an object with listed
// properties admits no others, so a misspelt field fails.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	out := flag.String("o", "", "directory to write the schemas to")
	flag.Parse()
	if *out == "" || flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: kubeschema -o DIR swagger.json")
		os.Exit(2)
	}
	n, err := run(flag.Arg(0), *out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubeschema:", err)
		os.Exit(1)
	}
	fmt.Printf("wrote %d schemas to %s\n", n, *out)
}

func run(swaggerPath, dir string) (int, error) {
	raw, err := os.ReadFile(swaggerPath)
	if err != nil {
		return 0, err
	}
	var doc struct {
		Definitions map[string]any `json:"definitions"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return 0, fmt.Errorf("%s: %w", swaggerPath, err)
	}
	if len(doc.Definitions) == 0 {
		return 0, fmt.Errorf("%s: no definitions; want an OpenAPI v2 document", swaggerPath)
	}
	for name, def := range doc.Definitions {
		doc.Definitions[name] = strict(def)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	// The definitions in one file, which each kind's schema points into.
	defs, err := json.Marshal(map[string]any{"definitions": doc.Definitions})
	if err != nil {
		return 0, err
	}
	if err := os.WriteFile(filepath.Join(dir, "_definitions.json"), defs, 0o644); err != nil {
		return 0, err
	}
	n := 0
	for name, def := range doc.Definitions {
		gvks, _ := def.(map[string]any)["x-kubernetes-group-version-kind"].([]any)
		for _, g := range gvks {
			gvk, _ := g.(map[string]any)
			group, _ := gvk["group"].(string)
			version, _ := gvk["version"].(string)
			kind, _ := gvk["kind"].(string)
			// kubeconform's {{ .KindSuffix }}: the group's first label and the version.
			suffix := "-" + version
			if group != "" {
				suffix = "-" + strings.ToLower(strings.Split(group, ".")[0]) + "-" + version
			}
			ref, _ := json.Marshal("_definitions.json#/definitions/" + name)
			body := fmt.Sprintf(`{"$schema":"http://json-schema.org/schema#","allOf":[{"$ref":%s}]}`, ref)
			if err := os.WriteFile(filepath.Join(dir, strings.ToLower(kind)+suffix+".json"), []byte(body), 0o644); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}

// strict rewrites a schema for JSON Schema validation of manifests: an object with listed
// properties admits no others, and an int-or-string (ports, maxUnavailable) is either.
func strict(v any) any {
	switch s := v.(type) {
	case map[string]any:
		if s["format"] == "int-or-string" {
			return map[string]any{"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}}
		}
		for k, child := range s {
			if k == "properties" || k == "definitions" {
				props, _ := child.(map[string]any)
				for name, p := range props {
					props[name] = strict(p)
				}
				continue
			}
			s[k] = strict(child)
		}
		if _, ok := s["properties"]; ok {
			if _, set := s["additionalProperties"]; !set {
				s["additionalProperties"] = false
			}
		}
		return s
	case []any:
		for i := range s {
			s[i] = strict(s[i])
		}
		return s
	}
	return v
}

// Package apiref renders the service's OpenAPI document as the portal's API reference page.
package apiref

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Markdown renders an OpenAPI document as Markdown: every operation with its method and path,
// the MCP tool it is, what it does, its parameters and its error responses. baseURL is where
// the service answers (links to /openapi.json and /mcp).
func Markdown(openapi []byte, baseURL string) []byte {
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
			Summary     string `json:"summary"`
			Description string `json:"description"`
			Scope       string `json:"x-required-scope"`
			Security    []any  `json:"security"`
			Parameters  []struct {
				Name, In string
				Required bool
			} `json:"parameters"`
			RequestBody *struct {
				Content map[string]struct {
					Schema struct {
						Properties map[string]any `json:"properties"`
						Required   []string       `json:"required"`
					} `json:"schema"`
				} `json:"content"`
			} `json:"requestBody"`
			Responses map[string]struct {
				Description string `json:"description"`
			} `json:"responses"`
		} `json:"paths"`
	}
	json.Unmarshal(openapi, &doc) // the service's own document: an error leaves it empty
	var b strings.Builder
	fmt.Fprintf(&b, "# API reference\n\nRendered from [openapi.json](%s/openapi.json). Every operation is also the MCP tool named by its operationId, at `%s/mcp`, with the same input and output schemas. Send the key as `x-api-key` or `Authorization: Bearer`.\n\n", baseURL, baseURL)
	type op struct{ method, path string }
	var ops []op
	for path, methods := range doc.Paths {
		for m := range methods {
			ops = append(ops, op{m, path})
		}
	}
	sort.Slice(ops, func(i, j int) bool {
		return doc.Paths[ops[i].path][ops[i].method].OperationID < doc.Paths[ops[j].path][ops[j].method].OperationID
	})
	for _, o := range ops {
		d := doc.Paths[o.path][o.method]
		fmt.Fprintf(&b, "## `%s` — %s\n\n`%s %s`", d.OperationID, d.Summary, strings.ToUpper(o.method), o.path)
		switch {
		case d.Security != nil && len(d.Security) == 0:
			b.WriteString(" · no key needed")
		case d.Scope != "":
			fmt.Fprintf(&b, " · scope `%s`", d.Scope)
		default:
			b.WriteString(" · any valid key")
		}
		fmt.Fprintf(&b, "\n\n%s\n\n", d.Description)
		var params []string
		for _, pm := range d.Parameters {
			params = append(params, fmt.Sprintf("`%s` (%s%s)", pm.Name, pm.In, map[bool]string{true: ", required"}[pm.Required]))
		}
		if d.RequestBody != nil {
			body := d.RequestBody.Content["application/json"].Schema
			names := make([]string, 0, len(body.Properties))
			for n := range body.Properties {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				params = append(params, fmt.Sprintf("`%s` (body%s)", n, map[bool]string{true: ", required"}[slices.Contains(body.Required, n)]))
			}
		}
		if len(params) > 0 {
			fmt.Fprintf(&b, "Input: %s.\n\n", strings.Join(params, ", "))
		}
		statuses := make([]string, 0, len(d.Responses))
		for st := range d.Responses {
			statuses = append(statuses, st)
		}
		sort.Strings(statuses)
		b.WriteString("| status | meaning |\n|---|---|\n")
		for _, st := range statuses {
			fmt.Fprintf(&b, "| %s | %s |\n", st, d.Responses[st].Description)
		}
		b.WriteString("\n")
	}
	return []byte(b.String())
}

package x402

// x402's bazaar discovery extension (specs/extensions/bazaar.md) describes how the paid call
// is made, for x402 catalogs: the HTTP endpoint or the MCP tool.

// bazaarHTTP is x402's bazaar discovery extension for a flat-fee intent called over REST.
func bazaarHTTP(message string) map[string]any {
	return map[string]any{
		"info": map[string]any{
			"input":  map[string]any{"type": "http", "method": "POST", "bodyType": "json", "body": map[string]any{"message": message}},
			"output": map[string]any{"type": "json"},
		},
		"schema": map[string]any{
			"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "required": []string{"input"},
			"properties": map[string]any{
				"input": map[string]any{"type": "object", "required": []string{"type", "method", "bodyType", "body"}, "additionalProperties": false,
					"properties": map[string]any{
						"type": map[string]any{"type": "string", "const": "http"}, "method": map[string]any{"type": "string", "enum": []string{"POST"}},
						"bodyType": map[string]any{"type": "string", "enum": []string{"json"}},
						"body": map[string]any{"type": "object", "required": []string{"message"},
							"properties": map[string]any{"message": map[string]any{"type": "string", "description": "the request, naming the partner by its @handle"}}},
						"headers": map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}},
					}},
				"output": bazaarOutputSchema,
			},
		},
	}
}

// bazaarMCP is x402's bazaar discovery extension for a flat-fee intent called as the MCP tool
// invoke_partner_message.
func bazaarMCP(message, desc string) map[string]any {
	return map[string]any{
		"info": map[string]any{
			"input": map[string]any{"type": "mcp", "tool": "invoke_partner_message", "description": desc, "transport": "streamable-http",
				"inputSchema": map[string]any{"type": "object", "required": []string{"message"},
					"properties": map[string]any{"message": map[string]any{"type": "string", "description": "the request, naming the partner by its @handle"}}},
				"example": map[string]any{"message": message}},
			"output": map[string]any{"type": "json"},
		},
		"schema": map[string]any{
			"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "required": []string{"input"},
			"properties": map[string]any{
				"input": map[string]any{"type": "object", "required": []string{"type", "tool", "inputSchema"}, "additionalProperties": false,
					"properties": map[string]any{
						"type": map[string]any{"type": "string", "const": "mcp"}, "tool": map[string]any{"type": "string"},
						"description": map[string]any{"type": "string"}, "transport": map[string]any{"type": "string", "enum": []string{"streamable-http", "sse"}},
						"inputSchema": map[string]any{"type": "object"}, "example": map[string]any{"type": "object"},
					}},
				"output": bazaarOutputSchema,
			},
		},
	}
}

var bazaarOutputSchema = map[string]any{"type": "object", "required": []string{"type"},
	"properties": map[string]any{"type": map[string]any{"type": "string"}, "example": map[string]any{"type": "object"}}}

package x402

// x402's bazaar discovery extension (specs/extensions/bazaar.md) describes how the paid call
// is made, for x402 catalogs: the HTTP endpoint or the MCP tool.

// messageSchema is invoke's body: the message naming the partner.
var messageSchema = map[string]any{"type": "object", "required": []string{"message"},
	"properties": map[string]any{"message": map[string]any{"type": "string", "description": "the request, naming the partner by its @handle"}}}

// bazaarHTTP is x402's bazaar discovery extension for a paid call over REST: body is the
// request sent again when paid, bodySchema its schema.
func bazaarHTTP(body, bodySchema map[string]any) map[string]any {
	return map[string]any{
		"info": map[string]any{
			"input":  map[string]any{"type": "http", "method": "POST", "bodyType": "json", "body": body},
			"output": map[string]any{"type": "json"},
		},
		"schema": map[string]any{
			"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "required": []string{"input"},
			"properties": map[string]any{
				"input": map[string]any{"type": "object", "required": []string{"type", "method", "bodyType", "body"}, "additionalProperties": false,
					"properties": map[string]any{
						"type": map[string]any{"type": "string", "const": "http"}, "method": map[string]any{"type": "string", "enum": []string{"POST"}},
						"bodyType": map[string]any{"type": "string", "enum": []string{"json"}},
						"body":     bodySchema,
						"headers":  map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}},
					}},
				"output": bazaarOutputSchema,
			},
		},
	}
}

// bazaarMCP is x402's bazaar discovery extension for a paid call of the MCP tool `tool`:
// example is its arguments, inputSchema their schema.
func bazaarMCP(tool, desc string, example, inputSchema map[string]any) map[string]any {
	return map[string]any{
		"info": map[string]any{
			"input": map[string]any{"type": "mcp", "tool": tool, "description": desc, "transport": "streamable-http",
				"inputSchema": inputSchema,
				"example":     example},
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

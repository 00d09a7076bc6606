package mcpserver

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-hq/switchboard/tools"
)

// wrapIn runs the wraps' In on a call: they see the request's _meta and, over HTTP, its
// headers.
func wrapIn(k *tools.Kernel, wraps []tools.Wrap, req *mcp.CallToolRequest, call *tools.Request) (*tools.Exchange, *tools.Error) {
	x := &tools.Exchange{Door: tools.DoorMCP, Tool: k.Tool(call.Tool), Meta: req.Params.Meta}
	if req.Extra != nil {
		x.Header = req.Extra.Header
	}
	return x, tools.WrapIn(wraps, x, call)
}

// replied completes res with what the wraps added: _meta, and an error's structuredContent,
// which is also its first text (the error model's body follows it).
func replied(res *mcp.CallToolResult, x *tools.Exchange) *mcp.CallToolResult {
	r := x.Reply
	if r.Structured != nil {
		res.StructuredContent = r.Structured
		res.Content = append([]mcp.Content{&mcp.TextContent{Text: string(r.Structured)}}, res.Content...)
	}
	if r.Meta != nil {
		res.Meta = mcp.Meta(r.Meta)
	}
	return res
}

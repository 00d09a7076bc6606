package x402

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-hq/switchboard/tools"
)

// Wrap is x402 on both doors, as a tools.Wrap cmd gives them: for a tool that declares
// TakesPayment, the payment of the request's header (REST) or _meta (MCP) goes into the
// tool's input, and the payment answer comes back as the transport's headers, or as MCP's
// structuredContent and _meta. The error model shows Render(e) on both. Other tools pass
// untouched.
type Wrap struct{}

var _ tools.Wrap = Wrap{}

// In reads the payment into req.Args.
func (Wrap) In(x *tools.Exchange, req *tools.Request) *tools.Error {
	if x.Tool == nil || !x.Tool.TakesPayment {
		return nil
	}
	if x.Door == tools.DoorMCP {
		req.Args = FromMeta(mcp.Meta(x.Meta), req.Args)
		return nil
	}
	args, e := FromHeaders(x.Header, req.Args)
	if e != nil {
		return e
	}
	req.Args = args
	return nil
}

// Out writes the payment answer of out or e into x.Reply and returns e rendered.
func (Wrap) Out(x *tools.Exchange, out any, e *tools.Error) *tools.Error {
	if x.Tool == nil || !x.Tool.TakesPayment {
		return e
	}
	if x.Door == tools.DoorMCP {
		mcpReply(&x.Reply, out, e)
	} else if x.Reply.Header != nil {
		if e != nil {
			HTTPError(x.Reply.Header, e)
		} else {
			HTTPAnswer(x.Reply.Header, out)
		}
	}
	return Render(e)
}

// mcpReply is x402's MCP transport: a PaymentRequired is the error result's structuredContent
// (and first text); a SettlementResponse goes in _meta["x402/payment-response"].
func mcpReply(r *tools.Reply, out any, e *tools.Error) {
	var sr SettlementResponse
	var ok bool
	if e != nil {
		if req := required(e); req != nil {
			r.Structured = json.RawMessage(marshal(PaymentRequiredOf(req, MCP)))
		}
		sr, ok = Refusal(e)
	} else if p := receiptOf(out); p != nil {
		sr, ok = Settlement(p), true
	}
	if ok {
		r.Meta = map[string]any{MetaPaymentResponse: json.RawMessage(marshal(sr))}
	}
}

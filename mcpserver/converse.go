package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-hq/switchboard/tools"
)

// A call that answers with a continuation (tools.Error.Continue: a quote to confirm, an
// approval to wait for) is a question for the host's user when the host takes elicitation
// (canElicit). The door asks from the continuation alone, never from the error's details, and
// hands the user's answer back as the request's Decision, never in the arguments: on
// 2026-07-28 the question goes out in an input_required result and its answer comes in the
// call's retry (reply); on a session (stdio, HTTP on an earlier revision) the door asks at
// once and calls again (onSession). Unasked, the answer goes out as the kernel gave it.

// converse runs the call and the conversation its continuation opens. question, when set,
// is the input_required result to send instead of an answer.
func (d *toolDoor) converse(ctx context.Context, req *mcp.CallToolRequest, call tools.Request) (out any, e *tools.Error, question *mcp.CallToolResult) {
	r, retried := replyOf(req.Params)
	if retried && r.stop {
		// The user stopped waiting: calling again would dispatch (and charge) a call the
		// owner approved meanwhile, against the user's answer.
		return nil, stoppedWaiting(r.decision.RequestID), nil
	}
	if retried {
		call.Decision = &r.decision
	}
	out, e = d.k.Call(ctx, call)
	c := continuationOf(e)
	switch {
	case c == nil || !canElicit(req):
		return out, e, nil
	case multiRoundTrip(req):
		return out, e, ask(c, e.Code, r.checked)
	}
	out, e = d.onSession(ctx, req, call, out, e)
	return out, e, nil
}

// continuationOf is e's continuation, nil when e asks nothing (or is nil).
func continuationOf(e *tools.Error) *tools.Continuation {
	if e == nil {
		return nil
	}
	return e.Continue
}

// ask is the input_required result (2026-07-28) asking about c: a quote always; an approval
// when it is first asked, or still pending after the user chose to check (checked), while an
// agent's own check of it is answered as it is. nil: nothing to ask.
func ask(c *tools.Continuation, code tools.Code, checked bool) *mcp.CallToolResult {
	switch {
	case c.Kind == tools.ContinueConfirm:
		return confirmQuestion(c)
	case c.Kind == tools.ContinueApprove && (code == tools.CodeApprovalRequired || checked):
		return approvalQuestion(c, checked)
	}
	return nil
}

// maxConfirms is how many questions one call asks its user in a row: a write's quote, then
// what its partner proposes for the wallet to sign.
const maxConfirms = 2

// onSession asks on the call's session while the question stands: a quote once, then the
// call again with the user's decision; an approval until the owner decided or the user stops
// (waitApproval). A question nobody answered leaves the answer as it was.
func (d *toolDoor) onSession(ctx context.Context, req *mcp.CallToolRequest, call tools.Request, out any, e *tools.Error) (any, *tools.Error) {
	for range maxConfirms {
		c := continuationOf(e)
		if c == nil || c.Kind != tools.ContinueConfirm {
			break
		}
		approved, asked := confirmOnSession(ctx, d.asking, req, c)
		if !asked {
			return out, e
		}
		call.Decision = &tools.Decision{RequestID: c.RequestID, Decline: !approved}
		out, e = d.k.Call(ctx, call)
	}
	c := continuationOf(e)
	if c == nil || c.Kind != tools.ContinueApprove {
		return out, e
	}
	again := func() (any, *tools.Error) {
		check := call
		check.Decision = &tools.Decision{RequestID: c.RequestID} // asking again: never a decline
		return d.k.Call(ctx, check)
	}
	if o, ae, asked := waitApproval(ctx, d.asking, req, c, again); asked {
		return o, ae
	}
	return out, e
}

// reply is a 2026-07-28 retry's answer to the door's question: the decision it carries;
// for an approval, whether the user chose to check again (checked) or to stop waiting (stop).
type reply struct {
	decision      tools.Decision
	checked, stop bool
}

// replyOf reads a retry that carries the door's state and the form's answer. ok is false
// when the call is not such a retry, or the answer is missing (then the call runs as sent
// and is asked again).
func replyOf(params *mcp.CallToolParamsRaw) (r reply, ok bool) {
	if params.RequestState == "" {
		return reply{}, false
	}
	requestID, ok := decodeState(params.RequestState)
	if !ok {
		return reply{}, false
	}
	r.decision.RequestID = requestID
	if a, _ := params.InputResponses[approvalInput].(*mcp.ElicitResult); a != nil {
		r.checked = a.Action == "accept" && a.Content["next"] == "check"
		r.stop = !r.checked
		return r, true
	}
	if a, _ := params.InputResponses[confirmInput].(*mcp.ElicitResult); a != nil {
		r.decision.Decline = a.Action != "accept" || a.Content["decision"] != "approve"
		return r, true
	}
	return reply{}, false
}

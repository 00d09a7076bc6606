package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-hq/switchboard/tools"
)

// An approval's status (a continuation of kind approve), carried as an elicitation like a
// write's confirmation (confirm.go): a call the owner's spend policy sent to a human
// (APPROVAL_REQUIRED, APPROVAL_PENDING) is shown to the host's user, who is told the owner
// decides in the portal and may check again. Checking is the same call again with a Decision
// that never declines; the decision itself is never the host's (only a portal session
// decides). Unasked, or stopped, the call answers as it did.

// approvalInput is the key of the approval's input request.
const approvalInput = "approval"

// maxApprovalChecks bounds how often one call asks its session's user to check again.
const maxApprovalChecks = 20

func approvalForm(c *tools.Continuation, pending bool) *mcp.ElicitParams {
	var b strings.Builder
	if pending {
		b.WriteString("Still waiting: the account's owner has not decided yet.\n\n")
	}
	b.WriteString(strings.Join(c.Summary, "\n"))
	fmt.Fprintf(&b, "\n\nThe owner approves or declines it in the Switchboard portal, under Approvals, before %s. Check again once they have.", c.ExpiresAt.UTC().Format("15:04 UTC"))
	return &mcp.ElicitParams{
		Mode:    "form",
		Message: b.String(),
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{"next": map[string]any{
				"type": "string", "title": "Next",
				"oneOf": []map[string]any{
					{"const": "check", "title": "Check again: send it if the owner approved it"},
					{"const": "stop", "title": "Stop waiting for now"},
				},
			}},
			"required": []string{"next"},
		},
	}
}

// approvalQuestion is the input_required result (2026-07-28) that carries the form.
func approvalQuestion(c *tools.Continuation, pending bool) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{approvalInput: approvalForm(c, pending)},
		RequestState:  encodeState(c.RequestID),
	}
}

// stoppedWaiting is the answer to a user who stopped waiting for an approval (2026-07-28): the
// call is not asked again, so nothing is sent or charged even if the owner approved it
// meanwhile; the agent may still check later with confirmRequestId.
func stoppedWaiting(requestID string) *tools.Error {
	return tools.Errorf(tools.CodeApprovalPending, "the user stopped waiting for the owner's approval of request %s: nothing was sent or charged. "+
		"Once the owner has decided in the portal, call again with the same confirmRequestId (ask the user first)", requestID).
		WithDetails(map[string]any{"requestId": requestID, "stopped": true})
}

// waitApproval asks the session's user, while the call waits for approval, whether to check
// again, and calls again each time they do: it returns the last answer (the dispatched call
// once the owner approved; APPROVAL_PENDING when the user stopped or no answer came).
func waitApproval(ctx, asking context.Context, req *mcp.CallToolRequest, c *tools.Continuation, again func() (any, *tools.Error)) (any, *tools.Error, bool) {
	ctx, cancel := context.WithDeadline(ctx, c.ExpiresAt)
	defer cancel()
	if asking != nil {
		defer context.AfterFunc(asking, cancel)()
	}
	var out any
	var e *tools.Error
	for i := range maxApprovalChecks {
		r, err := req.Session.Elicit(ctx, approvalForm(c, i > 0))
		if err != nil || r == nil || r.Action != "accept" || r.Content["next"] != "check" {
			return out, e, i > 0
		}
		out, e = again()
		if e == nil || e.Code != tools.CodeApprovalPending {
			return out, e, true
		}
	}
	return out, e, true
}

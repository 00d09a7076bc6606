package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-hq/switchboard/tools"
)

// An approval's status, carried as an elicitation like a write's confirmation (confirm.go):
// a call the owner's spend policy sent to a human (APPROVAL_REQUIRED, APPROVAL_PENDING) is
// shown to the host's user, who is told the owner decides in the portal and may check again.
// Checking is the same call again with confirmRequestId; the decision itself is never the
// host's (only a portal session decides). Unasked, or stopped, the call answers as it did.

// approvalInput is the key of the approval's input request.
const approvalInput = "approval"

// maxApprovalChecks bounds how often one call asks its session's user to check again.
const maxApprovalChecks = 20

// approvalAsk is what the door reads from an APPROVAL_REQUIRED or APPROVAL_PENDING answer.
type approvalAsk struct {
	RequestID string            `json:"requestId"`
	Handle    string            `json:"handle"`
	Rule      string            `json:"rule"`
	Charge    map[string]string `json:"charge"`
	ExpiresAt time.Time         `json:"expiresAt"`
}

func readApproval(e *tools.Error) (approvalAsk, bool) {
	if e == nil || (e.Code != tools.CodeApprovalRequired && e.Code != tools.CodeApprovalPending) {
		return approvalAsk{}, false
	}
	raw, err := json.Marshal(e.Details)
	var a approvalAsk
	if err != nil || json.Unmarshal(raw, &a) != nil || a.RequestID == "" || a.ExpiresAt.IsZero() {
		return approvalAsk{}, false
	}
	return a, true
}

func approvalForm(a approvalAsk, pending bool) *mcp.ElicitParams {
	var b strings.Builder
	if pending {
		b.WriteString("Still waiting: the account's owner has not decided yet.\n\n")
	}
	what := "this call"
	if a.Handle != "" { // APPROVAL_PENDING's details carry the handle and charge once dispatch sends them
		what += " of " + a.Handle
	}
	fmt.Fprintf(&b, "The account's spend policy sends %s to its owner for approval (%s). Nothing was sent or charged.\n", what, a.Rule)
	if m := a.Charge["maxChargeUsd"]; m != "" {
		fmt.Fprintf(&b, "It may cost up to %s USD.\n", m)
	}
	fmt.Fprintf(&b, "\nThe owner approves or declines it in the Switchboard portal, under Approvals, before %s. Check again once they have.", a.ExpiresAt.UTC().Format("15:04 UTC"))
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

// approvalElicitation is the input_required result (2026-07-28) that carries the form.
func approvalElicitation(a approvalAsk, pending bool) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{approvalInput: approvalForm(a, pending)},
		RequestState:  encodeState(a.RequestID),
	}
}

// checkAgain reads a retry that answers the approval's form: again is whether the user asked
// to check (the call then runs again with confirmRequestId, never a new request, and asks
// again while it is pending); any other answer stops waiting without calling (stoppedWaiting).
func checkAgain(params *mcp.CallToolParamsRaw) (requestID string, again, ok bool) {
	if params.RequestState == "" {
		return "", false, false
	}
	r, _ := params.InputResponses[approvalInput].(*mcp.ElicitResult)
	if r == nil {
		return "", false, false
	}
	requestID, ok = decodeState(params.RequestState)
	return requestID, r.Action == "accept" && r.Content["next"] == "check", ok
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
func waitApproval(ctx, asking context.Context, req *mcp.CallToolRequest, a approvalAsk, again func(requestID string) (any, *tools.Error)) (any, *tools.Error, bool) {
	ctx, cancel := context.WithDeadline(ctx, a.ExpiresAt)
	defer cancel()
	if asking != nil {
		defer context.AfterFunc(asking, cancel)()
	}
	var out any
	var e *tools.Error
	for i := range maxApprovalChecks {
		r, err := req.Session.Elicit(ctx, approvalForm(a, i > 0))
		if err != nil || r == nil || r.Action != "accept" || r.Content["next"] != "check" {
			return out, e, i > 0
		}
		out, e = again(a.RequestID)
		if e == nil || e.Code != tools.CodeApprovalPending {
			return out, e, true
		}
	}
	return out, e, true
}

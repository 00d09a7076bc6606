package mcpserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-hq/switchboard/tools"
)

// A write's confirmation (a continuation of kind confirm), carried as an elicitation when the
// client declared that capability (MCP 2026-07-28: inside an input_required result, the multi
// round-trip pattern; earlier revisions on a session, stdio or HTTP (sessions.go): an
// elicitation/create request on the call's session, sent by the door; when it gets no answer
// the call answers CONFIRMATION_REQUIRED, the round trip that needs no session). The user's
// answer is the same call again with a Decision on the quote: approved, or declined (anything
// else). Clients without elicitation, and REST, keep the confirmRequestId round trip.

// confirmInput is the key of the one input request the door sends.
const confirmInput = "confirm"

// confirmState is the door's requestState: which quote the elicitation was about. It needs
// no integrity protection: it names a quote of the caller's own account that the kernel
// checks again (account, intent, args, expiry) exactly as it checks a confirmRequestId the
// client sends itself, so a tampered state can do nothing a client could not do directly.
type confirmState struct {
	V         int    `json:"v"`
	RequestID string `json:"requestId"`
}

func encodeState(requestID string) string {
	b, _ := json.Marshal(confirmState{V: 1, RequestID: requestID})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeState(s string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	var st confirmState
	if err != nil || json.Unmarshal(b, &st) != nil || st.V != 1 || st.RequestID == "" {
		return "", false
	}
	return st.RequestID, true
}

// canElicit reports whether the client of this call takes a form elicitation: it declared
// the elicitation capability (with form, or with no mode, which means form), and the call
// is on 2026-07-28 or later (input_required) or on a session that carries server requests
// (stdio, an HTTP session; a stateless HTTP request of an earlier revision has no
// capabilities at all).
func canElicit(req *mcp.CallToolRequest) bool {
	if req.Session == nil {
		return false
	}
	p := req.Session.InitializeParams()
	if p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return false
	}
	e := p.Capabilities.Elicitation
	return e.Form != nil || e.URL == nil
}

// confirmForm is the form that shows the quote's summary, with approve and decline.
func confirmForm(c *tools.Continuation) *mcp.ElicitParams {
	return &mcp.ElicitParams{
		Mode:    "form",
		Message: confirmMessage(c),
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{"decision": map[string]any{
				"type": "string", "title": "Your decision",
				"oneOf": []map[string]any{
					{"const": "approve", "title": "Approve: send it now, for at most the charge shown"},
					{"const": "decline", "title": "Decline: send nothing"},
				},
			}},
			"required": []string{"decision"},
		},
	}
}

// confirmQuestion is the input_required result (2026-07-28) that carries the form.
func confirmQuestion(c *tools.Continuation) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{confirmInput: confirmForm(c)},
		RequestState:  encodeState(c.RequestID),
	}
}

// multiRoundTrip reports whether the call's revision carries input requests inside results
// (2026-07-28 and later); earlier ones are asked by a server request on their session.
func multiRoundTrip(req *mcp.CallToolRequest) bool {
	p := req.Session.InitializeParams()
	return p == nil || p.ProtocolVersion >= statelessRevision
}

// confirmOnSession sends the form as an elicitation/create request on the call's session
// (stdio, or an HTTP session of an earlier revision) and waits for the answer while the quote
// is valid. asked is false when no answer came: the host failed the request, the session
// ended or moved to another replica, the quote expired, or asking ended (the replica drains).
// The call then answers CONFIRMATION_REQUIRED as it would without elicitation, and the quote
// can still be confirmed by confirmRequestId.
func confirmOnSession(ctx, asking context.Context, req *mcp.CallToolRequest, c *tools.Continuation) (approved, asked bool) {
	ctx, cancel := context.WithDeadline(ctx, c.ExpiresAt)
	defer cancel()
	if asking != nil {
		defer context.AfterFunc(asking, cancel)()
	}
	r, err := req.Session.Elicit(ctx, confirmForm(c))
	if err != nil || r == nil {
		return false, false
	}
	return r.Action == "accept" && r.Content["decision"] == "approve", true
}

// confirmMessage is the quote's summary, then how to answer it.
func confirmMessage(c *tools.Continuation) string {
	return strings.Join(c.Summary, "\n") + "\n\nApprove to send it now, or decline to send nothing (nothing is reserved until you approve). " +
		"This quote expires at " + c.ExpiresAt.UTC().Format("15:04 UTC") + "."
}

package mcpserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-hq/switchboard/tools"
)

// A write's confirmation, carried as an elicitation when the client declared that capability
// (MCP 2026-07-28: inside an input_required result, the multi round-trip pattern; earlier
// revisions on a session, stdio or HTTP (sessions.go): an elicitation/create request on the
// call's session, sent by the door; when it gets no answer the call answers
// CONFIRMATION_REQUIRED, the round trip that needs no session). The kernel is
// unchanged: the quote is still a CONFIRMATION_REQUIRED answer with its confirmRequestId, and
// the door turns the user's answer into the same call again with confirmRequestId (approve)
// or with confirmRequestId and decline (anything else). Clients without elicitation, and
// REST, keep the confirmRequestId round trip.

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

// answered reads a retry that carries the door's state: the quote's requestId, and whether
// the user approved it. ok is false when the call is not such a retry, or the answer is
// missing (then the call runs as sent and is asked again).
func answered(params *mcp.CallToolParamsRaw) (requestID string, approved, ok bool) {
	if params.RequestState == "" {
		return "", false, false
	}
	requestID, ok = decodeState(params.RequestState)
	if !ok {
		return "", false, false
	}
	r, _ := params.InputResponses[confirmInput].(*mcp.ElicitResult)
	if r == nil {
		return "", false, false
	}
	return requestID, r.Action == "accept" && r.Content["decision"] == "approve", true
}

// withDecision returns the call's arguments with the user's decision on quote requestID.
func withDecision(args json.RawMessage, requestID string, approved bool) (json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	if len(args) > 0 && string(args) != "null" {
		if err := json.Unmarshal(args, &m); err != nil {
			return nil, err
		}
	}
	m["confirmRequestId"], _ = json.Marshal(requestID)
	// The quote's idempotency key answers the quote again; the confirmation needs none (it
	// dispatches its quote once and answers that outcome after), and with the key it would be
	// another body under the same key, a CONFLICT.
	delete(m, "idempotencyKey")
	delete(m, "decline")
	if !approved {
		m["decline"] = json.RawMessage("true")
	}
	return json.Marshal(m)
}

// quote is what the door reads from a CONFIRMATION_REQUIRED answer's details.
type quote struct {
	RequestID         string          `json:"requestId"`
	Handle            string          `json:"handle"`
	Category          string          `json:"category"`
	Args              json.RawMessage `json:"args"`
	RoutedValueUsd    *json.Number    `json:"routedValueUsd"`
	PartnerFeeUsd     json.Number     `json:"partnerFeeUsd"`
	PlatformFeeUsd    json.Number     `json:"platformFeeUsd"`
	GasEstimateUsd    json.Number     `json:"gasEstimateUsd"`
	GasChain          string          `json:"gasChain"`
	InfrastructureUsd json.Number     `json:"infrastructureUsd"`
	TotalUsd          json.Number     `json:"totalUsd"`
	MaxChargeUsd      json.Number     `json:"maxChargeUsd"`
	ExpiresAt         time.Time       `json:"expiresAt"`
}

// readQuote reads the quote of a CONFIRMATION_REQUIRED answer; false when it is not one the
// door can show (then the answer goes out as it is).
func readQuote(e *tools.Error) (quote, bool) {
	raw, err := json.Marshal(e.Details)
	var q quote
	if err != nil || json.Unmarshal(raw, &q) != nil || q.RequestID == "" || q.MaxChargeUsd == "" {
		return quote{}, false
	}
	return q, true
}

// confirmForm is the form that shows the itemised charge, with approve and decline.
func confirmForm(q quote) *mcp.ElicitParams {
	return &mcp.ElicitParams{
		Mode:    "form",
		Message: confirmMessage(q),
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{"decision": map[string]any{
				"type": "string", "title": "Your decision",
				"oneOf": []map[string]any{
					{"const": "approve", "title": fmt.Sprintf("Approve: send it now; at most %s USD is charged", q.MaxChargeUsd)},
					{"const": "decline", "title": "Decline: send nothing"},
				},
			}},
			"required": []string{"decision"},
		},
	}
}

// elicitation is the input_required result (2026-07-28) that carries the form.
func elicitation(q quote) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{confirmInput: confirmForm(q)},
		RequestState:  encodeState(q.RequestID),
	}
}

// multiRoundTrip reports whether the call's revision carries input requests inside results
// (2026-07-28 and later); earlier ones are asked by a server request on their session.
func multiRoundTrip(req *mcp.CallToolRequest) bool {
	p := req.Session.InitializeParams()
	return p == nil || p.ProtocolVersion >= statelessRevision
}

// ask sends the form as an elicitation/create request on the call's session (stdio, or an
// HTTP session of an earlier revision) and waits for the answer while the quote is valid.
// asked is false when no answer came: the host failed the request, the session ended or
// moved to another replica, the quote expired, or asking ended (the replica drains). The call then answers CONFIRMATION_REQUIRED
// as it would without elicitation, and the quote can still be confirmed by confirmRequestId.
func ask(ctx, asking context.Context, req *mcp.CallToolRequest, q quote) (approved, asked bool) {
	ctx, cancel := context.WithDeadline(ctx, q.ExpiresAt)
	defer cancel()
	if asking != nil {
		defer context.AfterFunc(asking, cancel)()
	}
	r, err := req.Session.Elicit(ctx, confirmForm(q))
	if err != nil || r == nil {
		return false, false
	}
	return r.Action == "accept" && r.Content["decision"] == "approve", true
}

func confirmMessage(q quote) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s wants to run a %s call", q.Handle, q.Category)
	if q.RoutedValueUsd != nil {
		fmt.Fprintf(&b, " routing %s USD", *q.RoutedValueUsd)
	}
	fmt.Fprintf(&b, " with these arguments:\n%s\n\nCharge, in one payment:\n", q.Args)
	fmt.Fprintf(&b, "- partner fee: up to %s USD\n", q.PartnerFeeUsd)
	fmt.Fprintf(&b, "- platform fee: %s USD\n", q.PlatformFeeUsd)
	if q.GasChain != "" {
		fmt.Fprintf(&b, "- gas on %s: about %s USD\n", q.GasChain, q.GasEstimateUsd)
	}
	fmt.Fprintf(&b, "- infrastructure: %s USD\n", q.InfrastructureUsd)
	fmt.Fprintf(&b, "Total: %s USD. At most %s USD (maxChargeUsd) is reserved when you approve.\n\n", q.TotalUsd, q.MaxChargeUsd)
	fmt.Fprintf(&b, "Approve to send it now, or decline to send nothing (nothing is reserved until you approve). This quote expires at %s.",
		q.ExpiresAt.UTC().Format("15:04 UTC"))
	return b.String()
}

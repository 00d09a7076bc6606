package payments

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-hq/switchboard/tools"
)

// Paying a tool of a paid MCP server (x402's MCP transport): x402_fetch with mcpTool connects
// to the server at url over Streamable HTTP (through the partner client: the same SSRF guard,
// TLS and caps), calls the tool, and when its result is an error whose structuredContent is
// an x402 PaymentRequired, takes an offer exactly as for a 402 (judged, recorded, signed by
// the same ticket), calls the tool again with the PaymentPayload in _meta["x402/payment"], and
// answers the tool's result as the body, with the settlement of _meta["x402/payment-response"].

// FetchMCPTool names the MCP tool x402_fetch calls, and its arguments.
type FetchMCPTool struct {
	Name      string         `json:"name" jsonschema:"minLength=1,maxLength=128" jsonschema_description:"the tool's name on that server"`
	Arguments map[string]any `json:"arguments,omitempty" jsonschema_description:"the tool's arguments"`
}

// mcpCall is one MCP tool being paid for: its session, kept for the paid call.
type mcpCall struct {
	f       *Fetches
	session *mcp.ClientSession
	tool    FetchMCPTool
}

func (m *mcpCall) close() { _ = m.session.Close() }

// headerTransport adds the caller's headers to every request of the MCP session.
type headerTransport struct {
	base    http.RoundTripper
	headers FetchHeaders
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	return h.base.RoundTrip(r)
}

// callMCP connects and calls the tool unpaid: its result (out, the session closed) when it
// asks for nothing, else the session and the offers of its PaymentRequired.
func (f *Fetches) callMCP(ctx context.Context, a ask) (*mcpCall, *FetchOutput, offered, bool, error) {
	if a.in.Body != "" || a.method != "" && a.method != "GET" && a.method != "POST" {
		return nil, nil, offered{}, false, tools.Errorf(tools.CodeBadInput, "mcpTool: method and body are not used when calling an MCP tool (its arguments are); remove them")
	}
	hc := *f.cfg.Client.HTTPClient()
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc.Transport = headerTransport{base: base, headers: a.in.Headers}
	client := mcp.NewClient(&mcp.Implementation{Name: "switchboard-x402", Version: "1"}, nil)
	cctx, cancel := context.WithTimeout(ctx, f.cfg.Timeout)
	defer cancel()
	session, err := client.Connect(cctx, &mcp.StreamableClientTransport{Endpoint: a.u.String(), HTTPClient: &hc, MaxRetries: -1, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return nil, nil, offered{}, false, tools.Errorf(tools.CodeUpstream, "the MCP server at %s did not start a session (%v); nothing was paid", a.u.Host, err).Wrap(err)
	}
	m := &mcpCall{f: f, session: session, tool: *a.in.MCPTool}
	res, err := m.call(ctx, nil)
	if err != nil {
		m.close()
		return nil, nil, offered{}, false, tools.Errorf(tools.CodeUpstream, "the MCP tool %s at %s did not answer (%v); nothing was paid", m.tool.Name, a.u.Host, err).Wrap(err)
	}
	of, asks := paymentRequired(res)
	if !asks {
		m.close()
		out := toolAnswer(res)
		return nil, &out, offered{}, false, nil
	}
	return m, nil, of, true, nil
}

// call calls the tool, with meta as its _meta.
func (m *mcpCall) call(ctx context.Context, meta mcp.Meta) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(ctx, m.f.cfg.Timeout)
	defer cancel()
	return m.session.CallTool(ctx, &mcp.CallToolParams{Name: m.tool.Name, Arguments: m.tool.Arguments, Meta: meta})
}

// pay calls the tool again with the payment in _meta["x402/payment"].
func (m *mcpCall) pay(ctx context.Context, of offered, o offer, pay *Payment) (delivered, bool, error) {
	_, pp := paymentPayload(of, o, pay)
	res, err := m.call(ctx, mcp.Meta{"x402/payment": pp})
	if err != nil {
		return delivered{}, true, err
	}
	d := delivered{out: toolAnswer(res), status: http.StatusOK}
	st, hasSettle := settledMeta(res)
	d.st = st
	_, again := paymentRequired(res)
	d.refused = again || hasSettle && !st.Success
	return d, true, nil
}

// paymentRequired reads an x402 PaymentRequired from an error result's structuredContent (or,
// without one, its first text content, which the transport repeats it in).
func paymentRequired(res *mcp.CallToolResult) (offered, bool) {
	if !res.IsError {
		return offered{}, false
	}
	var raw []byte
	if res.StructuredContent != nil {
		raw, _ = json.Marshal(res.StructuredContent)
	} else if len(res.Content) > 0 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			raw = []byte(tc.Text)
		}
	}
	if len(raw) == 0 || len(raw) > maxOfferBytes {
		return offered{}, false
	}
	of, ok, err := readOffers(http.Header{}, raw)
	if err != nil || !ok || len(of.Accepts) == 0 {
		return offered{}, false
	}
	return of, true
}

// settledMeta reads the settlement of _meta["x402/payment-response"].
func settledMeta(res *mcp.CallToolResult) (settled, bool) {
	v, ok := res.Meta["x402/payment-response"]
	if !ok {
		return settled{}, false
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return settled{}, false
	}
	var s settled
	if json.Unmarshal(raw, &s) != nil {
		return settled{}, false
	}
	return s, true
}

// toolAnswer is a tool's result as x402_fetch answers it: status 200 (the server answered),
// the result's JSON as the body (cut at 1 MiB as any body).
func toolAnswer(res *mcp.CallToolResult) FetchOutput {
	raw, err := json.Marshal(res)
	if err != nil {
		raw = fmt.Appendf(nil, `{"error":%q}`, err.Error())
	}
	h := http.Header{"Content-Type": {"application/json"}}
	return relay(http.StatusOK, h, raw)
}

func derefFetch(out *FetchOutput) FetchOutput {
	if out == nil {
		return FetchOutput{}
	}
	return *out
}

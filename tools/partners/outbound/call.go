package outbound

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/tools/jsonlimit"
	"github.com/switchboard-hq/switchboard/tools/tracing"
	"go.opentelemetry.io/otel/attribute"
)

// Target is where and how to call a partner.
type Target struct {
	Endpoint string          // the intent's toolEndpoint
	Binding  signing.Binding // "" means REST
	ToolName string          // MCP_HTTP: the tool to call, exactly the intent's @handle
	Timeout  time.Duration   // per call; 0 means DefaultTimeout
}

func (t Target) timeout() time.Duration {
	if t.Timeout > 0 {
		return t.Timeout
	}
	return DefaultTimeout
}

func (t Target) mcp() bool { return t.Binding == signing.BindingMCPHTTP }

// ResponseEnvelope is the partner's answer (spec "Response envelope").
type ResponseEnvelope struct {
	Success           bool            `json:"success"`
	Result            json.RawMessage `json:"result,omitempty" jsonschema_description:"the partner's free-form JSON result (success true)"`
	Error             *EnvelopeError  `json:"error,omitempty" jsonschema_description:"the failure (success false)"`
	ProviderCostMicro int64           `json:"providerCostMicro" jsonschema_description:"the partner's cost in micro-USD; 0 when omitted"`
	GasCostMicro      *int64          `json:"gasCostMicro,omitempty" jsonschema_description:"the network gas the call's on-chain step actually cost, in micro-USD (write categories); omitted: settled at the estimate"`
}

// EnvelopeError is the error of a failure envelope.
type EnvelopeError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Result is what came back from one signed call. A call that got an HTTP answer always
// has a Result; Envelope is nil exactly when ParseError says why the answer was not a
// response envelope.
type Result struct {
	Status     int               // HTTP status (for MCP_HTTP: of the tools/call request)
	Latency    time.Duration     // from sending to the end of the body
	Body       []byte            // REST: the response body; MCP_HTTP: the envelope JSON taken from the tool result
	Envelope   *ResponseEnvelope // the parsed response envelope
	ParseError string            // why Body is not a response envelope
}

// OK reports whether the call succeeded by the spec's rules: a 2xx answer carrying a
// response envelope with success true.
func (r *Result) OK() bool {
	return r.Envelope != nil && r.Envelope.Success && r.Status >= 200 && r.Status < 300
}

// IsTimeout reports whether err is a timeout (the call's deadline or a network timeout).
func IsTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Call sends one signed call: for REST a POST of the signed envelope with the signature
// headers; for MCP_HTTP an MCP tools/call of t.ToolName over Streamable HTTP with the
// signed fields in headers. f.RequestID must be set and reused for a retry of the same
// invocation. The error is non-nil only when no answer came (timeout, network, TLS, SSRF
// guard: see IsTimeout and IsBlocked); an answer that is not a valid envelope is a Result
// with ParseError.
func (c *Client) Call(ctx context.Context, t Target, f signing.CallFields) (res *Result, err error) {
	if c.signer == nil {
		return nil, errors.New("outbound: client has no signer")
	}
	if f.RequestID == "" {
		return nil, errors.New("outbound: call has no requestId")
	}
	// One span per attempt; the transport sends its traceparent to the partner.
	ctx, span := tracing.Client(ctx, "partner.call", attribute.String("server.address", hostOf(t.Endpoint)),
		attribute.Bool("switchboard.partner.mcp", t.mcp()), attribute.String("switchboard.request_id", f.RequestID))
	defer func() {
		if res != nil {
			span.SetAttributes(attribute.Int("http.response.status_code", res.Status))
		}
		tracing.End(span, err)
	}()
	ctx, cancel := context.WithTimeout(ctx, t.timeout())
	defer cancel()
	if t.mcp() {
		rec := &recorder{base: c.transport}
		return c.callMCP(ctx, t, signing.NewMCPRoundTripper(c.signer, rec), rec, &f)
	}
	return c.callREST(ctx, t, f)
}

func (c *Client) callREST(ctx context.Context, t Target, f signing.CallFields) (*Result, error) {
	hc := c.newHTTPClient(signing.NewRESTRoundTripper(c.signer, f, c.transport))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.Endpoint, http.NoBody)
	if err != nil {
		return nil, &URLError{"not a valid URL: " + err.Error()}
	}
	start := c.now()
	resp, err := hc.Do(req)
	if err != nil {
		return nil, unwrapURLError(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	res := &Result{Status: resp.StatusCode, Latency: c.now().Sub(start), Body: body}
	switch {
	case errors.Is(err, ErrBodyTooLarge):
		res.ParseError = fmt.Sprintf("the response body is over %d bytes", c.maxBody)
		return res, nil
	case err != nil:
		return nil, fmt.Errorf("read response: %w", err)
	}
	res.Envelope, res.ParseError = ParseResponse(body)
	return res, nil
}

// hostOf is an endpoint's host, for spans (never its path or query).
func hostOf(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return ""
	}
	return u.Host
}

// unwrapURLError drops net/http's *url.Error wrapper ("Post \"https://...\": ...") so
// messages name the cause once.
func unwrapURLError(err error) error {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) && strings.HasPrefix(err.Error(), "Post ") {
		if inner := ue.Unwrap(); inner != nil {
			return inner
		}
	}
	return err
}

// callMCP connects to t.Endpoint with rt and calls the tool. fields nil means an unsigned
// call (the probe); otherwise the context carries them for the signing round tripper, for
// the initialize requests as well as the call.
func (c *Client) callMCP(ctx context.Context, t Target, rt http.RoundTripper, rec *recorder, fields *signing.CallFields) (*Result, error) {
	start := c.now()
	var args json.RawMessage
	if fields != nil {
		ctx = signing.WithCall(ctx, *fields)
		args = fields.Args
	}
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "switchboard", Version: "1"}, nil)
	transport := &mcp.StreamableClientTransport{
		Endpoint:             t.Endpoint,
		HTTPClient:           c.newHTTPClient(rt),
		DisableStandaloneSSE: true, // no call rides on it, so nothing would sign it
		MaxRetries:           -1,
		MaxEventSize:         int(c.maxBody),
	}
	result, err := func() (*mcp.CallToolResult, error) {
		cs, err := client.Connect(ctx, transport, nil)
		if err != nil {
			return nil, fmt.Errorf("MCP initialize: %w", err)
		}
		defer cs.Close()
		return cs.CallTool(ctx, &mcp.CallToolParams{Name: t.ToolName, Arguments: args})
	}()
	res := &Result{Latency: c.now().Sub(start)}
	last, answered := rec.call()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !answered {
			return nil, networkCause(err)
		}
		res.Status = last.status
		res.ParseError = err.Error()
		if errors.Is(err, ErrBodyTooLarge) {
			res.ParseError = fmt.Sprintf("the response is over %d bytes", c.maxBody)
		}
		return res, nil
	}
	res.Status = last.status
	res.Body, err = envelopeOfTool(result)
	if err != nil {
		res.ParseError = err.Error()
		return res, nil
	}
	res.Envelope, res.ParseError = ParseResponse(res.Body)
	return res, nil
}

// networkCause digs the transport error out of the MCP client's wrapping, so IsBlocked and
// IsTimeout see it.
func networkCause(err error) error {
	var b *BlockedError
	if errors.As(err, &b) {
		return b
	}
	return err
}

// envelopeOfTool finds the response envelope in an MCP tool result: its structuredContent,
// or else its only content, a JSON text.
func envelopeOfTool(r *mcp.CallToolResult) ([]byte, error) {
	if r.StructuredContent != nil {
		raw, err := json.Marshal(r.StructuredContent)
		if err != nil {
			return nil, fmt.Errorf("structuredContent: %w", err)
		}
		return raw, nil
	}
	if len(r.Content) == 1 {
		if tc, ok := r.Content[0].(*mcp.TextContent); ok {
			return []byte(tc.Text), nil
		}
	}
	what := "a tool result"
	if r.IsError {
		what = "an error tool result (isError)"
	}
	return nil, fmt.Errorf("the partner returned %s with neither structuredContent nor a single JSON text content holding the response envelope", what)
}

// ParseResponse checks that body is a response envelope: a JSON object with a boolean
// success; result present when success is true; error.code and error.message strings when
// it is false; providerCostMicro, if present, a non-negative integer. Other fields are
// allowed. On failure it returns why.
func ParseResponse(body []byte) (*ResponseEnvelope, string) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, "the response body is empty; a partner answers with a JSON response envelope {success, result | error}"
	}
	if err := jsonlimit.Depth(body); err != nil {
		return nil, "the response is " + err.Error()
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var m map[string]json.RawMessage
	if err := dec.Decode(&m); err != nil {
		return nil, "the response is not a JSON object: " + err.Error()
	}
	if dec.More() {
		return nil, "the response has data after the JSON object"
	}
	env := &ResponseEnvelope{}
	raw, ok := m["success"]
	if !ok {
		return nil, `the response has no "success" field (boolean)`
	}
	if err := json.Unmarshal(raw, &env.Success); err != nil {
		return nil, `"success" must be true or false`
	}
	if env.Success {
		r, ok := m["result"]
		if !ok {
			return nil, `success is true but there is no "result"`
		}
		env.Result = r
	} else {
		raw, ok := m["error"]
		if !ok {
			return nil, `success is false but there is no "error" {code, message}`
		}
		var e struct {
			Code    *string `json:"code"`
			Message *string `json:"message"`
		}
		if err := json.Unmarshal(raw, &e); err != nil || e.Code == nil || e.Message == nil || *e.Code == "" {
			return nil, `"error" must be an object with a non-empty string "code" and a string "message"`
		}
		env.Error = &EnvelopeError{Code: *e.Code, Message: *e.Message}
	}
	if raw, ok := m["providerCostMicro"]; ok && string(raw) != "null" {
		var n json.Number
		if err := json.Unmarshal(raw, &n); err != nil {
			return nil, `"providerCostMicro" must be an integer number of micro-USD`
		}
		v, err := n.Int64()
		if err != nil || v < 0 {
			return nil, `"providerCostMicro" must be a non-negative integer number of micro-USD`
		}
		env.ProviderCostMicro = v
	}
	if raw, ok := m["gasCostMicro"]; ok && string(raw) != "null" {
		var n json.Number
		if err := json.Unmarshal(raw, &n); err != nil {
			return nil, `"gasCostMicro" must be an integer number of micro-USD`
		}
		v, err := n.Int64()
		if err != nil || v < 0 {
			return nil, `"gasCostMicro" must be a non-negative integer number of micro-USD`
		}
		env.GasCostMicro = &v
	}
	return env, ""
}

// recorder notes the JSON-RPC method and HTTP status of every POST, so the MCP_HTTP probe
// and call can tell a 401 on tools/call from a network error.
type recorder struct {
	base http.RoundTripper
	mu   sync.Mutex
	seen []exchange
}

type exchange struct {
	method string
	status int
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	method := ""
	if req.Method == http.MethodPost && req.Body != nil && req.Body != http.NoBody {
		body, err := io.ReadAll(io.LimitReader(req.Body, 4<<20))
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		var m struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(body, &m) == nil {
			method = m.Method
		}
	}
	resp, err := r.base.RoundTrip(req)
	if err == nil && req.Method == http.MethodPost {
		r.mu.Lock()
		r.seen = append(r.seen, exchange{method, resp.StatusCode})
		r.mu.Unlock()
	}
	return resp, err
}

// call returns the tools/call exchange if there was one, else the last POST.
func (r *recorder) call() (exchange, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.seen) - 1; i >= 0; i-- {
		if r.seen[i].method == "tools/call" {
			return r.seen[i], true
		}
	}
	if len(r.seen) == 0 {
		return exchange{}, false
	}
	return r.seen[len(r.seen)-1], true
}

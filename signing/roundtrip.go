package signing

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// CallFields are the per-invocation envelope fields. Timestamp and signature are produced
// at every HTTP round trip.
type CallFields struct {
	RequestID          string
	IntentDefinitionID string
	UserID             string
	Args               json.RawMessage // a JSON object; empty means {}
}

type callKey struct{}

// WithCall returns a context carrying the fields of one partner invocation, for the
// RoundTripper to sign with. For MCP_HTTP pass it to ClientSession.CallTool (the go-sdk
// builds the HTTP request of the call with that context); pass it to
// Client.Connect as well if the partner should also see signed initialize requests.
func WithCall(ctx context.Context, f CallFields) context.Context {
	return context.WithValue(ctx, callKey{}, f)
}

// CallFromContext returns the fields stored by WithCall.
func CallFromContext(ctx context.Context) (CallFields, bool) {
	f, ok := ctx.Value(callKey{}).(CallFields)
	return f, ok
}

// RoundTripper is an http.RoundTripper that signs every request it sends, so that a retry
// or a re-send carries a fresh timestamp and signature with the same requestId.
//
// For BindingREST it replaces the request body with the signed envelope and sets the
// headers of SetHeaders. The fields come from Call when set, else from the request context
// (WithCall); a request without fields fails.
//
// For BindingMCPHTTP it keeps the body (the MCP client's JSON-RPC message) and, when the
// request context carries CallFields (WithCall), sets the X-Service-* headers, the
// Idempotency-Key and X-Service-User-Id. The signed args are the params.arguments of the
// body when it is a JSON-RPC tools/call (exactly what the partner will verify against),
// else CallFields.Args. Requests whose context carries no CallFields pass unsigned. Use it
// in the HTTPClient of an mcp.StreamableClientTransport with DisableStandaloneSSE set (the
// standalone GET stream would carry no call).
type RoundTripper struct {
	Signer  *Signer
	Binding Binding
	Call    *CallFields       // fixed fields (REST); nil means the request context
	Base    http.RoundTripper // nil means http.DefaultTransport
}

// NewRESTRoundTripper returns a RoundTripper that POSTs the signed envelope of call.
func NewRESTRoundTripper(s *Signer, call CallFields, base http.RoundTripper) *RoundTripper {
	return &RoundTripper{Signer: s, Binding: BindingREST, Call: &call, Base: base}
}

// NewMCPRoundTripper returns a RoundTripper that signs MCP_HTTP requests from the
// CallFields of their context.
func NewMCPRoundTripper(s *Signer, base http.RoundTripper) *RoundTripper {
	return &RoundTripper{Signer: s, Binding: BindingMCPHTTP, Base: base}
}

func (t *RoundTripper) base() http.RoundTripper {
	if t.Base != nil {
		return t.Base
	}
	return http.DefaultTransport
}

// RoundTrip signs req and sends it with the base transport.
func (t *RoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	closeBody := func() {
		if req.Body != nil {
			req.Body.Close()
		}
	}
	var fields CallFields
	if t.Call != nil {
		fields = *t.Call
	} else if f, ok := CallFromContext(req.Context()); ok {
		fields = f
	} else if t.Binding == BindingMCPHTTP {
		return t.base().RoundTrip(req)
	} else {
		closeBody()
		return nil, errors.New("signing: no CallFields for the request (use WithCall or NewRESTRoundTripper)")
	}

	var body []byte
	if t.Binding == BindingMCPHTTP && req.Body != nil && req.Body != http.NoBody {
		var err error
		body, err = io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("signing: read MCP request body: %w", err)
		}
		if args, ok := toolCallArguments(body); ok {
			fields.Args = args
		}
	} else {
		closeBody()
	}

	env := &Envelope{
		RequestID:          fields.RequestID,
		IntentDefinitionID: fields.IntentDefinitionID,
		UserID:             fields.UserID,
		Args:               fields.Args,
	}
	if err := t.Signer.Sign(env); err != nil {
		return nil, err
	}
	if t.Binding != BindingMCPHTTP {
		var err error
		if body, err = MarshalEnvelope(env); err != nil {
			return nil, fmt.Errorf("signing: marshal envelope: %w", err)
		}
	}

	out := req.Clone(req.Context())
	if body != nil {
		out.Body = io.NopCloser(bytes.NewReader(body))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		out.ContentLength = int64(len(body))
	}
	binding := t.Binding
	if binding != BindingMCPHTTP {
		binding = BindingREST
	}
	SetHeaders(out.Header, env, binding)
	return t.base().RoundTrip(out)
}

// toolCallArguments returns params.arguments of a JSON-RPC tools/call message.
func toolCallArguments(body []byte) (json.RawMessage, bool) {
	var m struct {
		Method string `json:"method"`
		Params struct {
			Arguments json.RawMessage `json:"arguments"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &m) != nil || m.Method != "tools/call" {
		return nil, false
	}
	if isNull(m.Params.Arguments) {
		return nil, true
	}
	return m.Params.Arguments, true
}

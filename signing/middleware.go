package signing

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
)

// MaxBodyBytes bounds the request bodies Middleware and MCPMiddleware read.
const MaxBodyBytes = 1 << 20

type envelopeKey struct{}

// NewContextWithEnvelope returns a context carrying a verified envelope.
func NewContextWithEnvelope(ctx context.Context, env *Envelope) context.Context {
	return context.WithValue(ctx, envelopeKey{}, env)
}

// EnvelopeFromContext returns the envelope verified by Middleware or MCPMiddleware.
func EnvelopeFromContext(ctx context.Context) (*Envelope, bool) {
	env, ok := ctx.Value(envelopeKey{}).(*Envelope)
	return env, ok
}

// readBody reads at most MaxBodyBytes of r's body.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, *Error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, &Error{Status: http.StatusRequestEntityTooLarge, Code: CodeTooLarge,
				Message: "request body exceeds 1 MiB", Err: err}
		}
		return nil, badInput("could not read the request body", err)
	}
	return body, nil
}

// Middleware protects a REST partner endpoint. It answers 405 to anything but POST, 415 to a
// Content-Type other than application/json, reads
// the body (at most 1 MiB, else 413), verifies it with v.Verify and answers failures with a
// failure envelope and the status of the *Error (400, 401, 503). A verified request reaches
// next with the envelope in its context (EnvelopeFromContext) and the original body still
// readable.
func Middleware(v *Verifier, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			WriteFailure(w, http.StatusMethodNotAllowed, CodeMethodNotAllowed, "partner endpoints accept POST only")
			return
		}
		if ct := r.Header.Get("Content-Type"); ct != "" {
			if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
				WriteFailure(w, http.StatusUnsupportedMediaType, CodeMediaType, "send the envelope as application/json")
				return
			}
		}
		body, e := readBody(w, r)
		if e != nil {
			WriteError(w, e)
			return
		}
		env, err := v.Verify(r.Context(), body, r.Header)
		if err != nil {
			WriteError(w, err)
			return
		}
		r2 := r.WithContext(NewContextWithEnvelope(r.Context(), env))
		r2.Body = io.NopCloser(bytes.NewReader(body))
		r2.ContentLength = int64(len(body))
		next.ServeHTTP(w, r2)
	})
}

// jsonrpcMessage is the part of a JSON-RPC message MCPMiddleware looks at.
type jsonrpcMessage struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

type toolCallParams struct {
	Arguments json.RawMessage `json:"arguments"`
}

// MCPMiddleware protects an MCP_HTTP partner endpoint (Streamable HTTP) at the HTTP level:
// every POST carrying a JSON-RPC "tools/call" is verified with v.VerifyHeaders against its
// params.arguments, and a failure is answered with the HTTP status of the *Error (401, 400,
// 503) and a failure envelope, so the service's negative-auth probe sees a 401. Other MCP
// traffic (initialize, notifications, tools/list, GET, DELETE) passes unchanged. The
// verified envelope is put in the request context, but the go-sdk does not hand that
// context to tool handlers: verify there again with VerifyHeaders(ctx, req.Extra.Header,
// req.Params.Arguments), which is cheap.
func MCPMiddleware(v *Verifier, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, e := readBody(w, r)
		if e != nil {
			WriteError(w, e)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))

		var msgs []jsonrpcMessage
		trimmed := bytes.TrimLeft(body, " \t\r\n")
		if len(trimmed) > 0 && trimmed[0] == '[' {
			_ = json.Unmarshal(body, &msgs) // a batch; the MCP server rejects what it cannot parse
		} else {
			var m jsonrpcMessage
			if json.Unmarshal(body, &m) == nil {
				msgs = []jsonrpcMessage{m}
			}
		}
		var env *Envelope
		for _, m := range msgs {
			if m.Method != "tools/call" {
				continue
			}
			var params toolCallParams
			if len(m.Params) > 0 {
				if err := json.Unmarshal(m.Params, &params); err != nil {
					WriteError(w, badInput("tools/call params must be an object", err))
					return
				}
			}
			var err error
			if env, err = v.VerifyHeaders(r.Context(), r.Header, params.Arguments); err != nil {
				WriteError(w, err)
				return
			}
		}
		if env != nil {
			r = r.WithContext(NewContextWithEnvelope(r.Context(), env))
		}
		next.ServeHTTP(w, r)
	})
}

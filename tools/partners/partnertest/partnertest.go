// Package partnertest starts partner endpoints for tests: real TLS servers on loopback, a
// correct partner built on package signing (REST and MCP_HTTP), and the broken kinds the
// negative-auth probe must catch (accepts unsigned, accepts a forged signature, hangs,
// answers 500 to everything).
package partnertest

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/signing/partnerexample"
)

// Partner is a running partner endpoint.
type Partner struct {
	*httptest.Server
	URL string

	mu   sync.Mutex
	hits []Hit
}

// Hit is one request the partner received.
type Hit struct {
	Method    string // JSON-RPC method for MCP, else the HTTP method
	Header    http.Header
	Body      []byte
	Signature string
}

// Hits returns the requests received so far.
func (p *Partner) Hits() []Hit {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Hit(nil), p.hits...)
}

// CAPEM returns the PEM of the certificate every httptest TLS server presents, to trust it
// (outbound.Options.ExtraCAPEM, SWITCHBOARD_PARTNER_CA_FILE).
func CAPEM(srv *httptest.Server) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

// Start serves h over TLS on loopback, recording every request, until t ends.
func Start(t testing.TB, h http.Handler) *Partner {
	t.Helper()
	p := &Partner{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 4<<20))
		r.Body = io.NopCloser(bytes.NewReader(body))
		hit := Hit{Method: r.Method, Header: r.Header.Clone(), Body: body, Signature: r.Header.Get(signing.HeaderSignature)}
		var m struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(body, &m) == nil && m.Method != "" {
			hit.Method = m.Method
		}
		p.mu.Lock()
		p.hits = append(p.hits, hit)
		p.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // handshake noise from refused clients
	srv.StartTLS()
	t.Cleanup(srv.Close)
	p.Server, p.URL = srv, srv.URL
	return p
}

// Echo is the result the partners here return: what they received.
func echo(w http.ResponseWriter, env *signing.Envelope) {
	out, _ := json.Marshal(map[string]any{"success": true, "providerCostMicro": 1500, "result": map[string]any{
		"requestId": env.RequestID, "intentDefinitionId": env.IntentDefinitionID, "userId": env.UserID, "args": env.Args}})
	w.Header().Set("Content-Type", "application/json")
	w.Write(out)
}

// Correct is a REST partner that verifies every call with signing.Middleware and echoes the
// verified envelope.
func Correct(t testing.TB, pub ed25519.PublicKey) *Partner {
	v := signing.NewVerifierFromKey(pub)
	return Start(t, signing.Middleware(v, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		env, _ := signing.EnvelopeFromContext(r.Context())
		echo(w, env)
	})))
}

// AcceptsUnsigned verifies a signature only when one is sent: an unsigned call is served.
func AcceptsUnsigned(t testing.TB, pub ed25519.PublicKey) *Partner {
	v := signing.NewVerifierFromKey(pub)
	verified := signing.Middleware(v, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		env, _ := signing.EnvelopeFromContext(r.Context())
		echo(w, env)
	}))
	return Start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(signing.HeaderSignature) == "" {
			var env signing.Envelope
			json.NewDecoder(r.Body).Decode(&env)
			echo(w, &env)
			return
		}
		verified.ServeHTTP(w, r)
	}))
}

// AcceptsForged insists on a signature of the right size but never checks it.
func AcceptsForged(t testing.TB) *Partner {
	return Start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var env signing.Envelope
		json.NewDecoder(r.Body).Decode(&env)
		sig, err := base64.StdEncoding.DecodeString(env.ServiceSignature)
		if err != nil || len(sig) != ed25519.SignatureSize {
			signing.WriteFailure(w, http.StatusUnauthorized, signing.CodeUnauthorized, "missing signature")
			return
		}
		echo(w, &env)
	}))
}

// Hangs never answers: each request waits until the client gives up or the test ends.
func Hangs(t testing.TB) *Partner {
	done := make(chan struct{})
	p := Start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}))
	t.Cleanup(func() { close(done) }) // runs before the server's Close (cleanups are LIFO)
	return p
}

// Fails500 answers 500 with a failure envelope to everything.
func Fails500(t testing.TB) *Partner {
	return Start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		signing.WriteFailure(w, http.StatusInternalServerError, "UPSTREAM", "everything is broken")
	}))
}

// MCP is an MCP_HTTP partner built with the go-sdk server: one tool named handle,
// registered with {"type":"object"} so args are not coerced. With protect, the endpoint is
// wrapped in signing.MCPMiddleware (HTTP 401 for unsigned or forged tools/call) and the
// tool verifies again with VerifyHeaders; without it, the tool serves anyone. The tool's
// result is the response envelope as structuredContent.
func MCP(t testing.TB, pub ed25519.PublicKey, handle string, protect bool) *Partner {
	v := signing.NewVerifierFromKey(pub)
	server := mcp.NewServer(&mcp.Implementation{Name: "partner", Version: "test"}, nil)
	server.AddTool(&mcp.Tool{Name: handle, InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			env := &signing.Envelope{Args: req.Params.Arguments}
			if protect {
				var err error
				if env, err = v.VerifyHeaders(ctx, req.Extra.Header, req.Params.Arguments); err != nil {
					return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
				}
			}
			out := map[string]any{"success": true, "result": map[string]any{
				"requestId": env.RequestID, "userId": env.UserID, "args": env.Args}}
			raw, _ := json.Marshal(out)
			return &mcp.CallToolResult{StructuredContent: json.RawMessage(raw), Content: []mcp.Content{&mcp.TextContent{Text: string(raw)}}}, nil
		})
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	if protect {
		h = signing.MCPMiddleware(v, h)
	}
	return Start(t, h)
}

// Example serves signing/partnerexample, the importable example partner: its REST endpoint
// at URL+partnerexample.RESTPath (parameters schema partnerexample.RESTParametersSchema)
// and its MCP_HTTP endpoint, one tool named handle, at URL+partnerexample.MCPPath
// (partnerexample.MCPParametersSchema).
func Example(t testing.TB, pub ed25519.PublicKey, handle string) *Partner {
	return Start(t, partnerexample.NewMux(signing.NewVerifierFromKey(pub), handle))
}

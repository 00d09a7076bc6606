// Package partnerexample is a small partner built only on package signing and the MCP
// go-sdk. It serves the spec's two sample parameter schemas:
//
//   - REST, sample (a): args {query: string, required}. NewRESTHandler.
//   - MCP_HTTP, sample (b): args {ticker: string, required; days: integer 1..365,
//     optional}, one tool named exactly as the handle (with the leading @). NewMCPHandler.
//
// Both verify every call (signature, 5-minute window, Idempotency-Key) and dedupe on
// requestId for 60 seconds. cmd/example-partner runs it; tests start it on an httptest TLS
// server.
package partnerexample

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-hq/switchboard/signing"
)

// Paths used by NewMux.
const (
	RESTPath = "/rest"
	MCPPath  = "/mcp"
)

// DefaultHandle is the tool name of the example MCP_HTTP intent.
const DefaultHandle = "@example-echo"

// RESTParametersSchema is sample (a), the parametersSchema to publish for the REST endpoint.
const RESTParametersSchema = `{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`

// MCPParametersSchema is sample (b), the parametersSchema to publish for the MCP endpoint.
const MCPParametersSchema = `{"type":"object","properties":{"ticker":{"type":"string"},"days":{"type":"integer","minimum":1,"maximum":365}},"required":["ticker"]}`

// success is the success response envelope.
type success struct {
	Success bool `json:"success"`
	Result  any  `json:"result"`
}

// NewMux serves the REST endpoint at /rest and the MCP endpoint at /mcp.
func NewMux(v *signing.Verifier, handle string) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle(RESTPath, NewRESTHandler(v))
	mux.Handle(MCPPath, NewMCPHandler(v, handle))
	return mux
}

// NewRESTHandler returns the REST partner endpoint for sample (a). It answers
// {"success":true,"result":{"answer":...,"query":...}} and replays its first response to
// duplicates of a requestId for 60 s.
func NewRESTHandler(v *signing.Verifier) http.Handler {
	return signing.Middleware(v, signing.DedupeMiddleware(signing.NewResponseDedupe(), http.HandlerFunc(serveQuery)))
}

func serveQuery(w http.ResponseWriter, r *http.Request) {
	env, ok := signing.EnvelopeFromContext(r.Context())
	if !ok {
		signing.WriteFailure(w, http.StatusUnauthorized, signing.CodeUnauthorized, "unverified request")
		return
	}
	var args map[string]json.RawMessage
	if err := json.Unmarshal(env.Args, &args); err != nil {
		signing.WriteFailure(w, http.StatusBadRequest, signing.CodeBadInput, "args must be an object")
		return
	}
	var query string
	raw, ok := args["query"]
	if !ok || json.Unmarshal(raw, &query) != nil {
		signing.WriteFailure(w, http.StatusBadRequest, signing.CodeBadInput, `args.query is required and must be a string, e.g. {"query":"what is the price of ETH?"}`)
		return
	}
	writeJSON(w, http.StatusOK, success{Success: true, Result: map[string]any{
		"answer":    "You asked: " + query,
		"query":     query,
		"requestId": env.RequestID,
		"userId":    env.UserID,
	}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		signing.WriteError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// NewMCPHandler returns a Streamable HTTP MCP endpoint (stateless, JSON responses) with one
// tool named handle, registered with the low-level Server.AddTool and input schema
// {"type":"object"} so the arguments reach the tool uncoerced, exactly as signed. The HTTP
// layer (signing.MCPMiddleware) answers 401 to an unsigned or forged tools/call; the tool
// verifies again from req.Extra.Header and its raw arguments. Duplicate requestIds get the
// first result for 60 s.
func NewMCPHandler(v *signing.Verifier, handle string) http.Handler {
	server := mcp.NewServer(&mcp.Implementation{Name: "switchboard-example-partner", Version: "1.0.0"}, nil)
	dedupe := signing.NewDedupe[*mcp.CallToolResult](signing.DefaultDedupeTTL, signing.DefaultDedupeMaxEntries)
	server.AddTool(&mcp.Tool{
		Name:        handle,
		Description: "Example partner tool: echoes a ticker and a number of days (1-365, default 7).",
		InputSchema: json.RawMessage(`{"type":"object"}`),
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		env, err := v.VerifyHeaders(ctx, req.Extra.Header, req.Params.Arguments)
		if err != nil {
			var e *signing.Error
			if errors.As(err, &e) {
				return failure(e.Code, e.Message), nil
			}
			return failure(signing.CodeInternal, "internal error"), nil
		}
		res, _, err := dedupe.Do(ctx, env.RequestID, func() (*mcp.CallToolResult, bool) {
			return chart(env), true
		})
		if err != nil {
			return nil, err
		}
		return res, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	return signing.MCPMiddleware(v, h)
}

// chart validates sample (b) and answers.
func chart(env *signing.Envelope) *mcp.CallToolResult {
	var args map[string]json.RawMessage
	if err := json.Unmarshal(env.Args, &args); err != nil {
		return failure(signing.CodeBadInput, "arguments must be an object")
	}
	var ticker string
	if raw, ok := args["ticker"]; !ok || json.Unmarshal(raw, &ticker) != nil || strings.TrimSpace(ticker) == "" {
		return failure(signing.CodeBadInput, `ticker is required and must be a non-empty string, e.g. {"ticker":"SOL","days":30}`)
	}
	days := 7
	if raw, ok := args["days"]; ok {
		var f float64
		if json.Unmarshal(raw, &f) != nil || f != math.Trunc(f) || f < 1 || f > 365 {
			return failure(signing.CodeBadInput, fmt.Sprintf("days must be an integer between 1 and 365, got %s", raw))
		}
		days = int(f)
	}
	return result(success{Success: true, Result: map[string]any{
		"ticker":    strings.ToUpper(ticker),
		"days":      days,
		"requestId": env.RequestID,
		"userId":    env.UserID,
	}}, false)
}

func failure(code, message string) *mcp.CallToolResult {
	return result(signing.Failure{Error: signing.FailureError{Code: code, Message: message}}, true)
}

// result carries the response envelope both as text (for any MCP client) and as
// structured content.
func result(v any, isError bool) *mcp.CallToolResult {
	text, _ := json.Marshal(v)
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: string(text)}},
		StructuredContent: json.RawMessage(text),
		IsError:           isError,
	}
}

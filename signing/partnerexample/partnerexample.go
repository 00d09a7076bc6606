// Package partnerexample is a small partner built only on package signing and the MCP
// go-sdk. It serves the spec's two sample parameter schemas:
//
//   - REST, sample (a): args {query: string, required}. NewRESTHandler.
//   - MCP_HTTP, sample (b): args {ticker: string, required; days: integer 1..365,
//     optional}, one tool named exactly as the handle (with the leading @). NewMCPHandler.
//   - REST, a write intent (SEND, MUTATES_USER_FUNDS): args {to, amount}, answered with
//     result.transactions proposing an ERC-20 transfer for the user's wallet to sign.
//     NewSendHandler (propose.go).
//
// Both verify every call (signature, 5-minute window, Idempotency-Key) and dedupe on
// requestId for 60 seconds. Every success reports Config.CostMicro as providerCostMicro:
// Switchboard pays a partner what it reports (capped by its published feeRate) and nothing
// when it reports nothing, so the example charges its quoted rate. With a Config.Log, every
// signed call is logged on one line: its requestId, verified or refused. cmd/example-partner
// runs it; tests start it on an httptest TLS server.
package partnerexample

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
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

// Config is how the example answers.
type Config struct {
	Handle string // the MCP tool's name (DefaultHandle when empty)
	// CostMicro is the providerCostMicro of every success: the quoted rate
	// (signing.FeeRateMicro of the published feeRate) to be paid it.
	CostMicro int64
	Log       *slog.Logger // nil: nothing logged
	// Send, when set, also serves the example write intent at SendPath: transfers of this
	// token proposed as result.transactions.
	Send *Token
}

// NewMux serves the REST endpoint at /rest and the MCP endpoint at /mcp, reporting no cost
// (a free intent's partner); New takes the rate to charge.
func NewMux(v *signing.Verifier, handle string) *http.ServeMux {
	return New(v, Config{Handle: handle})
}

// New serves the REST endpoint at /rest and the MCP endpoint at /mcp.
func New(v *signing.Verifier, c Config) *http.ServeMux {
	if c.Handle == "" {
		c.Handle = DefaultHandle
	}
	mux := http.NewServeMux()
	mux.Handle(RESTPath, logged(c.Log, newREST(v, c)))
	mux.Handle(MCPPath, logged(c.Log, newMCP(v, c)))
	if c.Send != nil {
		mux.Handle(SendPath, logged(c.Log, newSend(v, c)))
	}
	return mux
}

// NewRESTHandler returns the REST partner endpoint for sample (a). It answers
// {"success":true,"result":{"answer":...,"query":...},"providerCostMicro":0} and replays its
// first response to duplicates of a requestId for 60 s.
func NewRESTHandler(v *signing.Verifier) http.Handler { return newREST(v, Config{}) }

func newREST(v *signing.Verifier, c Config) http.Handler {
	return signing.Middleware(v, signing.DedupeMiddleware(signing.NewResponseDedupe(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		serveQuery(w, r, c)
	})))
}

func serveQuery(w http.ResponseWriter, r *http.Request, c Config) {
	env, ok := signing.EnvelopeFromContext(r.Context())
	if !ok {
		signing.WriteFailure(w, http.StatusUnauthorized, signing.CodeUnauthorized, "unverified request")
		return
	}
	verified(r.Context(), c.Log, env.RequestID)
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
	writeJSON(w, http.StatusOK, signing.Charging(map[string]any{
		"answer":    "You asked: " + query,
		"query":     query,
		"requestId": env.RequestID,
		"userId":    env.UserID,
	}, c.CostMicro))
}

// callLog marks a request whose call was verified (and logged), so logged does not log it
// again as refused.
type callLog struct{ done bool }

type callLogKey struct{}

// logged logs a request the signing middleware refused (a status of 400 or more with no
// verified call); verified calls are logged where they are verified.
func logged(log *slog.Logger, next http.Handler) http.Handler {
	if log == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mark := &callLog{}
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r.WithContext(context.WithValue(r.Context(), callLogKey{}, mark)))
		if !mark.done && sw.status >= 400 {
			log.Warn("signed call refused", "requestId", r.Header.Get(signing.HeaderRequestID), "path", r.URL.Path, "status", sw.status)
		}
	})
}

// verified logs a verified call once.
func verified(ctx context.Context, log *slog.Logger, requestID string) {
	if log == nil {
		return
	}
	if m, ok := ctx.Value(callLogKey{}).(*callLog); ok {
		if m.done {
			return
		}
		m.done = true
	}
	log.Info("signed call verified", "requestId", requestID)
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

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
	return newMCP(v, Config{Handle: handle})
}

func newMCP(v *signing.Verifier, c Config) http.Handler {
	handle := c.Handle
	server := mcp.NewServer(&mcp.Implementation{Name: "switchboard-example-partner", Version: "1.0.0"}, nil)
	dedupe := signing.NewDedupe[*mcp.CallToolResult](signing.DefaultDedupeTTL, signing.DefaultDedupeMaxEntries)
	server.AddTool(&mcp.Tool{
		Name:        handle,
		Description: "Example partner tool: echoes a ticker and a number of days (1-365, default 7).",
		InputSchema: json.RawMessage(`{"type":"object"}`),
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		env, err := v.VerifyHeaders(ctx, req.Extra.Header, req.Params.Arguments)
		if err != nil {
			if c.Log != nil {
				c.Log.Warn("signed call refused", "requestId", req.Extra.Header.Get(signing.HeaderRequestID), "tool", handle, "error", err)
			}
			var e *signing.Error
			if errors.As(err, &e) {
				return failure(e.Code, e.Message), nil
			}
			return failure(signing.CodeInternal, "internal error"), nil
		}
		if c.Log != nil {
			c.Log.Info("signed call verified", "requestId", env.RequestID, "tool", handle)
		}
		res, _, err := dedupe.Do(ctx, env.RequestID, func() (*mcp.CallToolResult, bool) {
			return chart(env, c.CostMicro), true
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
func chart(env *signing.Envelope, costMicro int64) *mcp.CallToolResult {
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
	return result(signing.Charging(map[string]any{
		"ticker":    strings.ToUpper(ticker),
		"days":      days,
		"requestId": env.RequestID,
		"userId":    env.UserID,
	}, costMicro), false)
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

package rest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/switchboard-hq/switchboard/tools"
)

// MaxBody bounds every request body, REST and MCP.
const MaxBody = 1 << 20

// TooLarge is the answer to a body over MaxBody, on every door.
func TooLarge() *tools.Error {
	return tools.Errorf(tools.CodePayloadTooLarge, "request body is over the %d-byte (1 MiB) limit; send less", MaxBody)
}

// Docs is what the public documents say about this deployment.
type Docs struct {
	BaseURL     string
	TestBaseURL string // the test environment's base URL, listed in OpenAPI when set
	Env         string
	Version     string
	EmailSignup bool // e-mail onboarding is enabled (a mailer is configured)
	Portal      bool // the portal (its issuance page, docs) is served
}

// Handler serves the /v1 routes onto the kernel's tools; an unknown route answers the error
// model's NOT_FOUND. The HTTP front that mounts it (and /mcp, the portal, the public
// documents) lives with the app.
func Handler(k *tools.Kernel, opts ...Option) http.Handler {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	mux := http.NewServeMux()
	for _, rt := range Routes() {
		t := k.Tool(rt.Tool)
		if t == nil {
			continue
		}
		mux.Handle(rt.Method+" "+rt.Path, toolHandler(k, rt, t, o.wraps))
	}
	mux.HandleFunc("/", NotFound)
	return mux
}

// Option configures Handler.
type Option func(*options)

type options struct{ wraps []tools.Wrap }

// WithWrap runs w around every call (tools.Wrap: what travels in the headers rather than the
// body, such as a payment); wraps run in the order given.
func WithWrap(w tools.Wrap) Option {
	return func(o *options) { o.wraps = append(o.wraps, w) }
}

// NotFound answers a route that does not exist, saying where the routes are.
func NotFound(w http.ResponseWriter, r *http.Request) {
	WriteError(w, tools.Errorf(tools.CodeNotFound, "no route %s %s; see /openapi.json for the routes, /llms.txt to get started, or use MCP at /mcp", r.Method, r.URL.Path))
}

// LLMsTxt renders /llms.txt.
func LLMsTxt(d Docs) string { return llmsTxt(d) }

func toolHandler(k *tools.Kernel, rt Route, t *tools.Tool, wraps []tools.Wrap) http.Handler {
	types := propertyTypes(t.InputSchema)
	idem := takesIdempotencyKey(t, types)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, e := tools.KeyFromHeader(r.Header)
		if e != nil {
			WriteError(w, e)
			return
		}
		args, e := buildArgs(r, rt, types)
		if e == nil && idem {
			args, e = withIdempotencyKey(r.Header, args)
		}
		call := tools.Request{
			Tool: rt.Tool, Args: args, APIKey: key,
			ClientAddr: r.Header.Get(tools.HeaderClientAddr), RequestID: r.Header.Get(tools.HeaderRequestID),
			AcceptsTask: t.AnswersTasks && respondAsync(r.Header),
		}
		x := &tools.Exchange{Door: tools.DoorREST, Tool: t, Header: r.Header, Reply: tools.Reply{Header: w.Header()}}
		if e == nil {
			e = tools.WrapIn(wraps, x, &call)
		}
		if e != nil {
			WriteError(w, e)
			return
		}
		out, e := k.Call(r.Context(), call)
		if task := tools.StartedTask(out); e == nil && task != nil {
			w.Header().Set("Location", TaskPath+task.TaskID)
			w.Header().Set("Preference-Applied", "respond-async")
			writeJSON(w, http.StatusAccepted, task)
			return
		}
		if e = tools.WrapOut(wraps, x, out, e); e != nil {
			WriteError(w, e)
			return
		}
		status := http.StatusOK
		if rt.Created {
			status = http.StatusCreated
		}
		writeJSON(w, status, out)
	})
}

// TaskPath is where a task is polled (GET) and cancelled (DELETE), its id appended.
const TaskPath = "/v1/tasks/"

// respondAsync reports a Prefer header asking for respond-async (RFC 7240), among others.
func respondAsync(h http.Header) bool {
	for _, v := range h.Values("Prefer") {
		for _, p := range strings.Split(v, ",") {
			if name, _, _ := strings.Cut(strings.TrimSpace(p), ";"); strings.EqualFold(strings.TrimSpace(name), "respond-async") {
				return true
			}
		}
	}
	return false
}

// IdempotencyHeader is the request header that carries an idempotency key on POST routes.
const IdempotencyHeader = "Idempotency-Key"

// takesIdempotencyKey: a tool that declares it (tools/idempotency wrapped it: its input has
// idempotencyKey) reads the header.
func takesIdempotencyKey(t *tools.Tool, types map[string]string) bool {
	return t.TakesIdempotencyKey && types[tools.IdempotencyKeyProperty] != ""
}

// withIdempotencyKey moves the Idempotency-Key header into the input's idempotencyKey (the
// rule is tools/idempotency's).
func withIdempotencyKey(h http.Header, args json.RawMessage) (json.RawMessage, *tools.Error) {
	vals := h.Values(IdempotencyHeader)
	if len(vals) == 0 {
		return args, nil
	}
	key := strings.TrimSpace(vals[0])
	for _, v := range vals[1:] {
		if strings.TrimSpace(v) != key {
			return nil, tools.Errorf(tools.CodeBadInput, "two different %s headers in one request; send one", IdempotencyHeader)
		}
	}
	if key == "" || len([]rune(key)) > tools.MaxIdempotencyKey {
		return nil, tools.Errorf(tools.CodeBadInput, "the %s header must be 1 to %d characters (a UUID is a good key)", IdempotencyHeader, tools.MaxIdempotencyKey)
	}
	if e := tools.CheckText("the "+IdempotencyHeader+" header", key); e != nil {
		return nil, e
	}
	v, err := tools.DecodeJSON(args) // numbers stay exact
	m, _ := v.(map[string]any)
	if err != nil || m == nil {
		return nil, tools.Errorf(tools.CodeBadInput, "arguments must be a JSON object")
	}
	if body, ok := m[tools.IdempotencyKeyProperty]; ok && body != key {
		return nil, tools.Errorf(tools.CodeBadInput, "the %s header and the body's %s differ; send the key once", IdempotencyHeader, tools.IdempotencyKeyProperty)
	}
	m[tools.IdempotencyKeyProperty] = key
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, tools.Errorf(tools.CodeBadInput, "arguments: %v", err)
	}
	return raw, nil
}

// buildArgs assembles the tool input: the JSON body (POST, PATCH), query parameters (GET,
// DELETE), then path parameters, which win. A body with no path parameters to add is the
// input as it came, byte for byte: the kernel decodes it once.
func buildArgs(r *http.Request, rt Route, types map[string]string) (json.RawMessage, *tools.Error) {
	args := map[string]any{}
	if r.Method == http.MethodPost || r.Method == http.MethodPatch || r.Method == http.MethodPut {
		body, err := io.ReadAll(r.Body)
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, TooLarge()
		}
		if err != nil {
			return nil, tools.Errorf(tools.CodeBadInput, "could not read the request body: %v", err)
		}
		if trimmed := bytes.TrimSpace(body); len(trimmed) > 0 {
			if e := tools.CheckJSON("request body", body); e != nil {
				return nil, e
			}
			if len(rt.Params) == 0 && json.Valid(trimmed) {
				if trimmed[0] != '{' {
					return nil, tools.Errorf(tools.CodeBadInput, "request body must be a JSON object")
				}
				return trimmed, nil
			}
			v, err := tools.DecodeJSON(body)
			if err != nil {
				return nil, tools.Errorf(tools.CodeBadInput, "request body is not valid JSON: %v; send a JSON object with Content-Type: application/json", err)
			}
			m, ok := v.(map[string]any)
			if !ok {
				return nil, tools.Errorf(tools.CodeBadInput, "request body must be a JSON object")
			}
			args = m
		}
	} else {
		for name, vals := range r.URL.Query() {
			if e := tools.CheckText("a query parameter name", name); e != nil {
				return nil, e
			}
			for _, v := range vals {
				if e := tools.CheckText("query parameter "+name, v); e != nil {
					return nil, e
				}
			}
			v, err := queryValue(types[name], vals)
			if err != nil {
				return nil, tools.Errorf(tools.CodeBadInput, "query parameter %s: %v", name, err)
			}
			args[name] = v
		}
	}
	for param, field := range rt.Params {
		v := r.PathValue(param)
		if e := tools.CheckText("path parameter "+param, v); e != nil {
			return nil, e
		}
		args[field] = v
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, tools.Errorf(tools.CodeBadInput, "arguments: %v", err)
	}
	return raw, nil
}

// queryValue converts query strings to the JSON type the input schema declares, so
// ?limit=5 reaches the validator as the integer 5.
func queryValue(typ string, vals []string) (any, error) {
	switch typ {
	case "array":
		var out []string
		for _, v := range vals {
			out = append(out, strings.Split(v, ",")...)
		}
		return out, nil
	case "integer", "number":
		if _, err := strconv.ParseFloat(vals[0], 64); err != nil {
			return nil, fmt.Errorf("%q is not a number", vals[0])
		}
		return json.Number(vals[0]), nil
	case "boolean":
		b, err := strconv.ParseBool(vals[0])
		if err != nil {
			return nil, fmt.Errorf("%q is not true or false", vals[0])
		}
		return b, nil
	default:
		return vals[0], nil
	}
}

func propertyTypes(schema json.RawMessage) map[string]string {
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
	}
	json.Unmarshal(schema, &s)
	types := make(map[string]string, len(s.Properties))
	for name, p := range s.Properties {
		if t, ok := p.Type.(string); ok {
			types[name] = t
		}
	}
	return types
}

// Status maps an error code to its HTTP status.
func Status(c tools.Code) int { return c.HTTPStatus() }

// WriteError writes e as the error model with its HTTP status (and Retry-After when set).
func WriteError(w http.ResponseWriter, e *tools.Error) {
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((e.RetryAfter+999_999_999)/1_000_000_000)))
	}
	writeJSON(w, Status(e.Code), tools.Body{Error: e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

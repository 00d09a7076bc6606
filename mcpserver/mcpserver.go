// Package mcpserver exposes the tool kernel over MCP: Streamable HTTP (stateless, so any
// replica serves any request, except the sessions of sessions.go) and stdio.
package mcpserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-hq/switchboard/tools"
)

// Options configure the server.
type Options struct {
	Name, Version string
	// Stdio builds the server for stdio, where the desktop host puts the key in the
	// environment (APIKey) instead of a header. Over HTTP APIKey is ignored: a keyless HTTP
	// caller never acts with the operator's key.
	Stdio  bool
	APIKey string
	// Toolsets is the stdio host's choice of toolsets (SWITCHBOARD_TOOLSETS); over HTTP the
	// host chooses per request (X-MCP-Toolsets, or ?toolsets= in the URL).
	Toolsets []tools.Toolset
	Log      *slog.Logger
	// Replica names this replica in the ids of the MCP sessions it opens (ReplicaName), so a
	// load balancer keeps a session on it; "" leaves the ids unnamed (one replica, stdio).
	Replica string
	// Asking ends when the replica drains: a confirmation asked on a session and still
	// waiting for its answer stops waiting and answers CONFIRMATION_REQUIRED (nil: never).
	Asking context.Context
	// Middleware wraps every request the server receives, outside the toolsets' list filter
	// (the first given is the outermost): the app's metrics.
	Middleware []mcp.Middleware
	// Wraps run around every tool call, in order (tools.Wrap: what travels in _meta rather
	// than in the arguments, such as a payment).
	Wraps []tools.Wrap
}

// stdioKeyHelp is how a key reaches the stdio door; the kernel puts it in UNAUTHENTICATED.
const stdioKeyHelp = "set SWITCHBOARD_API_KEY in the environment of the switchboard stdio process (the MCP host's server config) and restart it"

// New registers every kernel tool on a go-sdk server with the low-level AddTool, so the
// kernel's validator is the only one that runs.
func New(k *tools.Kernel, opts Options) *mcp.Server {
	instr, key := httpInstructions, ""
	if opts.Stdio {
		instr, key = stdioInstructions, opts.APIKey
	}
	so := &mcp.ServerOptions{Logger: opts.Log, Instructions: instr, SetCacheable: cacheable}
	if !opts.Stdio { // tasks/get travels over HTTP only (tasks.go)
		so.Capabilities = serverCapabilities()
	}
	if opts.Replica != "" {
		so.GetSessionID = SessionID(ReplicaName(opts.Replica))
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: opts.Name, Title: "Switchboard", Version: opts.Version, Icons: Icons}, so)
	for _, t := range k.Tools() {
		srv.AddTool(describe(t), handler(k, t.Name, key, opts.Stdio, opts.Asking, opts.Wraps))
	}
	srv.AddReceivingMiddleware(taskMiddleware)
	srv.AddReceivingMiddleware(listFilter(k, key, opts.Toolsets))
	srv.AddReceivingMiddleware(opts.Middleware...)
	return srv
}

const (
	about            = "Switchboard: onboarding, API keys, token lookups and partner intents for AI agents. "
	httpInstructions = about + "Without an API key, call agent_signup with an e-mail inbox you can read, then agent_verify with the 8-digit code; " +
		"send the key as the x-api-key header. Without an inbox, ask a human for a key."
	stdioInstructions = about + "Without an API key, call agent_signup with an e-mail inbox you can read, then agent_verify with the 8-digit code, " +
		"and ask the human to put the key in SWITCHBOARD_API_KEY in this server's configuration. Without an inbox, ask a human for a key."
)

// ListTTL is how long a host may keep server/discover and tools/list (MCP 2026-07-28
// caching): a list changes only with a release (or the key's scopes), so a host refetches it
// at most every five minutes and sees a new release's tools within five minutes of its
// rollout. The keyless default list is the same for everyone (cacheScope public); a list
// chosen by a key or by toolsets is the caller's own (private, set by listFilter).
const ListTTL = 5 * time.Minute

func cacheable(_ context.Context, _ mcp.Request, c *mcp.Cacheable) {
	c.TTLMs, c.CacheScope = int(ListTTL.Milliseconds()), "public"
}

// icon is Switchboard's mark (two switch points joined), a 32x32 SVG that reads on light and
// dark backgrounds alike; inline, so it shows over stdio and offline too.
const icon = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#1f5fbf"/>` +
	`<circle cx="10" cy="10" r="3.5" fill="#fff"/><circle cx="22" cy="22" r="3.5" fill="#fff"/>` +
	`<path d="M10 14v3a5 5 0 0 0 5 5h3M22 18v-3a5 5 0 0 0-5-5h-3" stroke="#fff" stroke-width="2.2" fill="none" stroke-linecap="round"/></svg>`

// Icons are the server's and every tool's icons.
var Icons = []mcp.Icon{{Source: "data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString([]byte(icon)), MIMEType: "image/svg+xml", Sizes: []string{"any"}}}

func describe(t *tools.Tool) *mcp.Tool {
	a := t.Annotations
	return &mcp.Tool{
		Name:         t.Name,
		Title:        t.Title,
		Icons:        Icons,
		Description:  t.Description,
		InputSchema:  t.InputSchema,
		OutputSchema: t.OutputSchema,
		Annotations: &mcp.ToolAnnotations{
			Title:           t.Title,
			ReadOnlyHint:    *a.ReadOnly,
			DestructiveHint: a.Destructive,
			IdempotentHint:  a.Idempotent,
			OpenWorldHint:   a.OpenWorld,
		},
	}
}

// toolDoor is one tool's handler: what each of its calls needs of the server's options.
type toolDoor struct {
	k      *tools.Kernel
	name   string
	key    string // the stdio host's configured key; "" over HTTP
	stdio  bool
	asking context.Context
	wraps  []tools.Wrap
}

func handler(k *tools.Kernel, name, defaultKey string, stdio bool, asking context.Context, wraps []tools.Wrap) mcp.ToolHandler {
	d := &toolDoor{k: k, name: name, key: defaultKey, stdio: stdio, asking: asking, wraps: wraps}
	return d.handle
}

func (d *toolDoor) handle(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	call, x, e := d.request(req)
	if e != nil {
		return errorResult(e), nil
	}
	out, e, question := d.converse(ctx, req, call)
	if question != nil {
		return question, nil
	}
	if t := tools.StartedTask(out); e == nil && t != nil && startedTask(ctx, t) {
		return &mcp.CallToolResult{}, nil // taskMiddleware answers the task in its place
	}
	if e = tools.WrapOut(d.wraps, x, out, e); e != nil {
		return replied(errorResult(e), x), nil
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	res := &mcp.CallToolResult{
		StructuredContent: json.RawMessage(raw),
		Content:           []mcp.Content{&mcp.TextContent{Text: string(raw)}},
	}
	return replied(res, x), nil
}

// request is the kernel request of an MCP call: its arguments as the wraps leave them, and
// who is calling from where.
func (d *toolDoor) request(req *mcp.CallToolRequest) (tools.Request, *tools.Exchange, *tools.Error) {
	call := tools.Request{Tool: d.name, Args: req.Params.Arguments, APIKey: d.key}
	x, e := wrapIn(d.k, d.wraps, req, &call)
	if e != nil {
		return call, x, e
	}
	if d.stdio {
		call.KeyHelp = stdioKeyHelp
	} else {
		call.AcceptsTask = declaresTasks(req.ClientCapabilities())
	}
	if e := fromHeaders(req, &call); e != nil {
		return call, x, e
	}
	if call.ClientAddr == "" {
		call.ClientAddr = "stdio"
	}
	return call, x, nil
}

// fromHeaders reads what an HTTP request's headers say of its caller: the key (which wins
// over none), the client's address and the request id. Over stdio there are none.
func fromHeaders(req *mcp.CallToolRequest, call *tools.Request) *tools.Error {
	if req.Extra == nil || req.Extra.Header == nil {
		return nil
	}
	h := req.Extra.Header
	key, e := tools.KeyFromHeader(h)
	if e != nil {
		return e
	}
	if key != "" {
		call.APIKey = key
	}
	call.ClientAddr = h.Get(tools.HeaderClientAddr)
	call.RequestID = h.Get(tools.HeaderRequestID)
	return nil
}

// errorResult is a tool error: isError with the error model object as its text.
func errorResult(e *tools.Error) *mcp.CallToolResult {
	body, _ := json.Marshal(tools.Body{Error: e})
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(body)}}}
}

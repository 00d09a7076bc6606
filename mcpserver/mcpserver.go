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
	if opts.Replica != "" {
		so.GetSessionID = SessionID(ReplicaName(opts.Replica))
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: opts.Name, Title: "Switchboard", Version: opts.Version, Icons: Icons}, so)
	for _, t := range k.Tools() {
		srv.AddTool(describe(t), handler(k, t.Name, key, opts.Stdio, opts.Asking, opts.Wraps))
	}
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

func handler(k *tools.Kernel, name, defaultKey string, stdio bool, asking context.Context, wraps []tools.Wrap) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		call := tools.Request{Tool: name, Args: req.Params.Arguments, APIKey: defaultKey}
		x, e := wrapIn(k, wraps, req, &call)
		if e != nil {
			return errorResult(e), nil
		}
		if stdio {
			call.KeyHelp = stdioKeyHelp
		}
		if req.Extra != nil && req.Extra.Header != nil {
			h := req.Extra.Header
			key, e := tools.KeyFromHeader(h)
			if e != nil {
				return errorResult(e), nil
			}
			if key != "" {
				call.APIKey = key
			}
			call.ClientAddr = h.Get(tools.HeaderClientAddr)
			call.RequestID = h.Get(tools.HeaderRequestID)
		}
		if call.ClientAddr == "" {
			call.ClientAddr = "stdio"
		}
		checked := false
		if rid, again, ok := checkAgain(req.Params); ok {
			if !again {
				// The user stopped waiting: calling again would dispatch (and charge) a call
				// the owner approved meanwhile, against the user's answer.
				return errorResult(stoppedWaiting(rid)), nil
			}
			args, err := withDecision(call.Args, rid, true) // asking again: never a decline
			if err != nil {
				return nil, err
			}
			call.Args, checked = args, again
		} else if rid, approved, ok := answered(req.Params); ok {
			args, err := withDecision(call.Args, rid, approved)
			if err != nil {
				return nil, err
			}
			call.Args = args
		}
		out, e := k.Call(ctx, call)
		if e != nil && e.Code == tools.CodeConfirmationRequired && canElicit(req) {
			if q, ok := readQuote(e); ok {
				if multiRoundTrip(req) {
					return elicitation(q), nil
				}
				// A session (stdio, or HTTP on an earlier revision): ask now, and call again
				// with the answer. Unasked, the CONFIRMATION_REQUIRED answer below stands.
				if approved, asked := ask(ctx, asking, req, q); asked {
					args, err := withDecision(call.Args, q.RequestID, approved)
					if err != nil {
						return nil, err
					}
					call.Args = args
					out, e = k.Call(ctx, call)
				}
			}
		}
		if a, ok := readApproval(e); ok && canElicit(req) {
			switch {
			case multiRoundTrip(req):
				// The first answer asks; a check that is still pending asks again.
				if e.Code == tools.CodeApprovalRequired || checked {
					return approvalElicitation(a, checked), nil
				}
			default:
				if o, ae, asked := waitApproval(ctx, asking, req, a, func(rid string) (any, *tools.Error) {
					args, err := withDecision(call.Args, rid, true) // asking again: never a decline
					if err != nil {
						return nil, tools.Errorf(tools.CodeInternal, "%v", err)
					}
					again := call
					again.Args = args
					return k.Call(ctx, again)
				}); asked {
					out, e = o, ae
				}
			}
		}
		if e = tools.WrapOut(wraps, x, out, e); e != nil {
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
}

// errorResult is a tool error: isError with the error model object as its text.
func errorResult(e *tools.Error) *mcp.CallToolResult {
	body, _ := json.Marshal(tools.Body{Error: e})
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(body)}}}
}

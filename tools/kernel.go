package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/switchboard-hq/switchboard/tools/tracing"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
)

// Request is one tool call as a door received it.
type Request struct {
	Tool       string
	Args       json.RawMessage // nil or empty means {}
	APIKey     string          // the secret as presented, "" when none
	Principal  *Principal      // already authenticated by the door (a portal session); wins over APIKey
	ClientAddr string
	RequestID  string
	KeyHelp    string // how this door takes a key, for UNAUTHENTICATED; "" means the HTTP headers

	// Decision is the caller's answer to a continuation, given beside the arguments (decide).
	Decision *Decision
	// AcceptsTask: the door can answer with a task (tools.Task) and its caller said it takes
	// one (MCP's Tasks extension declared on the request, REST's Prefer: respond-async).
	AcceptsTask bool
}

// Kernel is the single list of tools both doors iterate, and the single path every call
// takes: find the tool, authenticate, rate-limit, check scope, validate, run, translate errors.
type Kernel struct {
	tools    []*Tool // what MCP and REST publish
	session  []*Tool // SessionOnly: the portal's alone
	unlisted []*Tool // Unlisted: called by the doors for methods of their own
	byName   map[string]*Tool
	auth     Authenticator
	limiter  Limiter
	settled  Settled
	log      *slog.Logger
	now      func() time.Time
	large    chan struct{} // a slot per large input being validated (maxLargeValidations)
	steps    []step        // what every call passes before its handler runs (steps.go)
}

// Inputs of more than largeInput items (array elements and object members) are validated at
// most maxLargeValidations at a time per kernel: the schema validator builds its whole tree
// of errors before any is reported (about 450 bytes a problem: 15 MB for a 100 KB body of
// 34,000 bad items, and 16 such bodies at once took 259 MB), so however many arrive at once,
// the replica holds at most that many trees. Smaller inputs are never held up.
const (
	largeInput          = 4096
	maxLargeValidations = 2
)

// Settled returns once the account's writes that this replica left to a batch writer have
// committed ("": every account's): every read-only call sees its own account's earlier calls.
type Settled func(ctx context.Context, accountID string) error

// NewKernel registers tools. Duplicate names, unknown scopes, missing titles and undecided
// hints are refused. settled (nil: nothing is ever pending) runs before every read-only call.
func NewKernel(auth Authenticator, limiter Limiter, settled Settled, log *slog.Logger, now func() time.Time, tools ...*Tool) (*Kernel, error) {
	k := &Kernel{byName: make(map[string]*Tool), auth: auth, limiter: limiter, settled: settled, log: log, now: now, large: make(chan struct{}, maxLargeValidations)}
	k.steps = k.callSteps()
	for _, t := range tools {
		if _, dup := k.byName[t.Name]; dup {
			return nil, fmt.Errorf("tool %s registered twice", t.Name)
		}
		if s := t.Access.scope; s != "" && !s.Known() {
			return nil, fmt.Errorf("tool %s: unknown scope %q; the scopes are %v (tools/scope.go)", t.Name, s, allScopes)
		}
		a := &t.Annotations
		if a.ReadOnly == nil || a.OpenWorld == nil {
			return nil, fmt.Errorf("tool %s: Annotations.ReadOnly and OpenWorld must be set deliberately", t.Name)
		}
		if a.Destructive == nil {
			if !*a.ReadOnly {
				return nil, fmt.Errorf("tool %s: Annotations.Destructive must be set deliberately for a tool that writes", t.Name)
			}
			a.Destructive = Bool(false) // hosts and strict checkers want every hint; a reader destroys nothing
		}
		if t.Title == "" {
			return nil, fmt.Errorf("tool %s: a Title is required (hosts show it)", t.Name)
		}
		k.byName[t.Name] = t
		switch {
		case t.Unlisted:
			k.unlisted = append(k.unlisted, t)
		case t.Access.session:
			k.session = append(k.session, t)
		default:
			k.tools = append(k.tools, t)
		}
	}
	return k, nil
}

// Tools lists the tools the doors publish (MCP, REST), in registration order: every tool but
// the SessionOnly ones.
func (k *Kernel) Tools() []*Tool { return k.tools }

// SessionTools lists the SessionOnly tools, in registration order: the portal calls them by
// name, and no door publishes them.
func (k *Kernel) SessionTools() []*Tool { return k.session }

// UnlistedTools lists the Unlisted tools: the doors call them by name for methods of their own.
func (k *Kernel) UnlistedTools() []*Tool { return k.unlisted }

// Tool returns the named tool (SessionOnly ones included), or nil.
func (k *Kernel) Tool(name string) *Tool { return k.byName[name] }

// Call runs one tool call end to end. The error, if any, is already in the error model.
func (k *Kernel) Call(ctx context.Context, req Request) (any, *Error) {
	start := k.now()
	ctx, span := tracing.Call(ctx, req.Tool, attribute.String("switchboard.request_id", req.RequestID))
	caller := &Caller{ClientAddr: req.ClientAddr, RequestID: req.RequestID, AcceptsTask: req.AcceptsTask}
	out, err := k.call(ctx, caller, req)
	e := Translate(err)
	if e != nil {
		span.SetAttributes(attribute.String("switchboard.error_code", string(e.Code)))
		if e.Code == CodeInternal {
			span.SetStatus(codes.Error, e.Message)
		}
	}
	span.End()
	attrs := []any{"tool", req.Tool, "request_id", req.RequestID, "ms", k.now().Sub(start).Milliseconds()}
	if p := caller.Principal; p != nil {
		attrs = append(attrs, "principal", p.ID(), "auth", p.Method)
	}
	switch {
	case e == nil:
		k.log.InfoContext(ctx, "tool call", attrs...)
	case e.Code == CodeInternal:
		k.log.ErrorContext(ctx, "tool call failed", append(attrs, "code", e.Code, "err", e.Error())...)
	default:
		k.log.InfoContext(ctx, "tool call refused", append(attrs, "code", e.Code, "msg", e.Message)...)
	}
	if e != nil {
		return nil, e
	}
	return out, nil
}

// call passes the call through the kernel's steps, in order, then runs the tool's handler.
func (k *Kernel) call(ctx context.Context, caller *Caller, req Request) (any, error) {
	c := &callState{req: req, caller: caller}
	for _, s := range k.steps {
		if err := s(ctx, c); err != nil {
			return nil, err
		}
	}
	return c.tool.run(ctx, caller, c.args)
}

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
}

// Kernel is the single list of tools both doors iterate, and the single path every call
// takes: find the tool, authenticate, rate-limit, check scope, validate, run, translate errors.
type Kernel struct {
	tools   []*Tool // what MCP and REST publish
	session []*Tool // SessionOnly: the portal's alone
	byName  map[string]*Tool
	auth    Authenticator
	limiter Limiter
	settled Settled
	log     *slog.Logger
	now     func() time.Time
	large   chan struct{} // a slot per large input being validated (maxLargeValidations)
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
		if t.Access.session {
			k.session = append(k.session, t)
		} else {
			k.tools = append(k.tools, t)
		}
	}
	return k, nil
}

// allow takes a call from p's rate limit and each of its ancestors' (all or none): a key
// minted from another never calls more than its ancestors allow together. over is the
// ancestor whose limit refused the call (nil: p's own, or allowed).
func (k *Kernel) allow(ctx context.Context, p *Principal) (ok bool, wait time.Duration, over *Ancestor, err error) {
	if len(p.Ancestors) == 0 {
		ok, wait, err = k.limiter.Allow(ctx, p.ID(), p.RateLimitPerMinute)
		return ok, wait, nil, err
	}
	buckets := make([]Bucket, 0, 1+len(p.Ancestors))
	buckets = append(buckets, Bucket{ID: p.ID(), PerMinute: p.RateLimitPerMinute})
	for _, a := range p.Ancestors {
		buckets = append(buckets, Bucket{ID: a.KeyID, PerMinute: a.RateLimitPerMinute})
	}
	refused, wait, err := k.limiter.AllowAll(ctx, buckets)
	if err != nil || refused < 0 {
		return err == nil, 0, nil, err
	}
	if refused > 0 {
		over = &p.Ancestors[refused-1]
	}
	return false, wait, over, nil
}

// Tools lists the tools the doors publish (MCP, REST), in registration order: every tool but
// the SessionOnly ones.
func (k *Kernel) Tools() []*Tool { return k.tools }

// SessionTools lists the SessionOnly tools, in registration order: the portal calls them by
// name, and no door publishes them.
func (k *Kernel) SessionTools() []*Tool { return k.session }

// Tool returns the named tool (SessionOnly ones included), or nil.
func (k *Kernel) Tool(name string) *Tool { return k.byName[name] }

// Call runs one tool call end to end. The error, if any, is already in the error model.
func (k *Kernel) Call(ctx context.Context, req Request) (any, *Error) {
	start := k.now()
	ctx, span := tracing.Call(ctx, req.Tool, attribute.String("switchboard.request_id", req.RequestID))
	caller := &Caller{ClientAddr: req.ClientAddr, RequestID: req.RequestID}
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

func (k *Kernel) call(ctx context.Context, caller *Caller, req Request) (any, error) {
	t := k.byName[req.Tool]
	if t == nil {
		return nil, Errorf(CodeNotFound, "no tool named %q; list the tools to see what exists", req.Tool)
	}
	if t.Access.session && (req.Principal == nil || req.Principal.Method != AuthSession) {
		// Refused before any key is looked at: no key or token, whatever its scopes, may.
		return nil, Errorf(CodeForbidden, "%s is done by a signed-in human on the portal (/developer), never with an API key or OAuth token; sign in there to do it", t.Name)
	}
	if t.Access.NeedsKey() {
		p := req.Principal
		if p == nil && req.APIKey == "" {
			help := req.KeyHelp
			if help == "" {
				help = "send it in the header x-api-key or Authorization: Bearer"
			}
			return nil, Errorf(CodeUnauthenticated, "%s needs an API key: %s. No key yet? Call agent_signup with an e-mail inbox you can read, then agent_verify with the code; without an inbox, ask a human for a key", t.Name, help)
		}
		if p == nil {
			actx, span := tracing.Child(ctx, "auth")
			var err error
			p, err = k.auth.Authenticate(actx, req.APIKey)
			tracing.End(span, err)
			if err != nil {
				return nil, err
			}
		}
		caller.Principal = p
		ok, wait, over, err := true, time.Duration(0), (*Ancestor)(nil), error(nil)
		if !t.Access.session {
			// The portal's own pages (its charts, its sessions) are not an agent's calls: they
			// do not count against the human's rate limit (they did not before they were tools).
			ok, wait, over, err = k.allow(ctx, p)
		}
		switch {
		case err != nil && t.Annotations.ReadOnly != nil && *t.Annotations.ReadOnly:
			// A lookup costs nothing: let it through rather than fail every read with the limiter.
			k.log.WarnContext(ctx, "rate limiter unavailable; read-only call allowed", "tool", t.Name, "err", err)
		case err != nil:
			e := Errorf(CodeUnavailable, "%s cannot run now: the rate limiter that all replicas share is unreachable, and a call that writes or costs money is never let through unlimited; retry in a few seconds", t.Name).Wrap(err)
			e.RetryAfter = 2 * time.Second
			return nil, e
		case !ok && over != nil:
			e := Errorf(CodeRateLimited, "the key %s that this key was minted under allows %d requests a minute, shared by every key minted under it; retry in %d s",
				over.KeyID, over.RateLimitPerMinute, int(wait.Seconds()))
			e.RetryAfter = wait
			return nil, e
		case !ok:
			e := Errorf(CodeRateLimited, "this key allows %d requests a minute; retry in %d s, or use a key with a higher limit", p.RateLimitPerMinute, int(wait.Seconds()))
			e.RetryAfter = wait
			return nil, e
		}
		if s := t.Access.Scope(); s != "" && !p.HasScope(s) {
			return nil, Errorf(CodeForbidden, "%s needs scope %q; this key has %v. Use a key with that scope (api_key_create can only grant scopes the minting key has)", t.Name, s, p.Scopes)
		}
		if k.settled != nil && *t.Annotations.ReadOnly {
			// A reader sees the caller's own earlier calls. A writer need not wait: a pending
			// settlement still holds its worst case, so every limit check stays conservative.
			account := p.AccountID
			if t.ReadsOtherAccounts {
				account = ""
			}
			if err := k.settled(ctx, account); err != nil {
				return nil, err
			}
		}
	}
	args := []byte(req.Args)
	if len(args) == 0 || string(args) == "null" {
		args = []byte("{}")
	}
	if e := CheckJSON("arguments", args); e != nil {
		return nil, e
	}
	v, err := DecodeJSON(args)
	if err != nil {
		return nil, Errorf(CodeBadInput, "arguments are not valid JSON: %v", err)
	}
	if e := k.validate(ctx, t, v); e != nil {
		e.Message += fmt.Sprintf(". The input schema of %s lists the fields it takes", t.Name)
		return nil, e
	}
	return t.run(ctx, caller, args)
}

// validate checks v against t's input schema, taking one of the kernel's slots for large
// inputs first when v has more than largeInput items.
func (k *Kernel) validate(ctx context.Context, t *Tool, v any) *Error {
	if items(v, largeInput) > largeInput {
		select {
		case k.large <- struct{}{}:
			defer func() { <-k.large }()
		case <-ctx.Done():
			return Errorf(CodeUnavailable, "the call was cancelled while waiting to check its %d+ items of arguments; send fewer items, or retry", largeInput).Wrap(ctx.Err())
		}
	}
	return Validate(t.input, v, "arguments")
}

// items counts v's array elements and object members at every depth, stopping past limit.
func items(v any, limit int) int {
	n := 0
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case []any:
			for _, x := range v {
				if n++; n > limit {
					return
				}
				walk(x)
			}
		case map[string]any:
			for _, x := range v {
				if n++; n > limit {
					return
				}
				walk(x)
			}
		}
	}
	walk(v)
	return n
}

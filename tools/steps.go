package tools

import (
	"context"
	"fmt"
	"time"

	"github.com/switchboard-hq/switchboard/tools/tracing"
)

// callState is one call as it passes the kernel's steps: what the door sent, who is calling
// (filled in by authenticate), the tool (by find) and the arguments the handler gets (by
// validate).
type callState struct {
	req    Request
	caller *Caller
	tool   *Tool
	args   []byte
}

// keyed reports whether the call's tool needs a key: the steps from authenticate to settle
// apply to such calls only.
func (c *callState) keyed() bool { return c.tool.Access.NeedsKey() }

// step is one check every call passes before its handler runs. It refuses the call with an
// error (in the error model, or one Translate knows) or records what later steps read.
type step func(ctx context.Context, c *callState) error

// callSteps lists the steps in the order every call takes them. A new check is one method
// and one line here; its place in the order is part of its behaviour (who learns what, and
// what a refused call costs).
func (k *Kernel) callSteps() []step {
	return []step{
		k.find,         // the tool exists
		k.gate,         // a portal-only tool: a portal session, before any key is looked at
		k.authenticate, // the key or token, or the door's principal
		k.limit,        // the rate limits of the key and its ancestors
		k.authorize,    // the tool's scope
		k.settle,       // a reader waits for the caller's pending writes
		k.validate,     // the arguments: strict JSON, then the input schema
		k.decide,       // the caller's answer to a continuation, for a tool that takes one
	}
}

// find looks the tool up by name.
func (k *Kernel) find(_ context.Context, c *callState) error {
	if c.tool = k.byName[c.req.Tool]; c.tool == nil {
		return Errorf(CodeNotFound, "no tool named %q; list the tools to see what exists", c.req.Tool)
	}
	return nil
}

// gate refuses a SessionOnly tool to everyone but a portal session. It runs before any key
// is looked at: no key or token, whatever its scopes, may.
func (k *Kernel) gate(_ context.Context, c *callState) error {
	if p := c.req.Principal; c.tool.Access.session && (p == nil || p.Method != AuthSession) {
		return Errorf(CodeForbidden, "%s is done by a signed-in human on the portal (/developer), never with an API key or OAuth token; sign in there to do it", c.tool.Name)
	}
	return nil
}

// authenticate makes the caller's principal: the one the door authenticated (a portal
// session) or the one the presented key or token stands for.
func (k *Kernel) authenticate(ctx context.Context, c *callState) error {
	if !c.keyed() {
		return nil
	}
	p := c.req.Principal
	if p == nil && c.req.APIKey == "" {
		help := c.req.KeyHelp
		if help == "" {
			help = "send it in the header x-api-key or Authorization: Bearer"
		}
		return Errorf(CodeUnauthenticated, "%s needs an API key: %s. No key yet? Call agent_signup with an e-mail inbox you can read, then agent_verify with the code; without an inbox, ask a human for a key", c.tool.Name, help)
	}
	if p == nil {
		actx, span := tracing.Child(ctx, "auth")
		var err error
		p, err = k.auth.Authenticate(actx, c.req.APIKey)
		tracing.End(span, err)
		if err != nil {
			return err
		}
	}
	c.caller.Principal = p
	return nil
}

// limit takes the call from the rate limits of the caller's key and its ancestors. The
// portal's own pages (its charts, its sessions) are not an agent's calls: they do not count
// against the human's rate limit (they did not before they were tools). Nor do a door's own
// methods (Unlisted: polling a task at its pollIntervalMs would spend a key's minute in 30
// seconds; each is one read by primary key).
func (k *Kernel) limit(ctx context.Context, c *callState) error {
	if !c.keyed() || c.tool.Access.session || c.tool.Unlisted {
		return nil
	}
	p := c.caller.Principal
	ok, wait, over, err := k.allow(ctx, p)
	switch {
	case err != nil && *c.tool.Annotations.ReadOnly:
		// A lookup costs nothing: let it through rather than fail every read with the limiter.
		k.log.WarnContext(ctx, "rate limiter unavailable; read-only call allowed", "tool", c.tool.Name, "err", err)
		return nil
	case err != nil:
		e := Errorf(CodeUnavailable, "%s cannot run now: the rate limiter that all replicas share is unreachable, and a call that writes or costs money is never let through unlimited; retry in a few seconds", c.tool.Name).Wrap(err)
		e.RetryAfter = 2 * time.Second
		return e
	case ok:
		return nil
	case over != nil:
		e := Errorf(CodeRateLimited, "the key %s that this key was minted under allows %d requests a minute, shared by every key minted under it; retry in %d s",
			over.KeyID, over.RateLimitPerMinute, int(wait.Seconds()))
		e.RetryAfter = wait
		return e
	default:
		e := Errorf(CodeRateLimited, "this key allows %d requests a minute; retry in %d s, or use a key with a higher limit", p.RateLimitPerMinute, int(wait.Seconds()))
		e.RetryAfter = wait
		return e
	}
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

// authorize refuses a caller whose principal lacks the tool's scope.
func (k *Kernel) authorize(_ context.Context, c *callState) error {
	if !c.keyed() {
		return nil
	}
	if s, p := c.tool.Access.Scope(), c.caller.Principal; s != "" && !p.HasScope(s) {
		return Errorf(CodeForbidden, "%s needs scope %q; this key has %v. Use a key with that scope (api_key_create can only grant scopes the minting key has)", c.tool.Name, s, p.Scopes)
	}
	return nil
}

// settle makes a reader see the caller's own earlier calls (every account's, for a tool that
// reads other accounts). A writer need not wait: a pending settlement still holds its worst
// case, so every limit check stays conservative.
func (k *Kernel) settle(ctx context.Context, c *callState) error {
	if !c.keyed() || k.settled == nil || !*c.tool.Annotations.ReadOnly {
		return nil
	}
	account := c.caller.Principal.AccountID
	if c.tool.ReadsOtherAccounts {
		account = ""
	}
	return k.settled(ctx, account)
}

// validate checks the arguments (none or null meaning {}) as strict JSON, then against the
// tool's input schema, and keeps them for the handler.
func (k *Kernel) validate(ctx context.Context, c *callState) error {
	args := []byte(c.req.Args)
	if len(args) == 0 || string(args) == "null" {
		args = []byte("{}")
	}
	if e := CheckJSON("arguments", args); e != nil {
		return e
	}
	v, err := DecodeJSON(args)
	if err != nil {
		return Errorf(CodeBadInput, "arguments are not valid JSON: %v", err)
	}
	if e := k.checkSchema(ctx, c.tool, v); e != nil {
		e.Message += fmt.Sprintf(". The input schema of %s lists the fields it takes", c.tool.Name)
		return e
	}
	c.args = args
	return nil
}

// checkSchema checks v against t's input schema, taking one of the kernel's slots for large
// inputs first when v has more than largeInput items.
func (k *Kernel) checkSchema(ctx context.Context, t *Tool, v any) *Error {
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

// decide hands the caller's answer to a continuation to a tool that declares it takes one,
// and refuses it to any other.
func (k *Kernel) decide(_ context.Context, c *callState) error {
	return decide(c.tool, c.caller, c.req.Decision)
}

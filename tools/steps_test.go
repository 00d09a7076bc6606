package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/keys"
	"github.com/switchboard-hq/switchboard/tools/ratelimit"
	"github.com/switchboard-hq/switchboard/tools/ratelimit/redistest"
	"github.com/switchboard-hq/switchboard/tools/service"
)

// One test per step of the kernel (tools/steps.go), each through Kernel.Call on real parts:
// what the step refuses, how, and that a refused call never reaches the handler. Where the
// order of two steps shows (who learns what, what a refused call costs), the test pins it.

// stepTool is a tool for the step tests; ran counts its handler's runs and caller is the
// last caller it saw.
type stepTool struct {
	*tools.Tool
	ran    int
	caller *tools.Caller
	n      int // the last input's n
}

type stepIn struct {
	N int `json:"n,omitempty" jsonschema:"minimum=1,maximum=3"`
}

func newStepTool(name string, access tools.Access, readOnly bool, def ...func(*tools.Def)) *stepTool {
	st := &stepTool{}
	d := tools.Def{Name: name, Title: name, Description: "test tool", Access: access,
		Annotations: tools.Annotations{ReadOnly: tools.Bool(readOnly), OpenWorld: tools.Bool(false)}}
	if !readOnly {
		d.Annotations.Destructive = tools.Bool(false)
	}
	for _, f := range def {
		f(&d)
	}
	st.Tool = tools.New(d, func(_ context.Context, c *tools.Caller, in stepIn) (echoOut, error) {
		st.ran++
		st.caller, st.n = c, in.N
		return echoOut{Account: c.AccountID()}, nil
	})
	return st
}

// stepKernel builds a kernel on s's keys (sb_test_read with scope read, sb_test_pub with
// publish, both of account acct) with the limiter and settled given (nil limiter: the
// in-process one).
func stepKernel(t *testing.T, s *store.Store, limiter tools.Limiter, settled tools.Settled, ts ...*stepTool) *tools.Kernel {
	t.Helper()
	now := time.Now
	if limiter == nil {
		limiter = tools.NewRateLimiter(now)
	}
	all := make([]*tools.Tool, len(ts))
	for i, st := range ts {
		all[i] = st.Tool
	}
	k, err := tools.NewKernel(keys.NewAuthenticator(service.Deps{Store: s, Now: now, Log: quiet}, nil), limiter, settled, quiet, now, all...)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := accounts.New(s).Create(ctx, &accounts.Account{ID: "acct", Email: "k@example.com", CreatedAt: now()}, nil,
		&accounts.APIKey{ID: "k-pub", AccountID: "acct", Name: "p", Prefix: "p", Hash: tools.HashKey("sb_test_pub"), Scopes: []string{"publish"}, SpendLimitMicro: 1, RateLimitPerMinute: 100, CreatedAt: now()}); err != nil {
		t.Fatal(err)
	}
	if err := accounts.New(s).CreateKey(ctx, &accounts.APIKey{ID: "k-read", AccountID: "acct", Name: "r", Prefix: "r", Hash: tools.HashKey("sb_test_read"), Scopes: []string{"read"}, SpendLimitMicro: 1, RateLimitPerMinute: 100, CreatedAt: now()}); err != nil {
		t.Fatal(err)
	}
	return k
}

// refused fails t unless e has code and a message containing msg.
func refused(t *testing.T, what string, e *tools.Error, code tools.Code, msg string) {
	t.Helper()
	if e == nil || e.Code != code || !strings.Contains(e.Message, msg) {
		t.Errorf("%s: got %+v, want %s containing %q", what, e, code, msg)
	}
}

func keyPrincipal(id string, perMinute int, scopes ...string) *tools.Principal {
	return &tools.Principal{AccountID: "acct", Method: tools.AuthAPIKey, KeyID: id, Scopes: scopes, RateLimitPerMinute: perMinute}
}

// find: an unknown tool is NOT_FOUND, naming it, before any credential is asked for.
func TestKernelStepFind(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		pub := newStepTool("step_public", tools.Public, true)
		k := stepKernel(t, s, nil, nil, pub)
		_, e := k.Call(context.Background(), tools.Request{Tool: "step_nope"})
		refused(t, "an unknown tool without a key", e, tools.CodeNotFound, `no tool named "step_nope"`)
		if _, e := k.Call(context.Background(), tools.Request{Tool: "step_public"}); e != nil || pub.ran != 1 {
			t.Fatalf("a known public tool: %v (ran %d)", e, pub.ran)
		}
	})
}

// gate: a SessionOnly tool is FORBIDDEN, naming the portal, to anything but a portal session,
// before the key is looked at (a key that does not exist gets the same answer).
func TestKernelStepGate(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		mine := newStepTool("step_portal", tools.SessionOnly, true)
		k := stepKernel(t, s, nil, nil, mine)
		ctx := context.Background()
		for name, req := range map[string]tools.Request{
			"no key":             {},
			"an unknown key":     {APIKey: "sb_test_nosuchkey"},
			"a valid key":        {APIKey: "sb_test_pub"},
			"an OAuth principal": {Principal: &tools.Principal{AccountID: "acct", Method: tools.AuthOAuth, KeyID: "k-pub", RateLimitPerMinute: 100}},
		} {
			req.Tool = "step_portal"
			_, e := k.Call(ctx, req)
			refused(t, name, e, tools.CodeForbidden, "signed-in human on the portal")
		}
		if mine.ran != 0 {
			t.Fatalf("the handler ran %d times for refused callers", mine.ran)
		}
		session := &tools.Principal{AccountID: "acct", Method: tools.AuthSession, SessionID: "s1", RateLimitPerMinute: 100}
		if _, e := k.Call(ctx, tools.Request{Tool: "step_portal", Principal: session}); e != nil || mine.ran != 1 {
			t.Fatalf("a portal session: %v (ran %d)", e, mine.ran)
		}
	})
}

// authenticate: a keyed tool without a key is UNAUTHENTICATED, saying how this door takes a
// key and how to get one; a key the authenticator refuses keeps its answer; the door's
// principal wins over a key; a public tool ignores any key and runs with no principal.
func TestKernelStepAuthenticate(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		keyed := newStepTool("step_keyed", tools.AnyKey, true)
		pub := newStepTool("step_public", tools.Public, true)
		k := stepKernel(t, s, nil, nil, keyed, pub)
		ctx := context.Background()
		_, e := k.Call(ctx, tools.Request{Tool: "step_keyed"})
		refused(t, "no key, the HTTP door", e, tools.CodeUnauthenticated, "step_keyed needs an API key: send it in the header x-api-key or Authorization: Bearer. No key yet? Call agent_signup")
		_, e = k.Call(ctx, tools.Request{Tool: "step_keyed", KeyHelp: "pass it as the argument apiKey"})
		refused(t, "no key, a door with its own help", e, tools.CodeUnauthenticated, "needs an API key: pass it as the argument apiKey.")
		_, e = k.Call(ctx, tools.Request{Tool: "step_keyed", APIKey: "sb_test_nosuchkey"})
		refused(t, "an unknown key", e, tools.CodeUnauthenticated, "unknown API key")
		if keyed.ran != 0 {
			t.Fatalf("the handler ran %d times unauthenticated", keyed.ran)
		}

		if _, e := k.Call(ctx, tools.Request{Tool: "step_keyed", APIKey: "sb_test_read"}); e != nil || keyed.caller.Principal.KeyID != "k-read" {
			t.Fatalf("a valid key: %v, principal %+v", e, keyed.caller.Principal)
		}
		door := &tools.Principal{AccountID: "acct", Method: tools.AuthSession, SessionID: "s1", RateLimitPerMinute: 100}
		if _, e := k.Call(ctx, tools.Request{Tool: "step_keyed", APIKey: "sb_test_nosuchkey", Principal: door}); e != nil || keyed.caller.Principal != door {
			t.Fatalf("the door's principal beside a bad key: %v, principal %+v", e, keyed.caller.Principal)
		}
		if _, e := k.Call(ctx, tools.Request{Tool: "step_public", APIKey: "sb_test_pub", Principal: door, ClientAddr: "192.0.2.1", RequestID: "r1"}); e != nil {
			t.Fatal(e)
		}
		if c := pub.caller; c.Principal != nil || c.ClientAddr != "192.0.2.1" || c.RequestID != "r1" {
			t.Fatalf("a public tool's caller: %+v, want no principal and the door's address and request id", c)
		}
	})
}

// limit: a key over its own limit, or over an ancestor's that its siblings share, is
// RATE_LIMITED with how long to wait; when the shared limiter is down a writer is UNAVAILABLE
// (retry in 2 s) and a reader goes through; a portal-only tool is never counted.
func TestKernelStepLimit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		reader := newStepTool("step_reader", tools.AnyKey, true)
		writer := newStepTool("step_writer", tools.AnyKey, false)
		mine := newStepTool("step_portal", tools.SessionOnly, true)
		srv := redistest.Start(t)
		rdb, err := ratelimit.Open(context.Background(), srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rdb.Close() })
		k := stepKernel(t, s, ratelimit.NewRedis(rdb, "steps:"), nil, reader, writer, mine)
		ctx := context.Background()

		one := keyPrincipal("k-one", 1)
		if _, e := k.Call(ctx, tools.Request{Tool: "step_reader", Principal: one}); e != nil {
			t.Fatal(e)
		}
		_, e := k.Call(ctx, tools.Request{Tool: "step_reader", Principal: one})
		refused(t, "the key's own limit", e, tools.CodeRateLimited, "this key allows 1 requests a minute; retry in")
		if e == nil || e.RetryAfter <= 0 || e.RetryAfter > time.Minute {
			t.Errorf("retry after %v, want within the minute", e.RetryAfter)
		}

		ancestor := []tools.Ancestor{{KeyID: "k-root", RateLimitPerMinute: 1}}
		a, b := keyPrincipal("k-a", 100), keyPrincipal("k-b", 100)
		a.Ancestors, b.Ancestors = ancestor, ancestor
		if _, e := k.Call(ctx, tools.Request{Tool: "step_reader", Principal: a}); e != nil {
			t.Fatal(e)
		}
		_, e = k.Call(ctx, tools.Request{Tool: "step_reader", Principal: b})
		refused(t, "a sibling under a shared ancestor", e, tools.CodeRateLimited, "the key k-root that this key was minted under allows 1 requests a minute")
		if e == nil || e.RetryAfter <= 0 {
			t.Errorf("an ancestor's refusal gives no wait: %+v", e)
		}

		session := &tools.Principal{AccountID: "acct", Method: tools.AuthSession, SessionID: "s1", RateLimitPerMinute: 1}
		for i := range 3 {
			if _, e := k.Call(ctx, tools.Request{Tool: "step_portal", Principal: session}); e != nil {
				t.Fatalf("a portal page, call %d, counted against the limit: %v", i+1, e)
			}
		}

		srv.Stop()
		ranBefore := writer.ran
		_, e = k.Call(ctx, tools.Request{Tool: "step_writer", Principal: keyPrincipal("k-w", 100)})
		refused(t, "a writer with the limiter down", e, tools.CodeUnavailable, "step_writer cannot run now: the rate limiter that all replicas share is unreachable")
		if e == nil || e.RetryAfter != 2*time.Second || writer.ran != ranBefore {
			t.Errorf("a writer with the limiter down: %+v, ran %d", e, writer.ran-ranBefore)
		}
		if _, e := k.Call(ctx, tools.Request{Tool: "step_reader", Principal: keyPrincipal("k-r", 100)}); e != nil {
			t.Errorf("a reader with the limiter down: %v, want it let through", e)
		}
	})
}

// authorize: a key without the tool's scope is FORBIDDEN, naming the scope and the key's;
// the refused call still counted against the key's rate limit (limit comes first).
func TestKernelStepAuthorize(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		scoped := newStepTool("step_scoped", tools.RequireScope(tools.ScopePublish), true)
		anyKey := newStepTool("step_any", tools.AnyKey, true)
		k := stepKernel(t, s, nil, nil, scoped, anyKey)
		ctx := context.Background()
		_, e := k.Call(ctx, tools.Request{Tool: "step_scoped", APIKey: "sb_test_read"})
		refused(t, "a key without the scope", e, tools.CodeForbidden, `step_scoped needs scope "publish"; this key has [read]`)
		if _, e := k.Call(ctx, tools.Request{Tool: "step_scoped", APIKey: "sb_test_pub"}); e != nil || scoped.ran != 1 {
			t.Fatalf("a key with the scope: %v (ran %d)", e, scoped.ran)
		}

		one := keyPrincipal("k-one", 1, "read")
		_, e = k.Call(ctx, tools.Request{Tool: "step_scoped", Principal: one})
		refused(t, "a principal without the scope", e, tools.CodeForbidden, `needs scope "publish"`)
		_, e = k.Call(ctx, tools.Request{Tool: "step_any", Principal: one})
		refused(t, "the next call after a refused one", e, tools.CodeRateLimited, "this key allows 1 requests a minute")
		if scoped.ran != 1 || anyKey.ran != 0 {
			t.Fatalf("handlers ran for refused calls: %d %d", scoped.ran-1, anyKey.ran)
		}
	})
}

// settle: a reader waits for its account's pending writes (every account's when it reads
// others'), and the wait's failure is the call's, translated; a writer, a public tool and a
// caller refused its scope never wait.
func TestKernelStepSettle(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		var waited []string
		var fail error
		settled := func(_ context.Context, account string) error {
			waited = append(waited, account)
			return fail
		}
		reader := newStepTool("step_reader", tools.AnyKey, true)
		partner := newStepTool("step_partner", tools.AnyKey, true, func(d *tools.Def) { d.ReadsOtherAccounts = true })
		writer := newStepTool("step_writer", tools.AnyKey, false)
		pub := newStepTool("step_public", tools.Public, true)
		scoped := newStepTool("step_scoped", tools.RequireScope(tools.ScopePublish), true)
		k := stepKernel(t, s, nil, settled, reader, partner, writer, pub, scoped)
		ctx := context.Background()
		for _, name := range []string{"step_reader", "step_partner", "step_writer", "step_public", "step_scoped"} {
			k.Call(ctx, tools.Request{Tool: name, APIKey: "sb_test_read"})
		}
		if got := strings.Join(waited, ","); got != "acct," {
			t.Fatalf("waited for %q, want the reader's account, then every account for the partner's reader", got)
		}

		fail = context.DeadlineExceeded
		_, e := k.Call(ctx, tools.Request{Tool: "step_reader", APIKey: "sb_test_read"})
		refused(t, "the wait timed out", e, tools.CodeUnavailable, "timed out")
		if e == nil || !errors.Is(e, context.DeadlineExceeded) || reader.ran != 1 {
			t.Fatalf("a failed wait: %+v (ran %d), want the wait's error wrapped and no run", e, reader.ran)
		}
	})
}

// validate: none or null arguments are {}; arguments that are not strict JSON or fail the
// input schema are BAD_INPUT, the schema's refusal pointing at the schema; the handler gets
// the arguments as sent.
func TestKernelStepValidate(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		pub := newStepTool("step_public", tools.Public, true)
		k := stepKernel(t, s, nil, nil, pub)
		ctx := context.Background()
		for _, args := range []string{"", "null", "{}", `{"n":3}`} {
			if _, e := k.Call(ctx, tools.Request{Tool: "step_public", Args: json.RawMessage(args)}); e != nil {
				t.Errorf("arguments %q: %v", args, e)
			}
		}
		if pub.n != 3 {
			t.Errorf("the handler got n=%d, want the 3 sent", pub.n)
		}
		for what, c := range map[string]struct{ args, msg string }{
			"a duplicate key": {`{"n":1,"n":2}`, "twice"},
			"not JSON":        {`{"n":`, "arguments are not valid JSON"},
			"out of range":    {`{"n":4}`, "/n"},
			"unknown field":   {`{"m":1}`, "m"},
			"not an object":   {`[1]`, "object"},
		} {
			_, e := k.Call(ctx, tools.Request{Tool: "step_public", Args: json.RawMessage(c.args)})
			refused(t, what, e, tools.CodeBadInput, c.msg)
		}
		_, e := k.Call(ctx, tools.Request{Tool: "step_public", Args: json.RawMessage(`{"n":4}`)})
		refused(t, "the schema's refusal", e, tools.CodeBadInput, ". The input schema of step_public lists the fields it takes")
		if pub.ran != 4 {
			t.Fatalf("the handler ran %d times, want 4 (the valid calls only)", pub.ran)
		}
	})
}

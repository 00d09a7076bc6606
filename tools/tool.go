// Package tools is Switchboard's tool kernel: every capability is a Tool value (name,
// LLM-facing description, access rule, annotations, Go input/output types, handler), and the
// Kernel is the one place where a call is authenticated, rate-limited, scope-checked and
// validated before any handler runs, for MCP and REST alike. Sub-packages hold the tools.
package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strings"

	"github.com/google/uuid"
	invopop "github.com/invopop/jsonschema"
	"github.com/santhosh-tekuri/jsonschema/v5"
)

// Access says who may call a tool.
type Access struct {
	key     bool
	scope   Scope
	session bool
}

var (
	// Public tools need no key (onboarding).
	Public = Access{}
	// AnyKey tools need a valid key, whatever its scopes.
	AnyKey = Access{key: true}
	// SessionOnly tools are what only the portal's signed-in human does (exporting the
	// wallets' keys, sign-in sessions, usage charts): never listed on MCP nor routed on REST,
	// and refused to API keys and OAuth tokens, so no agent credential reaches them.
	SessionOnly = Access{key: true, session: true}
)

// RequireScope requires a valid key carrying scope s (one of the Scope constants: NewKernel
// refuses any other).
func RequireScope(s Scope) Access { return Access{key: true, scope: s} }

// NeedsKey reports whether a key is required.
func (a Access) NeedsKey() bool { return a.key }

// Scope returns the scope required, "" when none.
func (a Access) Scope() Scope { return a.scope }

// SessionOnly reports whether only a portal session may call the tool.
func (a Access) SessionOnly() bool { return a.session }

func (a Access) String() string {
	switch {
	case a.session:
		return "portal session only"
	case !a.key:
		return "none"
	case a.scope == "":
		return "any valid key"
	default:
		return string(a.scope)
	}
}

// Annotations are the MCP tool hints. ReadOnly is a pointer so that a tool which forgot to
// decide is caught (NewKernel refuses it).
type Annotations struct {
	ReadOnly    *bool
	Destructive *bool
	Idempotent  bool
	OpenWorld   *bool
}

// Bool returns a pointer to b, for Annotations.
func Bool(b bool) *bool { return &b }

// Def is what a tool declares about itself.
type Def struct {
	Name        string
	Title       string
	Description string // written for an LLM: what it does, when to use it, what comes back
	Access      Access
	Annotations Annotations
	// ReadsOtherAccounts marks a reader of other accounts' calls (a partner's receipts and
	// earnings): it waits for every write this replica has pending, not only the caller's.
	ReadsOtherAccounts bool
	// Toolset, when set, is the toolset the tool is listed in; empty: the one its access
	// implies (Tool.Toolset).
	Toolset Toolset
	// TakesIdempotencyKey: the tool takes an idempotency key on every door (tools/idempotency
	// wraps it; REST's Idempotency-Key header becomes IdempotencyKeyProperty). Only a keyed
	// tool may: a keyless one has no caller to keep the key for.
	TakesIdempotencyKey bool
	// TakesPayment: the caller may pay for the call in the call itself. A PAYMENT_REQUIRED
	// answer says what to pay and the retry carries the payment, which a transport may carry
	// beside the arguments (x402's headers and _meta, read by a Wrap the doors are given).
	TakesPayment bool
	// TakesDecision: the tool may answer with a continuation (Error.Continue), and the
	// caller's answer to it comes back as Caller.Decision, which the kernel gives no other
	// tool.
	TakesDecision bool
	// AnswersTasks: a call may be answered with a task (tools.Task, StartedTask) when its
	// caller takes one (Caller.AcceptsTask): REST documents its 202.
	AnswersTasks bool
	// Unlisted: a tool the doors call for a method of their own (MCP's tasks/get, REST's
	// /v1/tasks/{id}) and publish as no tool: with the caller's key as any other, but never
	// listed on MCP nor routed on REST by the tool table (Kernel.UnlistedTools lists it).
	Unlisted bool
}

// The input property an idempotent call's key travels in, and the longest key in characters.
const (
	IdempotencyKeyProperty = "idempotencyKey"
	MaxIdempotencyKey      = 255
)

// Caller is who is calling (nil Principal for public tools called without credentials) and
// where the call came from.
type Caller struct {
	Principal  *Principal
	ClientAddr string
	RequestID  string
	// CallID, when set, is the requestId a call that records itself (an invocation) takes:
	// an idempotent call's (tools/idempotency) is chosen before it runs, so a retry after a
	// crash finds its record.
	CallID string
	// Decision is the caller's answer to this tool's continuation, set by a door (an
	// elicitation's answer) for a tool that TakesDecision; nil when none was given.
	Decision *Decision
	// AcceptsTask: the caller takes a task for an answer (Request.AcceptsTask); a tool that
	// runs long may then answer one (StartedTask) and conclude later.
	AcceptsTask bool
}

// NewCallID returns the requestId a new recorded call takes: CallID when it is set, or a
// fresh UUIDv7.
func (c *Caller) NewCallID() string {
	if c.CallID != "" {
		return c.CallID
	}
	return uuid.Must(uuid.NewV7()).String()
}

// AccountID returns the caller's account, "" when unauthenticated.
func (c *Caller) AccountID() string {
	if c.Principal == nil {
		return ""
	}
	return c.Principal.AccountID
}

// Handler is a tool's typed implementation. It runs only after the kernel has checked access
// and validated the input against the input schema.
type Handler[In, Out any] func(ctx context.Context, c *Caller, in In) (Out, error)

// Tool is one capability, ready to register on any door.
type Tool struct {
	Def
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage

	input  *jsonschema.Schema
	output *jsonschema.Schema
	run    Run
	decode func(raw []byte) (any, error)
}

// Run runs a call of a tool on arguments the kernel has validated.
type Run func(ctx context.Context, c *Caller, args []byte) (any, error)

// Wrapped returns a copy of t that publishes and validates the optional input properties
// extra (name -> JSON Schema) besides its own, and whose calls go through wrap, given t's own
// run. wrap must remove those properties before it calls that run: it decodes strictly.
func (t *Tool) Wrapped(extra map[string]json.RawMessage, wrap func(next Run) Run) (*Tool, error) {
	var doc map[string]any
	if err := json.Unmarshal(t.InputSchema, &doc); err != nil {
		return nil, err
	}
	props, _ := doc["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
		doc["properties"] = props
	}
	for name, raw := range extra {
		if _, taken := props[name]; taken {
			return nil, fmt.Errorf("tool %s already has an input property %q", t.Name, name)
		}
		var s any
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("tool %s: schema of %s: %w", t.Name, name, err)
		}
		props[name] = s
	}
	raw, err := strictSchema(mustJSON(doc))
	if err != nil {
		return nil, fmt.Errorf("tool %s: %w", t.Name, err)
	}
	compiled, err := CompileSchema(raw)
	if err != nil {
		return nil, fmt.Errorf("tool %s: compile input schema: %w", t.Name, err)
	}
	w := *t
	w.InputSchema, w.input, w.run = raw, compiled, wrap(t.run)
	return &w, nil
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// DecodeOutput reads an answer of t stored as JSON back into its output type, so a door
// shows a replayed answer exactly as it showed the first.
func (t *Tool) DecodeOutput(raw []byte) (any, error) { return t.decode(raw) }

var toolName = regexp.MustCompile(`^[a-z][a-z0-9_]{1,63}$`)

// New builds a tool from its definition and typed handler. Schemas are generated from In and
// Out; a type that cannot produce a valid object schema is a programming error and panics at
// start-up (and in the schema tests), never at call time.
func New[In, Out any](def Def, h Handler[In, Out]) *Tool {
	if !toolName.MatchString(def.Name) {
		panic(fmt.Sprintf("tool name %q must match %s", def.Name, toolName))
	}
	t := &Tool{Def: def}
	var err error
	if t.InputSchema, t.input, err = schemaFor(reflect.TypeFor[In](), "input"); err != nil {
		panic(fmt.Sprintf("tool %s: %v", def.Name, err))
	}
	if t.OutputSchema, t.output, err = schemaFor(reflect.TypeFor[Out](), "output"); err != nil {
		panic(fmt.Sprintf("tool %s: %v", def.Name, err))
	}
	filled := answerFiller[Out]() // no list in an answer is null (nulls.go)
	t.run = func(ctx context.Context, c *Caller, args []byte) (any, error) {
		var in In
		dec := json.NewDecoder(bytes.NewReader(args))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil {
			return nil, Errorf(CodeBadInput, "arguments do not fit the input schema: %v", err)
		}
		out, err := h(ctx, c, in)
		if err != nil {
			return out, err
		}
		return filled(out), nil
	}
	t.decode = func(raw []byte) (any, error) {
		var out Out
		err := json.Unmarshal(raw, &out)
		return filled(out), err
	}
	return t
}

// schemaFor generates the JSON Schema of t (root "type":"object", everything inlined, no
// root $ref) and compiles it with format assertions on.
func schemaFor(t reflect.Type, name string) (json.RawMessage, *jsonschema.Schema, error) {
	r := &invopop.Reflector{ExpandedStruct: true, Anonymous: true, DoNotReference: true, Mapper: mapType}
	s := r.ReflectFromType(t)
	s.Version = ""
	if name == "output" {
		markNullable(t, s) // what an answer may write as null, its schema admits (nulls.go)
	}
	if s.Type != "object" {
		return nil, nil, fmt.Errorf("%s schema has type %q, want \"object\"", name, s.Type)
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, nil, fmt.Errorf("marshal %s schema: %w", name, err)
	}
	if raw, err = strictSchema(raw); err != nil {
		return nil, nil, fmt.Errorf("%s %w", name, err)
	}
	if name == "output" {
		if raw, err = describeOnce(raw); err != nil {
			return nil, nil, fmt.Errorf("%s schema: %w", name, err)
		}
	}
	compiled, err := CompileSchema(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("compile %s schema: %w", name, err)
	}
	return raw, compiled, nil
}

// CompileSchema compiles a JSON Schema (draft 2020-12 unless it says otherwise) with format
// assertions on. Partner schemas go through it too, so nothing external is ever loaded: an
// external $ref (file, http) is refused rather than read.
func CompileSchema(raw []byte) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.AssertFormat = true
	c.LoadURL = func(u string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("external $ref %q is not allowed; inline the definitions ($defs)", u)
	}
	const url = "mem://schema.json"
	if err := c.AddResource(url, bytes.NewReader(raw)); err != nil {
		return nil, err
	}
	return c.Compile(url)
}

// DecodeJSON decodes raw JSON keeping numbers exact (json.Number), the form the validator
// expects.
func DecodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("unexpected data after the JSON value")
	}
	return v, nil
}

// Validate checks a decoded JSON value against s and turns failures into a BAD_INPUT error
// naming the first MaxProblems problems, each with where it is, and how many there are in all:
// the answer's size is bounded whatever the input's shape (one 100 KB body of bad items once
// answered 5.1 MB).
func Validate(s *jsonschema.Schema, v any, what string) *Error {
	err := s.Validate(v)
	if err == nil {
		return nil
	}
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return Errorf(CodeBadInput, "%s: %s", what, Clip(err.Error(), MaxProblemLen, "…"))
	}
	var ps problemList
	ps.collect(ve)
	return ProblemsError(fmt.Sprintf("%s do not match the schema", what), ps.first, ps.total, nil)
}

// MaxProblems is how many problems a BAD_INPUT error names; MaxProblemLen bounds each one, in
// characters (an additionalProperties problem names every extra member).
const (
	MaxProblems   = 10
	MaxProblemLen = 200
)

// ProblemsError is the one BAD_INPUT answer listing problems: the first MaxProblems of
// problems (each clipped to MaxProblemLen characters) in the message and in details.problems, and, when
// total is more than it names, how many there are in all (details.problemCount is always the
// total). details may carry more for a program; nil for none.
func ProblemsError(prefix string, problems []string, total int, details map[string]any) *Error {
	shown := make([]string, 0, min(len(problems), MaxProblems))
	for _, p := range problems[:min(len(problems), MaxProblems)] {
		shown = append(shown, Clip(p, MaxProblemLen, "…"))
	}
	total = max(total, len(problems))
	msg := prefix + ": " + strings.Join(shown, "; ")
	if total > len(shown) {
		msg = fmt.Sprintf("%s (%d problems; the first %d): %s; fix these and send it again to see the rest", prefix, total, len(shown), strings.Join(shown, "; "))
	}
	if details == nil {
		details = map[string]any{}
	}
	details["problems"], details["problemCount"] = shown, total
	return Errorf(CodeBadInput, "%s", msg).WithDetails(details)
}

// problemList keeps the first MaxProblems leaf problems of a validation error and counts them all.
type problemList struct {
	first []string
	total int
}

func (ps *problemList) collect(ve *jsonschema.ValidationError) {
	if len(ve.Causes) == 0 {
		ps.total++
		if len(ps.first) < MaxProblems {
			loc := ve.InstanceLocation
			if loc == "" {
				loc = "/"
			}
			ps.first = append(ps.first, "at "+Clip(loc, MaxProblemLen/3, "…")+": "+ve.Message)
		}
		return
	}
	for _, c := range ve.Causes {
		ps.collect(c)
	}
}

// ValidateOutput checks a handler's result against the output schema (used by tests to keep
// the published schemas honest).
func (t *Tool) ValidateOutput(out any) error {
	raw, err := json.Marshal(out)
	if err != nil {
		return err
	}
	v, err := DecodeJSON(raw)
	if err != nil {
		return err
	}
	if e := Validate(t.output, v, "results"); e != nil {
		return e
	}
	return nil
}

// CheckInput validates arguments against the input schema without running the tool: a form
// that found a problem of its own still shows every other problem at once.
func (t *Tool) CheckInput(args any) *Error {
	raw, err := json.Marshal(args)
	if err != nil {
		return Errorf(CodeBadInput, "arguments: %v", err)
	}
	v, err := DecodeJSON(raw)
	if err != nil {
		return Errorf(CodeBadInput, "arguments are not valid JSON: %v", err)
	}
	return Validate(t.input, v, "arguments")
}

package partners

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-hq/switchboard/signing"
	partnerstore "github.com/switchboard-hq/switchboard/store/partners"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/partners/outbound"
)

// Where the args of a test call came from.
const (
	ArgsGiven        = "given"
	ArgsSample       = "sample"
	ArgsFlatFeeQuery = "flat_fee_query"
	ArgsEmpty        = "empty"
)

// TestInput is partner_test_endpoint's input: an intent of the caller, or a URL.
type TestInput struct {
	IntentID         string  `json:"intentId,omitempty" jsonschema:"maxLength=64" jsonschema_description:"test one of your intents (give this or toolEndpoint)"`
	ToolEndpoint     string  `json:"toolEndpoint,omitempty" jsonschema:"maxLength=2048" jsonschema_description:"test a URL before publishing (give this or intentId)"`
	BindingType      string  `json:"bindingType,omitempty" jsonschema:"enum=REST,enum=MCP_HTTP" jsonschema_description:"with toolEndpoint: REST (default) or MCP_HTTP"`
	PublicIdentifier string  `json:"publicIdentifier,omitempty" jsonschema:"pattern=^@[a-z0-9_-]{3\\,32}$" jsonschema_description:"with toolEndpoint and MCP_HTTP: the tool name to call, the @handle you will publish"`
	TimeoutMs        *int    `json:"timeoutMs,omitempty" jsonschema:"minimum=1000,maximum=120000" jsonschema_description:"with toolEndpoint: timeout, default 30000"`
	Args             ArgsDoc `json:"args,omitempty" jsonschema_description:"args for the signed round trip; default: made from the intent's parametersSchema ({query} for flat-fee intents)"`
}

// TestTarget is what was tested.
type TestTarget struct {
	IntentID           string `json:"intentId,omitempty"`
	ToolEndpoint       string `json:"toolEndpoint"`
	BindingType        string `json:"bindingType"`
	ToolName           string `json:"toolName,omitempty" jsonschema_description:"MCP_HTTP: the tool called"`
	TimeoutMs          int    `json:"timeoutMs"`
	IntentDefinitionID string `json:"intentDefinitionId" jsonschema_description:"as sent in the envelope; test for a URL that is not published yet"`
}

// RoundTrip reports the signed round trip.
type RoundTrip struct {
	Verdict    string                     `json:"verdict" jsonschema:"enum=OK,enum=PARTNER_FAILURE,enum=BAD_RESPONSE,enum=NO_ANSWER,enum=BLOCKED" jsonschema_description:"OK: 2xx with success true; PARTNER_FAILURE: a valid failure envelope; BAD_RESPONSE: the answer is not a valid response envelope; NO_ANSWER: timeout or network error; BLOCKED: the address is not allowed"`
	RequestID  string                     `json:"requestId"`
	Args       ArgsDoc                    `json:"args"`
	ArgsSource string                     `json:"argsSource" jsonschema:"enum=given,enum=sample,enum=flat_fee_query,enum=empty"`
	Status     int                        `json:"status,omitempty" jsonschema_description:"HTTP status (MCP_HTTP: of the tools/call request)"`
	LatencyMs  int64                      `json:"latencyMs"`
	Response   *outbound.ResponseEnvelope `json:"response" jsonschema:"nullable" jsonschema_description:"the parsed response envelope"`
	ParseError string                     `json:"parseError,omitempty" jsonschema_description:"why the answer is not a response envelope"`
	Error      string                     `json:"error,omitempty" jsonschema_description:"why no answer came"`
	Notes      []string                   `json:"notes"`
}

// TestOutput is partner_test_endpoint's report.
type TestOutput struct {
	Target          TestTarget           `json:"target"`
	RoundTrip       RoundTrip            `json:"roundTrip"`
	Probe           outbound.ProbeReport `json:"probe"`
	ReadyToActivate bool                 `json:"readyToActivate" jsonschema_description:"the probe passed: partner_set_active would activate"`
	Checks          []outbound.Check     `json:"checks" jsonschema_description:"REST endpoints: the full battery (the same as switchboard partner check): round trip, unsigned, another key's signature, a 64-byte signature that does not verify, a stale timestamp, a mismatched Idempotency-Key, a replayed requestId, a wrong content type, a 2 MiB body; each PASS, FAIL or WARN with what to fix"`
	Summary         string               `json:"summary"`
}

// Test runs partner_test_endpoint for accountID.
func (s *Service) Test(ctx context.Context, accountID string, in TestInput) (TestOutput, error) {
	row, err := s.testRow(ctx, accountID, in)
	if err != nil {
		return TestOutput{}, err
	}

	rt := RoundTrip{RequestID: signing.NewRequestID(), Notes: []string{}}
	args, source, err := testArgs(row, in)
	if err != nil {
		return TestOutput{}, err
	}
	rt.ArgsSource = source
	rt.Args = ArgsDoc(args)
	t := Target(row)
	fields := signing.CallFields{RequestID: rt.RequestID, IntentDefinitionID: row.ID, UserID: s.UserID(accountID, row.PartnerID), Args: args}

	var res *outbound.Result
	var callErr error
	var rep *outbound.ProbeReport
	checks := []outbound.Check{}
	var wg sync.WaitGroup
	wg.Go(func() { res, callErr = s.out.Call(ctx, t, fields) })
	wg.Go(func() { rep = s.Probe(ctx, row) })
	if row.BindingType != string(signing.BindingMCPHTTP) {
		bf, bt := fields, t
		bf.RequestID = ""
		bt.Timeout = min(bt.Timeout, s.cfg.ProbeTimeout)
		wg.Go(func() { checks = s.out.ServiceBattery(ctx, bt, bf) })
	}
	wg.Wait()

	s.judge(&rt, row, res, callErr)
	out := TestOutput{
		Target: TestTarget{IntentID: in.IntentID, ToolEndpoint: row.ToolEndpoint, BindingType: row.BindingType, TimeoutMs: row.TimeoutMs,
			IntentDefinitionID: row.ID},
		RoundTrip: rt, Probe: *rep, ReadyToActivate: rep.Passed(), Checks: checks,
	}
	if row.BindingType == string(signing.BindingMCPHTTP) {
		out.Target.ToolName = row.PublicIdentifier
	}
	out.Summary = fmt.Sprintf("round trip: %s; probe: %s (%s)", roundTripSummary(&rt), rep.Verdict, rep.Reason)
	var failed []string
	for _, c := range checks {
		if c.Verdict == outbound.CheckFail {
			failed = append(failed, c.Name)
		}
	}
	if len(failed) > 0 {
		out.Summary += "; battery failed: " + strings.Join(failed, ", ") + " (see checks for what to fix)"
	}
	if row.ArchivedAt != nil {
		out.ReadyToActivate = false
		out.Summary += "; the intent is archived and cannot be activated"
	}
	return out, nil
}

// testRow returns what partner_test_endpoint tests: one of accountID's intents, or an
// unpublished row for a URL (not on production).
func (s *Service) testRow(ctx context.Context, accountID string, in TestInput) (*partnerstore.Intent, error) {
	switch {
	case in.IntentID != "" && in.ToolEndpoint != "":
		return nil, tools.Errorf(tools.CodeBadInput, "give intentId or toolEndpoint, not both")
	case in.IntentID != "":
		if in.BindingType != "" || in.PublicIdentifier != "" || in.TimeoutMs != nil {
			return nil, tools.Errorf(tools.CodeBadInput, "bindingType, publicIdentifier and timeoutMs go with toolEndpoint; an intent is tested with its own")
		}
		return s.owned(ctx, accountID, in.IntentID)
	case in.ToolEndpoint != "":
		return s.urlRow(ctx, accountID, in)
	default:
		return nil, tools.Errorf(tools.CodeBadInput, "give intentId (one of your intents) or toolEndpoint (a URL to test)")
	}
}

// urlRow is the unpublished intent a test of in.ToolEndpoint calls: the defaults, with the
// binding, handle and timeout in gives.
func (s *Service) urlRow(ctx context.Context, accountID string, in TestInput) (*partnerstore.Intent, error) {
	if s.cfg.Env == "production" {
		return nil, tools.Errorf(tools.CodeForbidden, "on production, partner_test_endpoint tests your published intents only (give intentId); test URLs on the test environment")
	}
	if p := s.validator.Endpoint(ctx, in.ToolEndpoint); p != nil {
		return nil, problemsError("cannot test this endpoint", []Problem{*p}, nil)
	}
	row := &partnerstore.Intent{ID: "test", OwnerID: accountID, ToolEndpoint: in.ToolEndpoint, BindingType: in.BindingType,
		TimeoutMs: DefaultTimeoutMs, ParametersSchema: DefaultParametersSchema, FeeRateUnit: FeeUSDPerCall, PublicIdentifier: in.PublicIdentifier}
	if row.BindingType == "" {
		row.BindingType = string(signing.BindingREST)
	}
	if in.TimeoutMs != nil {
		if p := Timeout(*in.TimeoutMs); p != nil {
			return nil, problemsError("cannot test this endpoint", []Problem{*p}, nil)
		}
		row.TimeoutMs = *in.TimeoutMs
	}
	if row.BindingType == string(signing.BindingMCPHTTP) && row.PublicIdentifier == "" {
		return nil, tools.Errorf(tools.CodeBadInput, "an MCP_HTTP test calls the tool named exactly as your handle: give publicIdentifier (e.g. @my-tool)")
	}
	if p, err := s.rows.ByAccount(ctx, accountID); err == nil {
		row.PartnerID = p.ID
	}
	return row, nil
}

// testArgs returns the args of the round trip and where they came from. Args given for an
// intent must match its parametersSchema ({query} for a flat fee).
func testArgs(row *partnerstore.Intent, in TestInput) ([]byte, string, error) {
	if len(in.Args) == 0 {
		args, source := ProbeArgs(row)
		return args, source, nil
	}
	if in.IntentID != "" {
		schema := row.ParametersSchema
		what := "parametersSchema"
		if IsFlatFee(row.FeeRateUnit) {
			schema, what = `{"type":"object","properties":{"query":{"type":"string"}},"required":["query"],"additionalProperties":false}`, "the flat-fee args {query}"
		}
		if e := validateArgs(schema, in.Args); e != nil {
			e.Message = "args do not match " + what + ": " + e.Message
			return nil, "", e
		}
	}
	return in.Args, ArgsGiven, nil
}

func validateArgs(schema string, args []byte) *tools.Error {
	compiled, err := tools.CompileSchema([]byte(schema))
	if err != nil {
		return tools.Errorf(tools.CodeBadInput, "%v", err)
	}
	v, err := tools.DecodeJSON(args)
	if err != nil {
		return tools.Errorf(tools.CodeBadInput, "args are not valid JSON: %v", err)
	}
	return tools.Validate(compiled, v, "args")
}

func (s *Service) judge(rt *RoundTrip, row *partnerstore.Intent, res *outbound.Result, err error) {
	outcome := outbound.Classify(res, err)
	if err != nil {
		rt.Verdict, rt.Error = "NO_ANSWER", err.Error()
		switch outcome {
		case outbound.OutcomeBlocked:
			rt.Verdict = "BLOCKED"
		case outbound.OutcomeTimeout:
			rt.Error = fmt.Sprintf("no answer within %d ms", row.TimeoutMs)
		}
		return
	}
	rt.Status, rt.LatencyMs, rt.Response, rt.ParseError = res.Status, res.Latency.Milliseconds(), res.Envelope, res.ParseError
	switch outcome {
	case outbound.OutcomeOK:
		rt.Verdict = "OK"
		if row.OutputSchema != nil {
			if e := validateArgs(*row.OutputSchema, res.Envelope.Result); e != nil {
				rt.Notes = append(rt.Notes, "the result does not match outputSchema: "+strings.TrimPrefix(e.Message, "args do not match the schema: "))
			}
		}
		if res.Latency > time.Duration(row.TimeoutMs)*time.Millisecond*8/10 {
			rt.Notes = append(rt.Notes, "the answer took over 80% of timeoutMs")
		}
	case outbound.OutcomeBadResponse:
		rt.Verdict = "BAD_RESPONSE"
		if res.Envelope != nil {
			rt.Notes = append(rt.Notes, fmt.Sprintf("HTTP %d with success true: a non-2xx answer counts as a failure; answer 200 on success", res.Status))
		}
	case outbound.OutcomeRefused, outbound.OutcomeServerError, outbound.OutcomePartnerAnswer:
		if res.Envelope == nil || res.Envelope.Success { // 401/403 without a failure envelope
			rt.Verdict = "BAD_RESPONSE"
			if res.Envelope != nil {
				rt.Notes = append(rt.Notes, fmt.Sprintf("HTTP %d with success true: a non-2xx answer counts as a failure; answer 200 on success", res.Status))
			}
			break
		}
		rt.Verdict = "PARTNER_FAILURE"
		if res.Status >= 200 && res.Status < 300 {
			rt.Notes = append(rt.Notes, "a failure envelope should come with a 4xx or 5xx status")
		}
	}
}

func roundTripSummary(rt *RoundTrip) string {
	switch rt.Verdict {
	case "OK":
		return fmt.Sprintf("OK (HTTP %d)", rt.Status)
	case "PARTNER_FAILURE":
		return fmt.Sprintf("the partner answered HTTP %d with failure %s: %s", rt.Status, rt.Response.Error.Code, rt.Response.Error.Message)
	case "BAD_RESPONSE":
		if rt.ParseError != "" {
			return fmt.Sprintf("HTTP %d, not a response envelope: %s", rt.Status, rt.ParseError)
		}
		return fmt.Sprintf("HTTP %d: %s", rt.Status, strings.Join(rt.Notes, "; "))
	default:
		return rt.Verdict + ": " + rt.Error
	}
}

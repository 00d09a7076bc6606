package partners

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/store"
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

// BundleInput is partner_publish_intent_bundle's input.
type BundleInput struct {
	Intents []IntentInput `json:"intents" jsonschema:"minItems=1,maxItems=5" jsonschema_description:"the intents to publish together, each as for partner_publish_intent"`
}

// BundleOutput is the published rows, in input order.
type BundleOutput struct {
	Intents []Intent `json:"intents"`
}

// UpdateInput is partner_update_intent's input: the intent and the editable fields to
// change. The immutable fields are declared with their real types so that a caller (or a
// model filling the form) that sends one gets an error naming it and saying what to do,
// rather than a bare "unknown field".
type UpdateInput struct {
	IntentID      string    `json:"intentId" jsonschema:"minLength=1,maxLength=64" jsonschema_description:"the intent's id, from partner_list_intents"`
	Name          *string   `json:"name,omitempty" jsonschema:"minLength=1,maxLength=80"`
	Description   *string   `json:"description,omitempty" jsonschema:"minLength=1,maxLength=2000"`
	ToolEndpoint  *string   `json:"toolEndpoint,omitempty" jsonschema:"minLength=8,maxLength=2048" jsonschema_description:"new HTTPS endpoint; on an active intent the negative-auth probe runs against it and the intent is deactivated unless it passes"`
	TimeoutMs     *int      `json:"timeoutMs,omitempty" jsonschema:"minimum=1000,maximum=120000"`
	FeeRate       *Decimal  `json:"feeRate,omitempty" jsonschema_description:"new price, in the intent's feeRateUnit"`
	SampleQueries *[]string `json:"sampleQueries,omitempty" jsonschema:"maxItems=10" jsonschema_description:"replaces the sample queries"`

	PublicIdentifier   *string            `json:"publicIdentifier,omitempty" jsonschema_description:"immutable: sending it is refused; publish a new intent and archive this one"`
	Category           *string            `json:"category,omitempty" jsonschema_description:"immutable: sending it is refused; publish a new intent and archive this one"`
	Capabilities       *[]string          `json:"capabilities,omitempty" jsonschema_description:"immutable: sending it is refused; publish a new intent and archive this one"`
	BindingType        *string            `json:"bindingType,omitempty" jsonschema_description:"immutable: sending it is refused; publish a new intent and archive this one"`
	ParametersSchema   SchemaDoc          `json:"parametersSchema,omitempty" jsonschema_description:"immutable: sending it is refused; publish a new intent and archive this one"`
	OutputSchema       SchemaDoc          `json:"outputSchema,omitempty" jsonschema_description:"immutable: sending it is refused; publish a new intent and archive this one"`
	FeeRateUnit        *string            `json:"feeRateUnit,omitempty" jsonschema_description:"immutable: sending it is refused; publish a new intent and archive this one"`
	PayoutAddresses    *map[string]string `json:"payoutAddresses,omitempty" jsonschema_description:"immutable: sending it is refused; publish a new intent and archive this one"`
	Tier               *string            `json:"tier,omitempty" jsonschema_description:"immutable: sending it is refused; publish a new intent and archive this one"`
	PricingShape       PricingShape       `json:"pricingShape,omitempty" jsonschema_description:"immutable: sending it is refused; publish a new intent and archive this one"`
	IsActive           *bool              `json:"isActive,omitempty" jsonschema_description:"not changed here: use partner_set_active"`
	VerificationStatus *string            `json:"verificationStatus,omitempty" jsonschema_description:"not changed by partners: the operator sets it"`
}

func (in *UpdateInput) immutables() []string {
	var out []string
	for name, sent := range map[string]bool{
		"publicIdentifier": in.PublicIdentifier != nil, "category": in.Category != nil, "capabilities": in.Capabilities != nil,
		"bindingType": in.BindingType != nil, "parametersSchema": in.ParametersSchema != nil, "outputSchema": in.OutputSchema != nil,
		"feeRateUnit": in.FeeRateUnit != nil, "payoutAddresses": in.PayoutAddresses != nil, "tier": in.Tier != nil, "pricingShape": in.PricingShape != nil,
		"isActive": in.IsActive != nil, "verificationStatus": in.VerificationStatus != nil,
	} {
		if sent {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// UpdateOutput is the updated intent and, when the endpoint of an active intent changed,
// the probe that decided whether it stays active.
type UpdateOutput struct {
	Intent      Intent                `json:"intent"`
	Probe       *outbound.ProbeReport `json:"probe" jsonschema:"nullable" jsonschema_description:"the negative-auth probe against the new endpoint of an active intent; null when none ran"`
	Deactivated bool                  `json:"deactivated" jsonschema_description:"true when the new endpoint failed the probe and the intent was deactivated"`
	Notice      string                `json:"notice,omitempty"`
}

// SetActiveInput is partner_set_active's input.
type SetActiveInput struct {
	IntentID string `json:"intentId" jsonschema:"minLength=1,maxLength=64"`
	Active   bool   `json:"active" jsonschema_description:"true to activate (runs the negative-auth probe first), false to deactivate (always works)"`
}

// SetActiveOutput is the intent after the change and the probe that allowed activation.
type SetActiveOutput struct {
	Intent Intent                `json:"intent"`
	Probe  *outbound.ProbeReport `json:"probe" jsonschema:"nullable" jsonschema_description:"the probe run for this activation; null when none ran (deactivation, or already active)"`
}

// IntentIDInput names one of the caller's intents.
type IntentIDInput struct {
	IntentID string `json:"intentId" jsonschema:"minLength=1,maxLength=64"`
}

// ListInput is partner_list_intents' input.
type ListInput struct {
	IncludeArchived bool `json:"includeArchived,omitempty" jsonschema_description:"also list archived intents (default false)"`
}

// ListOutput is the caller's Partner profile and intents.
type ListOutput struct {
	Partner *Partner `json:"partner" jsonschema:"nullable" jsonschema_description:"the read-only Partner profile, created on the first publish; null before it"`
	Intents []Intent `json:"intents"`
}

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
	Summary         string               `json:"summary"`
}

// Tools returns the seven partner tools.
func (s *Service) Tools() []*tools.Tool {
	publish := tools.Scope("publish")
	return []*tools.Tool{
		tools.New(tools.Def{
			Name:  "partner_publish_intent",
			Title: "Publish partner intent",
			Description: "List a tool of yours on Switchboard's marketplace: creates one intent row, inactive and UNVERIFIED, owned by you " +
				"(your read-only Partner profile is created on your first publish). Callers invoke it by its @handle once it is active; " +
				"until then only your own account can invoke it. Next: partner_test_endpoint, then partner_set_active. " +
				"Limits: 5 intents per hour per Partner; handles are unique forever; the endpoint must be HTTPS on a public host. " +
				"Publishing is live on the test environment only. Returns the row.",
			Access:      publish,
			Annotations: tools.Annotations{ReadOnly: tools.Bool(false), Destructive: tools.Bool(false), OpenWorld: tools.Bool(true)},
		}, func(ctx context.Context, c *tools.Caller, in IntentInput) (Intent, error) {
			out, err := s.Publish(ctx, c.Principal.AccountID, []IntentInput{in})
			if err != nil {
				return Intent{}, err
			}
			return out[0], nil
		}),
		tools.New(tools.Def{
			Name:  "partner_publish_intent_bundle",
			Title: "Publish partner intents (bundle)",
			Description: "Publish up to 5 intents in one transaction: all are created (inactive, UNVERIFIED) or none is; " +
				"on failure the error names the row (intents[i]) and why. Each row counts against the 5-per-hour publishing limit, " +
				"and a bundle that would exceed it is refused whole. Fields as for partner_publish_intent.",
			Access:      publish,
			Annotations: tools.Annotations{ReadOnly: tools.Bool(false), Destructive: tools.Bool(false), OpenWorld: tools.Bool(true)},
		}, func(ctx context.Context, c *tools.Caller, in BundleInput) (BundleOutput, error) {
			out, err := s.Publish(ctx, c.Principal.AccountID, in.Intents)
			if err != nil {
				return BundleOutput{}, err
			}
			return BundleOutput{Intents: out}, nil
		}),
		tools.New(tools.Def{
			Name:  "partner_update_intent",
			Title: "Update partner intent",
			Description: "Change the editable fields of one of your intents: name, description, toolEndpoint, timeoutMs, feeRate, sampleQueries. " +
				"Every other field is immutable and sending one is refused by name (publish a new intent to change it). " +
				"Changing the endpoint of an active intent re-runs the negative-auth probe against the new endpoint and deactivates " +
				"the intent unless it passes. Archived intents cannot be updated.",
			Access:      publish,
			Annotations: tools.Annotations{ReadOnly: tools.Bool(false), Destructive: tools.Bool(true), Idempotent: true, OpenWorld: tools.Bool(true)},
		}, func(ctx context.Context, c *tools.Caller, in UpdateInput) (UpdateOutput, error) {
			return s.Update(ctx, c.Principal.AccountID, in)
		}),
		tools.New(tools.Def{
			Name:  "partner_test_endpoint",
			Title: "Test partner endpoint",
			Description: "Check an endpoint before activating it: a signed round trip (a real signed envelope with sample or given args) " +
				"plus the negative-auth probe (one unsigned request, one with a forged signature; both must get 401 or 403). " +
				"Give intentId (one of yours) or toolEndpoint (a URL, with bindingType and, for MCP_HTTP, publicIdentifier). " +
				"Reports each step: HTTP status, latency, the parsed response envelope or why it did not parse, probe verdicts. Changes nothing.",
			Access:      publish,
			Annotations: tools.Annotations{ReadOnly: tools.Bool(true), Destructive: tools.Bool(false), OpenWorld: tools.Bool(true)},
		}, func(ctx context.Context, c *tools.Caller, in TestInput) (TestOutput, error) {
			return s.Test(ctx, c.Principal.AccountID, in)
		}),
		tools.New(tools.Def{
			Name:  "partner_set_active",
			Title: "Activate or deactivate partner intent",
			Description: "Activate (active true) or deactivate (active false) one of your intents. Activation first runs the negative-auth " +
				"probe: it succeeds only if an unsigned and a forged-signature request both get 401 or 403. An endpoint that accepts " +
				"either is refused with the reason (CONFLICT, probe report in details); a timeout or network error is inconclusive " +
				"(UNAVAILABLE): retry. Deactivation always works. Archived intents cannot be activated.",
			Access:      publish,
			Annotations: tools.Annotations{ReadOnly: tools.Bool(false), Destructive: tools.Bool(false), Idempotent: true, OpenWorld: tools.Bool(true)},
		}, func(ctx context.Context, c *tools.Caller, in SetActiveInput) (SetActiveOutput, error) {
			row, err := s.owned(ctx, c.Principal.AccountID, in.IntentID)
			if err != nil {
				return SetActiveOutput{}, err
			}
			return s.SetActive(ctx, row, in.Active)
		}),
		tools.New(tools.Def{
			Name:        "partner_list_intents",
			Title:       "List partner intents",
			Description: "List your Partner profile and your intents, oldest first; archived ones only with includeArchived.",
			Access:      publish,
			Annotations: tools.Annotations{ReadOnly: tools.Bool(true), Idempotent: true, OpenWorld: tools.Bool(false)},
		}, func(ctx context.Context, c *tools.Caller, in ListInput) (ListOutput, error) {
			return s.List(ctx, c.Principal.AccountID, in.IncludeArchived)
		}),
		tools.New(tools.Def{
			Name:  "partner_earnings",
			Title: "Partner earnings",
			Description: "Your Partner earnings over a period (default the last 30 days): partner fees and calls per intent, fees accrued per payout address " +
				"(payables on the ledger), and with intentId that intent's latest 20 calls with outcome, latency and output-schema validity.",
			Access:      publish,
			Annotations: tools.Annotations{ReadOnly: tools.Bool(true), Idempotent: true, OpenWorld: tools.Bool(false)},
		}, func(ctx context.Context, c *tools.Caller, in EarningsInput) (EarningsOutput, error) {
			return s.Earnings(ctx, c.Principal.AccountID, in)
		}),
		tools.New(tools.Def{
			Name:  "partner_archive_intent",
			Title: "Archive partner intent",
			Description: "Archive (soft-delete) one of your intents: it is deactivated and can no longer be activated, invoked or updated. " +
				"Its handle stays taken forever. Archiving again changes nothing. Returns the row.",
			Access:      publish,
			Annotations: tools.Annotations{ReadOnly: tools.Bool(false), Destructive: tools.Bool(true), Idempotent: true, OpenWorld: tools.Bool(false)},
		}, func(ctx context.Context, c *tools.Caller, in IntentIDInput) (Intent, error) {
			return s.Archive(ctx, c.Principal.AccountID, in.IntentID)
		}),
	}
}

// List returns accountID's Partner (nil before the first publish) and intents.
func (s *Service) List(ctx context.Context, accountID string, includeArchived bool) (ListOutput, error) {
	out := ListOutput{Intents: []Intent{}}
	p, err := s.store.PartnerByAccount(ctx, accountID)
	switch {
	case err == nil:
		out.Partner = PartnerOf(p)
	case !errors.Is(err, store.ErrNotFound):
		return out, err
	}
	rows, err := s.store.IntentsByOwner(ctx, accountID, includeArchived)
	if err != nil {
		return out, err
	}
	for _, r := range rows {
		out.Intents = append(out.Intents, IntentOf(r))
	}
	return out, nil
}

// Archive soft-deletes accountID's intent id.
func (s *Service) Archive(ctx context.Context, accountID, id string) (Intent, error) {
	return s.mutate(ctx, func(ctx context.Context) (*store.PartnerIntent, error) { return s.owned(ctx, accountID, id) },
		func(row *store.PartnerIntent) (bool, error) {
			if row.ArchivedAt != nil {
				return false, nil
			}
			now := s.now()
			row.ArchivedAt, row.IsActive = &now, false
			return true, nil
		})
}

// SetActive activates row (after the probe passes) or deactivates it. The activation is
// written only if the row still has the endpoint that was probed.
func (s *Service) SetActive(ctx context.Context, row *store.PartnerIntent, active bool) (SetActiveOutput, error) {
	if !active {
		in, err := s.mutate(ctx, func(ctx context.Context) (*store.PartnerIntent, error) { return s.store.IntentByID(ctx, row.ID) },
			func(r *store.PartnerIntent) (bool, error) {
				changed := r.IsActive
				r.IsActive = false
				return changed, nil
			})
		return SetActiveOutput{Intent: in}, err
	}
	for range 3 {
		if row.ArchivedAt != nil {
			return SetActiveOutput{}, tools.Errorf(tools.CodeConflict, "%s is archived and cannot be activated; publish a new intent", row.PublicIdentifier)
		}
		if row.IsActive {
			return SetActiveOutput{Intent: IntentOf(row)}, nil
		}
		rep := s.Probe(ctx, row)
		switch rep.Verdict {
		case outbound.ProbeFail:
			return SetActiveOutput{}, tools.Errorf(tools.CodeConflict, "activation refused: %s. The intent stays inactive; fix the endpoint, check it with partner_test_endpoint, then retry", rep.Reason).
				WithDetails(map[string]any{"probe": rep})
		case outbound.ProbeInconclusive:
			return SetActiveOutput{}, tools.Errorf(tools.CodeUnavailable, "activation inconclusive, retry: %s. The intent stays inactive", strings.TrimPrefix(rep.Reason, "inconclusive, retry: ")).
				WithDetails(map[string]any{"probe": rep})
		}
		probed := row.ToolEndpoint
		row.IsActive, row.UpdatedAt = true, s.now()
		err := s.store.UpdateIntent(ctx, row)
		if errors.Is(err, store.ErrStale) {
			fresh, err := s.store.IntentByID(ctx, row.ID)
			if err != nil {
				return SetActiveOutput{}, err
			}
			if fresh.ToolEndpoint == probed && fresh.ArchivedAt == nil && !fresh.IsActive {
				fresh.IsActive, fresh.UpdatedAt = true, s.now()
				if err := s.store.UpdateIntent(ctx, fresh); err == nil {
					return SetActiveOutput{Intent: IntentOf(fresh), Probe: rep}, nil
				} else if !errors.Is(err, store.ErrStale) {
					return SetActiveOutput{}, err
				}
				fresh, err = s.store.IntentByID(ctx, row.ID)
				if err != nil {
					return SetActiveOutput{}, err
				}
			}
			row = fresh
			continue
		}
		if err != nil {
			return SetActiveOutput{}, err
		}
		return SetActiveOutput{Intent: IntentOf(row), Probe: rep}, nil
	}
	return SetActiveOutput{}, tools.Errorf(tools.CodeConflict, "the intent kept changing during activation; retry")
}

// Update applies the editable fields of in to accountID's intent.
func (s *Service) Update(ctx context.Context, accountID string, in UpdateInput) (UpdateOutput, error) {
	if names := in.immutables(); len(names) > 0 {
		return UpdateOutput{}, tools.Errorf(tools.CodeBadInput, "%s cannot be changed after publish (immutable); the editable fields are name, description, toolEndpoint, timeoutMs, feeRate and sampleQueries. To change %s, publish a new intent (and archive this one)%s",
			strings.Join(names, ", "), strings.Join(names, ", "), activeHint(names)).WithDetails(map[string]any{"immutableFields": names})
	}
	if in.Name == nil && in.Description == nil && in.ToolEndpoint == nil && in.TimeoutMs == nil && in.FeeRate == nil && in.SampleQueries == nil {
		return UpdateOutput{}, tools.Errorf(tools.CodeBadInput, "nothing to update: give at least one of name, description, toolEndpoint, timeoutMs, feeRate, sampleQueries")
	}
	var ps []Problem
	add := func(p *Problem) {
		if p != nil {
			ps = append(ps, *p)
		}
	}
	var name, desc string
	var queries []string
	var p *Problem
	if in.Name != nil {
		name, p = text("name", *in.Name, MaxNameLen, false)
		add(p)
	}
	if in.Description != nil {
		desc, p = text("description", *in.Description, MaxDescriptionLen, true)
		add(p)
	}
	if in.ToolEndpoint != nil {
		add(s.validator.Endpoint(ctx, *in.ToolEndpoint))
	}
	if in.TimeoutMs != nil {
		add(Timeout(*in.TimeoutMs))
	}
	if in.SampleQueries != nil {
		queries, p = SampleQueries(*in.SampleQueries)
		add(p)
	}
	if len(ps) > 0 {
		return UpdateOutput{}, problemsError("the update is invalid", ps, nil)
	}

	for range 3 {
		row, err := s.owned(ctx, accountID, in.IntentID)
		if err != nil {
			return UpdateOutput{}, err
		}
		if row.ArchivedAt != nil {
			return UpdateOutput{}, tools.Errorf(tools.CodeConflict, "%s is archived and cannot be updated", row.PublicIdentifier)
		}
		if in.FeeRate != nil {
			if p := Fee(in.FeeRate.Decimal, row.FeeRateUnit); p != nil {
				return UpdateOutput{}, problemsError("the update is invalid", []Problem{*p}, nil)
			}
			if in.FeeRate.IsPositive() && len(row.PayoutAddresses) == 0 {
				return UpdateOutput{}, problemsError("the update is invalid", []Problem{{"feeRate", "this intent has no payoutAddresses, so it can only be free (0); publish a new intent with payout addresses to charge"}}, nil)
			}
			row.FeeRate = in.FeeRate.String()
		}
		if in.Name != nil {
			row.Name = name
		}
		if in.Description != nil {
			row.Description = desc
		}
		if in.TimeoutMs != nil {
			row.TimeoutMs = *in.TimeoutMs
		}
		if in.SampleQueries != nil {
			row.SampleQueries = queries
		}
		out := UpdateOutput{}
		if in.ToolEndpoint != nil && *in.ToolEndpoint != row.ToolEndpoint {
			if hostOf(*in.ToolEndpoint) != hostOf(row.ToolEndpoint) && row.VerificationStatus != StatusUnverified {
				out.Notice = fmt.Sprintf("the endpoint moved to another host, so verificationStatus went from %s to UNVERIFIED (verification vouches for a host); ask the operator to verify the new one. ", row.VerificationStatus)
				row.VerificationStatus = StatusUnverified
			}
			row.ToolEndpoint = *in.ToolEndpoint
			if row.IsActive {
				out.Probe = s.Probe(ctx, row)
				if !out.Probe.Passed() {
					row.IsActive, out.Deactivated = false, true
					out.Notice += "The new endpoint did not pass the negative-auth probe, so the intent was deactivated: " + out.Probe.Reason +
						". Fix the endpoint, then activate it again with partner_set_active."
				}
			}
		}
		row.UpdatedAt = s.now()
		err = s.store.UpdateIntent(ctx, row)
		if errors.Is(err, store.ErrStale) {
			continue
		}
		if err != nil {
			return UpdateOutput{}, err
		}
		out.Intent = IntentOf(row)
		out.Notice = strings.TrimSpace(out.Notice)
		return out, nil
	}
	return UpdateOutput{}, tools.Errorf(tools.CodeConflict, "the intent is being changed by another request; retry")
}

func activeHint(names []string) string {
	var hints []string
	if slices.Contains(names, "isActive") {
		hints = append(hints, "isActive is changed with partner_set_active")
	}
	if slices.Contains(names, "verificationStatus") {
		hints = append(hints, "verificationStatus is set by the operator")
	}
	if len(hints) == 0 {
		return ""
	}
	return "; " + strings.Join(hints, "; ")
}

func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return strings.ToLower(u.Hostname())
}

// Test runs partner_test_endpoint for accountID.
func (s *Service) Test(ctx context.Context, accountID string, in TestInput) (TestOutput, error) {
	var row *store.PartnerIntent
	switch {
	case in.IntentID != "" && in.ToolEndpoint != "":
		return TestOutput{}, tools.Errorf(tools.CodeBadInput, "give intentId or toolEndpoint, not both")
	case in.IntentID != "":
		if in.BindingType != "" || in.PublicIdentifier != "" || in.TimeoutMs != nil {
			return TestOutput{}, tools.Errorf(tools.CodeBadInput, "bindingType, publicIdentifier and timeoutMs go with toolEndpoint; an intent is tested with its own")
		}
		var err error
		if row, err = s.owned(ctx, accountID, in.IntentID); err != nil {
			return TestOutput{}, err
		}
	case in.ToolEndpoint != "":
		if s.cfg.Env == "production" {
			return TestOutput{}, tools.Errorf(tools.CodeForbidden, "on production, partner_test_endpoint tests your published intents only (give intentId); test URLs on the test environment")
		}
		if p := s.validator.Endpoint(ctx, in.ToolEndpoint); p != nil {
			return TestOutput{}, problemsError("cannot test this endpoint", []Problem{*p}, nil)
		}
		row = &store.PartnerIntent{ID: "test", OwnerID: accountID, ToolEndpoint: in.ToolEndpoint, BindingType: in.BindingType,
			TimeoutMs: DefaultTimeoutMs, ParametersSchema: DefaultParametersSchema, FeeRateUnit: FeeUSDPerCall, PublicIdentifier: in.PublicIdentifier}
		if row.BindingType == "" {
			row.BindingType = string(signing.BindingREST)
		}
		if in.TimeoutMs != nil {
			if p := Timeout(*in.TimeoutMs); p != nil {
				return TestOutput{}, problemsError("cannot test this endpoint", []Problem{*p}, nil)
			}
			row.TimeoutMs = *in.TimeoutMs
		}
		if row.BindingType == string(signing.BindingMCPHTTP) && row.PublicIdentifier == "" {
			return TestOutput{}, tools.Errorf(tools.CodeBadInput, "an MCP_HTTP test calls the tool named exactly as your handle: give publicIdentifier (e.g. @my-tool)")
		}
		if p, err := s.store.PartnerByAccount(ctx, accountID); err == nil {
			row.PartnerID = p.ID
		}
	default:
		return TestOutput{}, tools.Errorf(tools.CodeBadInput, "give intentId (one of your intents) or toolEndpoint (a URL to test)")
	}

	rt := RoundTrip{RequestID: signing.NewRequestID(), Notes: []string{}}
	var args []byte
	if len(in.Args) > 0 {
		args, rt.ArgsSource = in.Args, ArgsGiven
		if in.IntentID != "" {
			schema := row.ParametersSchema
			what := "parametersSchema"
			if IsFlatFee(row.FeeRateUnit) {
				schema, what = `{"type":"object","properties":{"query":{"type":"string"}},"required":["query"],"additionalProperties":false}`, "the flat-fee args {query}"
			}
			if e := validateArgs(schema, args); e != nil {
				e.Message = "args do not match " + what + ": " + e.Message
				return TestOutput{}, e
			}
		}
	} else {
		args, rt.ArgsSource = ProbeArgs(row)
	}
	rt.Args = ArgsDoc(args)
	t := Target(row)
	fields := signing.CallFields{RequestID: rt.RequestID, IntentDefinitionID: row.ID, UserID: s.UserID(accountID, row.PartnerID), Args: args}

	var res *outbound.Result
	var callErr error
	var rep *outbound.ProbeReport
	var wg sync.WaitGroup
	wg.Go(func() { res, callErr = s.out.Call(ctx, t, fields) })
	wg.Go(func() { rep = s.Probe(ctx, row) })
	wg.Wait()

	s.judge(&rt, row, res, callErr)
	out := TestOutput{
		Target: TestTarget{IntentID: in.IntentID, ToolEndpoint: row.ToolEndpoint, BindingType: row.BindingType, TimeoutMs: row.TimeoutMs,
			IntentDefinitionID: row.ID},
		RoundTrip: rt, Probe: *rep, ReadyToActivate: rep.Passed(),
	}
	if row.BindingType == string(signing.BindingMCPHTTP) {
		out.Target.ToolName = row.PublicIdentifier
	}
	out.Summary = fmt.Sprintf("round trip: %s; probe: %s (%s)", roundTripSummary(&rt), rep.Verdict, rep.Reason)
	if row.ArchivedAt != nil {
		out.ReadyToActivate = false
		out.Summary += "; the intent is archived and cannot be activated"
	}
	return out, nil
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

func (s *Service) judge(rt *RoundTrip, row *store.PartnerIntent, res *outbound.Result, err error) {
	if err != nil {
		rt.Error = err.Error()
		switch {
		case outbound.IsBlocked(err):
			rt.Verdict = "BLOCKED"
		case outbound.IsTimeout(err):
			rt.Verdict, rt.Error = "NO_ANSWER", fmt.Sprintf("no answer within %d ms", row.TimeoutMs)
		default:
			rt.Verdict = "NO_ANSWER"
		}
		return
	}
	rt.Status, rt.LatencyMs, rt.Response, rt.ParseError = res.Status, res.Latency.Milliseconds(), res.Envelope, res.ParseError
	switch {
	case res.Envelope == nil:
		rt.Verdict = "BAD_RESPONSE"
	case res.Envelope.Success && !res.OK():
		rt.Verdict = "BAD_RESPONSE"
		rt.Notes = append(rt.Notes, fmt.Sprintf("HTTP %d with success true: a non-2xx answer counts as a failure; answer 200 on success", res.Status))
	case res.OK():
		rt.Verdict = "OK"
		if row.OutputSchema != nil {
			if e := validateArgs(*row.OutputSchema, res.Envelope.Result); e != nil {
				rt.Notes = append(rt.Notes, "the result does not match outputSchema: "+strings.TrimPrefix(e.Message, "args do not match the schema: "))
			}
		}
	default:
		rt.Verdict = "PARTNER_FAILURE"
		if res.Status >= 200 && res.Status < 300 {
			rt.Notes = append(rt.Notes, "a failure envelope should come with a 4xx or 5xx status")
		}
	}
	if rt.Verdict == "OK" && res.Latency > time.Duration(row.TimeoutMs)*time.Millisecond*8/10 {
		rt.Notes = append(rt.Notes, "the answer took over 80% of timeoutMs")
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

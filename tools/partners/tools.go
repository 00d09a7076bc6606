package partners

import (
	"context"
	"slices"

	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/partners/outbound"
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

// Tools returns the partner tools.
func (s *Service) Tools() []*tools.Tool {
	return []*tools.Tool{s.publishIntentTool(), s.publishIntentBundleTool(), s.updateIntentTool(), s.testEndpointTool(), s.setActiveTool(), s.listIntentsTool(), s.earningsTool(), s.archiveIntentTool()}
}

// publish is the scope of every partner tool.
var publish = tools.RequireScope(tools.ScopePublish)

func (s *Service) publishIntentTool() *tools.Tool {
	return tools.New(tools.Def{
		Name:  "partner_publish_intent",
		Title: "Publish partner intent",
		Description: "List a tool of yours on Switchboard's marketplace: creates one intent row, inactive and UNVERIFIED, owned by you " +
			"(your read-only Partner profile is created on your first publish). Callers invoke it by its @handle once it is active; " +
			"until then only your own account can invoke it. Next: partner_test_endpoint, then partner_set_active. " +
			"Limits: 5 intents per hour per Partner; handles are unique forever; the endpoint must be HTTPS on a public host. " +
			"Publishing is live on the test environment only. Returns the row.",
		Access:              publish,
		TakesIdempotencyKey: true,
		Annotations:         tools.Annotations{ReadOnly: tools.Bool(false), Destructive: tools.Bool(false), OpenWorld: tools.Bool(true)},
	}, func(ctx context.Context, c *tools.Caller, in IntentInput) (Intent, error) {
		out, err := s.Publish(ctx, c.Principal.AccountID, []IntentInput{in})
		if err != nil {
			return Intent{}, err
		}
		return out[0], nil
	})
}

func (s *Service) publishIntentBundleTool() *tools.Tool {
	return tools.New(tools.Def{
		Name:  "partner_publish_intent_bundle",
		Title: "Publish partner intents (bundle)",
		Description: "Publish up to 5 intents in one transaction: all are created (inactive, UNVERIFIED) or none is; " +
			"on failure the error names the row (intents[i]) and why. Each row counts against the 5-per-hour publishing limit, " +
			"and a bundle that would exceed it is refused whole. Fields as for partner_publish_intent.",
		Access:              publish,
		TakesIdempotencyKey: true,
		Annotations:         tools.Annotations{ReadOnly: tools.Bool(false), Destructive: tools.Bool(false), OpenWorld: tools.Bool(true)},
	}, func(ctx context.Context, c *tools.Caller, in BundleInput) (BundleOutput, error) {
		out, err := s.Publish(ctx, c.Principal.AccountID, in.Intents)
		if err != nil {
			return BundleOutput{}, err
		}
		return BundleOutput{Intents: out}, nil
	})
}

func (s *Service) updateIntentTool() *tools.Tool {
	return tools.New(tools.Def{
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
	})
}

func (s *Service) testEndpointTool() *tools.Tool {
	return tools.New(tools.Def{
		Name:  "partner_test_endpoint",
		Title: "Test partner endpoint",
		Description: "Check an endpoint before activating it: a signed round trip (a real signed envelope with sample or given args) " +
			"plus the negative-auth probe (one unsigned request, one with a forged signature; both must get 401 or 403). " +
			"Give intentId (one of yours) or toolEndpoint (a URL, with bindingType and, for MCP_HTTP, publicIdentifier). " +
			"Reports each step: HTTP status, latency, the parsed response envelope or why it did not parse, probe verdicts. Changes nothing.",
		Access:              publish,
		TakesIdempotencyKey: true,
		Annotations:         tools.Annotations{ReadOnly: tools.Bool(true), Destructive: tools.Bool(false), OpenWorld: tools.Bool(true)},
	}, func(ctx context.Context, c *tools.Caller, in TestInput) (TestOutput, error) {
		return s.Test(ctx, c.Principal.AccountID, in)
	})
}

func (s *Service) setActiveTool() *tools.Tool {
	return tools.New(tools.Def{
		Name:  "partner_set_active",
		Title: "Activate or deactivate partner intent",
		Description: "Activate (active true) or deactivate (active false) one of your intents. Activation first runs the negative-auth " +
			"probe: it succeeds only if an unsigned and a forged-signature request both get 401 or 403. An endpoint that accepts " +
			"either is refused with the reason (CONFLICT, probe report in details); a timeout or network error is inconclusive " +
			"(UNAVAILABLE): retry. Deactivation always works. Archived intents cannot be activated.",
		Access:              publish,
		TakesIdempotencyKey: true,
		Annotations:         tools.Annotations{ReadOnly: tools.Bool(false), Destructive: tools.Bool(false), Idempotent: true, OpenWorld: tools.Bool(true)},
	}, func(ctx context.Context, c *tools.Caller, in SetActiveInput) (SetActiveOutput, error) {
		row, err := s.owned(ctx, c.Principal.AccountID, in.IntentID)
		if err != nil {
			return SetActiveOutput{}, err
		}
		return s.SetActive(ctx, row, in.Active)
	})
}

func (s *Service) listIntentsTool() *tools.Tool {
	return tools.New(tools.Def{
		Name:        "partner_list_intents",
		Title:       "List partner intents",
		Description: "List your Partner profile and your intents, oldest first; archived ones only with includeArchived.",
		Access:      publish,
		Annotations: tools.Annotations{ReadOnly: tools.Bool(true), Idempotent: true, OpenWorld: tools.Bool(false)},
	}, func(ctx context.Context, c *tools.Caller, in ListInput) (ListOutput, error) {
		return s.List(ctx, c.Principal.AccountID, in.IncludeArchived)
	})
}

func (s *Service) earningsTool() *tools.Tool {
	return tools.New(tools.Def{
		Name:  "partner_earnings",
		Title: "Partner earnings",
		Description: "Your Partner earnings over a period (default the last 30 days): partner fees and calls per intent, fees accrued per payout address " +
			"(payables on the ledger), and with intentId that intent's latest 20 calls with outcome, latency and output-schema validity.",
		Access:             publish,
		Annotations:        tools.Annotations{ReadOnly: tools.Bool(true), Idempotent: true, OpenWorld: tools.Bool(false)},
		ReadsOtherAccounts: true,
	}, func(ctx context.Context, c *tools.Caller, in EarningsInput) (EarningsOutput, error) {
		return s.Earnings(ctx, c.Principal.AccountID, in)
	})
}

func (s *Service) archiveIntentTool() *tools.Tool {
	return tools.New(tools.Def{
		Name:  "partner_archive_intent",
		Title: "Archive partner intent",
		Description: "Archive (soft-delete) one of your intents: it is deactivated and can no longer be activated, invoked or updated. " +
			"Its handle stays taken forever. Archiving again changes nothing. Returns the row.",
		Access:      publish,
		Annotations: tools.Annotations{ReadOnly: tools.Bool(false), Destructive: tools.Bool(true), Idempotent: true, OpenWorld: tools.Bool(false)},
	}, func(ctx context.Context, c *tools.Caller, in IntentIDInput) (Intent, error) {
		return s.Archive(ctx, c.Principal.AccountID, in.IntentID)
	})
}

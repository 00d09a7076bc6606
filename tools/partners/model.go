package partners

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/invopop/jsonschema"
	"github.com/shopspring/decimal"
	partnerstore "github.com/switchboard-hq/switchboard/store/partners"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/billing"
)

// The closed sets of the intent row. They are documented in docs/intents.md and in the tool
// schemas (enums), and checked by the validator.
var (
	// WriteCategories are treated as requiring confirmation and never retried (from the
	// rules table).
	WriteCategories = categoriesWhere(true)
	// IdempotentCategories may be retried once on 5xx or network error (from the rules table).
	IdempotentCategories = categoriesWhere(false)
	// Capabilities is the closed capability set. MUTATES_USER_FUNDS and
	// REQUIRES_USER_SIGNATURE force a write category.
	Capabilities = []string{CapMutatesUserFunds, CapRequiresUserSignature, "READS_CHAIN_DATA", "CALLS_THIRD_PARTY_API", "RETURNS_EMBED", "LONG_RUNNING"}
	// FeeRateUnits: usd_per_call (feeRate is USD per call, the default), bps (basis points
	// on routed value), flat_usdc and flat_stablecoin (the flat-fee path: a flat amount
	// paid on-chain before dispatch, args are only {query}).
	FeeRateUnits = []string{FeeUSDPerCall, FeeBps, FeeFlatUSDC, FeeFlatStablecoin}
	// Tiers: one_shot (default; pricingShape must be null) or delegation (pricingShape
	// required).
	Tiers = []string{TierOneShot, TierDelegation}
	// Bindings: REST (default) or MCP_HTTP.
	Bindings = []string{"REST", "MCP_HTTP"}
	// VerificationStatuses, set by the operator only.
	VerificationStatuses = []string{StatusUnverified, StatusVerified, StatusPremium}
	// ReservedHandles cannot be published: they would impersonate the service.
	ReservedHandles = []string{"@switchboard", "@admin", "@support", "@system", "@official", "@help", "@security", "@test",
		"@resolve_token", "@get_price", "@get_balances"} // the last three are core intents (tools/discover)
)

// Named members of the closed sets.
const (
	CapMutatesUserFunds      = "MUTATES_USER_FUNDS"
	CapRequiresUserSignature = "REQUIRES_USER_SIGNATURE"

	FeeUSDPerCall     = billing.FeeUSDPerCall
	FeeBps            = billing.FeeBps
	FeeFlatUSDC       = "flat_usdc"
	FeeFlatStablecoin = "flat_stablecoin"

	TierOneShot    = "one_shot"
	TierDelegation = "delegation"

	StatusUnverified = "UNVERIFIED"
	StatusVerified   = "VERIFIED"
	StatusPremium    = "PREMIUM"
)

// Rule is the one home of what a category means for dispatch.
type Rule struct {
	Write       bool        // quoted and confirmed by the caller first; never sent twice
	Scope       tools.Scope // a scope the caller needs beside "partner" ("" when none)
	MovesTokens bool        // its token arguments (x-token) are resolved before dispatch, and publishing needs one
	GasUnits    int64       // typical gas of its on-chain step on an EVM chain (0: no on-chain step priced)
}

// categoryRules is the closed category set, in the order the schemas and messages list it:
// every write category is confirmed first and never retried; the four that move tokens (an
// ERC-20 transfer, a DEX swap, a bridge deposit) also need their own scope, resolve their
// tokens first and pass gas through. The idempotent ones have the zero Rule. Everything else
// about categories (the lists, the map, the schema enum) is derived from it.
var categoryRules = []struct {
	Category string
	Rule
}{
	{"SWAP", Rule{Write: true, Scope: tools.ScopeSwap, MovesTokens: true, GasUnits: 250_000}},
	{"SEND", Rule{Write: true, Scope: tools.ScopeSend, MovesTokens: true, GasUnits: 65_000}},
	{"BRIDGE", Rule{Write: true, Scope: tools.ScopeBridge, MovesTokens: true, GasUnits: 300_000}},
	{"EXECUTE", Rule{Write: true}}, {"STAKE", Rule{Write: true}}, {"MINT", Rule{Write: true}},
	{"TRANSFER", Rule{Write: true, Scope: tools.ScopeSend, MovesTokens: true, GasUnits: 65_000}},
	{"BURN", Rule{Write: true}}, {"CLAIM", Rule{Write: true}},
	{"PRICE", Rule{}}, {"BALANCE", Rule{}}, {"QUERY", Rule{}}, {"ANALYZE", Rule{}}, {"OTHER", Rule{}},
}

// rules is categoryRules by category: a category is known when it is a key.
var rules = func() map[string]Rule {
	m := make(map[string]Rule, len(categoryRules))
	for _, c := range categoryRules {
		m[c.Category] = c.Rule
	}
	return m
}()

func categoriesWhere(write bool) []string {
	var out []string
	for _, c := range categoryRules {
		if c.Write == write {
			out = append(out, c.Category)
		}
	}
	return out
}

// RuleOf returns category's rule (the zero Rule for idempotent categories).
func RuleOf(category string) Rule { return rules[category] }

// IsCategory reports whether category is one of the closed set.
func IsCategory(category string) bool {
	_, ok := rules[category]
	return ok
}

// IsWriteCategory reports whether category is one of WriteCategories.
func IsWriteCategory(category string) bool { return rules[category].Write }

// Category is an intent's category as a tool input: a string whose schema enum is the
// category set, write categories first.
type Category string

// JSONSchema lists the categories of the rules table.
func (Category) JSONSchema() *jsonschema.Schema {
	enum := make([]any, len(categoryRules))
	for i, c := range categoryRules {
		enum[i] = c.Category
	}
	return &jsonschema.Schema{Type: "string", Enum: enum}
}

// QueryOnly reports whether a parametersSchema is the spec's sample (a): an object whose only
// required property is the string `query`. Such an intent gets the caller's message as
// {query} when no args are given.
func QueryOnly(schema []byte) bool {
	var s struct {
		Type       string   `json:"type"`
		Required   []string `json:"required"`
		Properties map[string]struct {
			Type string `json:"type"`
		} `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return false
	}
	return s.Type == "object" && len(s.Required) == 1 && s.Required[0] == "query" && s.Properties["query"].Type == "string"
}

// IsFlatFee reports whether unit selects the flat-fee dispatch path (args are {query}).
func IsFlatFee(unit string) bool { return unit == FeeFlatUSDC || unit == FeeFlatStablecoin }

// Limits of the validator.
const (
	MaxNameLen        = 80
	MaxDescriptionLen = 2000
	MaxSchemaBytes    = 64 << 10
	MaxPricingBytes   = 8 << 10
	MaxSampleQueries  = 10
	MaxSampleQueryLen = 200
	MaxPayoutEntries  = 16
	MinTimeoutMs      = 1000
	MaxTimeoutMs      = 120000
	DefaultTimeoutMs  = 30000
	MaxBundle         = 5 // = the hourly publish limit: a bigger bundle could never fit
)

// DefaultParametersSchema is used when an intent is published without one: the spec's
// sample shape (a), an object with a required query string.
const DefaultParametersSchema = `{"type":"object","properties":{"query":{"type":"string","description":"the user's request in natural language"}},"required":["query"],"additionalProperties":false}`

// JSONDoc is a JSON document kept byte for byte (a JSON Schema, args). Empty means absent.
type JSONDoc json.RawMessage

// MarshalJSON writes the document, or null when absent.
func (d JSONDoc) MarshalJSON() ([]byte, error) {
	if len(d) == 0 {
		return []byte("null"), nil
	}
	return d, nil
}

// UnmarshalJSON keeps the bytes; null becomes absent.
func (d *JSONDoc) UnmarshalJSON(b []byte) error {
	if string(bytes.TrimSpace(b)) == "null" {
		*d = nil
		return nil
	}
	*d = append((*d)[:0], b...)
	return nil
}

// SchemaDoc is a JSON Schema document (parametersSchema, outputSchema).
type SchemaDoc = JSONDoc

// JSONSchema describes a JSON Schema document.
func (JSONDoc) JSONSchema() *jsonschema.Schema {
	return tools.SchemaDocument("a JSON Schema (draft 2020-12 unless it declares $schema), inline only: no external $ref")
}

// Published is a document as an intent row returns it (parametersSchema, outputSchema,
// pricingShape): the partner's own, byte for byte. Its schema is an open object: the
// keywords are typed where the document is taken (the publish tools' input), and seven
// partner tools return the row, so every byte here is paid seven times in tools/list.
type Published JSONDoc

// MarshalJSON writes the document, or null when absent.
func (d Published) MarshalJSON() ([]byte, error) { return JSONDoc(d).MarshalJSON() }

// UnmarshalJSON keeps the bytes; null becomes absent.
func (d *Published) UnmarshalJSON(b []byte) error { return (*JSONDoc)(d).UnmarshalJSON(b) }

// JSONSchema describes any object.
func (Published) JSONSchema() *jsonschema.Schema { return tools.OpenObject("") }

// ArgsDoc is a tool-call args object.
type ArgsDoc json.RawMessage

// MarshalJSON writes the args, {} when absent.
func (d ArgsDoc) MarshalJSON() ([]byte, error) {
	if len(d) == 0 {
		return []byte("{}"), nil
	}
	return d, nil
}

// UnmarshalJSON keeps the bytes.
func (d *ArgsDoc) UnmarshalJSON(b []byte) error {
	*d = append((*d)[:0], b...)
	return nil
}

// JSONSchema describes args: any object.
func (ArgsDoc) JSONSchema() *jsonschema.Schema {
	return tools.OpenObject("the args object sent in the envelope")
}

// PricingShape is the pricing of a delegation-tier intent: the spec's standard fields,
// typed, plus any custom fields.
type PricingShape json.RawMessage

// MarshalJSON writes the shape, or null when absent.
func (p PricingShape) MarshalJSON() ([]byte, error) { return JSONDoc(p).MarshalJSON() }

// UnmarshalJSON keeps the bytes; null becomes absent.
func (p *PricingShape) UnmarshalJSON(b []byte) error { return (*JSONDoc)(p).UnmarshalJSON(b) }

// JSONSchema types the standard fields and allows custom ones.
func (PricingShape) JSONSchema() *jsonschema.Schema {
	props := jsonschema.NewProperties()
	bps := func(d string) *jsonschema.Schema {
		return &jsonschema.Schema{Type: "integer", Minimum: "0", Maximum: "10000", Description: d}
	}
	props.Set("managementFeeBps", bps("yearly management fee in basis points"))
	props.Set("performanceFeeBps", bps("performance fee in basis points"))
	props.Set("lockupSeconds", &jsonschema.Schema{Type: "integer", Minimum: "0", Maximum: "315360000", Description: "lockup period in seconds"})
	props.Set("redemption", &jsonschema.Schema{Type: "string", MinLength: ptr(uint64(1)), MaxLength: ptr(uint64(64)), Description: "redemption terms, e.g. anytime"})
	props.Set("highWaterMark", &jsonschema.Schema{Type: "boolean", Description: "whether performance fees use a high-water mark"})
	return &jsonschema.Schema{
		Type: "object", Properties: props,
		Description: "pricing of a delegation-tier intent: standard fields managementFeeBps, performanceFeeBps, lockupSeconds, redemption, highWaterMark; custom fields allowed. Required for tier delegation, null for one_shot",
	}
}

func ptr[T any](v T) *T { return &v }

// Decimal is an exact non-negative decimal amount, a JSON number on the wire.
type Decimal struct{ decimal.Decimal }

// MarshalJSON writes the exact number.
func (d Decimal) MarshalJSON() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalJSON reads a JSON number without going through float64.
func (d *Decimal) UnmarshalJSON(b []byte) error {
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("must be a number: %w", err)
	}
	v, err := decimal.NewFromString(n.String())
	if err != nil {
		return err
	}
	d.Decimal = v
	return nil
}

// JSONSchema describes a non-negative number.
func (Decimal) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "number", Minimum: "0"}
}

// Intent is a partner intent as the tools return it (the spec's row).
type Intent struct {
	ID                 string            `json:"id"`
	PublicIdentifier   string            `json:"publicIdentifier" jsonschema_description:"the @handle"`
	Name               string            `json:"name"`
	Description        string            `json:"description"`
	Category           string            `json:"category"`
	Capabilities       []string          `json:"capabilities"`
	BindingType        string            `json:"bindingType"`
	ToolEndpoint       string            `json:"toolEndpoint"`
	TimeoutMs          int               `json:"timeoutMs"`
	ParametersSchema   Published         `json:"parametersSchema" jsonschema_description:"the args' JSON Schema, as published"`
	OutputSchema       Published         `json:"outputSchema" jsonschema:"nullable" jsonschema_description:"the result's JSON Schema, as published"`
	FeeRate            Decimal           `json:"feeRate"`
	FeeRateUnit        string            `json:"feeRateUnit"`
	PayoutAddresses    map[string]string `json:"payoutAddresses" jsonschema:"nullable"`
	Tier               string            `json:"tier"`
	PricingShape       Published         `json:"pricingShape" jsonschema:"nullable" jsonschema_description:"a delegation intent's pricing, as published"`
	SampleQueries      []string          `json:"sampleQueries"`
	OwnerID            string            `json:"ownerId"`
	PartnerID          string            `json:"partnerId"`
	IsActive           bool              `json:"isActive"`
	IsCoreIntent       bool              `json:"isCoreIntent"`
	VerificationStatus string            `json:"verificationStatus"`
	ArchivedAt         *time.Time        `json:"archivedAt" jsonschema:"nullable"`
	CreatedAt          time.Time         `json:"createdAt"`
	UpdatedAt          time.Time         `json:"updatedAt"`
	Health             Health            `json:"health" jsonschema_description:"what the continuous re-probe last found"`
}

// Health is an intent's re-probe record.
type Health struct {
	LastProbeAt       *time.Time `json:"lastProbeAt" jsonschema:"nullable"`
	LastProbeResult   string     `json:"lastProbeResult" jsonschema_description:"e.g. 'probe PASS, health OK'; empty before the first re-probe"`
	ProbeFailures     int        `json:"probeFailures" jsonschema_description:"re-probes failed in a row (timeouts, 5xx); at the limit the intent is deactivated"`
	DeactivatedReason string     `json:"deactivatedReason,omitempty" jsonschema_description:"why the re-probe deactivated the intent; cleared by activating it again"`
}

// IntentOf converts a stored row.
func IntentOf(r *partnerstore.Intent) Intent {
	in := Intent{
		ID: r.ID, PublicIdentifier: r.PublicIdentifier, Name: r.Name, Description: r.Description,
		Category: r.Category, Capabilities: r.Capabilities, BindingType: r.BindingType,
		ToolEndpoint: r.ToolEndpoint, TimeoutMs: r.TimeoutMs, ParametersSchema: Published(r.ParametersSchema),
		FeeRateUnit: r.FeeRateUnit, PayoutAddresses: r.PayoutAddresses, Tier: r.Tier,
		SampleQueries: r.SampleQueries, OwnerID: r.OwnerID, PartnerID: r.PartnerID, IsActive: r.IsActive,
		IsCoreIntent: r.IsCoreIntent, VerificationStatus: r.VerificationStatus,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
		Health: Health{LastProbeAt: r.LastProbeAt, LastProbeResult: r.LastProbeResult, ProbeFailures: r.ProbeFailures, DeactivatedReason: r.DeactivatedReason},
	}
	if in.Health.LastProbeAt != nil {
		t := in.Health.LastProbeAt.UTC()
		in.Health.LastProbeAt = &t
	}
	if in.Capabilities == nil {
		in.Capabilities = []string{}
	}
	if in.SampleQueries == nil {
		in.SampleQueries = []string{}
	}
	if r.OutputSchema != nil {
		in.OutputSchema = Published(*r.OutputSchema)
	}
	if r.PricingShape != nil {
		in.PricingShape = Published(*r.PricingShape)
	}
	if len(in.PayoutAddresses) == 0 {
		in.PayoutAddresses = nil
	}
	in.FeeRate.Decimal, _ = decimal.NewFromString(r.FeeRate)
	if r.ArchivedAt != nil {
		t := r.ArchivedAt.UTC()
		in.ArchivedAt = &t
	}
	return in
}

// Partner is the read-only publisher profile, created on the first publish.
type Partner struct {
	ID        string    `json:"id"`
	OwnerID   string    `json:"ownerId" jsonschema_description:"the account that publishes as this Partner"`
	CreatedAt time.Time `json:"createdAt"`
}

// PartnerOf converts a stored Partner.
func PartnerOf(p *partnerstore.Partner) *Partner {
	return &Partner{ID: p.ID, OwnerID: p.AccountID, CreatedAt: p.CreatedAt.UTC()}
}

// IntentInput is one intent to publish: the row's fields a partner sets.
type IntentInput struct {
	PublicIdentifier string            `json:"publicIdentifier" jsonschema:"pattern=^@[a-z0-9_-]{3\\,32}$" jsonschema_description:"the @handle callers invoke it by: @ plus 3-32 of a-z 0-9 _ -; unique forever (archived handles stay taken); immutable"`
	Name             string            `json:"name" jsonschema:"minLength=1,maxLength=80" jsonschema_description:"display label"`
	Description      string            `json:"description" jsonschema:"minLength=1,maxLength=2000" jsonschema_description:"what it does, for users and for the model that routes to it"`
	Category         Category          `json:"category"` // described by JSONSchemaExtend, from the rules table
	Capabilities     []string          `json:"capabilities,omitempty" jsonschema:"uniqueItems=true,maxItems=6,enum=MUTATES_USER_FUNDS,enum=REQUIRES_USER_SIGNATURE,enum=READS_CHAIN_DATA,enum=CALLS_THIRD_PARTY_API,enum=RETURNS_EMBED,enum=LONG_RUNNING" jsonschema_description:"what the intent does; MUTATES_USER_FUNDS and REQUIRES_USER_SIGNATURE need a write category. Immutable"`
	BindingType      string            `json:"bindingType,omitempty" jsonschema:"enum=REST,enum=MCP_HTTP" jsonschema_description:"REST (default): Switchboard POSTs the signed envelope; MCP_HTTP: Switchboard calls the MCP tool named exactly as the handle over Streamable HTTP, signature in headers. Immutable"`
	ToolEndpoint     string            `json:"toolEndpoint" jsonschema:"minLength=8,maxLength=2048" jsonschema_description:"HTTPS URL of the endpoint; its host must resolve only to public addresses"`
	TimeoutMs        *int              `json:"timeoutMs,omitempty" jsonschema:"minimum=1000,maximum=120000" jsonschema_description:"per-call timeout in ms, default 30000"`
	ParametersSchema SchemaDoc         `json:"parametersSchema,omitempty" jsonschema_description:"JSON Schema of type object for args; default: {query: string} required. Max 64 KiB, inline only. Immutable"`
	OutputSchema     SchemaDoc         `json:"outputSchema,omitempty" jsonschema:"nullable" jsonschema_description:"JSON Schema the result should match; optional. Max 64 KiB, inline only. Immutable"`
	FeeRate          Decimal           `json:"feeRate" jsonschema_description:"price: USD per call (usd_per_call, flat_usdc, flat_stablecoin; at most 6 decimals) or basis points on routed value (bps; an integer up to 10000). 0 is valid"`
	FeeRateUnit      string            `json:"feeRateUnit,omitempty" jsonschema:"enum=usd_per_call,enum=bps,enum=flat_usdc,enum=flat_stablecoin" jsonschema_description:"unit of feeRate, default usd_per_call; flat_usdc and flat_stablecoin select the flat-fee path (paid on-chain before dispatch; args are only {query}). Immutable"`
	PayoutAddresses  map[string]string `json:"payoutAddresses,omitempty" jsonschema:"nullable" jsonschema_description:"chain key -> receiver address. Keys: evm, svm, or namespace:chain (e.g. evm:8453); EVM values 0x + 40 hex (EIP-55 or lowercase), Solana values base58 of 32 bytes. Required when feeRate > 0 (an evm entry for flat-fee units). Immutable"`
	Tier             string            `json:"tier,omitempty" jsonschema:"enum=one_shot,enum=delegation" jsonschema_description:"one_shot (default) or delegation. Immutable"`
	PricingShape     PricingShape      `json:"pricingShape,omitempty" jsonschema:"nullable" jsonschema_description:"required for tier delegation, must be absent for one_shot. Immutable"`
	SampleQueries    []string          `json:"sampleQueries,omitempty" jsonschema:"maxItems=10" jsonschema_description:"example requests users might send (up to 10, each up to 200 characters); used in discovery and as test input"`
}

// JSONSchemaExtend describes category from the rules table, so the text names the same set
// as the enum.
func (IntentInput) JSONSchemaExtend(s *jsonschema.Schema) {
	if p, ok := s.Properties.Get("category"); ok {
		p.Description = fmt.Sprintf("write categories (%s) need the caller's confirmation and are never retried; "+
			"idempotent ones (%s) are retried once on 5xx or network error. Immutable",
			strings.Join(WriteCategories, " "), strings.Join(IdempotentCategories, " "))
	}
}

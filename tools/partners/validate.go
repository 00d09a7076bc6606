package partners

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/santhosh-tekuri/jsonschema/v5"
	"github.com/shopspring/decimal"
	"github.com/switchboard-hq/switchboard/signing"
	partnerstore "github.com/switchboard-hq/switchboard/store/partners"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/partners/outbound"
	"github.com/switchboard-hq/switchboard/tools/tokens"
	"github.com/switchboard-hq/switchboard/tools/wallets"
)

// Problem is one thing wrong with an intent: the field and what to do about it.
type Problem struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

func (p Problem) String() string { return p.Field + ": " + p.Message }

// Validator is the one validator of partner intents, shared by the MCP and REST tools, the
// operator CLI and (later) the web portal.
type Validator struct {
	guard *outbound.Guard
}

// NewValidator returns a validator checking endpoints with g.
func NewValidator(g *outbound.Guard) *Validator { return &Validator{guard: g} }

var (
	handleRE     = regexp.MustCompile(`^@[a-z0-9_-]{3,32}$`)
	payoutKeyRE  = regexp.MustCompile(`^(evm|svm)(:[a-z0-9][a-z0-9_-]{0,63})?$`)
	maxFeeAmount = decimal.NewFromInt(10000)
)

// Handle checks an @handle; "" when valid.
func Handle(h string) string {
	switch {
	case !strings.HasPrefix(h, "@"):
		return "a handle starts with @, e.g. @price-oracle"
	case strings.ToLower(h) != h && handleRE.MatchString(strings.ToLower(h)):
		return fmt.Sprintf("handles are lowercase: use %s", strings.ToLower(h))
	case !handleRE.MatchString(h):
		return "a handle is @ followed by 3 to 32 of a-z, 0-9, _ and -"
	case slices.Contains(ReservedHandles, h):
		return fmt.Sprintf("%s is reserved; choose another handle", h)
	}
	return ""
}

func text(field, s string, max int, multiline bool) (string, *Problem) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return "", &Problem{field, "must not be empty"}
	case !utf8.ValidString(s):
		return "", &Problem{field, "must be valid UTF-8"}
	case utf8.RuneCountInString(s) > max:
		return "", &Problem{field, fmt.Sprintf("is longer than %d characters", max)}
	}
	for _, r := range s {
		if unicode.IsControl(r) && !(multiline && (r == '\n' || r == '\t')) {
			return "", &Problem{field, "must not contain control characters"}
		}
	}
	return s, nil
}

// LocalEndpointsHint is told to a partner whose endpoint is on this computer or its network:
// the way to develop against it is a Switchboard of one's own with the setting on.
const LocalEndpointsHint = "to develop against a partner on your own machine or network, run your own Switchboard (switchboard serve) " +
	"with SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS=true: development only, a production server refuses to start with it"

// localReasons are the refused ranges a partner in development plausibly sits in (its own
// machine, a LAN, a VPN such as Tailscale's CGNAT range); a metadata service, documentation
// or multicast address gets no such hint.
var localReasons = map[string]bool{"loopback": true, "private": true, "unique local (IPv6 private)": true,
	"link-local": true, "carrier-grade NAT (shared)": true, "unspecified (this network)": true, "unspecified": true}

// Endpoint checks a toolEndpoint: https, a public host (unless the development setting is
// on). The message says what to fix.
func (v *Validator) Endpoint(ctx context.Context, raw string) *Problem {
	if _, err := v.guard.CheckURL(ctx, raw); err != nil {
		var ue *outbound.URLError
		var be *outbound.BlockedError
		switch {
		case errors.As(err, &be) && localReasons[be.Reason]:
			return &Problem{"toolEndpoint", err.Error() + "; " + LocalEndpointsHint}
		case errors.As(err, &ue), outbound.IsBlocked(err):
			return &Problem{"toolEndpoint", err.Error()}
		default:
			return &Problem{"toolEndpoint", outbound.Summary(err) + "; publish a URL whose host has public DNS records"}
		}
	}
	return nil
}

// Timeout checks timeoutMs.
func Timeout(ms int) *Problem {
	if ms < MinTimeoutMs || ms > MaxTimeoutMs {
		return &Problem{"timeoutMs", fmt.Sprintf("must be between %d and %d milliseconds", MinTimeoutMs, MaxTimeoutMs)}
	}
	return nil
}

// Fee checks feeRate for unit.
func Fee(rate decimal.Decimal, unit string) *Problem {
	switch {
	case rate.IsNegative():
		return &Problem{"feeRate", "must be 0 or more"}
	case rate.GreaterThan(maxFeeAmount):
		return &Problem{"feeRate", "must be at most 10000"}
	case unit == FeeBps && !rate.IsInteger():
		return &Problem{"feeRate", "basis points (feeRateUnit bps) are a whole number"}
	case unit != FeeBps && !rate.Shift(6).IsInteger():
		return &Problem{"feeRate", "USD amounts have at most 6 decimal places"}
	}
	return nil
}

// SampleQueries checks and trims sample queries.
func SampleQueries(qs []string) ([]string, *Problem) {
	if len(qs) > MaxSampleQueries {
		return nil, &Problem{"sampleQueries", fmt.Sprintf("at most %d", MaxSampleQueries)}
	}
	out := make([]string, 0, len(qs))
	for i, q := range qs {
		t, p := text(fmt.Sprintf("sampleQueries[%d]", i), q, MaxSampleQueryLen, false)
		if p != nil {
			return nil, p
		}
		if slices.Contains(out, t) {
			return nil, &Problem{fmt.Sprintf("sampleQueries[%d]", i), "duplicates an earlier sample query"}
		}
		out = append(out, t)
	}
	return out, nil
}

// schemaDoc checks a JSON Schema document and returns it compacted (keys and numbers as
// written).
func schemaDoc(field string, raw []byte, wantObjectType bool) (string, *jsonschema.Schema, *Problem) {
	if len(raw) > MaxSchemaBytes {
		return "", nil, &Problem{field, fmt.Sprintf("is over %d bytes", MaxSchemaBytes)}
	}
	v, err := tools.DecodeJSON(raw)
	if err != nil {
		return "", nil, &Problem{field, "is not valid JSON: " + err.Error()}
	}
	m, ok := v.(map[string]any)
	if !ok {
		return "", nil, &Problem{field, "must be a JSON Schema object"}
	}
	if wantObjectType && m["type"] != "object" {
		return "", nil, &Problem{field, `must have "type": "object" (args are a JSON object)`}
	}
	compiled, err := tools.CompileSchema(raw)
	if err != nil {
		return "", nil, &Problem{field, "is not a valid JSON Schema: " + oneLine(err.Error())}
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return "", nil, &Problem{field, "is not valid JSON: " + err.Error()}
	}
	return buf.String(), compiled, nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// payouts checks payoutAddresses.
func payouts(m map[string]string, rate decimal.Decimal, unit string) []Problem {
	var ps []Problem
	if len(m) > MaxPayoutEntries {
		return []Problem{{"payoutAddresses", fmt.Sprintf("at most %d entries", MaxPayoutEntries)}}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	hasEVM := false
	for _, k := range keys {
		addr := m[k]
		f := "payoutAddresses." + k
		if !payoutKeyRE.MatchString(k) {
			ps = append(ps, Problem{f, "keys are evm, svm, or namespace:chain such as evm:8453 (namespaces: evm, svm)"})
			continue
		}
		switch ns, _, _ := strings.Cut(k, ":"); ns {
		case "evm":
			hasEVM = true
			if !wallets.ValidEVMAddress(addr) {
				ps = append(ps, Problem{f, "is not an EVM address (0x + 40 hex digits, EIP-55 checksummed or all lowercase)"})
			}
		case "svm":
			if !wallets.ValidSolanaAddress(addr) {
				ps = append(ps, Problem{f, "is not a Solana address (base58 of 32 bytes)"})
			}
		}
	}
	if rate.IsPositive() && len(m) == 0 {
		ps = append(ps, Problem{"payoutAddresses", "a priced intent (feeRate > 0) needs at least one payout address"})
	}
	if IsFlatFee(unit) && rate.IsPositive() && len(m) > 0 && !hasEVM {
		ps = append(ps, Problem{"payoutAddresses", "flat-fee intents are paid on an EVM chain: add an evm (or evm:<chain>) address"})
	}
	return ps
}

// pricing checks pricingShape and returns it compacted.
func pricing(raw []byte) (string, *Problem) {
	if len(raw) > MaxPricingBytes {
		return "", &Problem{"pricingShape", fmt.Sprintf("is over %d bytes", MaxPricingBytes)}
	}
	v, err := tools.DecodeJSON(raw)
	if err != nil {
		return "", &Problem{"pricingShape", "is not valid JSON: " + err.Error()}
	}
	m, ok := v.(map[string]any)
	if !ok {
		return "", &Problem{"pricingShape", "must be an object"}
	}
	intField := func(name string, max int64) *Problem {
		x, ok := m[name]
		if !ok {
			return nil
		}
		n, isNum := x.(json.Number)
		i, err := n.Int64()
		if !isNum || err != nil || i < 0 || i > max {
			return &Problem{"pricingShape." + name, fmt.Sprintf("must be an integer from 0 to %d", max)}
		}
		return nil
	}
	for _, f := range []struct {
		name string
		max  int64
	}{{"managementFeeBps", 10000}, {"performanceFeeBps", 10000}, {"lockupSeconds", 315360000}} {
		if p := intField(f.name, f.max); p != nil {
			return "", p
		}
	}
	if x, ok := m["redemption"]; ok {
		s, isStr := x.(string)
		if !isStr || strings.TrimSpace(s) == "" || len(s) > 64 {
			return "", &Problem{"pricingShape.redemption", "must be a non-empty string of at most 64 characters, e.g. anytime"}
		}
	}
	if x, ok := m["highWaterMark"]; ok {
		if _, isBool := x.(bool); !isBool {
			return "", &Problem{"pricingShape.highWaterMark", "must be true or false"}
		}
	}
	var buf bytes.Buffer
	json.Compact(&buf, raw)
	return buf.String(), nil
}

// Intent validates one intent to publish and returns the row to store: a new id, the
// defaults applied, inactive, UNVERIFIED, revision 1 (timestamps and owner are the
// caller's). It reports every problem at once.
func (v *Validator) Intent(ctx context.Context, in *IntentInput) (*partnerstore.Intent, []Problem) {
	var ps []Problem
	add := func(p *Problem) {
		if p != nil {
			ps = append(ps, *p)
		}
	}
	category := string(in.Category)
	row := &partnerstore.Intent{
		ID: uuid.NewString(), PublicIdentifier: in.PublicIdentifier, Category: category,
		BindingType: in.BindingType, ToolEndpoint: in.ToolEndpoint, TimeoutMs: DefaultTimeoutMs,
		FeeRateUnit: in.FeeRateUnit, Tier: in.Tier, VerificationStatus: StatusUnverified, Revision: 1,
	}
	if msg := Handle(in.PublicIdentifier); msg != "" {
		add(&Problem{"publicIdentifier", msg})
	}
	var p *Problem
	row.Name, p = text("name", in.Name, MaxNameLen, false)
	add(p)
	row.Description, p = text("description", in.Description, MaxDescriptionLen, true)
	add(p)

	if !IsCategory(category) {
		add(&Problem{"category", fmt.Sprintf("must be one of the write categories %v or the idempotent categories %v", WriteCategories, IdempotentCategories)})
	}
	var cps []Problem
	row.Capabilities, cps = capabilities(category, in.Capabilities)
	ps = append(ps, cps...)

	if row.BindingType == "" {
		row.BindingType = string(signing.BindingREST)
	}
	if !slices.Contains(Bindings, row.BindingType) {
		add(&Problem{"bindingType", "must be REST or MCP_HTTP"})
	}
	add(v.Endpoint(ctx, in.ToolEndpoint))
	if in.TimeoutMs != nil {
		row.TimeoutMs = *in.TimeoutMs
		add(Timeout(row.TimeoutMs))
	}

	params := []byte(in.ParametersSchema)
	if len(params) == 0 {
		params = []byte(DefaultParametersSchema)
	}
	row.ParametersSchema, p = parametersSchema(category, in.FeeRateUnit, params)
	add(p)
	if len(in.OutputSchema) > 0 {
		var out string
		out, _, p = schemaDoc("outputSchema", in.OutputSchema, false)
		add(p)
		row.OutputSchema = &out
	}

	if row.FeeRateUnit == "" {
		row.FeeRateUnit = FeeUSDPerCall
	}
	if !slices.Contains(FeeRateUnits, row.FeeRateUnit) {
		add(&Problem{"feeRateUnit", fmt.Sprintf("must be one of %v", FeeRateUnits)})
	}
	add(Fee(in.FeeRate.Decimal, row.FeeRateUnit))
	row.FeeRate = in.FeeRate.String()
	add(routedValue(category, row.FeeRateUnit, in.FeeRate.Decimal, params))
	ps = append(ps, payouts(in.PayoutAddresses, in.FeeRate.Decimal, row.FeeRateUnit)...)
	if len(in.PayoutAddresses) > 0 {
		row.PayoutAddresses = in.PayoutAddresses
	}

	if row.Tier == "" {
		row.Tier = TierOneShot
	}
	row.PricingShape, p = tierPricing(row.Tier, in.PricingShape)
	add(p)

	row.SampleQueries, p = SampleQueries(in.SampleQueries)
	add(p)
	if row.SampleQueries == nil {
		row.SampleQueries = []string{}
	}
	return row, ps
}

// capabilities returns the known capabilities listed, each once, and the problems: unknown or
// repeated ones, and ones that move funds on an idempotent category.
func capabilities(category string, listed []string) ([]string, []Problem) {
	var ps []Problem
	caps := []string{}
	for _, c := range listed {
		switch {
		case !slices.Contains(Capabilities, c):
			ps = append(ps, Problem{"capabilities", fmt.Sprintf("unknown capability %q; the capabilities are %v", c, Capabilities)})
		case slices.Contains(caps, c):
			ps = append(ps, Problem{"capabilities", fmt.Sprintf("%s is listed twice", c)})
		default:
			caps = append(caps, c)
		}
	}
	for _, c := range []string{CapMutatesUserFunds, CapRequiresUserSignature} {
		if slices.Contains(caps, c) && IsCategory(category) && !IsWriteCategory(category) {
			ps = append(ps, Problem{"capabilities", fmt.Sprintf("%s needs a write category (%s); %s is idempotent, and an intent that moves funds must be confirmed by the caller and never retried",
				c, strings.Join(WriteCategories, ", "), category)})
		}
	}
	return caps, ps
}

// ParametersSchemaProblem is what is wrong with a parametersSchema for an intent of category
// and fee unit ("" when nothing): the publish rule, for a form that shows every problem at
// once even when another field stops the publish before it is reached.
func ParametersSchemaProblem(category, feeUnit string, params []byte) string {
	if _, p := parametersSchema(category, feeUnit, params); p != nil {
		return p.Message
	}
	return ""
}

// parametersSchema checks an intent's parametersSchema and returns it compacted.
func parametersSchema(category, feeUnit string, params []byte) (string, *Problem) {
	doc, _, p := schemaDoc("parametersSchema", params, true)
	if p != nil {
		return doc, p
	}
	// Writes that move tokens are dispatched only after their token arguments are resolved
	// (spam short-circuited, ambiguity asked back): such an intent must say which they are.
	// Flat-fee intents get only {query} and parse it themselves.
	if RuleOf(category).MovesTokens && !IsFlatFee(feeUnit) {
		if marked, _ := tokens.TokenProperties(params); len(marked) == 0 {
			return doc, &Problem{"parametersSchema", fmt.Sprintf(`a %s intent must mark its token arguments so Switchboard resolves them before dispatch: `+
				`add "x-token": true to each (the chain is read from a sibling "chain" argument) or "x-token": {"chainProperty": "<argument>"}, `+
				`e.g. {"type":"object","properties":{"token":{"type":"string","x-token":true},"chain":{"type":"string"},"amount":{"type":"string"}},"required":["token","amount"]}`, category)}
		}
	}
	return doc, nil
}

// tierPricing checks a tier against its pricing shape, which only a delegation has; it
// returns the shape compacted (nil without one).
func tierPricing(tier string, shape []byte) (*string, *Problem) {
	switch {
	case !slices.Contains(Tiers, tier):
		return nil, &Problem{"tier", "must be one_shot or delegation"}
	case tier == TierDelegation && len(shape) == 0:
		return nil, &Problem{"pricingShape", "is required for tier delegation"}
	case tier == TierOneShot && len(shape) > 0:
		return nil, &Problem{"pricingShape", "must be null for one_shot intents (set tier delegation to price a delegation)"}
	case len(shape) > 0:
		s, p := pricing(shape)
		return &s, p
	}
	return nil, nil
}

// problemsError turns problems into one BAD_INPUT error; prefix names the intent.
func problemsError(prefix string, ps []Problem, details map[string]any) *tools.Error {
	msgs := make([]string, len(ps))
	for i, p := range ps {
		msgs[i] = p.String()
	}
	if details == nil {
		details = map[string]any{}
	}
	details["problems"] = ps
	return tools.Errorf(tools.CodeBadInput, "%s: %s", prefix, strings.Join(msgs, "; ")).WithDetails(details)
}

// routedValue checks what a schema says a call routes: a malformed x-amount is refused, and
// an intent priced in basis points of routed value must move tokens and name the amount it
// routes, or nobody could price a call of it.
func routedValue(category, unit string, rate decimal.Decimal, params []byte) *Problem {
	_, ok, err := tokens.RoutedProperty(params)
	if err != nil {
		return &Problem{"parametersSchema", err.Error()}
	}
	if unit != FeeBps || rate.IsZero() {
		return nil
	}
	if !RuleOf(category).MovesTokens {
		return &Problem{"feeRateUnit", fmt.Sprintf("basis points are charged on the value a call routes, which only SWAP, BRIDGE, SEND and TRANSFER intents have; price a %s intent in usd_per_call", category)}
	}
	if !ok {
		return &Problem{"parametersSchema", `an intent priced in basis points must say which argument is the amount it routes: mark it "x-amount": "<token argument>" ` +
			`(or {"token": "<token argument>", "atomic": true} for smallest units), e.g. "amount": {"type":"string","x-amount":"fromToken"}; ` +
			`with a single x-token argument, a property named "amount" is enough`}
	}
	return nil
}

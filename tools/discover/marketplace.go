package discover

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/shopspring/decimal"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/search"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/partners"
)

// The public marketplace: what a human browses without signing in. It ranks with discover's
// own rank (relevance with verification's boost, scaled by health), and lists only what
// anyone may invoke: active, not archived.

// PriceKinds are the marketplace's price filter: each kind and the fee units it covers.
var PriceKinds = []PriceKind{
	{"per_call", "Per call", []string{partners.FeeUSDPerCall}},
	{"bps", "Share of routed value", []string{partners.FeeBps}},
	{"flat", "Flat fee on chain", []string{partners.FeeFlatUSDC, partners.FeeFlatStablecoin}},
}

// PriceKind is one kind of price.
type PriceKind struct {
	Name, Label string
	Units       []string
}

// Verifications are the verification statuses, best first.
var Verifications = []string{partners.StatusPremium, partners.StatusVerified, partners.StatusUnverified}

// Categories are every intent category.
func Categories() []string {
	return append(append([]string{}, partners.IdempotentCategories...), partners.WriteCategories...)
}

// BrowseQuery is the marketplace's search and filters; all optional.
type BrowseQuery struct {
	Query, Category, PriceKind, Verification string
	Limit                                    int // default 30, at most 50
}

// Listing is one intent as the marketplace shows it.
type Listing struct {
	Match
	PriceKind string // PriceKind.Name
	Write     bool   // a write category: calls need the caller's confirmation
}

// BrowseResult is one marketplace page.
type BrowseResult struct {
	Results []Listing
	// More is true when more intents matched than are shown (search or filter to narrow).
	More bool
}

// browseCandidates bounds how many intents an unsearched listing ranks.
const browseCandidates = 200

// Browse lists the marketplace: the intents matching the query (discover's search and
// ranking) or, with no query, every listed intent ranked by verification and health.
func (s *Service) Browse(ctx context.Context, q BrowseQuery) (BrowseResult, error) {
	limit := q.Limit
	if limit <= 0 || limit > 50 {
		limit = 30
	}
	sq := search.SearchQuery{Category: q.Category, Verification: q.Verification}
	if q.Category != "" && !slices.Contains(Categories(), q.Category) {
		return BrowseResult{}, tools.Errorf(tools.CodeBadInput, "no category %q; choose one of the list", q.Category)
	}
	if q.Verification != "" && !slices.Contains(Verifications, q.Verification) {
		return BrowseResult{}, tools.Errorf(tools.CodeBadInput, "no verification status %q; choose one of the list", q.Verification)
	}
	if q.PriceKind != "" {
		i := slices.IndexFunc(PriceKinds, func(k PriceKind) bool { return k.Name == q.PriceKind })
		if i < 0 {
			return BrowseResult{}, tools.Errorf(tools.CodeBadInput, "no price kind %q; choose one of the list", q.PriceKind)
		}
		sq.FeeUnits = PriceKinds[i].Units
	}
	var hits []search.SearchHit
	var err error
	if strings.TrimSpace(q.Query) != "" {
		sq.Words = Words(q.Query)
		if len(sq.Words) == 0 {
			return BrowseResult{}, tools.Errorf(tools.CodeBadInput, "the search has no searchable words; describe what you need, e.g. 'price of SOL'")
		}
		sq.Limit = min(limit*3, 60) // as discover: more candidates than shown, for quality to reorder
		hits, err = s.search.SearchIntents(ctx, sq)
	} else {
		sq.Limit = browseCandidates
		hits, err = s.search.BrowseIntents(ctx, sq)
	}
	if err != nil {
		return BrowseResult{}, err
	}
	ranked, err := s.rank(ctx, hits, "")
	if err != nil {
		return BrowseResult{}, err
	}
	out := BrowseResult{More: len(ranked) > limit}
	for _, m := range ranked[:min(limit, len(ranked))] {
		out.Results = append(out.Results, listing(m))
	}
	return out, nil
}

func listing(m Match) Listing {
	l := Listing{Match: m, Write: partners.IsWriteCategory(m.Category)}
	for _, k := range PriceKinds {
		if slices.Contains(k.Units, m.Fee.FeeRateUnit) {
			l.PriceKind = k.Name
		}
	}
	return l
}

// PriceWords says what a call of an intent can cost, the way a person reads it. A partner
// is paid what it reports in providerCostMicro, capped by its feeRate (the spec's billing),
// so a credit-charged rate reads "up to"; a listing free of partner fees still names the
// infrastructure fee (infraMicro) every call costs. A core intent is a tool called directly,
// with no charge.
func PriceWords(rate, unit string, infraMicro int64, core bool) string {
	d, err := decimal.NewFromString(rate)
	if err != nil {
		return rate + " " + unit
	}
	switch {
	case core:
		return "Free: a built-in tool, called directly, with no charge"
	case unit == partners.FeeBps && d.IsZero(), unit == partners.FeeUSDPerCall && d.IsZero():
		return fmt.Sprintf("Free of partner fees: a call still costs the %s USD infrastructure fee and Switchboard's platform fee", tools.USD(infraMicro))
	case unit == partners.FeeUSDPerCall:
		return "Up to " + d.String() + " USD per call (the partner is paid what it reports, at most this), charged only when the call succeeds"
	case unit == partners.FeeBps:
		return fmt.Sprintf("Up to %s basis points (%s%%) of the value routed (the partner is paid what it reports, at most this), charged only when the call succeeds", d.String(), d.Div(decimal.NewFromInt(100)).String())
	case unit == partners.FeeFlatUSDC:
		return "Flat fee of " + d.String() + " USDC, paid on chain before the call (x402), refunded if it fails"
	case unit == partners.FeeFlatStablecoin:
		return "Flat fee of " + d.String() + " USD in a stablecoin, paid on chain before the call (x402), refunded if it fails"
	}
	return d.String() + " " + unit
}

// Param is one top-level argument of an intent, from its parametersSchema.
type Param struct {
	Name        string
	Type        string // string, number, integer, boolean, or json (an object, array or anything else)
	Required    bool
	Description string
	Enum        []string
	Default     string
}

// Params reads the top-level properties of a parametersSchema, in name order (required
// first). An unreadable schema has none.
func Params(schema string) []Param {
	var doc struct {
		Properties map[string]struct {
			Type        any    `json:"type"`
			Description string `json:"description"`
			Enum        []any  `json:"enum"`
			Default     any    `json:"default"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if json.Unmarshal([]byte(schema), &doc) != nil {
		return nil
	}
	var out []Param
	for name, p := range doc.Properties {
		t, _ := p.Type.(string)
		switch t {
		case "string", "number", "integer", "boolean":
		default:
			t = "json"
		}
		pr := Param{Name: name, Type: t, Required: slices.Contains(doc.Required, name), Description: p.Description}
		for _, e := range p.Enum {
			if b, err := json.Marshal(e); err == nil {
				pr.Enum = append(pr.Enum, strings.Trim(string(b), `"`))
			}
		}
		if p.Default != nil {
			b, _ := json.Marshal(p.Default)
			pr.Default = strings.Trim(string(b), `"`)
		}
		out = append(out, pr)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Required != out[j].Required {
			return out[i].Required
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Detail is one intent's marketplace page.
type Detail struct {
	Listing
	OutputSchema string // "" when it publishes none
	Params       []Param
	QueryOnly    bool // takes only {query}: the message text is enough
	FlatFee      bool
	Scopes       []string // what a key needs to call it: partner, and its category's own scope
	Publisher    Publisher
	Snippets     Snippets
}

// Publisher is who publishes an intent, as the public sees it.
type Publisher struct {
	PartnerID string
	// Name is how the public reads the publisher: partners have no display name, so it is
	// the first of its listed handles (in name order), never the partner's internal id.
	Name    string
	Core    bool // Switchboard itself
	Since   time.Time
	Intents []Listing // its listed intents, this one included
}

// Snippets show how to call an intent, the handle filled in.
type Snippets struct{ MCP, REST, SDK string }

// Listed returns an intent's marketplace page; an inactive, archived or unknown handle is
// NOT_FOUND (it is not listed).
func (s *Service) Listed(ctx context.Context, handle, baseURL string) (Detail, error) {
	notFound := tools.Errorf(tools.CodeNotFound, "no listed intent %s; browse the marketplace or search it", handle)
	in, err := s.partners.IntentByHandle(ctx, strings.ToLower(handle))
	if errors.Is(err, store.ErrNotFound) {
		return Detail{}, notFound
	}
	if err != nil {
		return Detail{}, err
	}
	if !in.IsActive || in.ArchivedAt != nil {
		return Detail{}, notFound
	}
	ranked, err := s.rank(ctx, []search.SearchHit{{Intent: in, Relevance: 1}}, "")
	if err != nil {
		return Detail{}, err
	}
	d := Detail{Listing: listing(ranked[0]), Params: Params(in.ParametersSchema), QueryOnly: partners.QueryOnly([]byte(in.ParametersSchema)),
		FlatFee: partners.IsFlatFee(in.FeeRateUnit), Scopes: []string{string(tools.ScopePartner)}}
	if sc := partners.RuleOf(in.Category).Scope; sc != "" {
		d.Scopes = append(d.Scopes, string(sc))
	}
	if in.OutputSchema != nil {
		d.OutputSchema = tools.IndentJSON(*in.OutputSchema)
	}
	d.ParametersSchema = Schema(tools.IndentJSON(in.ParametersSchema))
	d.Publisher = Publisher{PartnerID: in.PartnerID, Core: in.IsCoreIntent}
	if p, err := s.partners.ByAccount(ctx, in.OwnerID); err == nil {
		d.Publisher.Since = p.CreatedAt.UTC()
	}
	others, err := s.search.PublisherIntents(ctx, in.PartnerID, 20)
	if err != nil {
		return Detail{}, err
	}
	for _, o := range others {
		d.Publisher.Intents = append(d.Publisher.Intents, listing(s.match(o, "")))
	}
	d.Publisher.Name = d.Handle
	if len(d.Publisher.Intents) > 0 {
		d.Publisher.Name = d.Publisher.Intents[0].Handle
	}
	d.Snippets = s.snippets(d, baseURL)
	return d, nil
}

// snippets write the call as each door takes it.
func (s *Service) snippets(d Detail, baseURL string) Snippets {
	if core, ok := s.core[d.Handle]; ok {
		method, path, _ := strings.Cut(core.Route, " ")
		return Snippets{
			MCP:  fmt.Sprintf("tools/call %s %s", core.Tool, exampleArgs(d.Params)),
			REST: fmt.Sprintf("curl -X %s '%s%s' -H \"x-api-key: $SWITCHBOARD_API_KEY\"", method, baseURL, path),
			SDK:  fmt.Sprintf("c := switchboard.New(%q, os.Getenv(\"SWITCHBOARD_API_KEY\"))\nout, err := c.%s(ctx, switchboard.%s{...})", baseURL, sdkMethod[core.Tool][0], sdkMethod[core.Tool][1]),
		}
	}
	msg := d.Handle + " <your request>"
	input := map[string]any{"message": msg}
	if !d.QueryOnly {
		input["args"] = json.RawMessage(exampleArgs(d.Params))
	}
	body, pretty := plainJSON(input, ""), plainJSON(input, "  ")
	goArgs := ""
	if !d.QueryOnly {
		goArgs = ", Args: map[string]any{" + goMap(exampleArgs(d.Params)) + "}"
	}
	sn := Snippets{
		MCP: "tools/call invoke_partner_message\n" + string(pretty),
		// The key in double quotes, so the shell expands it; the body in single quotes, its own
		// single quotes closed and escaped, so it is sent as written.
		REST: fmt.Sprintf("curl -X POST '%s/v1/invoke' \\\n  -H \"x-api-key: $SWITCHBOARD_API_KEY\" -H 'content-type: application/json' \\\n  -d '%s'", baseURL, strings.ReplaceAll(body, "'", `'\''`)),
		SDK: fmt.Sprintf("c := switchboard.New(%q, os.Getenv(\"SWITCHBOARD_API_KEY\"))\nout, err := c.Invoke(ctx, switchboard.InvokeInput{Message: %q%s})\n\n// TypeScript\nconst out = await sb.invoke(%s);",
			baseURL, msg, goArgs, body),
	}
	if d.Write {
		sn.SDK = strings.Replace(sn.SDK, "c.Invoke(ctx, ", "c.InvokeWithConfirmation(ctx, ", 1)
		sn.SDK = strings.Replace(sn.SDK, "})\n", "}, askTheUser)\n", 1)
		sn.SDK = strings.Replace(sn.SDK, "sb.invoke(", "sb.invokeWithConfirmation(", 1)
		sn.SDK = strings.Replace(sn.SDK, ");", ", askTheUser);", 1)
	}
	return sn
}

// plainJSON encodes v as a person reads it: <, > and & as themselves (the page escapes them).
func plainJSON(v any, indent string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", indent)
	enc.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}

// sdkMethod is the Go SDK's method and input type of each core tool.
var sdkMethod = map[string][2]string{"resolve_token": {"ResolveToken", "TokenQuery"}, "get_price": {"Price", "TokenQuery"},
	"get_balances": {"Balances", "BalancesQuery"}}

// goMap writes a JSON object's members as a Go map literal's.
func goMap(obj string) string {
	var m map[string]any
	json.Unmarshal([]byte(obj), &m)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		v := fmt.Sprintf("%#v", m[k])
		if _, ok := m[k].(map[string]any); ok {
			v = "map[string]any{}"
		}
		parts[i] = fmt.Sprintf("%q: %s", k, v)
	}
	return strings.Join(parts, ", ")
}

// exampleArgs is an args object with a placeholder for every required parameter.
func exampleArgs(params []Param) string {
	ex := map[string]any{}
	for _, p := range params {
		if !p.Required {
			continue
		}
		switch {
		case len(p.Enum) > 0:
			ex[p.Name] = p.Enum[0]
		case p.Type == "number", p.Type == "integer":
			ex[p.Name] = 1
		case p.Type == "boolean":
			ex[p.Name] = true
		case p.Type == "json":
			ex[p.Name] = map[string]any{}
		default:
			ex[p.Name] = "<" + p.Name + ">"
		}
	}
	return plainJSON(ex, "")
}

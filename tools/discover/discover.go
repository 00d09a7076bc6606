// Package discover finds services by natural language: partner intents and Switchboard's
// own capabilities (seeded as core intents), ranked by full-text relevance and verification.
package discover

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	invopop "github.com/invopop/jsonschema"
	"github.com/switchboard-hq/switchboard/store"
	partnerstore "github.com/switchboard-hq/switchboard/store/partners"
	"github.com/switchboard-hq/switchboard/store/search"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/partners"
	"github.com/switchboard-hq/switchboard/tools/service"
)

// Core describes one built-in capability listed in the marketplace.
type Core struct {
	Tool          string // the kernel tool that serves it
	Route         string // its REST route
	Name          string
	Description   string // the marketplace line; the tool's own description is longer
	Category      string
	SampleQueries []string
}

// CoreIntents are the built-in capabilities seeded as core intents, handle "@" + tool name.
var CoreIntents = []Core{
	{Tool: "resolve_token", Route: "GET /v1/tokens/resolve", Name: "Token resolution", Category: "QUERY",
		Description:   "Look up a token by ticker, name or contract address: contract address, chain, decimals, and whether it is spam.",
		SampleQueries: []string{"what is USDC on base", "token contract address for PEPE", "resolve the ticker ARB", "which chain is this token on"}},
	{Tool: "get_price", Route: "GET /v1/tokens/price", Name: "Token price in USD", Category: "PRICE",
		Description:   "Current USD price of a crypto token from live market data; never a stale or invented price.",
		SampleQueries: []string{"what is the price of SOL", "ETH price in dollars", "how much is BTC worth", "current price of a token"}},
	{Tool: "get_balances", Route: "GET /v1/balances", Name: "Wallet balances and portfolio", Category: "BALANCE",
		Description:   "What your wallets hold across chains, with USD values and the portfolio total.",
		SampleQueries: []string{"what do I hold", "my portfolio value", "wallet balances across chains", "how much USDC do I have"}},
}

// Service answers discover.
type Service struct {
	store    *store.Store
	partners partnerstore.Partners
	search   search.Search
	now      func() time.Time
	core     map[string]Core // by handle
	infra    int64           // micro-USD every partner call costs for infrastructure
}

// Config is what discover lists besides the partners' intents.
type Config struct {
	// Registered are the kernel's tools: the core intents of those among them are seeded (a
	// core capability whose tool is not registered is not listed).
	Registered []*tools.Tool
	// InfraCostMicro is what every partner call costs for infrastructure (billing's
	// InfraCostMicro), named beside a price so a listing free of partner fees is not read as
	// free.
	InfraCostMicro int64
}

// NewService builds discover and seeds the core intents of the registered tools.
func NewService(ctx context.Context, cfg Config, d service.Deps) (*Service, error) {
	d = d.WithDefaults()
	st, now := d.Store, d.Now
	s := &Service{store: st, partners: partnerstore.New(st), search: search.New(st), now: now, core: map[string]Core{}, infra: cfg.InfraCostMicro}
	var rows []*partnerstore.Intent
	for _, c := range CoreIntents {
		i := slices.IndexFunc(cfg.Registered, func(t *tools.Tool) bool { return t.Name == c.Tool })
		if i < 0 {
			continue
		}
		t := cfg.Registered[i]
		handle := "@" + c.Tool
		s.core[handle] = c
		rows = append(rows, &partnerstore.Intent{
			ID: "core-" + c.Tool, PublicIdentifier: handle, Name: c.Name, Description: c.Description,
			Category: c.Category, Capabilities: []string{}, BindingType: "REST", ToolEndpoint: "builtin:" + c.Tool,
			TimeoutMs: partners.DefaultTimeoutMs, ParametersSchema: string(t.InputSchema), FeeRate: "0",
			FeeRateUnit: partners.FeeUSDPerCall, Tier: partners.TierOneShot, SampleQueries: c.SampleQueries,
			VerificationStatus: partners.StatusVerified, Revision: 1,
		})
	}
	if err := s.partners.EnsureCoreIntents(ctx, rows, now().UTC()); err != nil {
		return nil, fmt.Errorf("seed core intents: %w", err)
	}
	return s, nil
}

// Input is discover's input.
type Input struct {
	Query    string            `json:"query" jsonschema:"minLength=1,maxLength=500" jsonschema_description:"what you need, in natural language, e.g. 'price of SOL' or 'swap tokens on base'"`
	Category partners.Category `json:"category,omitempty" jsonschema_description:"only intents of this category"`
	Limit    int               `json:"limit,omitempty" jsonschema:"minimum=1,maximum=50" jsonschema_description:"how many results, default 10"`
}

// Schema is a JSON Schema relayed as published.
type Schema json.RawMessage

// MarshalJSON writes the schema as stored.
func (s Schema) MarshalJSON() ([]byte, error) { return s, nil }

// JSONSchema: an object (the schema as published; its keywords need no schema of their own
// to be read).
func (Schema) JSONSchema() *invopop.Schema {
	return tools.OpenObject("the JSON Schema of the args it takes")
}

// Fee is what an intent charges per call.
type Fee struct {
	FeeRate     string `json:"feeRate" jsonschema_description:"decimal, in feeRateUnit: the most the partner is paid (it is paid what it reports, up to this)"`
	FeeRateUnit string `json:"feeRateUnit"`
}

// Match is one service found.
type Match struct {
	Handle             string  `json:"handle"`
	Name               string  `json:"name"`
	Description        string  `json:"description"`
	Category           string  `json:"category"`
	VerificationStatus string  `json:"verificationStatus"`
	IsCoreIntent       bool    `json:"isCoreIntent" jsonschema_description:"a built-in Switchboard capability: call its tool directly"`
	Active             bool    `json:"active" jsonschema_description:"false only for your own intents not yet activated (only you can invoke them)"`
	Own                bool    `json:"own" jsonschema_description:"published by your account"`
	Fee                Fee     `json:"fee"`
	Price              string  `json:"price" jsonschema_description:"what a call can cost, in words"`
	ParametersSchema   Schema  `json:"parametersSchema"`
	Invoke             string  `json:"invoke" jsonschema_description:"how to call it"`
	Quality            Quality `json:"quality" jsonschema_description:"how it has behaved over the last 30 days, from real calls and the continuous re-probe"`
}

// Quality is an intent's record over the window: what an agent can choose by.
type Quality struct {
	Calls                   int        `json:"calls" jsonschema_description:"finished calls in the window"`
	SuccessRate             *float64   `json:"successRate" jsonschema:"nullable" jsonschema_description:"share of calls the partner answered successfully (0 to 1); null with no calls"`
	P50LatencyMs            *int64     `json:"p50LatencyMs" jsonschema:"nullable"`
	P95LatencyMs            *int64     `json:"p95LatencyMs" jsonschema:"nullable"`
	OutputSchemaConformance *float64   `json:"outputSchemaConformance" jsonschema:"nullable" jsonschema_description:"share of results that matched the outputSchema; null when none was checked"`
	LastProbeAt             *time.Time `json:"lastProbeAt" jsonschema:"nullable"`
	LastProbeResult         string     `json:"lastProbeResult"`
	ProbeFailures           int        `json:"probeFailures" jsonschema_description:"re-probes failed in a row"`
}

// Output lists the matches, best first.
type Output struct {
	Results []Match `json:"results"`
}

// Tools returns discover.
func (s *Service) Tools() []*tools.Tool {
	return []*tools.Tool{tools.New(tools.Def{
		Name:  "discover",
		Title: "Discover services",
		Description: "Find services by what they do, in natural language: marketplace partner intents (called with invoke_partner_message " +
			"and their @handle) and Switchboard's built-in capabilities (token resolution, prices, balances). Results are ranked by " +
			"relevance and quality: verified partners first at equal relevance, then healthier ones (success rate, re-probes), each with its fee, its parametersSchema, how to invoke it, and its quality record.",
		Access:      tools.RequireScope(tools.ScopeRead),
		Annotations: tools.Annotations{ReadOnly: tools.Bool(true), Idempotent: true, OpenWorld: tools.Bool(false)},
	}, s.discover)}
}

func (s *Service) discover(ctx context.Context, c *tools.Caller, in Input) (Output, error) {
	limit := in.Limit
	if limit == 0 {
		limit = 10
	}
	words := Words(in.Query)
	if len(words) == 0 {
		return Output{}, tools.Errorf(tools.CodeBadInput, "the query has no searchable words; describe what you need, e.g. 'price of SOL'")
	}
	// More candidates than asked for, so that quality can reorder what relevance found.
	hits, err := s.search.SearchIntents(ctx, search.SearchQuery{Words: words, Category: string(in.Category), AccountID: c.AccountID(), Limit: min(limit*3, 60)})
	if err != nil {
		return Output{}, err
	}
	ranked, err := s.rank(ctx, hits, c.AccountID())
	if err != nil {
		return Output{}, err
	}
	return Output{Results: ranked[:min(limit, len(ranked))]}, nil
}

// rank orders what the store found by relevance (verification's boost included) scaled by
// health: discover and the marketplace pages share it, so a human and an agent see the same
// order.
func (s *Service) rank(ctx context.Context, hits []search.SearchHit, accountID string) ([]Match, error) {
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.Intent.ID
	}
	stats, err := s.search.IntentQuality(ctx, ids, s.now().Add(-QualityWindow))
	if err != nil {
		return nil, err
	}
	type ranked struct {
		m     Match
		score float64
	}
	rs := make([]ranked, len(hits))
	for i, h := range hits {
		q := qualityOf(stats[h.Intent.ID], h.Intent)
		m := s.match(h.Intent, accountID)
		m.Quality = q
		rs[i] = ranked{m: m, score: h.Relevance * HealthFactor(q)}
	}
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].score > rs[j].score })
	out := make([]Match, len(rs))
	for i, r := range rs {
		out[i] = r.m
	}
	return out, nil
}

// QualityWindow is how far back quality is measured.
const QualityWindow = 30 * 24 * time.Hour

// HealthFactor scales relevance by quality: 1 for an intent with a clean record or too few
// calls to judge (fewer than 3), down to 0.5 for one whose calls all fail, and 0.8 per re-probe
// failed in a row. Relevance (with verification's boost) still dominates: a much better match
// outranks a healthier one.
func HealthFactor(q Quality) float64 {
	f := 1.0
	if q.Calls >= 3 && q.SuccessRate != nil {
		f *= 0.5 + 0.5**q.SuccessRate
	}
	return f * math.Pow(0.8, float64(q.ProbeFailures))
}

func qualityOf(st *search.Quality, in *partnerstore.Intent) Quality {
	q := Quality{LastProbeAt: in.LastProbeAt, LastProbeResult: in.LastProbeResult, ProbeFailures: in.ProbeFailures}
	if q.LastProbeAt != nil {
		t := q.LastProbeAt.UTC()
		q.LastProbeAt = &t
	}
	if st == nil {
		return q
	}
	q.Calls = st.Calls
	if st.Calls > 0 {
		r := float64(st.Succeeded) / float64(st.Calls)
		q.SuccessRate = &r
	}
	if st.SchemaChecked > 0 {
		r := float64(st.SchemaValid) / float64(st.SchemaChecked)
		q.OutputSchemaConformance = &r
	}
	if n := len(st.LatenciesMs); n > 0 {
		l := slices.Clone(st.LatenciesMs)
		slices.Sort(l)
		p50, p95 := l[(n-1)*50/100], l[(n-1)*95/100]
		q.P50LatencyMs, q.P95LatencyMs = &p50, &p95
	}
	return q
}

func (s *Service) match(in *partnerstore.Intent, accountID string) Match {
	m := Match{Handle: in.PublicIdentifier, Name: in.Name, Description: in.Description, Category: in.Category,
		VerificationStatus: in.VerificationStatus, IsCoreIntent: in.IsCoreIntent, Active: in.IsActive,
		Own: in.OwnerID == accountID, Fee: Fee{FeeRate: in.FeeRate, FeeRateUnit: in.FeeRateUnit},
		ParametersSchema: Schema(in.ParametersSchema)}
	m.Price = PriceWords(in.FeeRate, in.FeeRateUnit, s.infra, in.IsCoreIntent)
	switch core, ok := s.core[in.PublicIdentifier]; {
	case ok:
		m.Invoke = fmt.Sprintf("call the tool %s (REST %s) with arguments matching parametersSchema", core.Tool, core.Route)
	case partners.IsFlatFee(in.FeeRateUnit):
		m.Invoke = fmt.Sprintf("invoke_partner_message {\"message\": \"%s <your request>\"}; paid by a flat on-chain fee first: the answer is an x402 PaymentRequired; pay it and send the same call again (docs/x402.md)", in.PublicIdentifier)
	case partners.QueryOnly([]byte(in.ParametersSchema)):
		m.Invoke = fmt.Sprintf("invoke_partner_message {\"message\": \"%s <your request>\"}", in.PublicIdentifier)
	default:
		m.Invoke = fmt.Sprintf("invoke_partner_message {\"message\": \"%s ...\", \"args\": {...matching parametersSchema}}", in.PublicIdentifier)
	}
	if partners.IsWriteCategory(in.Category) {
		m.Invoke += "; a write intent: the first call returns CONFIRMATION_REQUIRED, confirm with confirmRequestId after the user approves"
	}
	return m
}

var wordRe = regexp.MustCompile(`[a-z0-9]+`)

// stopWords carry no meaning for search (FTS5 has no stop list of its own).
var stopWords = wordSet(`a an and are as at be by can do does for from get give how i in is it me my
	of on or please show tell that the this to use want what whats when where which who why will with you your`)

func wordSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// Words turns a natural-language query into at most 16 distinct search words.
func Words(query string) []string {
	var out []string
	for _, w := range wordRe.FindAllString(strings.ToLower(query), -1) {
		if len(w) < 2 || stopWords[w] || slices.Contains(out, w) {
			continue
		}
		out = append(out, w)
		if len(out) == 16 {
			break
		}
	}
	return out
}

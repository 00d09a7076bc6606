// Package discover finds services by natural language: partner intents and Switchboard's
// own capabilities (seeded as core intents), ranked by full-text relevance and verification.
package discover

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	invopop "github.com/invopop/jsonschema"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/partners"
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
	store *store.Store
	now   func() time.Time
	core  map[string]Core // by handle
}

// NewService builds discover and seeds the core intents of the registered tools (a core
// capability whose tool is not registered is not listed).
func NewService(ctx context.Context, st *store.Store, now func() time.Time, registered []*tools.Tool) (*Service, error) {
	s := &Service{store: st, now: now, core: map[string]Core{}}
	var rows []*store.PartnerIntent
	for _, c := range CoreIntents {
		i := slices.IndexFunc(registered, func(t *tools.Tool) bool { return t.Name == c.Tool })
		if i < 0 {
			continue
		}
		t := registered[i]
		handle := "@" + c.Tool
		s.core[handle] = c
		rows = append(rows, &store.PartnerIntent{
			ID: "core-" + c.Tool, PublicIdentifier: handle, Name: c.Name, Description: c.Description,
			Category: c.Category, Capabilities: []string{}, BindingType: "REST", ToolEndpoint: "builtin:" + c.Tool,
			TimeoutMs: partners.DefaultTimeoutMs, ParametersSchema: string(t.InputSchema), FeeRate: "0",
			FeeRateUnit: partners.FeeUSDPerCall, Tier: partners.TierOneShot, SampleQueries: c.SampleQueries,
			VerificationStatus: partners.StatusVerified, Revision: 1,
		})
	}
	if err := st.EnsureCoreIntents(ctx, rows, now().UTC()); err != nil {
		return nil, fmt.Errorf("seed core intents: %w", err)
	}
	return s, nil
}

// Input is discover's input.
type Input struct {
	Query    string `json:"query" jsonschema:"minLength=1,maxLength=500" jsonschema_description:"what you need, in natural language, e.g. 'price of SOL' or 'swap tokens on base'"`
	Category string `json:"category,omitempty" jsonschema:"enum=SWAP,enum=SEND,enum=BRIDGE,enum=EXECUTE,enum=STAKE,enum=MINT,enum=TRANSFER,enum=BURN,enum=CLAIM,enum=PRICE,enum=BALANCE,enum=QUERY,enum=ANALYZE,enum=OTHER" jsonschema_description:"only intents of this category"`
	Limit    int    `json:"limit,omitempty" jsonschema:"minimum=1,maximum=50" jsonschema_description:"how many results, default 10"`
}

// Schema is a JSON Schema relayed as published.
type Schema json.RawMessage

// MarshalJSON writes the schema as stored.
func (s Schema) MarshalJSON() ([]byte, error) { return s, nil }

// JSONSchema: a JSON Schema object.
func (Schema) JSONSchema() *invopop.Schema {
	return tools.SchemaDocument("the JSON Schema of the args it takes")
}

// Fee is what an intent charges per call.
type Fee struct {
	FeeRate     string `json:"feeRate" jsonschema_description:"decimal, in feeRateUnit"`
	FeeRateUnit string `json:"feeRateUnit"`
}

// Match is one service found.
type Match struct {
	Handle             string `json:"handle"`
	Name               string `json:"name"`
	Description        string `json:"description"`
	Category           string `json:"category"`
	VerificationStatus string `json:"verificationStatus"`
	IsCoreIntent       bool   `json:"isCoreIntent" jsonschema_description:"a built-in Switchboard capability: call its tool directly"`
	Active             bool   `json:"active" jsonschema_description:"false only for your own intents not yet activated (only you can invoke them)"`
	Own                bool   `json:"own" jsonschema_description:"published by your account"`
	Fee                Fee    `json:"fee"`
	ParametersSchema   Schema `json:"parametersSchema"`
	Invoke             string `json:"invoke" jsonschema_description:"how to call it"`
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
			"relevance, verified partners first at equal relevance, each with its fee, its parametersSchema and how to invoke it.",
		Access:      tools.Scope("read"),
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
	hits, err := s.store.SearchIntents(ctx, store.SearchQuery{Words: words, Category: in.Category, AccountID: c.AccountID(), Limit: limit})
	if err != nil {
		return Output{}, err
	}
	out := Output{Results: make([]Match, 0, len(hits))}
	for _, h := range hits {
		out.Results = append(out.Results, s.match(h.Intent, c.AccountID()))
	}
	return out, nil
}

func (s *Service) match(in *store.PartnerIntent, accountID string) Match {
	m := Match{Handle: in.PublicIdentifier, Name: in.Name, Description: in.Description, Category: in.Category,
		VerificationStatus: in.VerificationStatus, IsCoreIntent: in.IsCoreIntent, Active: in.IsActive,
		Own: in.OwnerID == accountID, Fee: Fee{FeeRate: in.FeeRate, FeeRateUnit: in.FeeRateUnit},
		ParametersSchema: Schema(in.ParametersSchema)}
	switch core, ok := s.core[in.PublicIdentifier]; {
	case ok:
		m.Invoke = fmt.Sprintf("call the tool %s (REST %s) with arguments matching parametersSchema", core.Tool, core.Route)
	case partners.IsFlatFee(in.FeeRateUnit):
		m.Invoke = fmt.Sprintf("invoke_partner_message {\"message\": \"%s <your request>\"}; paid by a flat on-chain fee, not available yet", in.PublicIdentifier)
	case queryOnlySchema(in.ParametersSchema):
		m.Invoke = fmt.Sprintf("invoke_partner_message {\"message\": \"%s <your request>\"}", in.PublicIdentifier)
	default:
		m.Invoke = fmt.Sprintf("invoke_partner_message {\"message\": \"%s ...\", \"args\": {...matching parametersSchema}}", in.PublicIdentifier)
	}
	if partners.IsWriteCategory(in.Category) {
		m.Invoke += "; a write intent: the first call returns CONFIRMATION_REQUIRED, confirm with confirmRequestId after the user approves"
	}
	return m
}

func queryOnlySchema(schema string) bool {
	var s struct {
		Required []string `json:"required"`
	}
	return json.Unmarshal([]byte(schema), &s) == nil && len(s.Required) == 1 && s.Required[0] == "query"
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

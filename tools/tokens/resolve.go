package tokens

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/switchboard-hq/switchboard/chain/evm"
	"github.com/switchboard-hq/switchboard/chain/httpx"
	"github.com/switchboard-hq/switchboard/store/learned"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/wallets"
)

// MaxResults caps how many tokens one resolution returns.
const MaxResults = 50

// ResolveInput is resolve_token's input (get_price takes the same).
type ResolveInput struct {
	Query string `json:"query" jsonschema:"minLength=1,maxLength=200" jsonschema_description:"ticker (USDC), name (wrapped ether), contract address or Solana mint; natural text such as 'usdc on base' is accepted"`
	Chain string `json:"chain,omitempty" jsonschema:"maxLength=40" jsonschema_description:"optional chain: ethereum, arbitrum, base, polygon, optimism, avalanche, bsc or solana (aliases eth, arb, matic, op, avax, bnb, sol)"`
}

// ResolveOutput is resolve_token's answer.
type ResolveOutput struct {
	Status string  `json:"status" jsonschema:"enum=OK"`
	Tokens []Token `json:"tokens" jsonschema_description:"matches, most trusted first; empty when nothing matches"`
}

func (s *Service) resolveTool(ctx context.Context, _ *tools.Caller, in ResolveInput) (ResolveOutput, error) {
	es, err := s.Resolve(ctx, in.Query, in.Chain)
	if err != nil {
		return ResolveOutput{}, err
	}
	out := ResolveOutput{Status: "OK", Tokens: make([]Token, 0, len(es))}
	for _, e := range es {
		out.Tokens = append(out.Tokens, e.Token)
	}
	return out, nil
}

// query is a parsed resolution request.
type query struct {
	term  string // ticker, name or address
	chain *Chain // nil: any chain
}

// fillers are words of natural questions that are never part of a ticker or name.
var fillers = map[string]bool{
	"what": true, "what's": true, "whats": true, "is": true, "the": true, "price": true, "of": true, "on": true,
	"in": true, "at": true, "for": true, "me": true, "show": true, "find": true, "resolve": true, "please": true,
	"how": true, "much": true, "token": true, "address": true, "contract": true, "mint": true,
}

// parseQuery splits natural text ("usdc on base", "price of sol", "base:0x...") into a term
// and a chain. chainParam, when set, is the caller's explicit chain.
func parseQuery(text, chainParam string) (query, error) {
	var q query
	if strings.TrimSpace(chainParam) != "" {
		c, err := ParseChain(chainParam)
		if err != nil {
			return q, tools.Errorf(tools.CodeBadInput, "%v", err)
		}
		q.chain = &c
	}
	setChain := func(c Chain) error {
		if q.chain != nil && q.chain.Name != c.Name {
			return tools.Errorf(tools.CodeBadInput, "the query names chain %s but chain is %s; give one", c.Name, q.chain.Name)
		}
		q.chain = &c
		return nil
	}
	text = strings.TrimSpace(strings.TrimRight(strings.TrimSpace(text), "?!."))
	// chain:address form
	if i := strings.IndexByte(text, ':'); i > 0 && !strings.ContainsAny(text[:i], " ") {
		if c, ok := ChainByName(text[:i]); ok && strings.TrimSpace(text[i+1:]) != "" {
			if err := setChain(c); err != nil {
				return q, err
			}
			text = strings.TrimSpace(text[i+1:])
		}
	}
	var words []string
	for _, w := range strings.Fields(text) {
		if !fillers[strings.ToLower(w)] {
			words = append(words, w)
		}
	}
	if len(words) > 1 {
		if c, rest, ok := chainAtEdge(words); ok {
			if err := setChain(c); err != nil {
				return q, err
			}
			words = rest
		}
	}
	q.term = strings.TrimLeft(strings.Join(words, " "), "$")
	if q.term == "" {
		return q, tools.Errorf(tools.CodeBadInput, "query names no token; give a ticker, name or address, e.g. \"USDC\" or \"usdc on base\"")
	}
	return q, nil
}

// chainAtEdge finds a chain name (up to three words) at the end, or else the start, of words,
// leaving at least one word.
func chainAtEdge(words []string) (Chain, []string, bool) {
	for n := min(3, len(words)-1); n >= 1; n-- {
		if c, ok := textChain(strings.Join(words[len(words)-n:], " ")); ok {
			return c, words[:len(words)-n], true
		}
	}
	for n := min(3, len(words)-1); n >= 1; n-- {
		if c, ok := textChain(strings.Join(words[:n], " ")); ok {
			return c, words[n:], true
		}
	}
	return Chain{}, nil, false
}

// textChain is ChainByName without the numeric aliases, which in free text are amounts.
func textChain(s string) (Chain, bool) {
	if _, err := strconv.Atoi(s); err == nil {
		return Chain{}, false
	}
	return ChainByName(s)
}

// match is a candidate with how well it matched.
type match struct {
	*entry
	quality int // 0 ticker, 1 alias or name, 2 ticker without bridge suffix, 3 address
}

func sortMatches(ms []match) {
	sort.SliceStable(ms, func(i, j int) bool {
		a, b := ms[i], ms[j]
		if a.tier != b.tier {
			return a.tier < b.tier
		}
		if a.quality != b.quality {
			return a.quality < b.quality
		}
		if ca, cb := chainIndex(a.Chain), chainIndex(b.Chain); ca != cb {
			return ca < cb
		}
		if a.pos != b.pos {
			return a.pos < b.pos
		}
		return a.Ticker < b.Ticker
	})
}

// Resolve finds the tokens a query names, most trusted first.
func (s *Service) Resolve(ctx context.Context, text, chain string) ([]*entry, error) {
	ms, err := s.resolveMatches(ctx, text, chain)
	if err != nil {
		return nil, err
	}
	out := make([]*entry, len(ms))
	for i, m := range ms {
		out[i] = m.entry
	}
	return out, nil
}

func (s *Service) resolveMatches(ctx context.Context, text, chain string) ([]match, error) {
	q, err := parseQuery(text, chain)
	if err != nil {
		return nil, err
	}
	var ms []match
	switch {
	case IsEVMAddress(q.term):
		ms, err = s.resolveEVMAddress(ctx, q)
	case wallets.ValidSolanaAddress(q.term):
		ms, err = s.resolveMint(ctx, q)
	default:
		ms, err = s.resolveText(ctx, q)
	}
	if err != nil {
		return nil, err
	}
	sortMatches(ms)
	if len(ms) > MaxResults {
		ms = ms[:MaxResults]
	}
	return ms, nil
}

func (s *Service) resolveText(ctx context.Context, q query) ([]match, error) {
	key := learned.SearchKey(q.term)
	if utf8.RuneCountInString(key) > 100 {
		return nil, tools.Errorf(tools.CodeBadInput, "query is too long to be a ticker or name")
	}
	var ms []match
	seen := map[string]bool{}
	for _, e := range s.reg.all {
		if q.chain != nil && e.Chain != q.chain.Name {
			continue
		}
		if quality, ok := textQuality(key, e.Ticker, e.Name, e.aliases); ok {
			ms = append(ms, match{entry: e, quality: quality})
			seen[e.Chain+"/"+AddressKey(chainOf(e.Chain), e.Address)] = true
		}
	}
	chainName := ""
	if q.chain != nil {
		chainName = q.chain.Name
	}
	rows, err := s.searchTokens(ctx, key, chainName, MaxResults)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		if seen[r.Chain+"/"+r.AddressKey] {
			continue
		}
		e := entryOf(r)
		quality, _ := textQuality(key, e.Ticker, e.Name, nil)
		ms = append(ms, match{entry: e, quality: quality})
	}
	return ms, nil
}

// textQuality says whether key (a search key) names a token, and how well.
func textQuality(key, ticker, name string, aliases []string) (int, bool) {
	switch {
	case key == learned.SearchKey(ticker):
		return 0, true
	case key == learned.SearchKey(name):
		return 1, true
	}
	for _, a := range aliases {
		if key == learned.SearchKey(a) {
			return 1, true
		}
	}
	if key == learned.BaseKey(ticker) {
		return 2, true
	}
	return 0, false
}

func chainOf(name string) Chain {
	c, _ := ChainByName(name)
	return c
}

// entryOf turns a learned token into a resolver entry.
func entryOf(r *learned.Token) *entry {
	c := chainOf(r.Chain)
	tier := tierLearned
	switch {
	case r.IsSpam:
		tier = tierSpam
	case r.Listed:
		tier = tierListed
	}
	return &entry{Token: Token{Ticker: r.Ticker, Name: r.Name, Address: DisplayAddress(c, r.Address), Chain: c.Name, ChainID: c.ID,
		Decimals: r.Decimals, MarketDataID: r.MarketDataID, IsSpam: r.IsSpam, SpamReason: r.SpamReason}, tier: tier, pos: 1 << 30}
}

// known returns the registry and learned tokens at an address on chains.
func (s *Service) known(ctx context.Context, address string, chains []Chain) ([]match, error) {
	var ms []match
	seen := map[string]bool{}
	names := make([]string, 0, len(chains))
	for _, c := range chains {
		names = append(names, c.Name)
		if e, ok := s.reg.ByAddress(c, address); ok {
			ms = append(ms, match{entry: e, quality: 3})
			seen[c.Name] = true
		}
	}
	rows, err := s.learned.TokensAt(ctx, AddressKey(chains[0], address), names...)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		if !seen[r.Chain] {
			ms = append(ms, match{entry: entryOf(r), quality: 3})
		}
	}
	return ms, nil
}

func (s *Service) resolveEVMAddress(ctx context.Context, q query) ([]match, error) {
	if !wallets.ValidEVMAddress(q.term) {
		return nil, tools.Errorf(tools.CodeBadInput, "%s is not a valid EVM address: its mixed-case checksum (EIP-55) does not match; check it, or send it all lowercase", q.term)
	}
	var chains []Chain
	if q.chain != nil {
		if q.chain.Family != FamilyEVM {
			return nil, tools.Errorf(tools.CodeBadInput, "%s is an EVM address but chain is %s; Solana tokens are named by their base58 mint", q.term, q.chain.Name)
		}
		chains = []Chain{*q.chain}
	} else {
		for _, c := range Chains {
			if c.Family == FamilyEVM {
				chains = append(chains, c)
			}
		}
	}
	ms, err := s.known(ctx, q.term, chains)
	if err != nil || len(ms) > 0 {
		return ms, err
	}
	// Not known anywhere: ask the chains themselves.
	addr, _ := evm.ParseAddress(q.term)
	type result struct {
		chain Chain
		md    evm.Metadata
		err   error
	}
	results := make([]result, len(chains))
	var wg sync.WaitGroup
	for i, c := range chains {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, s.chainTimeout)
			defer cancel()
			md, err := s.evm[c.Name].TokenMetadata(cctx, addr)
			results[i] = result{chain: c, md: md, err: err}
		}()
	}
	wg.Wait()
	var failed []map[string]string
	var learned []*learned.Token
	for _, r := range results {
		switch {
		case errors.Is(r.err, evm.ErrNotToken):
			continue
		case r.err != nil:
			failed = append(failed, map[string]string{"chain": r.chain.Name, "reason": httpx.Reason(r.err)})
			continue
		}
		learned = append(learned, s.learn(ctx, r.chain, q.term, r.md.Symbol, r.md.Name, r.md.Decimals, false, "", "chain", true))
	}
	if len(learned) == 0 && len(failed) > 0 {
		return nil, tools.Errorf(tools.CodeUnavailable, "could not read %s on %d chain(s); try again, or name the chain", q.term, len(failed)).
			WithDetails(map[string]any{"failures": failed})
	}
	return s.save(ctx, learned), nil
}

func (s *Service) resolveMint(ctx context.Context, q query) ([]match, error) {
	sol := chainOf("solana")
	if q.chain != nil && q.chain.Name != sol.Name {
		return nil, tools.Errorf(tools.CodeBadInput, "%s is a Solana mint but chain is %s", q.term, q.chain.Name)
	}
	ms, err := s.known(ctx, q.term, []Chain{sol})
	if err != nil || len(ms) > 0 {
		return ms, err
	}
	found, err := s.jupMeta.Search(ctx, q.term)
	if err != nil {
		return nil, tools.Errorf(tools.CodeUnavailable, "could not look up Solana mint %s at Jupiter (%s); try again later", q.term, httpx.Reason(err))
	}
	for _, t := range found {
		if t.ID != q.term {
			continue
		}
		dec, err := t.Decimals.Int64()
		if err != nil || dec < 0 || dec > 36 || t.Symbol == "" {
			return nil, tools.Errorf(tools.CodeUpstream, "Jupiter describes mint %s incompletely; try again later", q.term)
		}
		return s.save(ctx, []*learned.Token{s.learn(ctx, sol, t.ID, t.Symbol, t.Name, int(dec), t.Listed(), t.SpamFlag(), "jupiter", true)}), nil
	}
	return nil, nil
}

// learn builds a learned token: its CoinGecko id (looked up, best effort), whether a trusted
// list vouches for it, and its spam verdict.
// lookup false skips the CoinGecko call (bulk learning during get_balances).
func (s *Service) learn(ctx context.Context, c Chain, address, symbol, name string, decimals int, listed bool, providerFlag, source string, lookup bool) *learned.Token {
	symbol, name = clip(symbol, 32), clip(name, 100)
	if name == "" {
		name = symbol
	}
	var id string
	var found bool
	if lookup {
		var err error
		if id, found, err = s.cgMeta.Contract(ctx, c.CoinGecko, address); err != nil {
			s.log.WarnContext(ctx, "coingecko contract lookup", "chain", c.Name, "address", address, "err", httpx.Reason(err))
		}
	}
	t := &learned.Token{Chain: c.Name, AddressKey: AddressKey(c, address), Address: DisplayAddress(c, address), Ticker: symbol, Name: name,
		Decimals: decimals, MarketDataID: id, Listed: listed || found, Source: source, UpdatedAt: s.now()}
	if !t.Listed {
		if reason := spamSignals(symbol, name, s.reg.majors, providerFlag); reason != "" {
			t.IsSpam, t.SpamReason = true, reason
		}
	}
	return t
}

// save stores learned tokens (a failure only costs a later lookup) and returns them as matches.
func (s *Service) save(ctx context.Context, ts []*learned.Token) []match {
	if len(ts) == 0 {
		return nil
	}
	if err := s.learned.UpsertTokens(ctx, ts); err != nil {
		s.log.WarnContext(ctx, "store learned tokens", "err", err)
	}
	s.forgetSearches()
	ms := make([]match, len(ts))
	for i, t := range ts {
		ms[i] = match{entry: entryOf(t), quality: 3}
	}
	return ms
}

// clip is a token's symbol or name as stored: trimmed, valid UTF-8, at most n characters.
func clip(s string, n int) string { return tools.Clip(strings.TrimSpace(s), n, "") }

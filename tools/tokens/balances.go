package tokens

import (
	"context"
	"math/big"
	"sort"
	"strings"
	"sync"

	"github.com/shopspring/decimal"
	"github.com/switchboard-hq/switchboard/chain/evm"
	"github.com/switchboard-hq/switchboard/chain/httpx"
	"github.com/switchboard-hq/switchboard/store/learned"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/tokens/prices"
)

// BalancesInput is get_balances' input.
type BalancesInput struct {
	Query  string   `json:"query,omitempty" jsonschema:"maxLength=300" jsonschema_description:"what to show, in natural language, e.g. 'my USDC on base and solana': the chains and tickers it names narrow the answer"`
	Chains []string `json:"chains,omitempty" jsonschema:"maxItems=8" jsonschema_description:"only these chains (names or aliases); all eight when omitted"`
}

// Balance is one holding.
type Balance struct {
	Ticker       string `json:"ticker"`
	Chain        string `json:"chain"`
	Amount       string `json:"amount" jsonschema_description:"exact decimal amount of the token"`
	AmountUsd    string `json:"amountUsd,omitempty" jsonschema_description:"USD value, decimal string rounded to 6 places; absent when the token could not be priced (see unpriced)"`
	PriceUsd     string `json:"priceUsd,omitempty" jsonschema_description:"USD price used"`
	Wallet       string `json:"wallet" jsonschema_description:"address of the wallet holding it"`
	WalletType   string `json:"walletType" jsonschema:"enum=primary,enum=connected"`
	TokenAddress string `json:"tokenAddress" jsonschema_description:"contract or mint (natives: see resolve_token)"`
}

// Failure is a chain, or one token on it, that could not be read.
type Failure struct {
	Chain  string `json:"chain"`
	Token  string `json:"token,omitempty" jsonschema_description:"ticker, when only this token failed"`
	Reason string `json:"reason"`
}

// Unpriced is a token shown without a USD value.
type Unpriced struct {
	Ticker       string           `json:"ticker"`
	Chain        string           `json:"chain"`
	TokenAddress string           `json:"tokenAddress"`
	Providers    []prices.Failure `json:"providers" jsonschema_description:"each price provider's reason"`
}

// WalletRef is a wallet the answer covers.
type WalletRef struct {
	Address    string `json:"address"`
	Family     string `json:"family" jsonschema:"enum=evm,enum=svm"`
	WalletType string `json:"walletType" jsonschema:"enum=primary,enum=connected"`
}

// BalancesOutput is get_balances' answer: the spec's Balance result plus what it could not do.
type BalancesOutput struct {
	Status     string      `json:"status" jsonschema:"enum=OK,enum=PARTIAL" jsonschema_description:"OK: every chain answered and every token was priced. PARTIAL: see failures and unpriced"`
	Balances   []Balance   `json:"balances"`
	TotalUsd   string      `json:"totalUsd" jsonschema_description:"sum of amountUsd, decimal string"`
	Failures   []Failure   `json:"failures" jsonschema_description:"chains (or tokens) that could not be read, and why"`
	Unpriced   []Unpriced  `json:"unpriced" jsonschema_description:"tokens shown without a USD value"`
	SpamHidden int         `json:"spamHidden" jsonschema_description:"spam-flagged holdings left out"`
	Wallets    []WalletRef `json:"wallets" jsonschema_description:"wallets covered"`
}

type holder struct {
	address    string
	walletType string
}

// row is a holding before pricing.
type row struct {
	Balance
	e   *entry
	raw *big.Int
	ord int
}

func (s *Service) balancesTool(ctx context.Context, c *tools.Caller, in BalancesInput) (BalancesOutput, error) {
	textChains, tickers := s.balanceQuery(in.Query)
	in.Chains = append(in.Chains, textChains...)
	chains := Chains
	if len(in.Chains) > 0 {
		chains = nil
		picked := map[string]bool{}
		for _, name := range in.Chains {
			ch, err := ParseChain(name)
			if err != nil {
				return BalancesOutput{}, tools.Errorf(tools.CodeBadInput, "chains: %v", err)
			}
			if !picked[ch.Name] {
				picked[ch.Name] = true
				chains = append(chains, ch)
			}
		}
	}
	byFamily, refs, err := s.holders(ctx, c.Principal.AccountID)
	if err != nil {
		return BalancesOutput{}, err
	}
	out, err := s.Balances(ctx, chains, byFamily, refs)
	if err != nil || len(tickers) == 0 {
		return out, err
	}
	// Only the tickers the text named, and the total of those.
	kept := out.Balances[:0]
	total := decimal.Zero
	for _, b := range out.Balances {
		if tickers[strings.ToUpper(b.Ticker)] {
			kept = append(kept, b)
			if v, err := decimal.NewFromString(b.AmountUsd); err == nil {
				total = total.Add(v)
			}
		}
	}
	out.Balances, out.TotalUsd = kept, total.String()
	return out, nil
}

// balanceQuery reads the chains and the known tickers a balances question names ("my USDC on
// base and solana"); every other word is ignored.
func (s *Service) balanceQuery(text string) (chains []string, tickers map[string]bool) {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '-')
	})
	tickers = map[string]bool{}
	for i := 0; i < len(words); i++ {
		if i+1 < len(words) {
			if ch, ok := textChain(words[i] + " " + words[i+1]); ok { // "bnb chain", "op mainnet"
				chains = append(chains, ch.Name)
				i++
				continue
			}
		}
		if ch, ok := textChain(words[i]); ok && !s.reg.majors[strings.ToUpper(words[i])] {
			chains = append(chains, ch.Name)
			continue
		}
		if s.reg.majors[strings.ToUpper(words[i])] {
			tickers[strings.ToUpper(words[i])] = true
		}
	}
	return chains, tickers
}

// holders lists the account's wallets per family, primary first.
func (s *Service) holders(ctx context.Context, accountID string) (map[string][]holder, []WalletRef, error) {
	primary, err := s.accounts.Wallets(ctx, accountID)
	if err != nil {
		return nil, nil, err
	}
	connected, err := s.connected.ConnectedWallets(ctx, accountID)
	if err != nil {
		return nil, nil, err
	}
	byFamily := map[string][]holder{}
	refs := []WalletRef{}
	for _, w := range primary {
		byFamily[w.Family] = append(byFamily[w.Family], holder{w.Address, "primary"})
		refs = append(refs, WalletRef{w.Address, w.Family, "primary"})
	}
	for _, w := range connected {
		byFamily[w.Family] = append(byFamily[w.Family], holder{w.Address, "connected"})
		refs = append(refs, WalletRef{w.Address, w.Family, "connected"})
	}
	return byFamily, refs, nil
}

// Balances reads every chain in parallel (each with its own deadline), prices what it found,
// and reports what failed.
func (s *Service) Balances(ctx context.Context, chains []Chain, byFamily map[string][]holder, refs []WalletRef) (BalancesOutput, error) {
	type result struct {
		rows     []*row
		failures []Failure
		spam     int
		err      error
	}
	results := make([]result, len(chains))
	var wg sync.WaitGroup
	tasks := 0
	for i, ch := range chains {
		hs := byFamily[ch.Family]
		if len(hs) == 0 {
			continue
		}
		tasks++
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, s.chainTimeout)
			defer cancel()
			var r result
			if ch.Family == FamilyEVM {
				r.rows, r.failures, r.err = s.evmHoldings(cctx, ch, hs)
			} else {
				r.rows, r.spam, r.err = s.solanaHoldings(cctx, ch, hs)
			}
			results[i] = r
		}()
	}
	wg.Wait()

	out := BalancesOutput{Status: "OK", Balances: []Balance{}, Failures: []Failure{}, Unpriced: []Unpriced{}, Wallets: refs}
	var rows []*row
	failedChains := 0
	for i, r := range results {
		if r.err != nil {
			failedChains++
			out.Failures = append(out.Failures, Failure{Chain: chains[i].Name, Reason: httpx.Reason(r.err)})
			continue
		}
		out.Failures = append(out.Failures, r.failures...)
		out.SpamHidden += r.spam
		rows = append(rows, r.rows...)
	}
	if tasks > 0 && failedChains == tasks {
		return BalancesOutput{}, tools.Errorf(tools.CodeUnavailable, "could not read balances on any chain; try again later").
			WithDetails(map[string]any{"failures": out.Failures})
	}

	// Price every distinct token once, through get_price's provider chain.
	var assets []prices.Asset
	for _, r := range rows {
		assets = append(assets, assetOf(r.e))
	}
	quotes, fails := s.quoter.Quote(ctx, assets)
	total := decimal.Zero
	unpriced := map[string]bool{}
	for _, r := range rows {
		key := assetOf(r.e).Key()
		if q, ok := quotes[key]; ok {
			amt, _ := decimal.NewFromString(r.Amount)
			usd := amt.Mul(q.Price).Round(6)
			r.AmountUsd, r.PriceUsd = usd.String(), q.Price.String()
			total = total.Add(usd)
		} else if !unpriced[key] {
			unpriced[key] = true
			out.Unpriced = append(out.Unpriced, Unpriced{Ticker: r.Ticker, Chain: r.Chain, TokenAddress: r.TokenAddress, Providers: fails[key]})
		}
	}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if ca, cb := chainIndex(a.Chain), chainIndex(b.Chain); ca != cb {
			return ca < cb
		}
		if a.WalletType != b.WalletType {
			return a.WalletType == "primary"
		}
		if a.Wallet != b.Wallet {
			return a.Wallet < b.Wallet
		}
		return a.ord < b.ord
	})
	for _, r := range rows {
		out.Balances = append(out.Balances, r.Balance)
	}
	out.TotalUsd = total.String()
	if len(out.Failures) > 0 || len(out.Unpriced) > 0 {
		out.Status = "PARTIAL"
	}
	return out, nil
}

// FormatUnits renders a raw integer amount with decimals as an exact decimal string.
func FormatUnits(raw *big.Int, decimals int) string {
	return decimal.NewFromBigInt(raw, int32(-decimals)).String()
}

func (s *Service) evmHoldings(ctx context.Context, ch Chain, hs []holder) ([]*row, []Failure, error) {
	holders := make([][20]byte, 0, len(hs))
	var kept []holder
	for _, h := range hs {
		a, err := evm.ParseAddress(h.address)
		if err != nil {
			continue
		}
		holders = append(holders, a)
		kept = append(kept, h)
	}
	toks := s.reg.OnChain(ch.Name)[1:] // the native comes from eth_getBalance
	addrs := make([][20]byte, len(toks))
	for i, t := range toks {
		addrs[i], _ = evm.ParseAddress(t.Address)
	}
	got, err := s.evm[ch.Name].Holdings(ctx, holders, addrs)
	if err != nil {
		return nil, nil, err
	}
	native := s.reg.Native(ch.Name)
	var rows []*row
	var fails []Failure
	for h, hd := range kept {
		if got.Wei[h].Sign() > 0 {
			rows = append(rows, newRow(native, ch, hd, got.Wei[h], native.Decimals, 0))
		}
	}
	for t, e := range toks {
		if got.Failed[t] != "" {
			fails = append(fails, Failure{Chain: ch.Name, Token: e.Ticker, Reason: got.Failed[t]})
		}
		for h, hd := range kept {
			if v := got.Tokens[t][h]; v != nil && v.Sign() > 0 {
				rows = append(rows, newRow(e, ch, hd, v, e.Decimals, t+1))
			}
		}
	}
	return rows, fails, nil
}

func newRow(e *entry, ch Chain, h holder, raw *big.Int, decimals, ord int) *row {
	addr := e.Address
	return &row{e: e, raw: raw, ord: ord, Balance: Balance{Ticker: e.Ticker, Chain: ch.Name, Amount: FormatUnits(raw, decimals),
		Wallet: h.address, WalletType: h.walletType, TokenAddress: addr}}
}

func (s *Service) solanaHoldings(ctx context.Context, ch Chain, hs []holder) ([]*row, int, error) {
	owners := make([]string, len(hs))
	for i, h := range hs {
		owners[i] = h.address
	}
	got, err := s.sol.Holdings(ctx, owners)
	if err != nil {
		return nil, 0, err
	}
	// Metadata of every mint held: registry, learned tokens, then Jupiter for the rest.
	var mints []string
	seen := map[string]bool{}
	for _, h := range got {
		for _, t := range h.Tokens {
			if !seen[t.Mint] {
				seen[t.Mint] = true
				mints = append(mints, t.Mint)
			}
		}
	}
	meta, err := s.mintEntries(ctx, ch, mints)
	if err != nil {
		return nil, 0, err
	}
	native := s.reg.Native(ch.Name)
	var rows []*row
	spam := 0
	for i, h := range got {
		if h.Lamports.Sign() > 0 {
			rows = append(rows, newRow(native, ch, hs[i], h.Lamports, native.Decimals, 0))
		}
		for j, t := range h.Tokens {
			e := meta[t.Mint]
			if e.IsSpam {
				spam++
				continue
			}
			ord := 1 << 20
			if e.tier == tierRegistry {
				ord = e.pos
			}
			r := newRow(e, ch, hs[i], t.Amount, t.Decimals, ord+j)
			rows = append(rows, r)
		}
	}
	return rows, spam, nil
}

// mintEntries finds what is known of mints, asking Jupiter about the unknown ones (and
// remembering the answers). A mint nobody knows gets a bare entry named by its address.
func (s *Service) mintEntries(ctx context.Context, ch Chain, mints []string) (map[string]*entry, error) {
	out := map[string]*entry{}
	var unknown []string
	for _, m := range mints {
		if e, ok := s.reg.ByAddress(ch, m); ok {
			out[m] = e
		} else {
			unknown = append(unknown, m)
		}
	}
	if len(unknown) == 0 {
		return out, nil
	}
	rows, err := s.learned.TokensByKeys(ctx, ch.Name, unknown)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		out[r.AddressKey] = entryOf(r)
	}
	var ask []string
	for _, m := range unknown {
		if out[m] == nil {
			ask = append(ask, m)
		}
	}
	var learned []*learned.Token
	for start := 0; start < len(ask); start += 100 {
		chunk := ask[start:min(start+100, len(ask))]
		found, err := s.jupMeta.Search(ctx, strings.Join(chunk, ","))
		if err != nil {
			s.log.WarnContext(ctx, "jupiter token search", "err", httpx.Reason(err))
			break
		}
		want := map[string]bool{}
		for _, m := range chunk {
			want[m] = true
		}
		for _, t := range found {
			dec, err := t.Decimals.Int64()
			if !want[t.ID] || err != nil || t.Symbol == "" {
				continue
			}
			learned = append(learned, s.learn(ctx, ch, t.ID, t.Symbol, t.Name, int(dec), t.Listed(), t.SpamFlag(), "jupiter", false))
		}
	}
	for _, m := range s.save(ctx, learned) {
		out[m.Address] = m.entry
	}
	for _, m := range ask {
		if out[m] == nil {
			out[m] = &entry{Token: Token{Ticker: "UNKNOWN", Name: "unknown token " + m, Address: m, Chain: ch.Name, ChainID: ch.ID}, tier: tierLearned}
		}
	}
	return out, nil
}

package tokens

import (
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/switchboard-hq/switchboard/tools/wallets"
)

// NativeEVMAddress is the conventional placeholder address of an EVM chain's native coin.
const NativeEVMAddress = "0xEeeeeEeeeEeEeeEeEeEeeEEEeeeeEeeeeeeeEEeE"

// WrappedSOLMint is the wrapped-SOL mint, the address SOL is reported (and priced) under.
const WrappedSOLMint = "So11111111111111111111111111111111111111112"

// Token is one resolve_token result item: the spec's Token table, plus why a token is spam.
type Token struct {
	Ticker       string `json:"ticker" jsonschema_description:"symbol, e.g. USDC"`
	Name         string `json:"name"`
	Address      string `json:"address" jsonschema_description:"contract address (EVM, EIP-55 checksummed) or mint (Solana). Native coins use 0xEeeeeEeeeEeEeeEeEeEeeEEEeeeeEeeeeeeeEEeE on EVM chains and the wrapped-SOL mint So11111111111111111111111111111111111111112 on Solana"`
	Chain        string `json:"chain" jsonschema:"enum=ethereum,enum=arbitrum,enum=base,enum=polygon,enum=optimism,enum=avalanche,enum=bsc,enum=solana"`
	ChainID      int64  `json:"chainId" jsonschema_description:"EVM chain id; 101 for Solana mainnet"`
	Decimals     int    `json:"decimals"`
	MarketDataID string `json:"marketDataId" jsonschema_description:"CoinGecko id of the token; empty when the market-data provider does not list it"`
	IsSpam       bool   `json:"isSpam" jsonschema_description:"true for a token on no trusted list that looks like spam (URL or claim/airdrop bait in its name, a look-alike of a major ticker, or flagged by a provider). Never swap, bridge or send it"`
	SpamReason   string `json:"spamReason,omitempty" jsonschema_description:"why isSpam is true"`
}

// Trust tiers, best first: how far a token's identity is vouched for.
const (
	tierRegistry = iota // compiled into the binary
	tierListed          // on a public token list (CoinGecko, Jupiter verified)
	tierLearned         // seen on chain or at a provider, on no list
	tierSpam
)

// entry is a token as the resolver holds it.
type entry struct {
	Token
	native  bool
	tier    int
	pos     int      // position in the registry (tie-break)
	aliases []string // extra tickers it answers to (registry only)
}

// Registry is the embedded list of natives and major tokens.
type Registry struct {
	all       []*entry
	byAddress map[string]*entry   // chain + "/" + address key
	byChain   map[string][]*entry // in registry order
	majors    map[string]bool     // uppercase tickers and aliases of registry tokens
}

//go:embed registry.json
var registryJSON []byte

type registryFile struct {
	Tokens []struct {
		Chain        string   `json:"chain"`
		Ticker       string   `json:"ticker"`
		Name         string   `json:"name"`
		Address      string   `json:"address"`
		Decimals     int      `json:"decimals"`
		MarketDataID string   `json:"marketDataId"`
		Native       bool     `json:"native"`
		Aliases      []string `json:"aliases"`
	} `json:"tokens"`
}

// LoadRegistry parses the embedded registry, checking every address.
func LoadRegistry() (*Registry, error) { return parseRegistry(registryJSON) }

func parseRegistry(raw []byte) (*Registry, error) {
	var f registryFile
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("token registry: %w", err)
	}
	r := &Registry{byAddress: map[string]*entry{}, byChain: map[string][]*entry{}, majors: map[string]bool{}}
	for i, t := range f.Tokens {
		c, ok := ChainByName(t.Chain)
		if !ok || c.Name != t.Chain {
			return nil, fmt.Errorf("token registry: %s has unknown chain %q", t.Ticker, t.Chain)
		}
		if !validAddress(c, t.Address) {
			return nil, fmt.Errorf("token registry: %s on %s: bad address %q", t.Ticker, t.Chain, t.Address)
		}
		if t.Decimals < 0 || t.Decimals > 36 || t.Ticker == "" || t.Name == "" || t.MarketDataID == "" {
			return nil, fmt.Errorf("token registry: %s on %s: incomplete entry", t.Ticker, t.Chain)
		}
		e := &entry{
			Token: Token{Ticker: t.Ticker, Name: t.Name, Address: t.Address, Chain: c.Name, ChainID: c.ID,
				Decimals: t.Decimals, MarketDataID: t.MarketDataID},
			native: t.Native, tier: tierRegistry, pos: i, aliases: t.Aliases,
		}
		key := c.Name + "/" + AddressKey(c, t.Address)
		if _, dup := r.byAddress[key]; dup {
			return nil, fmt.Errorf("token registry: %s on %s listed twice", t.Address, t.Chain)
		}
		r.byAddress[key] = e
		r.byChain[c.Name] = append(r.byChain[c.Name], e)
		r.all = append(r.all, e)
		r.majors[strings.ToUpper(t.Ticker)] = true
		for _, a := range t.Aliases {
			r.majors[strings.ToUpper(a)] = true
		}
	}
	for _, c := range Chains {
		if len(r.byChain[c.Name]) == 0 || !r.byChain[c.Name][0].native {
			return nil, fmt.Errorf("token registry: %s must list its native coin first", c.Name)
		}
	}
	return r, nil
}

// ByAddress returns the registry token at address on chain.
func (r *Registry) ByAddress(c Chain, address string) (*entry, bool) {
	e, ok := r.byAddress[c.Name+"/"+AddressKey(c, address)]
	return e, ok
}

// OnChain lists the registry tokens of a chain, native first.
func (r *Registry) OnChain(chain string) []*entry { return r.byChain[chain] }

// Native returns a chain's native coin.
func (r *Registry) Native(chain string) *entry { return r.byChain[chain][0] }

// AddressKey is the form addresses are compared and stored by: lowercase hex on EVM chains,
// the mint as is on Solana (base58 is case-sensitive).
func AddressKey(c Chain, address string) string {
	if c.Family == FamilyEVM {
		return strings.ToLower(address)
	}
	return address
}

// DisplayAddress renders an address for answers: EIP-55 on EVM chains.
func DisplayAddress(c Chain, address string) string {
	if c.Family != FamilyEVM {
		return address
	}
	raw, err := hex.DecodeString(strings.TrimPrefix(strings.ToLower(address), "0x"))
	if err != nil || len(raw) != 20 {
		return address
	}
	return wallets.ChecksumAddress(raw)
}

func validAddress(c Chain, address string) bool {
	if c.Family == FamilyEVM {
		return wallets.ValidEVMAddress(address)
	}
	return wallets.ValidSolanaAddress(address)
}

// IsEVMAddress reports whether s looks like an EVM address (0x + 40 hex, any case).
func IsEVMAddress(s string) bool {
	if len(s) != 42 || !strings.HasPrefix(strings.ToLower(s), "0x") {
		return false
	}
	_, err := hex.DecodeString(s[2:])
	return err == nil
}

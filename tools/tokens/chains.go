package tokens

import (
	"fmt"
	"strings"
)

// Family values match accounts.FamilyEVM and accounts.FamilySVM (store/accounts).
const (
	FamilyEVM = "evm"
	FamilySVM = "svm"
)

// SolanaChainID is the chainId reported for Solana: Solana has no EVM chain id, and 101 is the
// mainnet-beta id of the Solana token-list standard.
const SolanaChainID = 101

// Chain is one of the eight chains Switchboard looks tokens up on.
type Chain struct {
	Name      string // lowercase, as shown to callers
	ID        int64
	Family    string
	CoinGecko string // CoinGecko asset platform id
	Llama     string // DefiLlama chain prefix
	Native    string // native ticker
}

// Chains lists the supported chains in the order answers use.
var Chains = []Chain{
	{Name: "ethereum", ID: 1, Family: FamilyEVM, CoinGecko: "ethereum", Llama: "ethereum", Native: "ETH"},
	{Name: "arbitrum", ID: 42161, Family: FamilyEVM, CoinGecko: "arbitrum-one", Llama: "arbitrum", Native: "ETH"},
	{Name: "base", ID: 8453, Family: FamilyEVM, CoinGecko: "base", Llama: "base", Native: "ETH"},
	{Name: "polygon", ID: 137, Family: FamilyEVM, CoinGecko: "polygon-pos", Llama: "polygon", Native: "POL"},
	{Name: "optimism", ID: 10, Family: FamilyEVM, CoinGecko: "optimistic-ethereum", Llama: "optimism", Native: "ETH"},
	{Name: "avalanche", ID: 43114, Family: FamilyEVM, CoinGecko: "avalanche", Llama: "avax", Native: "AVAX"},
	{Name: "bsc", ID: 56, Family: FamilyEVM, CoinGecko: "binance-smart-chain", Llama: "bsc", Native: "BNB"},
	{Name: "solana", ID: SolanaChainID, Family: FamilySVM, CoinGecko: "solana", Llama: "solana", Native: "SOL"},
}

// chainAliases maps every accepted spelling (lowercase) to a chain name.
var chainAliases = map[string]string{
	"ethereum": "ethereum", "eth": "ethereum", "mainnet": "ethereum", "ethereum mainnet": "ethereum", "1": "ethereum",
	"arbitrum": "arbitrum", "arb": "arbitrum", "arbitrum one": "arbitrum", "arb1": "arbitrum", "42161": "arbitrum",
	"base": "base", "8453": "base",
	"polygon": "polygon", "matic": "polygon", "pol": "polygon", "polygon pos": "polygon", "137": "polygon",
	"optimism": "optimism", "op": "optimism", "op mainnet": "optimism", "10": "optimism",
	"avalanche": "avalanche", "avax": "avalanche", "avalanche c-chain": "avalanche", "avalanche c chain": "avalanche", "43114": "avalanche",
	"bsc": "bsc", "bnb": "bsc", "bnb chain": "bsc", "bnb smart chain": "bsc", "binance": "bsc", "binance smart chain": "bsc", "56": "bsc",
	"solana": "solana", "sol": "solana",
}

// ChainByName returns the chain called name or one of its aliases ("arb", "matic", ...).
func ChainByName(name string) (Chain, bool) {
	canon, ok := chainAliases[strings.ToLower(strings.TrimSpace(name))]
	if !ok {
		return Chain{}, false
	}
	for _, c := range Chains {
		if c.Name == canon {
			return c, true
		}
	}
	return Chain{}, false
}

// ParseChain is ChainByName with an error that lists what is accepted.
func ParseChain(name string) (Chain, error) {
	if c, ok := ChainByName(name); ok {
		return c, nil
	}
	return Chain{}, fmt.Errorf("unknown chain %q; use one of %s (aliases: eth, arb, matic, op, avax, bnb, sol)", name, strings.Join(ChainNames(), ", "))
}

// ChainNames lists the chain names in answer order.
func ChainNames() []string {
	out := make([]string, len(Chains))
	for i, c := range Chains {
		out[i] = c.Name
	}
	return out
}

// chainIndex orders chains in answers; unknown names sort last.
func chainIndex(name string) int {
	for i, c := range Chains {
		if c.Name == name {
			return i
		}
	}
	return len(Chains)
}

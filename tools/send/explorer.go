package send

import "fmt"

// solanaMainnet is Solana mainnet-beta's CAIP-2 id (its genesis hash, cut).
const solanaMainnet = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"

// explorers are the block explorers' transaction pages, by balances chain name, and the EVM
// chain id each one shows: a chain configured on another id (a test network) gets no link.
var explorers = map[string]struct {
	chainID int64
	url     string
}{
	"ethereum":  {1, "https://etherscan.io/tx/"},
	"arbitrum":  {42161, "https://arbiscan.io/tx/"},
	"base":      {8453, "https://basescan.org/tx/"},
	"polygon":   {137, "https://polygonscan.com/tx/"},
	"optimism":  {10, "https://optimistic.etherscan.io/tx/"},
	"avalanche": {43114, "https://snowtrace.io/tx/"},
	"bsc":       {56, "https://bscscan.com/tx/"},
	SolanaChain: {0, "https://explorer.solana.com/tx/"},
}

// Sends reports whether sends on chain can go out (a node is configured for it).
func (s *Sender) Sends(chain string) bool {
	if chain == SolanaChain {
		return s.cfg.Solana != nil
	}
	_, ok := s.cfg.EVM[chain]
	return ok
}

// Network is chain's CAIP-2 id: eip155:<its node's chain id>, or Solana mainnet's.
func (s *Sender) Network(chain string) string {
	if chain == SolanaChain {
		return solanaMainnet
	}
	if c, ok := s.cfg.EVM[chain]; ok {
		return fmt.Sprintf("eip155:%d", c.Client.ChainID())
	}
	return ""
}

// Explorer is the block explorer's page of transaction hash on chain ("" when there is none:
// no hash, or an EVM chain whose node is not the chain the explorer shows).
func (s *Sender) Explorer(chain, hash string) string {
	e, ok := explorers[chain]
	if !ok || hash == "" {
		return ""
	}
	if chain != SolanaChain {
		if c, ok := s.cfg.EVM[chain]; !ok || c.Client.ChainID() != e.chainID {
			return ""
		}
	}
	return e.url + hash
}

package present

import (
	"html/template"
	"strings"

	"github.com/switchboard-hq/switchboard/tools"
)

// How a money movement reads in the call log: its kind, its USD value, and its transaction
// linked to the chain's public explorer.

// kindLabels name the movements of a call log (usage.Kinds).
var kindLabels = map[string]string{"call": "Call", "topup": "Top-up", "x402": "x402 payment", "send": "Wallet send", "proposed": "Proposed transaction"}

// KindLabel is how a movement's kind reads.
func KindLabel(kind string) string {
	if l, ok := kindLabels[kind]; ok {
		return l
	}
	return label(kind)
}

// explorers are the public block explorers of the chains whose transactions link out, by
// CAIP-2 id. A chain not listed (a local test network, anvil's 31337) shows the hash only.
var explorers = map[string]string{
	"eip155:1":        "https://etherscan.io/tx/",
	"eip155:11155111": "https://sepolia.etherscan.io/tx/",
	"eip155:8453":     "https://basescan.org/tx/",
	"eip155:84532":    "https://sepolia.basescan.org/tx/",
	"eip155:42161":    "https://arbiscan.io/tx/",
	"eip155:137":      "https://polygonscan.com/tx/",
	"eip155:10":       "https://optimistic.etherscan.io/tx/",
	"eip155:43114":    "https://snowtrace.io/tx/",
	"eip155:56":       "https://bscscan.com/tx/",
	solanaMainnet:     "https://explorer.solana.com/tx/",
}

// solanaMainnet is Solana mainnet-beta's CAIP-2 id (a wallet_send's network on Solana).
const solanaMainnet = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"

// ExplorerTx is the explorer page of transaction tx on network, "" when the network has none
// or tx is not a transaction hash.
func ExplorerTx(network, tx string) string {
	base, ok := explorers[network]
	valid := isTxHash
	if network == solanaMainnet {
		valid = isSignature
	}
	if !ok || !valid(tx) {
		return ""
	}
	return base + tx
}

// isSignature is a Solana transaction signature: 64 bytes in base58 (87 or 88 characters of
// its alphabet).
func isSignature(s string) bool {
	const alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
	return len(s) >= 86 && len(s) <= 88 && strings.Trim(s, alphabet) == ""
}

// isTxHash is an EVM transaction hash: 0x and 64 hex digits (nothing a URL would read more in).
func isTxHash(s string) bool {
	h, ok := strings.CutPrefix(s, "0x")
	if !ok || len(h) != 64 {
		return false
	}
	return strings.Trim(strings.ToLower(h), "0123456789abcdef") == ""
}

var movementFuncs = template.FuncMap{
	"kind": KindLabel,
	// explorer is the explorer link of a row's network and transaction (both may be nil).
	"explorer": func(network, tx *string) template.URL {
		if network == nil || tx == nil {
			return ""
		}
		return template.URL(ExplorerTx(*network, *tx)) // https, a known host, a checked hash
	},
	// usdOf writes a nullable USD value; "—" when there is none.
	"usdOf": func(v *tools.USD) string {
		if v == nil {
			return "—"
		}
		return v.String() + " USD"
	},
	// deref is a nullable string's value, "" for nil.
	"deref": func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	},
}

package present_test

import (
	"strings"
	"testing"

	"github.com/switchboard-hq/switchboard/portal/present"
)

// A movement's transaction links to its chain's explorer: the balances chains (and Base's and
// Ethereum's Sepolia test networks) by chain id, Solana mainnet by its signature; a local test
// network, or something that is not a hash or signature, none.
func TestExplorerTx(t *testing.T) {
	tx := "0x" + strings.Repeat("ab", 32)
	sig := "5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW"
	for _, c := range []struct{ network, tx, want string }{
		{"eip155:8453", tx, "https://basescan.org/tx/" + tx},
		{"eip155:1", tx, "https://etherscan.io/tx/" + tx},
		{"eip155:84532", tx, "https://sepolia.basescan.org/tx/" + tx},
		{"eip155:31337", tx, ""},
		{"eip155:8453", "0x1234", ""},
		{"eip155:8453", tx[:65] + "/", ""},
		{"eip155:42161", tx, "https://arbiscan.io/tx/" + tx},
		{"solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp", sig, "https://explorer.solana.com/tx/" + sig},
		{"solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp", sig[:40] + "/", ""},
		{"solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp", tx, ""},
	} {
		if got := present.ExplorerTx(c.network, c.tx); got != c.want {
			t.Errorf("ExplorerTx(%s, %s) = %q, want %q", c.network, c.tx, got, c.want)
		}
	}
	if got := present.KindLabel("topup"); got != "Top-up" {
		t.Errorf("KindLabel(topup) = %q", got)
	}
}

package tokens

import (
	"context"
	"testing"

	"github.com/switchboard-hq/switchboard/store/storetest"
)

// resolve_token answered from the embedded registry (plus the learned-token query).
func BenchmarkResolveRegistryHit(b *testing.B) {
	e := newEnv(b, storetest.Open(b, "sqlite"))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		out, err := e.s.resolveTool(ctx, nil, ResolveInput{Query: "usdc on base"})
		if err != nil || len(out.Tokens) != 1 {
			b.Fatal(out, err)
		}
	}
}

// get_balances fanning out to 7 EVM nodes and Solana (local fakes, one JSON-RPC batch each),
// prices served from the quote cache after the first round (the test clock stands still).
func BenchmarkBalancesFanOut(b *testing.B) {
	st := storetest.Open(b, "sqlite")
	e := newEnv(b, st)
	c := withAccount(b, st)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		out, err := e.s.balancesTool(ctx, c, BalancesInput{})
		if err != nil || len(out.Balances) == 0 {
			b.Fatal(out, err)
		}
	}
}

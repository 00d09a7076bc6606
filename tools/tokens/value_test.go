package tokens

import (
	"context"
	"math/big"
	"testing"

	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
)

// A decoded movement's amounts are priced in micro-USD, rounded up: a registry token by its
// address, the chain's coin; a spam token is refused, an unknown one says why.
func TestValueOf(t *testing.T) {
	e := newEnv(t, storetest.Open(t, "sqlite"))
	ctx := context.Background()
	// 1.5 USDC at 0.999812.
	v, err := e.s.ValueOf(ctx, "base", "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913", big.NewInt(1_500_000))
	if err != nil || v.Micro == nil || *v.Micro != 1_499_718 || v.Token.Ticker != "USDC" {
		t.Fatalf("USDC: %+v %v", v, err)
	}
	// 1 unit of USDC is worth less than a micro-dollar: rounded up to one.
	if v, err := e.s.ValueOf(ctx, "base", "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", big.NewInt(1)); err != nil || v.Micro == nil || *v.Micro != 1 {
		t.Fatalf("one unit: %+v %v", v, err)
	}
	// 0.001 ETH at 3456.78.
	if v, err := e.s.ValueOf(ctx, "base", "native", big.NewInt(1_000_000_000_000_000)); err != nil || v.Micro == nil || *v.Micro != 3_456_780 {
		t.Fatalf("ETH: %+v %v", v, err)
	}
	_, err = e.s.ValueOf(ctx, "base", spamEVMAddr, big.NewInt(1))
	toolErr(t, err, tools.CodeBadInput)
	if v, err := e.s.ValueOf(ctx, "base", eoaAddr, big.NewInt(1)); err != nil || v.Micro != nil || v.Reason == "" {
		t.Fatalf("an address that is no token: %+v %v", v, err)
	}
	if _, err := e.s.ValueOf(ctx, "nowhere", "", big.NewInt(1)); err == nil {
		t.Fatal("an unknown chain was priced")
	}
}

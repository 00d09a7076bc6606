package tokens

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
)

func TestPriceWrite(t *testing.T) {
	e := newEnv(t, storetest.Open(t, "sqlite"))
	ctx := context.Background()
	schema := json.RawMessage(`{"type":"object","properties":{
		"fromToken":{"type":"string","x-token":true},"toToken":{"type":"string","x-token":true},
		"chain":{"type":"string"},"amount":{"type":"string","x-amount":"fromToken"}}}`)
	args := map[string]any{"fromToken": "USDC", "toToken": "WETH", "chain": "base", "amount": "100"}

	// 100 USDC at 0.999812; gas 250,000 x 1 gwei = 0.00025 ETH at 3456.78, on base (the
	// routed token's chain).
	w, err := e.s.PriceWrite(ctx, "SWAP", schema, args, 250_000)
	if err != nil {
		t.Fatal(err)
	}
	if w.Routed.Micro == nil || *w.Routed.Micro != 99_981_200 || w.GasChain != "base" || w.GasMicro != 864_195 {
		t.Fatalf("priced %+v (routed %v)", w, w.Routed.Micro)
	}
	// No gas units: no gas quoted, the routed value still is.
	if w, err = e.s.PriceWrite(ctx, "SWAP", schema, args, 0); err != nil || w.GasChain != "" || w.GasMicro != 0 || w.Routed.Micro == nil {
		t.Fatalf("without gas: %+v %v", w, err)
	}
	// Without an amount nothing is routed; the gas is on the first token's chain.
	delete(args, "amount")
	if w, err = e.s.PriceWrite(ctx, "SWAP", schema, args, 250_000); err != nil || w.Routed.Micro != nil || w.GasChain != "base" || w.GasMicro != 864_195 {
		t.Fatalf("without an amount: %+v %v", w, err)
	}
	// A spam token refuses the call before anything is priced.
	_, err = e.s.PriceWrite(ctx, "SWAP", schema, map[string]any{"fromToken": spamEVMAddr, "chain": "base", "amount": "1"}, 250_000)
	toolErr(t, err, tools.CodeBadInput)
}

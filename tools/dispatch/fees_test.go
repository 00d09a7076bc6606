package dispatch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/ledger"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools/tokens"
	"github.com/switchboard-hq/switchboard/tools/tokens/tokenstest"
)

// newMarketWorld is a world whose token lookups, prices and gas come from local fakes of the
// real upstreams (JSON-RPC nodes, CoinGecko, DefiLlama, Jupiter) serving the fixtures, with
// the clock at the fixtures' time.
func newMarketWorld(t *testing.T, dialect string) (*world, *tokenstest.Upstreams) {
	t.Helper()
	ids := map[string]int64{}
	for _, c := range tokens.Chains {
		if c.Family == tokens.FamilyEVM {
			ids[c.Name] = c.ID
		}
	}
	up := tokenstest.Start(t, ids)
	w := newWorldAt(t, dialect, tokenstest.T0, func(c *apptest.Config) {
		c.Tokens.RPCEthereum, c.Tokens.RPCArbitrum, c.Tokens.RPCBase = up.EVM["ethereum"].URL, up.EVM["arbitrum"].URL, up.EVM["base"].URL
		c.Tokens.RPCPolygon, c.Tokens.RPCOptimism, c.Tokens.RPCAvalanche = up.EVM["polygon"].URL, up.EVM["optimism"].URL, up.EVM["avalanche"].URL
		c.Tokens.RPCBSC, c.Tokens.SolanaRPC = up.EVM["bsc"].URL, up.Solana.URL
		c.Tokens.CoinGeckoURL, c.Tokens.DefiLlamaURL, c.Tokens.JupiterURL = up.CoinGecko.URL+"/api/v3", up.DefiLlama.URL, up.Jupiter.URL
		c.Tokens.PriceMaxAge = "8760h" // the test clock moves 13 minutes per publish; the fixtures stay put
	})
	return w, up
}

// swapSchema routes `amount` of `fromToken` (on `chain`) into `toToken`.
var swapSchema = map[string]any{"type": "object", "required": []string{"fromToken", "toToken", "amount", "chain"}, "additionalProperties": false,
	"properties": map[string]any{
		"fromToken": map[string]any{"type": "string", "x-token": true},
		"toToken":   map[string]any{"type": "string", "x-token": true},
		"chain":     map[string]any{"type": "string"},
		"amount":    map[string]any{"type": "string", "x-amount": "fromToken"},
	}}

func details(out map[string]any) map[string]any {
	return out["error"].(map[string]any)["details"].(map[string]any)
}

// TestFeesOnRoutedValue is docs/decisions.md's worked example of a basis-point intent, end to end:
// a SWAP of 100 USDC on Base priced at 50 bps by the partner, for a caller of tier standard
// (30 bps) and then pro (15 bps), gas estimated from the node's gas price and passed through
// at the partner's reported actual. Every figure is the fixtures' arithmetic.
func TestFeesOnRoutedValue(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w, _ := newMarketWorld(t, dialect)
			w.publish(t, "@swapbps", "/swapbps", map[string]any{"category": "SWAP", "feeRate": 50, "feeRateUnit": "bps", "parametersSchema": swapSchema})
			args := map[string]any{"fromToken": "USDC", "toToken": "WETH", "chain": "base", "amount": "100"}
			start := w.credit(t)

			status, out := w.invoke(t, w.caller, map[string]any{"message": "@swapbps", "args": args})
			if status != 409 {
				t.Fatalf("quote: %d %v", status, out)
			}
			d := details(out)
			// 100 USDC x 0.999812 = 99.9812 USD routed; partner 50 bps = 0.499906; platform
			// 30 bps = 0.29994360 -> 0.299944; gas 250,000 x 1 gwei = 0.00025 ETH x 3456.78 =
			// 0.864195 (reserved +50%: 1.296293); infrastructure 0.001.
			want := map[string]any{"routedValueUsd": "99.9812", "partnerFeeUsd": "0.499906", "platformFeeUsd": "0.299944", "platformFeeBps": 30.0,
				"tier": "standard", "gasEstimateUsd": "0.864195", "gasChain": "base", "infrastructureUsd": "0.001",
				"totalUsd": "1.665045", "maxChargeUsd": "2.097143"}
			for k, v := range want {
				if fmt.Sprint(d[k]) != fmt.Sprint(v) {
					t.Errorf("quote %s = %v, want %v", k, d[k], v)
				}
			}
			if msg := out["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "1.665045 USD in one charge") || !strings.Contains(msg, "routing 99.9812 USD") {
				t.Errorf("the confirmation does not show the bundled charge: %s", msg)
			}
			if w.credit(t) != start || w.hits("/swapbps") != 0 {
				t.Fatal("a quote charged or dispatched")
			}

			// Confirmed: the partner reports more than its rate allows and the actual gas.
			status, out = w.invoke(t, w.caller, map[string]any{"message": "@swapbps", "args": args, "confirmRequestId": d["requestId"]})
			if status != 200 || out["success"] != true {
				t.Fatalf("confirm: %d %v", status, out)
			}
			c := charge(out)
			if c["partnerFeeMicro"] != 499_906.0 || c["platformFeeMicro"] != 299_944.0 || c["gasMicro"] != 700_000.0 || c["totalMicro"] != 1_500_850.0 {
				t.Fatalf("charge: %v (partner capped at its 50 bps, gas at the reported actual)", c)
			}
			if got := start - w.credit(t); got != 1_500_850 {
				t.Fatalf("credit went down by %d, want the one bundled charge 1500850", got)
			}
			// One balanced entry set for the settlement.
			entries, err := ledger.Entries(context.Background(), w.settledStore(t), d["requestId"].(string))
			if err != nil {
				t.Fatal(err)
			}
			txns, kinds := map[string]int64{}, map[string]int64{}
			for _, e := range entries {
				if e.Kind != "reserve" {
					txns[e.TxnID] += e.AmountMicro
					if e.AmountMicro > 0 {
						kinds[e.Kind] += e.AmountMicro
					}
				}
			}
			if len(txns) != 1 || kinds["consume"] != 1000 || kinds["partner_fee"] != 499_906 || kinds["platform_fee"] != 299_944 || kinds["gas"] != 700_000 {
				t.Fatalf("settlement entries: %d transactions, %v", len(txns), kinds)
			}
			for id, sum := range txns {
				if sum != 0 {
					t.Fatalf("settlement %s sums to %d", id, sum)
				}
			}
			w.ledgerOK(t)

			// The operator moves the caller to tier pro: 15 bps of the same value.
			if err := accounts.New(w.settledStore(t)).SetTier(context.Background(), w.callerID, "pro"); err != nil {
				t.Fatal(err)
			}
			status, out = w.invoke(t, w.caller, map[string]any{"message": "@swapbps", "args": args})
			if status != 409 || fmt.Sprint(details(out)["platformFeeUsd"]) != "0.149972" || details(out)["tier"] != "pro" {
				t.Fatalf("pro quote: %d %v", status, out)
			}
			// The partner omits gasCostMicro this time: gas settles at the estimate.
			w.mu.Lock()
			w.omitGas = true
			w.mu.Unlock()
			before := w.credit(t)
			status, out = w.invoke(t, w.caller, map[string]any{"message": "@swapbps", "args": args, "confirmRequestId": details(out)["requestId"]})
			if status != 200 || charge(out)["gasMicro"] != 864_195.0 || before-w.credit(t) != 1000+499_906+149_972+864_195 {
				t.Fatalf("pro confirm: %d %v, charged %d", status, out, before-w.credit(t))
			}
			w.ledgerOK(t)

			// The partner's earnings accrue to its payout address.
			status, earned := w.env.REST(t, "GET", "/v1/partner/earnings", w.publisher, nil)
			if status != 200 || !strings.Contains(fmt.Sprint(earned), "0.999812") {
				t.Fatalf("earnings (2 x 0.499906): %d %v", status, earned)
			}
		})
	}
}

// A basis-point intent cannot be priced without its routed value: no amount is BAD_INPUT,
// an amount of a token nobody can price now is UNAVAILABLE; a per-call intent in the same
// spot is quoted without a USD figure. A node that cannot estimate gas stops the write.
// Nothing is dispatched or charged in any of them.
func TestFeesWhenValueOrGasCannotBeQuoted(t *testing.T) {
	w, up := newMarketWorld(t, "sqlite")
	w.publish(t, "@swapbps", "/swapbps", map[string]any{"category": "SWAP", "feeRate": 50, "feeRateUnit": "bps", "parametersSchema": swapSchema})
	w.publish(t, "@swapflat", "/swapbps", map[string]any{"category": "SWAP", "parametersSchema": swapSchema})
	start := w.credit(t)

	status, out := w.invoke(t, w.caller, map[string]any{"message": "@swapbps", "args": map[string]any{"fromToken": "USDbC", "toToken": "WETH", "chain": "base", "amount": "5"}})
	if status != 503 || errCode(out) != "UNAVAILABLE" || !strings.Contains(fmt.Sprint(out), "basis points of the value the call routes") {
		t.Fatalf("bps with an unpriceable token: %d %v", status, out)
	}
	status, out = w.invoke(t, w.caller, map[string]any{"message": "@swapflat", "args": map[string]any{"fromToken": "USDbC", "toToken": "WETH", "chain": "base", "amount": "5"}})
	if status != 409 || details(out)["routedValueUsd"] != nil || !strings.Contains(fmt.Sprint(out), "cannot be quoted now") || fmt.Sprint(details(out)["platformFeeUsd"]) != "0.001" {
		t.Fatalf("per-call with an unpriceable token: %d %v", status, out)
	}
	status, out = w.invoke(t, w.caller, map[string]any{"message": "@swapbps", "args": map[string]any{"fromToken": "USDC", "toToken": "WETH", "chain": "base", "amount": "-3"}})
	if status != 400 || !strings.Contains(fmt.Sprint(out), "args.amount") {
		t.Fatalf("negative amount: %d %v", status, out)
	}
	up.EVM["base"].RPCError("header not found")
	status, out = w.invoke(t, w.caller, map[string]any{"message": "@swapflat", "args": map[string]any{"fromToken": "USDC", "toToken": "WETH", "chain": "base", "amount": "5"}})
	if status != 503 || !strings.Contains(fmt.Sprint(out), "cannot estimate gas on base") {
		t.Fatalf("gas node failing: %d %v", status, out)
	}
	if w.hits("/swapbps") != 0 || w.credit(t) != start {
		t.Fatal("an unpriceable call dispatched or charged")
	}
	w.ledgerOK(t)
}

// Publishing refuses a basis-point intent nobody could price.
func TestPublishBasisPointsNeedsARoutedAmount(t *testing.T) {
	w, _ := newMarketWorld(t, "sqlite")
	for _, tc := range []struct {
		name  string
		extra map[string]any
		want  string
	}{
		{"a query", map[string]any{"category": "QUERY", "feeRate": 10, "feeRateUnit": "bps"}, "only SWAP, BRIDGE, SEND and TRANSFER"},
		{"no amount", map[string]any{"category": "SWAP", "feeRate": 10, "feeRateUnit": "bps", "parametersSchema": map[string]any{"type": "object",
			"properties": map[string]any{"a": map[string]any{"type": "string", "x-token": true}, "b": map[string]any{"type": "string", "x-token": true}, "amount": map[string]any{"type": "string"}}}}, `"x-amount"`},
		{"bad marker", map[string]any{"category": "SWAP", "parametersSchema": map[string]any{"type": "object",
			"properties": map[string]any{"a": map[string]any{"type": "string", "x-token": true}, "amount": map[string]any{"type": "string", "x-amount": "nope"}}}}, "not a property marked x-token"},
	} {
		body := map[string]any{"publicIdentifier": "@bps-" + strings.ReplaceAll(tc.name, " ", "-"), "name": "bps", "description": "a bps intent",
			"toolEndpoint": w.partner.URL + "/swapbps", "feeRate": 0, "payoutAddresses": map[string]string{"evm": payout}}
		for k, v := range tc.extra {
			body[k] = v
		}
		status, out := w.env.REST(t, "POST", "/v1/partner/intents", w.publisher, body)
		if status != 400 || !strings.Contains(fmt.Sprint(out), tc.want) {
			t.Errorf("%s: %d %v", tc.name, status, out)
		}
	}
}

// swapAnswer is the bps partner: it asks for more than its rate and reports the gas it paid.
func (w *world) swapAnswer(rw http.ResponseWriter) {
	w.mu.Lock()
	omit := w.omitGas
	w.mu.Unlock()
	body := map[string]any{"success": true, "result": map[string]any{"swapped": true}, "providerCostMicro": 600_000, "gasCostMicro": 700_000}
	if omit {
		delete(body, "gasCostMicro")
	}
	rw.Header().Set("Content-Type", "application/json")
	json.NewEncoder(rw).Encode(body)
}

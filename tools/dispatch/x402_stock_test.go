//go:build x402interop

package dispatch_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/switchboard-hq/switchboard/contracts/anviltest"
)

// Stock x402 clients (interop/x402-stock.mjs: @x402/fetch with @x402/evm's exact scheme and a
// viem account over HTTP; the MCP SDK client with @x402/core over MCP; viem signTypedData on
// the quote) pay flat-fee intents against anvil, with no Switchboard-specific code. Built only
// with -tags x402interop: interop/run runs it with SWITCHBOARD_NODE set to Node 22 and the
// npm packages installed in interop/.
func TestX402StockClients(t *testing.T) {
	node := os.Getenv("SWITCHBOARD_NODE")
	if node == "" {
		t.Fatal("set SWITCHBOARD_NODE to a Node 22 binary with interop/node_modules installed (interop/run does)")
	}
	w, chain := flatWorld(t)
	w.publish(t, "@x402ok", "/free", map[string]any{"feeRate": 0.25, "feeRateUnit": "flat_usdc", "payoutAddresses": map[string]string{"evm": partnerWallet.Hex()}})
	w.publish(t, "@x402fail", "/fail", map[string]any{"feeRate": 0.25, "feeRateUnit": "flat_usdc", "payoutAddresses": map[string]string{"evm": partnerWallet.Hex()}})
	payer := chain.NewKey(t)
	from := crypto.PubkeyToAddress(payer.PublicKey)
	chain.Mint(t, from, 5_000_000)

	script, err := filepath.Abs("../../interop/x402-stock.mjs")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, script)
	cmd.Env = append(os.Environ(), "SWITCHBOARD_URL="+w.env.URL, "SWITCHBOARD_API_KEY="+w.caller,
		"PAYER_KEY="+hexutil.Encode(crypto.FromECDSA(payer)), "TOKEN="+chain.Token.Hex(), fmt.Sprintf("CHAIN_ID=%d", anviltest.ChainID))
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil || strings.Contains(string(out), "FAIL ") {
		t.Fatalf("stock clients: %v", err)
	}
	// Three paid calls settled (HTTP, MCP, viem), one refunded: 0.26 each on chain.
	const fee = 260_000
	if w.hits("/free") != 3 || w.hits("/fail") != 1 {
		t.Fatalf("partner calls: %d ok, %d failing", w.hits("/free"), w.hits("/fail"))
	}
	if chain.Balance(t, from) != 5_000_000-3*fee || chain.Balance(t, partnerWallet) != 3*250_000 || chain.Balance(t, chain.Payer) != 0 {
		t.Fatalf("on chain: payer %d, partner %d, contract %d", chain.Balance(t, from), chain.Balance(t, partnerWallet), chain.Balance(t, chain.Payer))
	}
	w.ledgerOK(t)
}

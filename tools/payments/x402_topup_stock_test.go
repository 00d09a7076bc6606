//go:build x402interop

package payments_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/switchboard-hq/switchboard/contracts/anviltest"
	"github.com/switchboard-hq/switchboard/store/ledger"
)

// Stock x402 clients (interop/x402-topup.mjs: @x402/fetch with @x402/evm's exact scheme and a
// viem account over REST; the MCP SDK client with @x402/core over MCP) buy credit against anvil
// with no Switchboard-specific code, and the credit is exact. Built only with -tags
// x402interop: interop/run runs it with SWITCHBOARD_NODE set to Node 22 and the npm packages
// installed in interop/.
func TestX402StockTopup(t *testing.T) {
	node := os.Getenv("SWITCHBOARD_NODE")
	if node == "" {
		t.Fatal("set SWITCHBOARD_NODE to a Node 22 binary with interop/node_modules installed (interop/run does)")
	}
	w := newTopupWorld(t, "sqlite")
	payer := w.chain.NewKey(t)
	from := crypto.PubkeyToAddress(payer.PublicKey)
	w.chain.Mint(t, from, 20_000_000)

	script, err := filepath.Abs("../../interop/x402-topup.mjs")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, script)
	cmd.Env = append(os.Environ(), "SWITCHBOARD_URL="+w.env.URL, "SWITCHBOARD_API_KEY="+w.key,
		"PAYER_KEY="+hexutil.Encode(crypto.FromECDSA(payer)), "TOKEN="+w.chain.Token.Hex(), fmt.Sprintf("CHAIN_ID=%d", anviltest.ChainID))
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil || strings.Contains(string(out), "FAIL ") || strings.Count(string(out), "PASS ") != 2 {
		t.Fatalf("stock clients: %v", err)
	}
	// 3 USD over REST and 2 over MCP (its replay credited nothing), on 10 of starting credit.
	if got := w.credit(t); got != "15" {
		t.Fatalf("credit %s, want 15", got)
	}
	if w.chain.Balance(t, from) != 15_000_000 || w.chain.Balance(t, w.chain.Treasury) != 5_000_000 {
		t.Fatalf("on chain: payer %d, treasury %d", w.chain.Balance(t, from), w.chain.Balance(t, w.chain.Treasury))
	}
	if err := w.env.App.Settled(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := ledger.Check(context.Background(), w.env.App.Store); err != nil {
		t.Fatalf("ledger-check: %v", err)
	}
}

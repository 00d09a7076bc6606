package contracts_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"
	"github.com/switchboard-hq/switchboard/contracts"
	"github.com/switchboard-hq/switchboard/contracts/anviltest"
)

// On a chain without a base fee (anvil as Berlin, before EIP-1559) the relayer sends EIP-155
// legacy transactions priced at eth_gasPrice: a deployment and a call both land.
func TestLegacyChain(t *testing.T) {
	bin, err := anviltest.Binary()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "--host", "127.0.0.1", "--port", fmt.Sprint(port), "--chain-id", "1337", "--silent", "--hardfork", "berlin")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	key, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	var c *contracts.Client
	for i := 0; ; i++ {
		if c, err = contracts.Dial(ctx, url, 1337, key, 1); err == nil {
			break
		}
		if i == 200 {
			t.Fatalf("anvil did not answer: %v", err)
		}
		time.Sleep(25 * time.Millisecond)
	}
	defer c.Close()
	rpc(t, url, nil, "anvil_setBalance", c.From(), "0x56bc75e2d63100000") // 100 ETH for gas
	token, err := c.Deploy(ctx, contracts.TestUSDC)
	if err != nil {
		t.Fatalf("deploy: %v", err)
	}
	other, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	holder := crypto.PubkeyToAddress(other.PublicKey)
	rc, err := c.Transact(ctx, token, contracts.TestUSDC, "mint", holder, big.NewInt(42))
	if err != nil {
		t.Fatalf("mint: %v", err)
	}
	var sent struct {
		Type string `json:"type"`
	}
	if rpc(t, url, &sent, "eth_getTransactionByHash", rc.TxHash); sent.Type != "0x0" {
		t.Fatalf("the mint went as type %q, want a legacy (0x0) transaction", sent.Type)
	}
	if b, err := c.BalanceOf(ctx, token, holder); err != nil || b.Int64() != 42 {
		t.Fatalf("balance %v (%v), want 42", b, err)
	}
	// A call the chain refuses fails before it is sent, with the node's reason as it gave it.
	_, err = c.Transact(ctx, token, contracts.TestUSDC, "transferWithAuthorization", holder, c.From(), big.NewInt(1), big.NewInt(0),
		big.NewInt(1<<40), [32]byte{1}, uint8(27), [32]byte{}, [32]byte{})
	if !errors.Is(err, contracts.ErrReverted) || !strings.HasPrefix(err.Error(), "the transaction reverted: execution reverted") {
		t.Fatalf("a forged authorization: %v, want ErrReverted with the node's message", err)
	}
}

// Only HTTP JSON-RPC is spoken; another scheme is refused at once, saying so.
func TestDialRefusesOtherSchemes(t *testing.T) {
	for _, u := range []string{"ws://127.0.0.1:8546", "/var/run/geth.ipc", "127.0.0.1:8545"} {
		if _, err := contracts.Dial(context.Background(), u, 1, nil, 1); err == nil || !strings.Contains(err.Error(), "http") {
			t.Errorf("Dial(%s): %v", u, err)
		}
	}
}

// rpc calls the node directly (anvil_* methods; what was sent).
func rpc(t *testing.T, url string, result any, method string, params ...any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Result json.RawMessage `json:"result"`
		Error  any             `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Error != nil {
		t.Fatalf("%s: %v %v", method, err, out.Error)
	}
	if result != nil {
		if err := json.Unmarshal(out.Result, result); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
	}
}

// Package anviltest runs a local EVM node for tests: anvil, from the npm package
// @foundry-rs/anvil installed in contracts/ (CI runs `npm ci` there), with funded keys and the
// test stablecoin and flat-fee payer deployed.
package anviltest

import (
	"context"
	"crypto/ecdsa"
	_ "embed"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rpc"
	"github.com/switchboard-hq/switchboard/contracts"
)

// ChainID is the local chain's id.
const ChainID = 31337

// Chain is a running anvil with the contracts deployed.
type Chain struct {
	URL      string
	ChainID  int64
	Relayer  *ecdsa.PrivateKey // deploys and relays; holds gas
	Treasury common.Address
	Token    common.Address // TestUSDC
	Payer    common.Address // FlatFeePayer
	Client   *contracts.Client
	rpc      *rpc.Client
}

// Binary finds anvil: $SWITCHBOARD_ANVIL, then contracts/node_modules/.bin/anvil.
func Binary() (string, error) {
	if p := os.Getenv("SWITCHBOARD_ANVIL"); p != "" {
		return p, nil
	}
	_, file, _, _ := runtime.Caller(0)
	p := filepath.Join(filepath.Dir(file), "..", "node_modules", ".bin", "anvil")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("anvil is not installed: run `npm ci` in contracts/ (or set SWITCHBOARD_ANVIL): %w", err)
	}
	return p, nil
}

// Start runs anvil on a free port, chain id ChainID, and deploys the contracts.
func Start(t testing.TB) *Chain {
	t.Helper()
	return StartOn(t, ChainID)
}

// StartOn is Start on chain id (a balances chain's, e.g. 8453 to serve as base).
func StartOn(t testing.TB, chainID int64) *Chain {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "--host", "127.0.0.1", "--port", fmt.Sprint(port), "--chain-id", fmt.Sprint(chainID), "--silent", "--accounts", "1")
	if err := cmd.Start(); err != nil {
		t.Fatalf("start anvil: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	c := &Chain{URL: fmt.Sprintf("http://127.0.0.1:%d", port), ChainID: chainID}
	ctx := context.Background()
	for i := 0; ; i++ {
		if c.rpc, err = rpc.DialContext(ctx, c.URL); err == nil {
			var id string
			if err = c.rpc.CallContext(ctx, &id, "eth_chainId"); err == nil {
				break
			}
		}
		if i == 200 {
			t.Fatalf("anvil did not answer: %v", err)
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Cleanup(c.rpc.Close)
	c.Relayer = c.NewFundedKey(t)
	c.Treasury = crypto.PubkeyToAddress(c.NewKey(t).PublicKey)
	if c.Client, err = contracts.Dial(ctx, c.URL, chainID, c.Relayer, 1); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Client.Close)
	if c.Token, err = c.Client.Deploy(ctx, contracts.TestUSDC); err != nil {
		t.Fatalf("deploy TestUSDC: %v", err)
	}
	if c.Payer, err = c.Client.Deploy(ctx, contracts.FlatFeePayer, c.Token, c.Client.From(), c.Treasury); err != nil {
		t.Fatalf("deploy FlatFeePayer: %v", err)
	}
	return c
}

// NewKey is a fresh key with nothing on chain.
func (c *Chain) NewKey(t testing.TB) *ecdsa.PrivateKey {
	k, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// NewFundedKey is a fresh key holding 100 ETH for gas.
func (c *Chain) NewFundedKey(t testing.TB) *ecdsa.PrivateKey {
	k := c.NewKey(t)
	wei := new(big.Int).Mul(big.NewInt(100), big.NewInt(1e18))
	if err := c.rpc.CallContext(context.Background(), nil, "anvil_setBalance", crypto.PubkeyToAddress(k.PublicKey), "0x"+wei.Text(16)); err != nil {
		t.Fatal(err)
	}
	return k
}

// Mint gives holder atomic units of the test stablecoin.
func (c *Chain) Mint(t testing.TB, holder common.Address, atomic int64) {
	t.Helper()
	if _, err := c.Client.Transact(context.Background(), c.Token, contracts.TestUSDC, "mint", holder, big.NewInt(atomic)); err != nil {
		t.Fatal(err)
	}
}

// multicall3 is Multicall3's creation code (mds1/multicall, MIT; as viem ships it).
//
//go:embed multicall3.hex
var multicall3 string

// PlaceMulticall puts Multicall3 at its canonical address, as every public chain has it
// (balance and token metadata reads batch through it); anvil has none.
func (c *Chain) PlaceMulticall(t testing.TB) {
	t.Helper()
	var code string
	c.RPC(t, &code, "eth_call", map[string]string{"data": "0x" + strings.TrimSpace(multicall3)}, "latest")
	c.RPC(t, nil, "anvil_setCode", common.HexToAddress("0xcA11bde05977b3631167028862bE2a173976CA11"), code)
}

// PlaceToken puts the test stablecoin's code at addr (a registry token's address, e.g. USDC
// on base, so that a send of "USDC" resolves to it): plain transfers and mint work there, its
// balances start empty.
func (c *Chain) PlaceToken(t testing.TB, addr common.Address) {
	t.Helper()
	var code string
	c.RPC(t, &code, "eth_getCode", c.Token, "latest")
	c.RPC(t, nil, "anvil_setCode", addr, code)
}

// MintAt gives holder atomic units of the test stablecoin placed at token (PlaceToken).
func (c *Chain) MintAt(t testing.TB, token, holder common.Address, atomic int64) {
	t.Helper()
	if _, err := c.Client.Transact(context.Background(), token, contracts.TestUSDC, "mint", holder, big.NewInt(atomic)); err != nil {
		t.Fatal(err)
	}
}

// BalanceAt is holder's balance of the test stablecoin placed at token.
func (c *Chain) BalanceAt(t testing.TB, token, holder common.Address) int64 {
	t.Helper()
	b, err := c.Client.BalanceOf(context.Background(), token, holder)
	if err != nil {
		t.Fatal(err)
	}
	return b.Int64()
}

// Mined waits (at most 5 s) for hash's receipt: anvil mines a transaction sent to it after
// it has answered its hash, so a balance read at once can see the block before it.
func (c *Chain) Mined(t testing.TB, hash string) {
	t.Helper()
	for range 500 {
		if _, found, err := c.Client.Receipt(context.Background(), common.HexToHash(hash)); err != nil {
			t.Fatal(err)
		} else if found {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("transaction %s was not mined within 5 s", hash)
}

// SetBalance gives addr wei of the native coin.
func (c *Chain) SetBalance(t testing.TB, addr common.Address, wei *big.Int) {
	t.Helper()
	c.RPC(t, nil, "anvil_setBalance", addr, "0x"+wei.Text(16))
}

// Balance is holder's stablecoin balance in atomic units.
func (c *Chain) Balance(t testing.TB, holder common.Address) int64 {
	t.Helper()
	b, err := c.Client.BalanceOf(context.Background(), c.Token, holder)
	if err != nil {
		t.Fatal(err)
	}
	return b.Int64()
}

// Warp moves the chain's clock forward (validity windows) and mines a block.
func (c *Chain) Warp(t testing.TB, d time.Duration) {
	t.Helper()
	if err := c.rpc.CallContext(context.Background(), nil, "evm_increaseTime", int64(d.Seconds())); err != nil {
		t.Fatal(err)
	}
	if err := c.rpc.CallContext(context.Background(), nil, "evm_mine"); err != nil {
		t.Fatal(err)
	}
}

// RPC calls a JSON-RPC method of the node (anvil_*, evm_* included).
func (c *Chain) RPC(t testing.TB, result any, method string, args ...any) {
	t.Helper()
	if err := c.rpc.CallContext(context.Background(), result, method, args...); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
}

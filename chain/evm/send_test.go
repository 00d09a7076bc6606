package evm_test

import (
	"context"
	"errors"
	"math/big"
	"net/http"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/switchboard-hq/switchboard/chain/evm"
	"github.com/switchboard-hq/switchboard/contracts/anviltest"
)

// waitReceipt polls for hash's receipt (anvil mines each transaction at once).
func waitReceipt(t *testing.T, c *evm.Client, hash [32]byte) *evm.Receipt {
	t.Helper()
	for i := 0; i < 200; i++ {
		r, ok, err := c.Receipt(context.Background(), hash)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			return r
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no receipt for %x", hash)
	return nil
}

func ethBalance(t *testing.T, ch *anviltest.Chain, a [20]byte) *big.Int {
	var s string
	ch.RPC(t, &s, "eth_getBalance", common.Address(a), "latest")
	n, _ := new(big.Int).SetString(s[2:], 16)
	return n
}

// A wallet's native and ERC-20 sends on a real node move exactly their amounts; the sender
// pays exactly the receipt's gas; a re-broadcast is known or its nonce used, never a second
// transfer.
func TestSendOnAnvil(t *testing.T) {
	ch := anviltest.Start(t)
	ctx := context.Background()
	c := evm.NewClient(anviltest.ChainID, ch.URL, &http.Client{}, time.Now)
	key := crypto.FromECDSA(ch.NewFundedKey(t))
	from := evm.AddressOf(key)
	to := evm.AddressOf(crypto.FromECDSA(ch.NewKey(t)))
	token := [20]byte(ch.Token)
	ch.Mint(t, common.Address(from), 10_000_000)

	send := func(tr evm.Transfer) (*evm.Signed, *evm.Receipt) {
		tx, fees, err := c.Quote(ctx, tr)
		if err != nil {
			t.Fatal(err)
		}
		if fees.Cap.Cmp(fees.Quoted) < 0 || tx.Gas < 21000 {
			t.Fatalf("fees %+v gas %d", fees, tx.Gas)
		}
		if tx.Nonce, err = c.PendingNonce(ctx, from); err != nil {
			t.Fatal(err)
		}
		signed, err := tx.Sign(key)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.SendRaw(ctx, signed.Raw); err != nil {
			t.Fatal(err)
		}
		r := waitReceipt(t, c, signed.Hash)
		if !r.Success {
			t.Fatalf("receipt %+v", r)
		}
		// The same bytes again change nothing.
		if err := c.SendRaw(ctx, signed.Raw); !errors.Is(err, evm.ErrKnown) && !errors.Is(err, evm.ErrNonceTooLow) {
			t.Fatalf("re-broadcast: %v, want ErrKnown or ErrNonceTooLow", err)
		}
		return signed, r
	}

	before := ethBalance(t, ch, from)
	amount := big.NewInt(123_456_789_000_000_000)
	_, r := send(evm.Transfer{From: from, To: to, Amount: amount})
	if got := ethBalance(t, ch, to); got.Cmp(amount) != 0 {
		t.Fatalf("recipient holds %s wei, want %s", got, amount)
	}
	paid := new(big.Int).Mul(new(big.Int).SetUint64(r.GasUsed), r.EffectiveGasPrice)
	if spent := new(big.Int).Sub(before, ethBalance(t, ch, from)); spent.Cmp(new(big.Int).Add(amount, paid)) != 0 {
		t.Fatalf("sender spent %s, want %s + gas %s", spent, amount, paid)
	}

	send(evm.Transfer{From: from, To: to, Token: &token, Amount: big.NewInt(5_000_000)})
	if got := ch.Balance(t, common.Address(to)); got != 5_000_000 {
		t.Fatalf("recipient holds %d USDC units, want 5000000", got)
	}
	if got := ch.Balance(t, common.Address(from)); got != 5_000_000 {
		t.Fatalf("sender holds %d USDC units, want 5000000", got)
	}
	if n, err := c.LatestNonce(ctx, from); err != nil || n != 2 {
		t.Fatalf("nonce %d %v", n, err)
	}

	// More tokens than the wallet holds: the estimate refuses before anything is signed.
	if _, _, err := c.Quote(ctx, evm.Transfer{From: from, To: to, Token: &token, Amount: big.NewInt(6_000_000)}); err == nil {
		t.Fatal("a transfer beyond the balance was quoted")
	}
	if _, ok, err := c.Receipt(ctx, [32]byte{1}); ok || err != nil {
		t.Fatalf("unknown receipt: %v %v", ok, err)
	}
}

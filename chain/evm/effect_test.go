package evm_test

import (
	"context"
	"errors"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/switchboard-hq/switchboard/chain/evm"
	"github.com/switchboard-hq/switchboard/contracts"
	"github.com/switchboard-hq/switchboard/contracts/anviltest"
)

func maxUint256() *big.Int {
	return new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1))
}

// Decoding reads the standard ERC-20 calls exactly and names everything else a contract call.
func TestDecodeEffect(t *testing.T) {
	wallet, token, bob := [20]byte{1}, [20]byte{2}, [20]byte{3}
	transfer, _ := evm.TransferData(bob, big.NewInt(5_000_000))
	e := evm.Decode(evm.Proposal{From: wallet, To: token, Data: transfer})
	if e.Kind != evm.EffectTransfer || e.Recipient != bob || e.Amount.Int64() != 5_000_000 || e.Contract != token || e.Value.Sign() != 0 || e.Selector != "" {
		t.Fatalf("transfer: %+v", e)
	}
	if out := e.TokenOut(wallet); out == nil || out.Int64() != 5_000_000 {
		t.Fatalf("transfer's tokens out: %v", out)
	}
	for _, c := range []struct {
		amount    *big.Int
		unlimited bool
	}{
		{maxUint256(), true},
		{new(big.Int).Lsh(big.NewInt(1), 255), true},
		{new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 255), big.NewInt(1)), false},
		{big.NewInt(7), false},
	} {
		data, _ := evm.ApproveData(bob, c.amount)
		e := evm.Decode(evm.Proposal{From: wallet, To: token, Data: data})
		if e.Kind != evm.EffectApprove || e.Recipient != bob || e.Amount.Cmp(c.amount) != 0 || e.Unlimited != c.unlimited {
			t.Fatalf("approve %s: %+v", c.amount, e)
		}
	}
	from := append(append(append(append([]byte{}, evm.SelTransferFrom[:]...), make([]byte, 12)...), wallet[:]...), transfer[4:]...)
	e = evm.Decode(evm.Proposal{From: bob, To: token, Data: from})
	if e.Kind != evm.EffectTransferFrom || *e.Owner != wallet || e.Recipient != bob || e.Amount.Int64() != 5_000_000 {
		t.Fatalf("transferFrom: %+v", e)
	}
	if e.TokenOut(bob) != nil || e.TokenOut(wallet).Int64() != 5_000_000 {
		t.Fatal("transferFrom's tokens out are its owner's")
	}

	native := evm.Decode(evm.Proposal{From: wallet, To: bob, Value: big.NewInt(42)})
	if native.Kind != evm.EffectNative || native.Recipient != bob || native.Value.Int64() != 42 || native.TokenOut(wallet) != nil {
		t.Fatalf("native: %+v", native)
	}
	dirty := append([]byte{}, transfer...)
	dirty[4] = 1 // an address word with high bytes set: no transfer shown from a guess
	for name, data := range map[string][]byte{
		"dirty address": dirty,
		"trailing data": append(append([]byte{}, transfer...), 0),
		"short":         transfer[:40],
		"other":         {0xde, 0xad, 0xbe, 0xef, 1},
	} {
		e := evm.Decode(evm.Proposal{From: wallet, To: token, Data: data, Value: big.NewInt(9)})
		if e.Kind != evm.EffectCall || e.Selector != "0x"+common.Bytes2Hex(data[:4]) || e.Amount != nil || e.Value.Int64() != 9 {
			t.Fatalf("%s: %+v", name, e)
		}
	}
	if e := evm.Decode(evm.Proposal{To: token, Data: []byte{0xab}}); e.Kind != evm.EffectCall || e.Selector != "0xab" {
		t.Fatalf("a one-byte call: %+v", e)
	}

	if r, ok := evm.RevertReason(append(common.FromHex("0x4e487b71"), common.LeftPadBytes([]byte{0x11}, 32)...)); !ok || r != "panic 0x11" {
		t.Fatalf("panic reason %q %v", r, ok)
	}
	if _, ok := evm.RevertReason(common.FromHex("0x12345678")); ok {
		t.Fatal("a custom error read as a reason")
	}
}

// Proposals simulate on a real node from the wallet: a transfer, an unlimited approval and the
// spender's transferFrom run and, once signed at the simulated gas and fees, move exactly what
// was decoded; a reverting transfer and an unknown function are refused with their reason;
// value beyond the wallet's coin is refused by the node.
func TestSimulateOnAnvil(t *testing.T) {
	ch := anviltest.Start(t)
	ctx := context.Background()
	c := evm.NewClient(anviltest.ChainID, ch.URL, &http.Client{}, time.Now)
	key := crypto.FromECDSA(ch.NewFundedKey(t))
	wallet := evm.AddressOf(key)
	spenderKey := crypto.FromECDSA(ch.NewFundedKey(t))
	spender := evm.AddressOf(spenderKey)
	bob := evm.AddressOf(crypto.FromECDSA(ch.NewKey(t)))
	token := [20]byte(ch.Token)
	ch.Mint(t, common.Address(wallet), 10_000_000)

	run := func(k []byte, p evm.Proposal) *evm.Simulation {
		t.Helper()
		sim, err := c.Simulate(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if sim.Tx.Gas < 21000 || sim.Tx.To != p.To || sim.Tx.GasFeeCap.Cmp(sim.Fees.Quoted) < 0 {
			t.Fatalf("simulated tx %+v", sim.Tx)
		}
		if sim.Tx.Nonce, err = c.PendingNonce(ctx, p.From); err != nil {
			t.Fatal(err)
		}
		signed, err := sim.Tx.Sign(k)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.SendRaw(ctx, signed.Raw); err != nil {
			t.Fatal(err)
		}
		if r := waitReceipt(t, c, signed.Hash); !r.Success || r.GasUsed > sim.Tx.Gas {
			t.Fatalf("receipt %+v for gas %d", r, sim.Tx.Gas)
		}
		return sim
	}

	data, _ := evm.TransferData(bob, big.NewInt(2_500_000))
	sim := run(key, evm.Proposal{From: wallet, To: token, Data: data})
	if sim.Effect.Kind != evm.EffectTransfer || sim.Effect.Amount.Int64() != 2_500_000 || sim.Effect.Recipient != bob {
		t.Fatalf("effect %+v", sim.Effect)
	}
	if got, _ := evm.DecodeUint256(sim.Return); got == nil || got.Int64() != 1 {
		t.Fatalf("transfer returned %x, want true", sim.Return)
	}
	if ch.Balance(t, common.Address(bob)) != 2_500_000 || ch.Balance(t, common.Address(wallet)) != 7_500_000 {
		t.Fatal("the transfer did not move exactly its amount")
	}

	approve, _ := evm.ApproveData(spender, maxUint256())
	sim = run(key, evm.Proposal{From: wallet, To: token, Data: approve})
	if sim.Effect.Kind != evm.EffectApprove || !sim.Effect.Unlimited || sim.Effect.Recipient != spender {
		t.Fatalf("approve effect %+v", sim.Effect)
	}
	allowance, err := ch.Client.Call(ctx, ch.Token, contracts.TestUSDC, "allowance", common.Address(wallet), common.Address(spender))
	if err != nil || allowance[0].(*big.Int).Cmp(maxUint256()) != 0 {
		t.Fatalf("allowance %v %v", allowance, err)
	}
	pull := append(append(append(append([]byte{}, evm.SelTransferFrom[:]...), make([]byte, 12)...), wallet[:]...), data[4:]...)
	sim = run(spenderKey, evm.Proposal{From: spender, To: token, Data: pull})
	if sim.Effect.Kind != evm.EffectTransferFrom || *sim.Effect.Owner != wallet || sim.Effect.TokenOut(spender) != nil {
		t.Fatalf("transferFrom effect %+v", sim.Effect)
	}
	if ch.Balance(t, common.Address(bob)) != 5_000_000 || ch.Balance(t, common.Address(wallet)) != 5_000_000 {
		t.Fatal("transferFrom did not move exactly its amount")
	}

	before, _ := c.PendingNonce(ctx, wallet)
	tooMuch, _ := evm.TransferData(bob, big.NewInt(5_000_001))
	_, err = c.Simulate(ctx, evm.Proposal{From: wallet, To: token, Data: tooMuch})
	var se *evm.SimulationError
	if !errors.Is(err, evm.ErrSimulationFailed) || !errors.As(err, &se) || !se.Reverted || se.Method != "eth_call" ||
		se.Reason != "TestUSDC: transfer amount exceeds balance" {
		t.Fatalf("a transfer beyond the balance: %v (%+v)", err, se)
	}
	_, err = c.Simulate(ctx, evm.Proposal{From: wallet, To: token, Data: []byte{0xde, 0xad, 0xbe, 0xef}})
	if !errors.As(err, &se) || !se.Reverted {
		t.Fatalf("an unknown function: %v", err)
	}
	lots := new(big.Int).Mul(big.NewInt(1000), big.NewInt(1e18))
	_, err = c.Simulate(ctx, evm.Proposal{From: wallet, To: bob, Value: lots})
	if !errors.As(err, &se) || se.Reverted || !strings.Contains(strings.ToLower(se.Reason), "fund") {
		t.Fatalf("value beyond the wallet's coin: %v (%+v)", err, se)
	}
	if after, _ := c.PendingNonce(ctx, wallet); after != before {
		t.Fatal("a simulation sent a transaction")
	}
}

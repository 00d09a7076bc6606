package evm_test

import (
	"bytes"
	"crypto/rand"
	"math/big"
	mrand "math/rand/v2"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/switchboard-hq/switchboard/chain/evm"
)

// The signed bytes, hash and sender of a wallet's transaction are go-ethereum's for the same
// fields and key, on random fields and the edges (zero value, empty data, large fees).
func TestSignMatchesGoEthereum(t *testing.T) {
	for i := 0; i < 200; i++ {
		key, err := crypto.GenerateKey()
		if err != nil {
			t.Fatal(err)
		}
		var to [20]byte
		rand.Read(to[:])
		data := make([]byte, mrand.IntN(3)*68)
		rand.Read(data)
		tip := big.NewInt(mrand.Int64N(3e9))
		tx := &evm.Tx{ChainID: 1 + mrand.Int64N(90000), Nonce: mrand.Uint64N(1 << 40), GasTipCap: tip,
			GasFeeCap: new(big.Int).Add(tip, new(big.Int).Lsh(big.NewInt(mrand.Int64N(1e12)), uint(mrand.IntN(40)))),
			Gas:       21000 + mrand.Uint64N(1e6), To: to, Value: new(big.Int).Lsh(big.NewInt(mrand.Int64N(1e9)), uint(mrand.IntN(60))), Data: data}
		if i == 0 {
			tx.Value, tx.Data = new(big.Int), nil
		}
		signed, err := tx.Sign(crypto.FromECDSA(key))
		if err != nil {
			t.Fatal(err)
		}
		want, err := types.SignNewTx(key, types.LatestSignerForChainID(big.NewInt(tx.ChainID)), &types.DynamicFeeTx{
			ChainID: big.NewInt(tx.ChainID), Nonce: tx.Nonce, GasTipCap: tx.GasTipCap, GasFeeCap: tx.GasFeeCap,
			Gas: tx.Gas, To: (*common.Address)(&to), Value: tx.Value, Data: tx.Data})
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := want.MarshalBinary()
		if !bytes.Equal(signed.Raw, raw) {
			t.Fatalf("raw:\n got %x\nwant %x", signed.Raw, raw)
		}
		if signed.Hash != want.Hash() {
			t.Fatalf("hash %x, want %x", signed.Hash, want.Hash())
		}
		if common.Address(signed.From) != crypto.PubkeyToAddress(key.PublicKey) {
			t.Fatalf("from %x", signed.From)
		}
		// go-ethereum reads the bytes back to the same sender.
		var back types.Transaction
		if err := back.UnmarshalBinary(signed.Raw); err != nil {
			t.Fatal(err)
		}
		from, err := types.Sender(types.LatestSignerForChainID(big.NewInt(tx.ChainID)), &back)
		if err != nil || from != common.Address(signed.From) {
			t.Fatalf("sender %s %v", from, err)
		}
	}
}

func TestTransferData(t *testing.T) {
	to := common.HexToAddress("0x00000000000000000000000000000000000000ab")
	got, err := evm.TransferData(to, big.NewInt(5_000_000))
	if err != nil {
		t.Fatal(err)
	}
	want := common.FromHex("0xa9059cbb00000000000000000000000000000000000000000000000000000000000000ab00000000000000000000000000000000000000000000000000000000004c4b40")
	if !bytes.Equal(got, want) {
		t.Fatalf("calldata %x", got)
	}
	if sel := crypto.Keccak256([]byte("transfer(address,uint256)"))[:4]; !bytes.Equal(sel, evm.SelTransfer[:]) {
		t.Fatalf("selector %x", sel)
	}
	if _, err := evm.TransferData(to, big.NewInt(-1)); err == nil {
		t.Fatal("a negative amount was encoded")
	}
}

func TestSignRefusesBadFields(t *testing.T) {
	key := make([]byte, 32)
	key[31] = 1
	ok := evm.Tx{ChainID: 1, GasTipCap: big.NewInt(2), GasFeeCap: big.NewInt(1), Value: new(big.Int)}
	if _, err := ok.Sign(key); err == nil {
		t.Fatal("a tip above the fee cap was signed")
	}
	ok.GasFeeCap = big.NewInt(3)
	if _, err := ok.Sign(make([]byte, 32)); err == nil {
		t.Fatal("the zero key signed")
	}
	ok.ChainID = 0
	if _, err := ok.Sign(key); err == nil {
		t.Fatal("a transaction without a chain id was signed")
	}
}

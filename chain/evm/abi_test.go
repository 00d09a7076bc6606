package evm

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"

	"golang.org/x/crypto/sha3"
)

func hexWords(t *testing.T, words ...string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(words, ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSelectorsAreKeccakOfSignatures(t *testing.T) {
	for sig, sel := range map[string][4]byte{
		"aggregate3((address,bool,bytes)[])": SelAggregate3,
		"balanceOf(address)":                 SelBalanceOf,
		"name()":                             SelName,
		"symbol()":                           SelSymbol,
		"decimals()":                         SelDecimals,
	} {
		h := sha3.NewLegacyKeccak256()
		h.Write([]byte(sig))
		if got := h.Sum(nil)[:4]; !bytes.Equal(got, sel[:]) {
			t.Errorf("%s: selector %x, keccak says %x", sig, sel, got)
		}
	}
}

// The expected calldata is derived by hand from the ABI specification, word by word.
func TestEncodeAggregate3Vector(t *testing.T) {
	var a1, a2, holder [20]byte
	for i := range 20 {
		a1[i], a2[i], holder[i] = 0x11, 0x22, 0x33
	}
	got := EncodeAggregate3([]Call3{
		{Target: a1, AllowFailure: true, CallData: SelDecimals[:]},
		{Target: a2, AllowFailure: false, CallData: BalanceOfData(holder)},
	})
	want := hexWords(t,
		"82ad56cb",
		"0000000000000000000000000000000000000000000000000000000000000020", // offset of the array
		"0000000000000000000000000000000000000000000000000000000000000002", // length
		"0000000000000000000000000000000000000000000000000000000000000040", // element 0 at 0x40
		"00000000000000000000000000000000000000000000000000000000000000e0", // element 1 at 0x40+0xa0
		// element 0: target, allowFailure, offset of callData, its length, its padded bytes
		"0000000000000000000000001111111111111111111111111111111111111111",
		"0000000000000000000000000000000000000000000000000000000000000001",
		"0000000000000000000000000000000000000000000000000000000000000060",
		"0000000000000000000000000000000000000000000000000000000000000004",
		"313ce56700000000000000000000000000000000000000000000000000000000",
		// element 1
		"0000000000000000000000002222222222222222222222222222222222222222",
		"0000000000000000000000000000000000000000000000000000000000000000",
		"0000000000000000000000000000000000000000000000000000000000000060",
		"0000000000000000000000000000000000000000000000000000000000000024",
		"70a08231"+strings.Repeat("00", 12)+strings.Repeat("33", 16), // selector, then the holder word
		strings.Repeat("33", 4)+strings.Repeat("00", 28),
	)
	if !bytes.Equal(got, want) {
		t.Fatalf("calldata\n got %x\nwant %x", got, want)
	}
}

func TestDecodeAggregate3Vector(t *testing.T) {
	data := hexWords(t,
		"0000000000000000000000000000000000000000000000000000000000000020",
		"0000000000000000000000000000000000000000000000000000000000000002",
		"0000000000000000000000000000000000000000000000000000000000000040",
		"00000000000000000000000000000000000000000000000000000000000000c0",
		// (true, abi.encode(uint256(6)))
		"0000000000000000000000000000000000000000000000000000000000000001",
		"0000000000000000000000000000000000000000000000000000000000000040",
		"0000000000000000000000000000000000000000000000000000000000000020",
		"0000000000000000000000000000000000000000000000000000000000000006",
		// (false, "")
		"0000000000000000000000000000000000000000000000000000000000000000",
		"0000000000000000000000000000000000000000000000000000000000000040",
		"0000000000000000000000000000000000000000000000000000000000000000",
	)
	res, err := DecodeAggregate3(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || !res[0].Success || res[1].Success || len(res[1].ReturnData) != 0 {
		t.Fatalf("results %+v", res)
	}
	v, err := DecodeUint256(res[0].ReturnData)
	if err != nil || v.Int64() != 6 {
		t.Fatalf("decimals = %v, %v", v, err)
	}
	// Every truncation is an error, never a panic or a wrong answer.
	for n := range len(data) {
		if _, err := DecodeAggregate3(data[:n]); err == nil {
			t.Fatalf("truncated to %d bytes: no error", n)
		}
	}
	// An offset pointing outside the data is refused.
	bad := append([]byte{}, data...)
	bad[4*32-1] = 0xff
	if _, err := DecodeAggregate3(bad); err == nil {
		t.Fatal("out-of-range element offset accepted")
	}
}

func TestDecodeString(t *testing.T) {
	str := hexWords(t,
		"0000000000000000000000000000000000000000000000000000000000000020",
		"0000000000000000000000000000000000000000000000000000000000000008",
		"55534420436f696e000000000000000000000000000000000000000000000000", // "USD Coin"
	)
	if s, err := DecodeString(str); err != nil || s != "USD Coin" {
		t.Fatalf("string: %q %v", s, err)
	}
	b32 := hexWords(t, "4d4b520000000000000000000000000000000000000000000000000000000000") // "MKR" as bytes32
	if s, err := DecodeString(b32); err != nil || s != "MKR" {
		t.Fatalf("bytes32: %q %v", s, err)
	}
	if _, err := DecodeString(nil); err == nil {
		t.Fatal("empty return data decoded")
	}
	if _, err := DecodeString(str[:70]); err == nil {
		t.Fatal("truncated string decoded")
	}
	if _, err := DecodeString(hexWords(t, "ff00ff0000000000000000000000000000000000000000000000000000000000")); err == nil {
		t.Fatal("invalid UTF-8 accepted")
	}
}

// Package evm reads EVM chains over JSON-RPC: native and ERC-20 balances and ERC-20 metadata,
// batched through Multicall3's aggregate3 in one eth_call. The ABI encoding of the few fixed
// signatures involved is written out here (and checked against hand-derived vectors in the
// tests) rather than pulling in go-ethereum.
package evm

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"unicode/utf8"
)

// Multicall3 is deployed at the same address on every supported chain.
const Multicall3 = "0xcA11bde05977b3631167028862bE2a173976CA11"

// Function selectors: the first four bytes of keccak256 of the signature.
var (
	SelAggregate3 = [4]byte{0x82, 0xad, 0x56, 0xcb} // aggregate3((address,bool,bytes)[])
	SelBalanceOf  = [4]byte{0x70, 0xa0, 0x82, 0x31} // balanceOf(address)
	SelName       = [4]byte{0x06, 0xfd, 0xde, 0x03} // name()
	SelSymbol     = [4]byte{0x95, 0xd8, 0x9b, 0x41} // symbol()
	SelDecimals   = [4]byte{0x31, 0x3c, 0xe5, 0x67} // decimals()
)

// Call3 is one call inside aggregate3.
type Call3 struct {
	Target       [20]byte
	AllowFailure bool
	CallData     []byte
}

// Result3 is one aggregate3 result.
type Result3 struct {
	Success    bool
	ReturnData []byte
}

// ParseAddress reads 0x + 40 hex digits (any case).
func ParseAddress(s string) ([20]byte, error) {
	var a [20]byte
	if len(s) != 42 || !strings.HasPrefix(strings.ToLower(s), "0x") {
		return a, fmt.Errorf("address %q: want 0x and 40 hex digits", s)
	}
	if _, err := hex.Decode(a[:], []byte(s[2:])); err != nil {
		return a, fmt.Errorf("address %q: %w", s, err)
	}
	return a, nil
}

func word(b []byte) []byte { // left-pads b (at most 32 bytes) to a word
	w := make([]byte, 32)
	copy(w[32-len(b):], b)
	return w
}

func uintWord(n int) []byte { return word(big.NewInt(int64(n)).Bytes()) }

func padRight(b []byte) []byte {
	n := (len(b) + 31) / 32 * 32
	out := make([]byte, n)
	copy(out, b)
	return out
}

// BalanceOfData is the calldata of balanceOf(holder).
func BalanceOfData(holder [20]byte) []byte {
	return append(SelBalanceOf[:], word(holder[:])...)
}

// EncodeAggregate3 is the calldata of aggregate3(calls).
func EncodeAggregate3(calls []Call3) []byte {
	// Each element is a dynamic tuple (it holds bytes): the array carries one offset per
	// element, relative to the first offset word, then the elements.
	elems := make([][]byte, len(calls))
	for i, c := range calls {
		var e []byte
		e = append(e, word(c.Target[:])...)
		allow := 0
		if c.AllowFailure {
			allow = 1
		}
		e = append(e, uintWord(allow)...)
		e = append(e, uintWord(3*32)...) // bytes start after the three head words
		e = append(e, uintWord(len(c.CallData))...)
		e = append(e, padRight(c.CallData)...)
		elems[i] = e
	}
	out := append([]byte{}, SelAggregate3[:]...)
	out = append(out, uintWord(32)...) // offset of the array argument
	out = append(out, uintWord(len(calls))...)
	offset := 32 * len(calls)
	for _, e := range elems {
		out = append(out, uintWord(offset)...)
		offset += len(e)
	}
	for _, e := range elems {
		out = append(out, e...)
	}
	return out
}

var errShort = errors.New("ABI data too short")

// reader reads words of ABI data with bounds checks.
type reader []byte

func (r reader) word(at int) ([]byte, error) {
	if at < 0 || at+32 > len(r) || at+32 < at {
		return nil, errShort
	}
	return r[at : at+32], nil
}

// uint reads a word as a non-negative int that fits comfortably (offsets, lengths, bools).
func (r reader) uint(at int) (int, error) {
	w, err := r.word(at)
	if err != nil {
		return 0, err
	}
	for _, b := range w[:24] {
		if b != 0 {
			return 0, errors.New("ABI offset or length out of range")
		}
	}
	n := new(big.Int).SetBytes(w[24:])
	if !n.IsInt64() || n.Int64() > int64(len(r)) {
		return 0, errors.New("ABI offset or length out of range")
	}
	return int(n.Int64()), nil
}

func (r reader) bytesAt(at int) ([]byte, error) {
	n, err := r.uint(at)
	if err != nil {
		return nil, err
	}
	start := at + 32
	if start > len(r) || n > len(r)-start {
		return nil, errShort
	}
	return r[start : start+n], nil
}

// DecodeAggregate3 reads aggregate3's return data: ((bool,bytes)[]).
func DecodeAggregate3(data []byte) ([]Result3, error) {
	r := reader(data)
	arr, err := r.uint(0)
	if err != nil {
		return nil, fmt.Errorf("aggregate3 result: %w", err)
	}
	n, err := r.uint(arr)
	if err != nil {
		return nil, fmt.Errorf("aggregate3 result: %w", err)
	}
	if n > (len(data)-arr)/32 {
		return nil, fmt.Errorf("aggregate3 result: %w", errShort)
	}
	base := arr + 32
	out := make([]Result3, n)
	for i := range n {
		off, err := r.uint(base + 32*i)
		if err != nil {
			return nil, fmt.Errorf("aggregate3 result %d: %w", i, err)
		}
		tuple := base + off
		ok, err := r.uint(tuple)
		if err != nil || ok > 1 {
			return nil, fmt.Errorf("aggregate3 result %d: bad success flag", i)
		}
		boff, err := r.uint(tuple + 32)
		if err != nil {
			return nil, fmt.Errorf("aggregate3 result %d: %w", i, err)
		}
		b, err := r.bytesAt(tuple + boff)
		if err != nil {
			return nil, fmt.Errorf("aggregate3 result %d: %w", i, err)
		}
		out[i] = Result3{Success: ok == 1, ReturnData: b}
	}
	return out, nil
}

// DecodeUint256 reads a uint256 return value.
func DecodeUint256(data []byte) (*big.Int, error) {
	if len(data) < 32 {
		return nil, errShort
	}
	return new(big.Int).SetBytes(data[:32]), nil
}

// DecodeString reads a string return value, or a bytes32 one (older tokens such as MKR
// return their name and symbol as bytes32, NUL-padded).
func DecodeString(data []byte) (string, error) {
	var s []byte
	switch {
	case len(data) == 32:
		s = []byte(strings.TrimRight(string(data), "\x00"))
	case len(data) >= 64:
		r := reader(data)
		off, err := r.uint(0)
		if err != nil {
			return "", err
		}
		if s, err = r.bytesAt(off); err != nil {
			return "", err
		}
	default:
		return "", errShort
	}
	if !utf8.Valid(s) || strings.ContainsRune(string(s), 0) {
		return "", errors.New("not a readable string")
	}
	return strings.TrimSpace(string(s)), nil
}

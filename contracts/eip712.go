package contracts

import (
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
)

// EIP-712 hashing of flat messages (every field an atomic type: address, bool, bytes32, uintN,
// string), which is all an EIP-3009 authorization is. It replaces go-ethereum's
// signer/core/apitypes (which pulls in core/types, KZG and BLS12-381); eip712_test.go checks
// the hashes against apitypes.

// TypedField is one field of an EIP-712 type.
type TypedField struct {
	Name string
	Type string
}

// TypedDomain is an EIP-712 domain.
type TypedDomain struct {
	Name              string
	Version           string
	ChainID           int64
	VerifyingContract string
}

// TypedMessage is an EIP-712 message: Types holds EIP712Domain and PrimaryType's fields; Message
// the values (addresses, integers and bytes as strings, as wallets show them).
type TypedMessage struct {
	Types       map[string][]TypedField
	PrimaryType string
	Domain      TypedDomain
	Message     map[string]any
}

// Hash is the digest signed: keccak256(0x19 0x01 || domainSeparator || hashStruct(message)).
func (td TypedMessage) Hash() ([]byte, error) {
	domain, err := td.hashStruct("EIP712Domain", map[string]any{"name": td.Domain.Name, "version": td.Domain.Version,
		"chainId": big.NewInt(td.Domain.ChainID), "verifyingContract": td.Domain.VerifyingContract})
	if err != nil {
		return nil, fmt.Errorf("domain: %w", err)
	}
	msg, err := td.hashStruct(td.PrimaryType, td.Message)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", td.PrimaryType, err)
	}
	return Keccak256([]byte{0x19, 0x01}, domain, msg).Bytes(), nil
}

func (td TypedMessage) hashStruct(name string, values map[string]any) ([]byte, error) {
	fields, ok := td.Types[name]
	if !ok {
		return nil, fmt.Errorf("no type %q", name)
	}
	decl := make([]string, len(fields))
	for i, f := range fields {
		decl[i] = f.Type + " " + f.Name
	}
	enc := [][]byte{Keccak256([]byte(name + "(" + strings.Join(decl, ",") + ")")).Bytes()}
	for _, f := range fields {
		w, err := td.encodeValue(f.Type, values[f.Name])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name, err)
		}
		enc = append(enc, w)
	}
	return Keccak256(enc...).Bytes(), nil
}

// encodeValue is the 32-byte encoding of one field of a primitive type (nested structs are
// not supported).
func (td TypedMessage) encodeValue(typ string, v any) ([]byte, error) {
	if _, isStruct := td.Types[typ]; isStruct {
		return nil, fmt.Errorf("nested type %s is not supported", typ)
	}
	if v == nil {
		return nil, errors.New("missing")
	}
	switch {
	case typ == "string":
		return stringWord(v)
	case typ == "address":
		return addressWord(v)
	case typ == "bool":
		return boolWord(v)
	case typ == "bytes32":
		return bytes32Word(v)
	case strings.HasPrefix(typ, "uint"):
		return uintWord(typ, v)
	}
	return nil, fmt.Errorf("type %s is not supported", typ)
}

func stringWord(v any) ([]byte, error) {
	s, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("want a string, got %T", v)
	}
	return Keccak256([]byte(s)).Bytes(), nil
}

func addressWord(v any) ([]byte, error) {
	s, ok := v.(string)
	if !ok || !common.IsHexAddress(s) {
		return nil, fmt.Errorf("%v is not an address", v)
	}
	word := make([]byte, 32)
	copy(word[12:], common.HexToAddress(s).Bytes())
	return word, nil
}

func boolWord(v any) ([]byte, error) {
	b, ok := v.(bool)
	if !ok {
		return nil, fmt.Errorf("want a bool, got %T", v)
	}
	word := make([]byte, 32)
	if b {
		word[31] = 1
	}
	return word, nil
}

func bytes32Word(v any) ([]byte, error) {
	s, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("want 0x and 64 hex digits, got %T", v)
	}
	b, err := hexutil.Decode(s)
	if err != nil || len(b) != 32 {
		return nil, fmt.Errorf("%q is not 32 bytes of hex", s)
	}
	return b, nil
}

// uintWord takes a *big.Int or an integer string (decimal, or hex after 0x); the
// value's type is checked before the width, as before.
func uintWord(typ string, v any) ([]byte, error) {
	n, err := integerValue(v)
	if err != nil {
		return nil, err
	}
	bits, err := uintBits(typ)
	if err != nil {
		return nil, fmt.Errorf("type %s is not supported", typ)
	}
	if n.Sign() < 0 || n.BitLen() > bits {
		return nil, fmt.Errorf("%s is out of range for %s", n, typ)
	}
	word := make([]byte, 32)
	n.FillBytes(word)
	return word, nil
}

func integerValue(v any) (*big.Int, error) {
	switch x := v.(type) {
	case *big.Int:
		return x, nil
	case string:
		var n *big.Int
		var ok bool
		if strings.HasPrefix(x, "0x") {
			n, ok = new(big.Int).SetString(x[2:], 16)
		} else {
			n, ok = new(big.Int).SetString(x, 10)
		}
		if !ok {
			return nil, fmt.Errorf("%q is not an integer", x)
		}
		return n, nil
	default:
		return nil, fmt.Errorf("want an integer string, got %T", v)
	}
}

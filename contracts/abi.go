package contracts

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ethereum/go-ethereum/common"
)

// ABI is the part of a Solidity ABI the two contracts here use: calls whose arguments are all
// static (address, bool, bytes32, uintN and tuples of them) and static or string results. It
// replaces go-ethereum's accounts/abi, which drags in go-ethereum/crypto and its cgo build;
// abi_test.go checks every method's encoding against go-ethereum's.
type ABI struct {
	Constructor Method
	Methods     map[string]Method
	Events      map[string]Event
}

// Method is a function (or the constructor, Name "").
type Method struct {
	Name    string
	Sig     string  // canonical signature, e.g. "refund(bytes32)"
	ID      [4]byte // selector: the first 4 bytes of keccak256(Sig)
	Inputs  []Arg
	Outputs []Arg
}

// Event is a log type; ID is its first topic.
type Event struct {
	Name string
	Sig  string
	ID   common.Hash
}

// Arg is one parameter.
type Arg struct {
	Name       string `json:"name"`
	Type       string `json:"type"`
	Components []Arg  `json:"components"`
}

func (a Arg) canonical() string {
	if a.Type != "tuple" {
		return a.Type
	}
	parts := make([]string, len(a.Components))
	for i, c := range a.Components {
		parts[i] = c.canonical()
	}
	return "(" + strings.Join(parts, ",") + ")"
}

func signature(name string, args []Arg) string {
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = a.canonical()
	}
	return name + "(" + strings.Join(parts, ",") + ")"
}

// parseABI reads a compiler's JSON ABI.
func parseABI(raw []byte) (ABI, error) {
	var entries []struct {
		Type    string `json:"type"`
		Name    string `json:"name"`
		Inputs  []Arg  `json:"inputs"`
		Outputs []Arg  `json:"outputs"`
	}
	if err := json.Unmarshal(raw, &entries); err != nil {
		return ABI{}, err
	}
	out := ABI{Methods: map[string]Method{}, Events: map[string]Event{}}
	for _, e := range entries {
		sig := signature(e.Name, e.Inputs)
		switch e.Type {
		case "constructor":
			out.Constructor = Method{Inputs: e.Inputs}
		case "function":
			m := Method{Name: e.Name, Sig: sig, Inputs: e.Inputs, Outputs: e.Outputs}
			copy(m.ID[:], Keccak256([]byte(sig)).Bytes())
			out.Methods[e.Name] = m
		case "event":
			out.Events[e.Name] = Event{Name: e.Name, Sig: sig, ID: Keccak256([]byte(sig))}
		}
	}
	return out, nil
}

// Pack is the calldata of method called with args (name "": the constructor's arguments, which
// follow the bytecode).
func (a ABI) Pack(name string, args ...any) ([]byte, error) {
	m := a.Constructor
	if name != "" {
		var ok bool
		if m, ok = a.Methods[name]; !ok {
			return nil, fmt.Errorf("abi: no method %q", name)
		}
	}
	if len(args) != len(m.Inputs) {
		return nil, fmt.Errorf("abi: %s takes %d arguments, got %d", m.Sig, len(m.Inputs), len(args))
	}
	var out []byte
	if name != "" {
		out = append(out, m.ID[:]...)
	}
	for i, in := range m.Inputs {
		enc, err := encode(in, reflect.ValueOf(args[i]))
		if err != nil {
			return nil, fmt.Errorf("abi: %s argument %d (%s): %w", m.Sig, i, in.Name, err)
		}
		out = append(out, enc...)
	}
	return out, nil
}

var (
	addressType = reflect.TypeFor[common.Address]()
	bigType     = reflect.TypeFor[*big.Int]()
)

// encode is the head encoding of a static value: words, in order.
func encode(t Arg, v reflect.Value) ([]byte, error) {
	if !v.IsValid() {
		return nil, errors.New("nil value")
	}
	switch {
	case t.Type == "address":
		return encodeAddress(v)
	case t.Type == "bool":
		return encodeBool(v)
	case t.Type == "bytes32":
		return encodeBytes32(v)
	case strings.HasPrefix(t.Type, "uint"):
		return encodeUint(t, v)
	case t.Type == "tuple":
		return encodeTuple(t, v)
	}
	return nil, fmt.Errorf("unsupported type %s", t.Type)
}

func encodeAddress(v reflect.Value) ([]byte, error) {
	if v.Type() != addressType {
		return nil, fmt.Errorf("want common.Address, got %s", v.Type())
	}
	addr := v.Interface().(common.Address)
	word := make([]byte, 32)
	copy(word[12:], addr[:])
	return word, nil
}

func encodeBool(v reflect.Value) ([]byte, error) {
	if v.Kind() != reflect.Bool {
		return nil, fmt.Errorf("want bool, got %s", v.Type())
	}
	word := make([]byte, 32)
	if v.Bool() {
		word[31] = 1
	}
	return word, nil
}

func encodeBytes32(v reflect.Value) ([]byte, error) {
	if v.Kind() != reflect.Array || v.Len() != 32 || v.Type().Elem().Kind() != reflect.Uint8 {
		return nil, fmt.Errorf("want [32]byte, got %s", v.Type())
	}
	word := make([]byte, 32)
	reflect.Copy(reflect.ValueOf(word), v)
	return word, nil
}

// encodeUint takes a *big.Int, or for uintN with N <= 64 the Go unsigned type of that width.
func encodeUint(t Arg, v reflect.Value) ([]byte, error) {
	bits, err := uintBits(t.Type)
	if err != nil {
		return nil, fmt.Errorf("unsupported type %s", t.Type)
	}
	var n *big.Int
	switch {
	case v.Type() == bigType:
		if n = v.Interface().(*big.Int); n == nil {
			return nil, errors.New("nil *big.Int")
		}
	case bits <= 64 && v.Kind() == uintKind(bits):
		n = new(big.Int).SetUint64(v.Uint())
	default:
		return nil, fmt.Errorf("want %s for %s, got %s", goType(bits), t.Type, v.Type())
	}
	if n.Sign() < 0 || n.BitLen() > bits {
		return nil, fmt.Errorf("%s does not fit %s", n, t.Type)
	}
	word := make([]byte, 32)
	n.FillBytes(word)
	return word, nil
}

// uintBits is N of the type uintN: a multiple of 8 from 8 to 256.
func uintBits(typ string) (int, error) {
	bits, err := strconv.Atoi(strings.TrimPrefix(typ, "uint"))
	if err != nil || bits%8 != 0 || bits < 8 || bits > 256 {
		return 0, fmt.Errorf("unsupported width in %s", typ)
	}
	return bits, nil
}

// encodeTuple encodes a struct (or a pointer to one) field by field, each component bound to
// its capitalised name.
func encodeTuple(t Arg, v reflect.Value) ([]byte, error) {
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil, fmt.Errorf("want a struct for %s, got %s", t.canonical(), v.Type())
	}
	var out []byte
	for _, c := range t.Components {
		f := v.FieldByName(fieldName(c.Name))
		if !f.IsValid() {
			return nil, fmt.Errorf("%s has no field %s", v.Type(), fieldName(c.Name))
		}
		enc, err := encode(c, f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.Name, err)
		}
		out = append(out, enc...)
	}
	return out, nil
}

// uintKind is the Go kind go-ethereum binds uintN (N <= 64) to.
func uintKind(bits int) reflect.Kind {
	switch bits {
	case 8:
		return reflect.Uint8
	case 16:
		return reflect.Uint16
	case 32:
		return reflect.Uint32
	case 64:
		return reflect.Uint64
	}
	return reflect.Invalid // other widths take *big.Int
}

func goType(bits int) string {
	if uintKind(bits) != reflect.Invalid {
		return uintKind(bits).String() + " or *big.Int"
	}
	return "*big.Int"
}

// fieldName is the Go field a tuple component binds to: its name capitalised.
func fieldName(name string) string {
	r, n := utf8.DecodeRuneInString(name)
	return string(unicode.ToUpper(r)) + name[n:]
}

// Unpack decodes method's results, typed as go-ethereum binds them: common.Address, bool,
// [32]byte, uint8..uint64, *big.Int, string.
func (a ABI) Unpack(name string, data []byte) ([]any, error) {
	m, ok := a.Methods[name]
	if !ok {
		return nil, fmt.Errorf("abi: no method %q", name)
	}
	if len(data)%32 != 0 || len(data) < 32*len(m.Outputs) {
		return nil, fmt.Errorf("abi: %s: %d bytes of results for %d values", m.Sig, len(data), len(m.Outputs))
	}
	out := make([]any, len(m.Outputs))
	for i, o := range m.Outputs {
		v, err := decode(o, data, data[32*i:32*i+32])
		if err != nil {
			return nil, fmt.Errorf("abi: %s result %d: %w", m.Sig, i, err)
		}
		out[i] = v
	}
	return out, nil
}

func decode(t Arg, data, word []byte) (any, error) {
	zeros := func(b []byte) bool {
		for _, x := range b {
			if x != 0 {
				return false
			}
		}
		return true
	}
	switch {
	case t.Type == "address":
		if !zeros(word[:12]) {
			return nil, errors.New("improperly encoded address")
		}
		return common.BytesToAddress(word[12:]), nil
	case t.Type == "bool":
		if !zeros(word[:31]) || word[31] > 1 {
			return nil, errors.New("improperly encoded bool")
		}
		return word[31] == 1, nil
	case t.Type == "bytes32":
		var b [32]byte
		copy(b[:], word)
		return b, nil
	case strings.HasPrefix(t.Type, "uint"):
		bits, err := strconv.Atoi(strings.TrimPrefix(t.Type, "uint"))
		if err != nil || bits%8 != 0 || bits < 8 || bits > 256 {
			return nil, fmt.Errorf("unsupported type %s", t.Type)
		}
		n := new(big.Int).SetBytes(word)
		if n.BitLen() > bits {
			return nil, fmt.Errorf("improperly encoded %s", t.Type)
		}
		switch bits {
		case 8:
			return uint8(n.Uint64()), nil
		case 16:
			return uint16(n.Uint64()), nil
		case 32:
			return uint32(n.Uint64()), nil
		case 64:
			return n.Uint64(), nil
		}
		return n, nil
	case t.Type == "string":
		off := new(big.Int).SetBytes(word)
		if !off.IsInt64() || off.Int64()+32 > int64(len(data)) {
			return nil, errors.New("string offset out of range")
		}
		at := int(off.Int64())
		size := new(big.Int).SetBytes(data[at : at+32])
		if !size.IsInt64() || size.Int64() > int64(len(data)-at-32) {
			return nil, errors.New("string length out of range")
		}
		return string(data[at+32 : at+32+int(size.Int64())]), nil
	}
	return nil, fmt.Errorf("unsupported type %s", t.Type)
}

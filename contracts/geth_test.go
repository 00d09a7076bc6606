package contracts

// The encodings written here checked against go-ethereum's own (a test-only dependency: the
// service binary does not link it): ABI calldata and results, EIP-712 digests, signatures,
// keys, transactions and contract addresses.

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"math/big"
	mrand "math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	gmath "github.com/ethereum/go-ethereum/common/math"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/signer/core/apitypes"
)

func randBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func randUint(bits int) *big.Int {
	n := new(big.Int).SetBytes(randBytes(bits / 8))
	switch mrand.IntN(4) { // the edges too
	case 0:
		n.SetInt64(0)
	case 1:
		n.Sub(n.Lsh(big.NewInt(1), uint(bits)), big.NewInt(1))
	}
	return n
}

// randValue is a random Go value of ABI type t, typed as go-ethereum binds it.
func randValue(t *testing.T, typ abi.Type) any {
	switch typ.T {
	case abi.AddressTy:
		return common.BytesToAddress(randBytes(20))
	case abi.BoolTy:
		return mrand.IntN(2) == 1
	case abi.FixedBytesTy:
		var b [32]byte
		copy(b[:], randBytes(32))
		return b
	case abi.UintTy:
		n := randUint(typ.Size)
		switch typ.Size {
		case 8:
			return uint8(n.Uint64())
		case 16:
			return uint16(n.Uint64())
		case 32:
			return uint32(n.Uint64())
		case 64:
			return n.Uint64()
		}
		return n
	case abi.StringTy:
		return strings.Repeat("USD Coin ", mrand.IntN(9))
	case abi.TupleTy:
		v := reflect.New(typ.TupleType).Elem()
		for i, e := range typ.TupleElems {
			v.Field(i).Set(reflect.ValueOf(randValue(t, *e)))
		}
		return v.Interface()
	}
	t.Fatalf("no random value for %s", typ)
	return nil
}

// Authorization as the payer's pay takes it, in this package's own struct.
func asAuthorization(v any) Authorization {
	r := reflect.ValueOf(v)
	return Authorization{From: r.FieldByName("From").Interface().(common.Address), Value: r.FieldByName("Value").Interface().(*big.Int),
		ValidAfter: r.FieldByName("ValidAfter").Interface().(*big.Int), ValidBefore: r.FieldByName("ValidBefore").Interface().(*big.Int),
		Nonce: r.FieldByName("Nonce").Interface().([32]byte), V: r.FieldByName("V").Interface().(uint8),
		R: r.FieldByName("R").Interface().([32]byte), S: r.FieldByName("S").Interface().([32]byte), ViaReceive: r.FieldByName("ViaReceive").Bool()}
}

func gethABI(t *testing.T, name string) abi.ABI {
	raw, err := builds.ReadFile("build/" + name + ".json")
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(raw, []byte(`"abi"`))
	var a abi.ABI
	// The build file's "abi" member, handed to go-ethereum's parser.
	dec := raw[i+len(`"abi"`):]
	dec = dec[bytes.IndexByte(dec, '['):]
	if a, err = abi.JSON(bytes.NewReader(dec)); err != nil {
		t.Fatal(err)
	}
	return a
}

// Every method and constructor of both contracts packs to go-ethereum's calldata, and every
// result decodes to go-ethereum's values; selectors and event topics agree.
func TestABIMatchesGoEthereum(t *testing.T) {
	for name, ct := range map[string]Contract{"FlatFeePayer": FlatFeePayer, "TestUSDC": TestUSDC} {
		g := gethABI(t, name)
		if len(ct.ABI.Methods) != len(g.Methods) || len(ct.ABI.Events) != len(g.Events) {
			t.Fatalf("%s: %d methods, %d events; go-ethereum reads %d, %d", name, len(ct.ABI.Methods), len(ct.ABI.Events), len(g.Methods), len(g.Events))
		}
		for en, e := range g.Events {
			if ct.ABI.Events[en].ID != e.ID {
				t.Errorf("%s event %s: topic %s, go-ethereum %s", name, en, ct.ABI.Events[en].ID, e.ID)
			}
		}
		methods := map[string]abi.Method{"": g.Constructor}
		for mn, m := range g.Methods {
			methods[mn] = m
		}
		for mn, m := range methods {
			if id := ct.ABI.Methods[mn].ID; mn != "" && !bytes.Equal(id[:], m.ID) {
				t.Errorf("%s.%s: selector %x, go-ethereum %x", name, mn, id, m.ID)
			}
			for range 20 {
				var gargs, args []any
				for _, in := range m.Inputs {
					v := randValue(t, in.Type)
					gargs = append(gargs, v)
					if in.Type.T == abi.TupleTy {
						v = asAuthorization(v) // ours binds by field name, like go-ethereum
					}
					args = append(args, v)
				}
				want, err := g.Pack(mn, gargs...)
				if err != nil {
					t.Fatalf("%s.%s: go-ethereum: %v", name, mn, err)
				}
				got, err := ct.ABI.Pack(mn, args...)
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("%s.%s%v:\n got %x (%v)\nwant %x", name, mn, args, got, err, want)
				}
				if mn == "" || len(m.Outputs) == 0 {
					continue
				}
				var outs []any
				for _, o := range m.Outputs {
					outs = append(outs, randValue(t, o.Type))
				}
				data, err := m.Outputs.Pack(outs...)
				if err != nil {
					t.Fatal(err)
				}
				wantOut, err := g.Unpack(mn, data)
				if err != nil {
					t.Fatal(err)
				}
				gotOut, err := ct.ABI.Unpack(mn, data)
				if err != nil || !reflect.DeepEqual(gotOut, wantOut) {
					t.Fatalf("%s.%s results %x:\n got %#v (%v)\nwant %#v", name, mn, data, gotOut, err, wantOut)
				}
			}
		}
	}
}

// What go-ethereum's ABI refuses, this one refuses too, rather than sending a wrong call.
func TestABIRefusesWhatItCannotEncode(t *testing.T) {
	for _, c := range []struct {
		method string
		args   []any
	}{
		{"balanceOf", nil}, // too few
		{"balanceOf", []any{"0x00000000000000000000000000000000000A11CE"}},      // a string, not an address
		{"mint", []any{common.Address{}, int64(5)}},                             // not *big.Int
		{"mint", []any{common.Address{}, big.NewInt(-1)}},                       // negative
		{"mint", []any{common.Address{}, new(big.Int).Lsh(big.NewInt(1), 256)}}, // over 256 bits
		{"transferWithAuthorization", []any{common.Address{}, common.Address{}, big.NewInt(1), big.NewInt(0), big.NewInt(1), [32]byte{},
			big.NewInt(256), [32]byte{}, [32]byte{}}}, // v over uint8
		{"nope", nil},
	} {
		if _, err := TestUSDC.ABI.Pack(c.method, c.args...); err == nil {
			t.Errorf("%s%v packed", c.method, c.args)
		}
	}
	word := func(b byte) []byte { w := make([]byte, 32); w[31] = b; return w }
	if _, err := TestUSDC.ABI.Unpack("authorizationState", word(2)); err == nil {
		t.Error("a bool of 2 decoded")
	}
	if _, err := TestUSDC.ABI.Unpack("decimals", append(make([]byte, 30), 1, 0)); err == nil {
		t.Error("a uint8 of 256 decoded")
	}
	if _, err := TestUSDC.ABI.Unpack("balanceOf", word(1)[:31]); err == nil {
		t.Error("a short result decoded")
	}
}

func toApitypes(td TypedMessage) apitypes.TypedData {
	types := apitypes.Types{}
	for name, fields := range td.Types {
		for _, f := range fields {
			types[name] = append(types[name], apitypes.Type{Name: f.Name, Type: f.Type})
		}
	}
	return apitypes.TypedData{Types: types, PrimaryType: td.PrimaryType, Message: td.Message,
		Domain: apitypes.TypedDataDomain{Name: td.Domain.Name, Version: td.Domain.Version,
			ChainId: (*gmath.HexOrDecimal256)(big.NewInt(td.Domain.ChainID)), VerifyingContract: td.Domain.VerifyingContract}}
}

// Both EIP-3009 authorizations hash as go-ethereum's EIP-712 does; Sign makes go-ethereum's
// signature (v 27/28) and Signer recovers its key.
func TestTypedMessageMatchesGoEthereum(t *testing.T) {
	for i := range 40 {
		primary := []string{ReceiveWithAuthorization, TransferWithAuthorization}[i%2]
		key, err := crypto.GenerateKey()
		if err != nil {
			t.Fatal(err)
		}
		var nonce [32]byte
		copy(nonce[:], randBytes(32))
		td := TypedData(primary, int64(mrand.Uint32()), common.BytesToAddress(randBytes(20)), crypto.PubkeyToAddress(key.PublicKey),
			common.BytesToAddress(randBytes(20)), randUint(256), mrand.Int64(), mrand.Int64(), nonce)
		want, _, err := apitypes.TypedDataAndHash(toApitypes(td))
		if err != nil {
			t.Fatal(err)
		}
		got, err := td.Hash()
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: hash %x (%v), go-ethereum %x", primary, got, err, want)
		}
		sig, err := Sign(td, key)
		if err != nil {
			t.Fatal(err)
		}
		gsig, err := crypto.Sign(want, key)
		if err != nil {
			t.Fatal(err)
		}
		gsig[64] += 27
		if !bytes.Equal(sig, gsig) {
			t.Fatalf("signature %x, go-ethereum %x", sig, gsig)
		}
		signer, v, r, s, err := Signer(td, sig)
		if err != nil || signer != crypto.PubkeyToAddress(key.PublicKey) || v != sig[64] || !bytes.Equal(r[:], sig[:32]) || !bytes.Equal(s[:], sig[32:64]) {
			t.Fatalf("Signer: %s v %d (%v), want %s", signer.Hex(), v, err, crypto.PubkeyToAddress(key.PublicKey).Hex())
		}
		sig[64] -= 27 // v 0/1 is taken too
		if again, _, _, _, err := Signer(td, sig); err != nil || again != signer {
			t.Fatalf("Signer with v 0/1: %s (%v)", again.Hex(), err)
		}
		td.Message["value"] = new(big.Int).Add(randUint(255), big.NewInt(1)).String() // another message: another signer
		if other, _, _, _, err := Signer(td, append(sig[:64:64], 27)); err == nil && other == signer {
			t.Fatal("a signature recovered the same key over another message")
		}
	}
	td := TypedData(ReceiveWithAuthorization, 1, common.Address{}, common.Address{}, common.Address{}, big.NewInt(1), 0, 1, [32]byte{})
	for field, bad := range map[string]any{"from": "<your address>", "value": "-1", "nonce": "0x01", "validAfter": "ten"} {
		m := TypedData(ReceiveWithAuthorization, 1, common.Address{}, common.Address{}, common.Address{}, big.NewInt(1), 0, 1, [32]byte{})
		m.Message[field] = bad
		if _, err := m.Hash(); err == nil {
			t.Errorf("%s = %v hashed", field, bad)
		}
	}
	narrow := TypedMessage{Types: map[string][]TypedField{"EIP712Domain": td.Types["EIP712Domain"], "T": {{Name: "v", Type: "uint8"}}},
		PrimaryType: "T", Domain: td.Domain, Message: map[string]any{"v": "256"}}
	if _, err := narrow.Hash(); err == nil {
		t.Error("a uint8 of 256 hashed")
	}
	if _, _, _, _, err := Signer(td, append(make([]byte, 64), 31)); err == nil {
		t.Error("recovery id 4 accepted")
	}
}

// Keys parse as go-ethereum parses them, and hold the same address.
func TestKeysMatchGoEthereum(t *testing.T) {
	for range 20 {
		gk, err := crypto.GenerateKey()
		if err != nil {
			t.Fatal(err)
		}
		hexKey := hex.EncodeToString(crypto.FromECDSA(gk))
		for _, s := range []string{hexKey, "0x" + hexKey} {
			k, err := ParseKey(s)
			if err != nil || !bytes.Equal(crypto.FromECDSA(k), crypto.FromECDSA(gk)) || AddressOf(&k.PublicKey) != crypto.PubkeyToAddress(gk.PublicKey) {
				t.Fatalf("ParseKey(%s): %v", s, err)
			}
		}
		if AddressOf(&gk.PublicKey) != crypto.PubkeyToAddress(gk.PublicKey) {
			t.Fatal("AddressOf a go-ethereum key")
		}
	}
	n := "fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141" // the curve order
	for _, bad := range []string{"", "zz", "01", strings.Repeat("0", 64), n, strings.Repeat("ab", 33)} {
		if _, err := ParseKey(bad); err == nil {
			t.Errorf("ParseKey(%q) accepted", bad)
		}
		if _, err := crypto.HexToECDSA(bad); err == nil {
			t.Errorf("go-ethereum accepts %q: the two disagree", bad)
		}
	}
}

// Transactions sign and encode byte for byte as go-ethereum's: EIP-1559 and EIP-155 legacy,
// calls and deployments; a deployment's address is go-ethereum's.
func TestTransactionsMatchGoEthereum(t *testing.T) {
	key, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		to := common.BytesToAddress(randBytes(20))
		toPtr := &to
		if i%4 == 0 {
			toPtr = nil
		}
		chainID := big.NewInt(int64(mrand.Uint32()))
		ours := &tx{chainID: chainID, nonce: mrand.Uint64N(1 << 20), gas: mrand.Uint64N(1 << 24), to: toPtr,
			value: randUint(64), data: randBytes(mrand.IntN(200)), dynamic: i%2 == 0}
		var inner types.TxData
		if ours.dynamic {
			ours.gasTipCap, ours.feeCap = randUint(64), randUint(128)
			inner = &types.DynamicFeeTx{ChainID: chainID, Nonce: ours.nonce, GasTipCap: ours.gasTipCap, GasFeeCap: ours.feeCap,
				Gas: ours.gas, To: toPtr, Value: ours.value, Data: ours.data}
		} else {
			ours.gasPrice = randUint(64)
			inner = &types.LegacyTx{Nonce: ours.nonce, GasPrice: ours.gasPrice, Gas: ours.gas, To: toPtr, Value: ours.value, Data: ours.data}
		}
		want, err := types.SignNewTx(key, types.LatestSignerForChainID(chainID), inner)
		if err != nil {
			t.Fatal(err)
		}
		if err := ours.sign(key); err != nil {
			t.Fatal(err)
		}
		raw, _ := want.MarshalBinary()
		if !bytes.Equal(ours.raw, raw) || ours.hash != want.Hash() {
			t.Fatalf("tx %d (dynamic %v):\n got %x %s\nwant %x %s", i, ours.dynamic, ours.raw, ours.hash, raw, want.Hash())
		}
		if from, err := types.Sender(types.LatestSignerForChainID(chainID), want); err != nil || from != crypto.PubkeyToAddress(key.PublicKey) {
			t.Fatalf("sender %s (%v)", from, err)
		}
		if got, want := createAddress(crypto.PubkeyToAddress(key.PublicKey), ours.nonce), crypto.CreateAddress(crypto.PubkeyToAddress(key.PublicKey), ours.nonce); got != want {
			t.Fatalf("create address %s, go-ethereum %s", got, want)
		}
	}
}

// Every field type a flat message may hold (string, bool, address, bytes32, uintN as decimal
// and 0x hex) hashes as go-ethereum's EIP-712 does; the two EIP-3009 messages above hold no
// string or bool field.
func TestTypedMessageFieldTypesMatchGoEthereum(t *testing.T) {
	base := TypedData(ReceiveWithAuthorization, 1, common.Address{}, common.Address{}, common.Address{}, big.NewInt(1), 0, 1, [32]byte{})
	fields := []TypedField{{Name: "s", Type: "string"}, {Name: "b", Type: "bool"}, {Name: "a", Type: "address"},
		{Name: "h", Type: "bytes32"}, {Name: "u8", Type: "uint8"}, {Name: "u64", Type: "uint64"}, {Name: "u256", Type: "uint256"}}
	for i := range 20 {
		td := TypedMessage{Types: map[string][]TypedField{"EIP712Domain": base.Types["EIP712Domain"], "T": fields}, PrimaryType: "T", Domain: base.Domain,
			Message: map[string]any{"s": hexutil.Encode(randBytes(i)), "b": i%2 == 1, "a": common.BytesToAddress(randBytes(20)).Hex(),
				"h": hexutil.Encode(randBytes(32)), "u8": randUint(8).String(), "u64": "0x" + randUint(64).Text(16), "u256": randUint(256).String()}}
		want, _, err := apitypes.TypedDataAndHash(toApitypes(td))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := td.Hash(); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%v: hash %x (%v), go-ethereum %x", td.Message, got, err, want)
		}
	}
}

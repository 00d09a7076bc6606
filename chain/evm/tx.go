package evm

import (
	"errors"
	"fmt"
	"math/big"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	decred "github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"
	"github.com/ethereum/go-ethereum/crypto/keccak"
	"github.com/ethereum/go-ethereum/rlp"
)

// A wallet's own transactions: EIP-1559 (type 2) only, encoded with go-ethereum's rlp and
// signed with decred's secp256k1 as the wallets' keys are (go-ethereum's crypto package would
// bring in cgo). The encoding is checked against go-ethereum's core/types in the tests.

// SelTransfer is ERC-20 transfer(address,uint256).
var SelTransfer = [4]byte{0xa9, 0x05, 0x9c, 0xbb}

// TransferData is the calldata of an ERC-20 transfer of amount token units to `to`.
func TransferData(to [20]byte, amount *big.Int) ([]byte, error) {
	if amount.Sign() < 0 || amount.BitLen() > 256 {
		return nil, fmt.Errorf("transfer amount %s is not a uint256", amount)
	}
	out := append([]byte{}, SelTransfer[:]...)
	out = append(out, word(to[:])...)
	return append(out, word(amount.Bytes())...), nil
}

// Tx is an unsigned EIP-1559 transaction.
type Tx struct {
	ChainID   int64
	Nonce     uint64
	GasTipCap *big.Int // max priority fee per gas, wei
	GasFeeCap *big.Int // max fee per gas, wei
	Gas       uint64
	To        [20]byte
	Value     *big.Int // wei
	Data      []byte
}

// Signed is a signed transaction: Raw is what eth_sendRawTransaction takes, Hash its id.
type Signed struct {
	Raw  []byte
	Hash [32]byte
	From [20]byte
}

// MaxCost is the most the transaction can take from its sender in wei: value plus gas at the
// fee cap.
func (t *Tx) MaxCost() *big.Int {
	c := new(big.Int).Mul(new(big.Int).SetUint64(t.Gas), t.GasFeeCap)
	return c.Add(c, t.Value)
}

func (t *Tx) fields() ([]any, error) {
	if t.ChainID <= 0 {
		return nil, errors.New("transaction without a chain id")
	}
	for _, n := range []*big.Int{t.GasTipCap, t.GasFeeCap, t.Value} {
		if n == nil || n.Sign() < 0 {
			return nil, errors.New("transaction with a missing or negative amount")
		}
	}
	if t.GasTipCap.Cmp(t.GasFeeCap) > 0 {
		return nil, fmt.Errorf("priority fee %s above the fee cap %s", t.GasTipCap, t.GasFeeCap)
	}
	data := t.Data
	if data == nil {
		data = []byte{}
	}
	return []any{big.NewInt(t.ChainID), t.Nonce, t.GasTipCap, t.GasFeeCap, t.Gas, t.To[:], t.Value, data, []any{}}, nil
}

// SigningHash is the hash the sender signs: keccak256(0x02 || rlp(fields)).
func (t *Tx) SigningHash() ([32]byte, error) {
	f, err := t.fields()
	if err != nil {
		return [32]byte{}, err
	}
	enc, err := rlp.EncodeToBytes(f)
	if err != nil {
		return [32]byte{}, err
	}
	return keccak256(append([]byte{0x02}, enc...)), nil
}

// Sign signs t with the 32-byte secp256k1 key: 0x02 || rlp(fields, yParity, r, s), low s and
// RFC 6979 nonces, the signature go-ethereum makes for the same key.
func (t *Tx) Sign(key []byte) (*Signed, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("signing key of %d bytes, need 32", len(key))
	}
	h, err := t.SigningHash()
	if err != nil {
		return nil, err
	}
	priv := secp256k1.PrivKeyFromBytes(key)
	defer priv.Zero()
	if priv.Key.IsZero() {
		return nil, errors.New("invalid signing key")
	}
	compact := decred.SignCompact(priv, h[:], false) // [27 + recovery id] || r || s
	f, _ := t.fields()
	f = append(f, uint64(compact[0]-27), new(big.Int).SetBytes(compact[1:33]), new(big.Int).SetBytes(compact[33:65]))
	enc, err := rlp.EncodeToBytes(f)
	if err != nil {
		return nil, err
	}
	raw := append([]byte{0x02}, enc...)
	return &Signed{Raw: raw, Hash: keccak256(raw), From: AddressOfKey(priv.PubKey())}, nil
}

// AddressOfKey is the Ethereum address of a public key.
func AddressOfKey(pub *secp256k1.PublicKey) [20]byte {
	h := keccak256(pub.SerializeUncompressed()[1:])
	var a [20]byte
	copy(a[:], h[12:])
	return a
}

// AddressOf is the Ethereum address of a 32-byte private key.
func AddressOf(key []byte) [20]byte {
	priv := secp256k1.PrivKeyFromBytes(key)
	defer priv.Zero()
	return AddressOfKey(priv.PubKey())
}

func keccak256(b []byte) [32]byte {
	h := keccak.NewLegacyKeccak256()
	h.Write(b)
	var out [32]byte
	h.Sum(out[:0])
	return out
}

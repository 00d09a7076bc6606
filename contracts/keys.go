package contracts

import (
	"crypto/ecdsa"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	decred "github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto/keccak"
)

// Keys, hashes and signatures come from decred's secp256k1 (pure Go, as go-ethereum's own
// non-cgo build uses) and go-ethereum's keccak, not go-ethereum/crypto: that package compiles
// libsecp256k1 through cgo (17 CPU seconds of a cold build of the service) and forces
// external linking.

// Keccak256 is the Keccak-256 hash of the concatenated data.
func Keccak256(data ...[]byte) common.Hash {
	h := keccak.NewLegacyKeccak256()
	for _, b := range data {
		h.Write(b)
	}
	var out common.Hash
	h.Sum(out[:0])
	return out
}

// ParseKey reads a hex secp256k1 private key (64 hex digits, 0x optional).
func ParseKey(s string) (*ecdsa.PrivateKey, error) {
	raw, err := hex.DecodeString(strings.TrimPrefix(s, "0x"))
	if err != nil {
		return nil, fmt.Errorf("invalid hex: %w", err)
	}
	defer clear(raw)
	return KeyFromBytes(raw)
}

// KeyFromBytes reads a 32-byte secp256k1 private key.
func KeyFromBytes(raw []byte) (*ecdsa.PrivateKey, error) {
	if len(raw) != 32 {
		return nil, fmt.Errorf("invalid length %d, need 32 bytes", len(raw))
	}
	var k secp256k1.ModNScalar
	if overflow := k.SetByteSlice(raw); overflow || k.IsZero() {
		return nil, errors.New("invalid private key: zero or not below the curve order")
	}
	return secp256k1.NewPrivateKey(&k).ToECDSA(), nil
}

// AddressOf is the Ethereum address of a public key: the last 20 bytes of the keccak of its
// uncompressed coordinates.
func AddressOf(pub *ecdsa.PublicKey) common.Address {
	var xy [64]byte
	//lint:ignore SA1019 crypto/ecdsa has no other accessor for a secp256k1 key (Bytes takes NIST curves only)
	pub.X.FillBytes(xy[:32])
	//lint:ignore SA1019 as above
	pub.Y.FillBytes(xy[32:])
	return common.BytesToAddress(Keccak256(xy[:]).Bytes()[12:])
}

// signHash signs a 32-byte hash with key: r || s || recovery id (0 or 1), low s, RFC 6979
// nonces (the signature libsecp256k1 makes).
func signHash(hash []byte, key *ecdsa.PrivateKey) ([]byte, error) {
	if len(hash) != 32 {
		return nil, fmt.Errorf("the hash is %d bytes, not 32", len(hash))
	}
	var d secp256k1.ModNScalar
	//lint:ignore SA1019 crypto/ecdsa has no other accessor for a secp256k1 key (Bytes takes NIST curves only)
	if overflow := d.SetByteSlice(key.D.Bytes()); overflow || d.IsZero() {
		return nil, errors.New("invalid private key")
	}
	priv := secp256k1.NewPrivateKey(&d)
	defer priv.Zero()
	compact := decred.SignCompact(priv, hash, false) // [27 + recovery id] || r || s
	sig := make([]byte, 65)
	copy(sig, compact[1:])
	sig[64] = compact[0] - 27
	return sig, nil
}

// recoverAddress is the address whose key made sig (r || s || recovery id 0..3) over hash.
func recoverAddress(hash, sig []byte) (common.Address, error) {
	if len(sig) != 65 {
		return common.Address{}, errors.New("invalid signature length")
	}
	if sig[64] >= 4 {
		return common.Address{}, errors.New("invalid signature recovery id")
	}
	compact := make([]byte, 65)
	compact[0] = sig[64] + 27
	copy(compact[1:], sig[:64])
	pub, _, err := decred.RecoverCompact(compact, hash)
	if err != nil {
		return common.Address{}, err
	}
	return AddressOf(pub.ToECDSA()), nil
}

// Package wallets generates the embedded EVM and Solana wallets and seals their private keys
// under the master key.
package wallets

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/mr-tron/base58"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"golang.org/x/crypto/sha3"
)

// KeyPair is a freshly generated wallet: its public address and raw private key.
type KeyPair struct {
	Address string
	Private []byte
}

// NewEVM generates a secp256k1 key pair and its EIP-55 checksummed address.
func NewEVM() (KeyPair, error) {
	priv, err := secp256k1.GeneratePrivateKey()
	if err != nil {
		return KeyPair{}, fmt.Errorf("generate secp256k1 key: %w", err)
	}
	pub := priv.PubKey().SerializeUncompressed() // 0x04 || X || Y
	addr := keccak(pub[1:])[12:]
	return KeyPair{Address: ChecksumAddress(addr), Private: priv.Serialize()}, nil
}

// NewSolana generates an ed25519 key pair; the address is the base58 public key.
func NewSolana() (KeyPair, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return KeyPair{}, fmt.Errorf("generate ed25519 key: %w", err)
	}
	return KeyPair{Address: base58.Encode(pub), Private: priv.Seed()}, nil
}

func keccak(b []byte) []byte {
	h := sha3.NewLegacyKeccak256()
	h.Write(b)
	return h.Sum(nil)
}

// ChecksumAddress renders a 20-byte address in EIP-55 mixed case.
func ChecksumAddress(addr []byte) string {
	lower := hex.EncodeToString(addr)
	hash := keccak([]byte(lower))
	out := []byte(lower)
	for i, c := range out {
		if c >= 'a' && c <= 'f' && hash[i/2]>>(4*(1-uint(i%2)))&0xf >= 8 {
			out[i] = c - 'a' + 'A'
		}
	}
	return "0x" + string(out)
}

// ValidEVMAddress accepts 0x + 40 hex digits that are all lowercase, all uppercase, or a
// correct EIP-55 checksum.
func ValidEVMAddress(s string) bool {
	if len(s) != 42 || !strings.HasPrefix(s, "0x") {
		return false
	}
	raw, err := hex.DecodeString(s[2:])
	if err != nil {
		return false
	}
	body := s[2:]
	if body == strings.ToLower(body) || body == strings.ToUpper(body) {
		return true
	}
	return ChecksumAddress(raw) == s
}

// ValidSolanaAddress accepts a base58 string decoding to 32 bytes.
func ValidSolanaAddress(s string) bool {
	b, err := base58.Decode(s)
	return err == nil && len(b) == 32
}

// Sealer encrypts private keys with AES-256-GCM under the current master key and opens them
// under any configured one, so the master key can be rotated: add the new key first, re-seal
// (ResealWallets: `switchboard admin reseal`), then drop the old one.
type Sealer struct {
	current string
	aeads   map[string]cipher.AEAD
}

// NewSealer takes the master keys, current first. Each is 32 bytes; its id is the first 8 hex
// digits of its SHA-256.
func NewSealer(keys ...[]byte) (*Sealer, error) {
	if len(keys) == 0 {
		return nil, errors.New("no master key")
	}
	s := &Sealer{aeads: make(map[string]cipher.AEAD)}
	for i, k := range keys {
		if len(k) != 32 {
			return nil, fmt.Errorf("master key %d is %d bytes, want 32", i+1, len(k))
		}
		block, err := aes.NewCipher(k)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		id := KeyID(k)
		s.aeads[id] = aead
		if i == 0 {
			s.current = id
		}
	}
	return s, nil
}

// ParseMasterKeys reads a comma-separated list of base64 32-byte keys, current first.
func ParseMasterKeys(s string) ([][]byte, error) {
	var keys [][]byte
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, err := base64.StdEncoding.DecodeString(part)
		if err != nil {
			return nil, fmt.Errorf("master key is not base64: %w", err)
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// KeyID names a master key without revealing it.
func KeyID(key []byte) string {
	sum := sha256.Sum256(key)
	return hex.EncodeToString(sum[:4])
}

// Seal encrypts plaintext; aad binds the ciphertext to its owner (e.g. the wallet address) so
// sealed keys cannot be swapped between rows.
func (s *Sealer) Seal(plaintext, aad []byte) (sealed []byte, keyID string) {
	aead := s.aeads[s.current]
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		panic(err)
	}
	return aead.Seal(nonce, nonce, plaintext, aad), s.current
}

// Open decrypts a sealed key under the master key keyID.
func (s *Sealer) Open(sealed []byte, keyID string, aad []byte) ([]byte, error) {
	aead, ok := s.aeads[keyID]
	if !ok {
		return nil, &UnknownKeyError{KeyID: keyID}
	}
	if len(sealed) < aead.NonceSize() {
		return nil, errors.New("sealed key too short")
	}
	nonce, ct := sealed[:aead.NonceSize()], sealed[aead.NonceSize():]
	return aead.Open(nil, nonce, ct, aad)
}

// ErrSigningOff refuses to sign with an account's embedded wallet while its signing toggle is off.
var ErrSigningOff = errors.New("signing with the embedded wallets is off for this account")

// EVMKey unseals an account's primary EVM wallet key, only when the account turned signing on
// (the portal's settings). The caller must use it for one signature and drop it.
func EVMKey(ctx context.Context, st *store.Store, sealer *Sealer, accountID string) ([]byte, string, error) {
	return walletKey(ctx, st, sealer, accountID, accounts.FamilyEVM)
}

// SolanaKey unseals an account's Solana wallet key, its 32-byte ed25519 seed, only when the
// account turned signing on, as EVMKey does.
func SolanaKey(ctx context.Context, st *store.Store, sealer *Sealer, accountID string) ([]byte, string, error) {
	return walletKey(ctx, st, sealer, accountID, accounts.FamilySVM)
}

func walletKey(ctx context.Context, st *store.Store, sealer *Sealer, accountID, family string) ([]byte, string, error) {
	rows := accounts.New(st)
	acct, err := rows.ByID(ctx, accountID)
	if err != nil {
		return nil, "", err
	}
	if !acct.SigningEnabled {
		return nil, "", ErrSigningOff
	}
	ws, err := rows.Wallets(ctx, accountID)
	if err != nil {
		return nil, "", err
	}
	for _, w := range ws {
		if w.Family == family {
			key, err := sealer.Open(w.SealedKey, w.MasterKeyID, []byte(w.Address))
			return key, w.Address, err
		}
	}
	return nil, "", fmt.Errorf("account %s has no %s wallet", accountID, family)
}

func mustHex(addr string) []byte {
	b, _ := hex.DecodeString(strings.TrimPrefix(addr, "0x"))
	return b
}

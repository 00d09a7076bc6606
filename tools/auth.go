package tools

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"

	"github.com/mr-tron/base58"
)

// KeyPrefix returns the secret prefix of keys minted in env: sb_live_ in production,
// sb_test_ elsewhere.
func KeyPrefix(env string) string {
	if env == "production" {
		return "sb_live_"
	}
	return "sb_test_"
}

// NewKeySecret returns a fresh key secret (prefix + 32 random bytes in base58) and its
// display prefix (enough to recognise it in a list, far too little to guess it).
func NewKeySecret(env string) (secret, display string) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	secret = KeyPrefix(env) + base58.Encode(b)
	return secret, secret[:len(KeyPrefix(env))+4]
}

// HashKey is the stored form of a secret: hex SHA-256. A 256-bit random secret needs no
// slow hash; the lookup is an equality on the hash, so no comparison of secrets happens.
func HashKey(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// AccessTokenPrefix starts every OAuth access token.
const AccessTokenPrefix = "sbat_"

// Authenticator resolves a presented API key or OAuth access token to the Principal it
// stands for, or UNAUTHENTICATED saying what to do (keys.Authenticator caches live keys).
type Authenticator interface {
	Authenticate(ctx context.Context, secret string) (*Principal, error)
}

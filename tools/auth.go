package tools

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/mr-tron/base58"
	"github.com/switchboard-hq/switchboard/store"
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

// Authenticator resolves a presented API key secret to the Principal it stands for.
type Authenticator struct {
	store *store.Store
	now   func() time.Time
	log   *slog.Logger
	// Tokens resolves an OAuth access token (sbat_...) of an MCP host; nil: none are accepted.
	Tokens func(ctx context.Context, token string) (*Principal, error)
}

// AccessTokenPrefix starts every OAuth access token.
const AccessTokenPrefix = "sbat_"

// NewAuthenticator builds an Authenticator on st; now is the clock.
func NewAuthenticator(st *store.Store, now func() time.Time, log *slog.Logger) *Authenticator {
	return &Authenticator{store: st, now: now, log: log}
}

// touchEvery bounds lastUsedAt writes to one per key per minute.
const touchEvery = time.Minute

// Authenticate returns the live key for secret, or UNAUTHENTICATED saying what to do.
func (a *Authenticator) Authenticate(ctx context.Context, secret string) (*Principal, error) {
	if strings.HasPrefix(secret, AccessTokenPrefix) && a.Tokens != nil {
		p, err := a.Tokens(ctx, secret)
		if err != nil && !store.IsUnavailable(err) {
			return nil, Errorf(CodeUnauthenticated, "the access token is not valid (%v); refresh it, or connect again", err)
		}
		return p, err
	}
	if !strings.HasPrefix(secret, "sb_") {
		return nil, Errorf(CodeUnauthenticated, "that is not a Switchboard API key (keys start with sb_test_ or sb_live_); send it as x-api-key or Authorization: Bearer")
	}
	key, err := a.store.KeyByHash(ctx, HashKey(secret))
	if errors.Is(err, store.ErrNotFound) {
		return nil, Errorf(CodeUnauthenticated, "unknown API key; check it was copied whole, or get a new one with agent_signup and agent_verify")
	}
	if err != nil {
		return nil, err
	}
	if key.RevokedAt != nil {
		return nil, Errorf(CodeUnauthenticated, "this API key was revoked at %s; use another key of the account, or verify your e-mail again (agent_signup, agent_verify) for a new one", key.RevokedAt.UTC().Format(time.RFC3339))
	}
	now := a.now()
	if key.LastUsedAt == nil || now.Sub(*key.LastUsedAt) > touchEvery {
		// Best effort: a failed bookkeeping write must not fail the caller's request.
		if err := a.store.TouchKey(ctx, key.ID, now); err != nil {
			a.log.WarnContext(ctx, "record key use", "key_id", key.ID, "err", err)
		}
	}
	return KeyPrincipal(key), nil
}

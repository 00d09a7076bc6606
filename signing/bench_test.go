package signing_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/signing"
)

// benchArgs returns ~1 KB of typical args, written non-canonically (unsorted keys,
// whitespace, a float spelled 2.50).
func benchArgs() json.RawMessage {
	var b strings.Builder
	b.WriteString(`{ "query": "price of ETH and SOL over the last thirty days, daily candles", "ticker": "ETH", "days": 30,`)
	b.WriteString(` "chains": ["ethereum", "base", "arbitrum", "optimism", "polygon"], "options": { "interval": "1d", "currency": "usd", "includeVolume": true, "precision": 2.50 },`)
	b.WriteString(` "wallets": [`)
	for i := range 8 {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, `{ "address": "0x%040x", "label": "wallet %d — café ☕", "weight": 0.%d }`, i*7919, i, i+1)
	}
	b.WriteString(`], "note": "<b>bold</b> & more", "emoji": "🚀" }`)
	return json.RawMessage(b.String())
}

func benchSetup(b *testing.B) (*signing.Signer, ed25519.PrivateKey, *signing.Envelope, []byte, []byte) {
	seed := sha256.Sum256([]byte("bench"))
	priv := ed25519.NewKeyFromSeed(seed[:])
	s := signing.NewSigner(priv)
	s.Now = func() time.Time { return t0 }
	env := &signing.Envelope{RequestID: signing.NewRequestID(), IntentDefinitionID: "int_bench", UserID: "u_abcdefghijklmnopqrstuvwxyz234567", Args: benchArgs()}
	e := *env
	if err := s.Sign(&e); err != nil {
		b.Fatal(err)
	}
	payload, _ := signing.CanonicalPayload(&e)
	body, _ := signing.MarshalEnvelope(&e)
	return s, priv, env, payload, body
}

func BenchmarkCanonicalizeArgs1KB(b *testing.B) {
	args := benchArgs()
	b.SetBytes(int64(len(args)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := signing.Canonicalize(args); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSignEnvelope1KB is canonicalize + sign of an envelope with ~1 KB args.
func BenchmarkSignEnvelope1KB(b *testing.B) {
	s, _, env, payload, _ := benchSetup(b)
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		e := *env
		if err := s.Sign(&e); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEd25519Sign1KB is a bare ed25519.Sign of the same number of bytes.
func BenchmarkEd25519Sign1KB(b *testing.B) {
	_, priv, _, payload, _ := benchSetup(b)
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		ed25519.Sign(priv, payload)
	}
}

// BenchmarkVerifyEnvelope1KB is the partner side: parse + canonicalize + verify + checks.
func BenchmarkVerifyEnvelope1KB(b *testing.B) {
	s, _, _, payload, body := benchSetup(b)
	v := signing.NewVerifierFromKey(s.PublicKey(), signing.WithClock(func() time.Time { return t0 }))
	h := http.Header{}
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Verify(context.Background(), body, h); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyHeaders1KB is the MCP_HTTP partner side.
func BenchmarkVerifyHeaders1KB(b *testing.B) {
	s, _, env, payload, _ := benchSetup(b)
	e := *env
	if err := s.Sign(&e); err != nil {
		b.Fatal(err)
	}
	h := http.Header{}
	signing.SetHeaders(h, &e, signing.BindingMCPHTTP)
	v := signing.NewVerifierFromKey(s.PublicKey(), signing.WithClock(func() time.Time { return t0 }))
	args := benchArgs()
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.VerifyHeaders(context.Background(), h, args); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEd25519Verify1KB is a bare ed25519.Verify of the same number of bytes.
func BenchmarkEd25519Verify1KB(b *testing.B) {
	s, priv, _, payload, _ := benchSetup(b)
	sig := ed25519.Sign(priv, payload)
	pub := s.PublicKey()
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		if !ed25519.Verify(pub, payload, sig) {
			b.Fatal("verify")
		}
	}
}

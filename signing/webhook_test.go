package signing_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/signing"
)

// The v1 signature is the one every Standard Webhooks library computes: the libraries' own
// test vector (standard-webhooks/standard-webhooks, libraries/*/ tests).
func TestWebhookV1MatchesTheStandardVector(t *testing.T) {
	secret, err := signing.ParseWebhookSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		t.Fatal(err)
	}
	got := signing.SignWebhookV1(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`))
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Fatalf("v1 signature %s, want %s", got, want)
	}
}

// A webhook verifies by either signature alone; a changed body, id or timestamp, a stale
// timestamp, another key or missing headers do not.
func TestWebhookVerifier(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	other, _, _ := ed25519.GenerateKey(rand.Reader)
	signer := signing.NewSigner(priv)
	secret := []byte("0123456789abcdef0123456789abcdef")
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"type":"key.created","timestamp":"2027-01-15T08:00:00Z","data":{"keyId":"k"}}`)
	headers := func(id string, ts int64, b []byte) http.Header {
		h := http.Header{}
		h.Set(signing.WebhookIDHeader, id)
		h.Set(signing.WebhookTimestampHeader, strconv.FormatInt(ts, 10))
		h.Set(signing.WebhookSignatureHeader, signing.SignWebhookV1(secret, id, ts, b)+" "+signer.SignWebhookV1a(id, ts, b))
		return h
	}
	clock := func() time.Time { return now }
	byHMAC := &signing.WebhookVerifier{Secret: secret, Now: clock}
	byKey := &signing.WebhookVerifier{PublicKeys: []ed25519.PublicKey{signer.PublicKey()}, Now: clock}
	wrongKey := &signing.WebhookVerifier{PublicKeys: []ed25519.PublicKey{other}, Now: clock}
	h := headers("msg_1", now.Unix(), body)
	for _, v := range []*signing.WebhookVerifier{byHMAC, byKey} {
		if id, err := v.Verify(h, body); err != nil || id != "msg_1" {
			t.Fatalf("a good webhook: %q %v", id, err)
		}
	}
	if !strings.HasPrefix(strings.Fields(h.Get(signing.WebhookSignatureHeader))[1], "v1a,") {
		t.Fatalf("signature header %q", h.Get(signing.WebhookSignatureHeader))
	}
	tampered := []byte(strings.Replace(string(body), `"k"`, `"x"`, 1))
	otherID := h.Clone()
	otherID.Set(signing.WebhookIDHeader, "msg_2")
	later := h.Clone()
	later.Set(signing.WebhookTimestampHeader, strconv.FormatInt(now.Unix()+1, 10))
	stale := headers("msg_1", now.Add(-6*time.Minute).Unix(), body)
	bare := http.Header{}
	for name, tc := range map[string]struct {
		v *signing.WebhookVerifier
		h http.Header
		b []byte
	}{
		"tampered body (v1)": {byHMAC, h, tampered}, "tampered body (v1a)": {byKey, h, tampered},
		"another id": {byKey, otherID, body}, "another timestamp": {byHMAC, later, body},
		"stale": {byKey, stale, body}, "another key": {wrongKey, h, body}, "no headers": {byHMAC, bare, body},
	} {
		if _, err := tc.v.Verify(tc.h, tc.b); err == nil {
			t.Errorf("%s: verified", name)
		}
	}
}

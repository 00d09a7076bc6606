package signing_test

import (
	"crypto/ed25519"
	"net/http"
	"testing"

	"github.com/switchboard-hq/switchboard/signing"
)

// A receipt names the key that signed it and verifies under it alone, before and after the
// signer's key is rotated (the key id is kept with the key, not computed per receipt).
func TestSignReceiptNamesItsKey(t *testing.T) {
	first, second := newKey(t), newKey(t)
	s := signing.NewSigner(first)
	r := signing.Receipt{RequestID: "r1", Handle: "@h", Success: true, ResultSHA256: signing.ResultHash(nil)}
	for i, key := range []ed25519.PrivateKey{first, second} {
		s.SetKey(key)
		pub := key.Public().(ed25519.PublicKey)
		sr, err := s.SignReceipt(r)
		if err != nil {
			t.Fatal(err)
		}
		if sr.Receipt.KeyID != signing.KeyID(pub) {
			t.Errorf("keyId %q, want %q", sr.Receipt.KeyID, signing.KeyID(pub))
		}
		if err := signing.VerifyReceipt(sr, pub); err != nil {
			t.Errorf("receipt does not verify under its key: %v", err)
		}
		other := []ed25519.PrivateKey{second, first}[i]
		if signing.VerifyReceipt(sr, other.Public().(ed25519.PublicKey)) == nil {
			t.Error("receipt verifies under another key")
		}
	}
}

// SetHeaders writes the header names as they are: each must already be canonical, or
// http.Header.Get would not find it.
func TestHeaderNamesAreCanonical(t *testing.T) {
	for _, name := range []string{signing.HeaderContentType, signing.HeaderIdempotencyKey, signing.HeaderRequestID,
		signing.HeaderIntentID, signing.HeaderSignature, signing.HeaderTimestamp, signing.HeaderUserID} {
		if c := http.CanonicalHeaderKey(name); c != name {
			t.Errorf("header %q is not canonical (%q)", name, c)
		}
	}
	h := http.Header{}
	signing.SetHeaders(h, &signing.Envelope{RequestID: "r", IntentDefinitionID: "i", UserID: "u", ServiceSignature: "s", Timestamp: 7}, signing.BindingMCPHTTP)
	for name, want := range map[string]string{"content-type": "application/json", "idempotency-key": "r", "x-service-request-id": "r",
		"x-service-intent-id": "i", "x-service-signature": "s", "x-service-timestamp": "7", "x-service-user-id": "u"} {
		if got := h.Get(name); got != want || len(h.Values(name)) != 1 {
			t.Errorf("%s: %q (%d values), want %q", name, got, len(h.Values(name)), want)
		}
	}
}

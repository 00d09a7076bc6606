package signing_test

import (
	"crypto/ed25519"
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

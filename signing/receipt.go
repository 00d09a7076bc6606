package signing

import (
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
)

// Receipt is what Switchboard attests about one finished call: who answered, for whom (the
// caller's pseudonym towards that partner, never an e-mail or wallet), what it cost, when, and
// the SHA-256 of the result relayed. Its canonical JSON is signed with the service key, the
// same scheme as envelopes.
type Receipt struct {
	RequestID    string         `json:"requestId"`
	Handle       string         `json:"handle"`
	IntentID     string         `json:"intentDefinitionId"`
	UserID       string         `json:"userId"`
	Success      bool           `json:"success"`
	Charges      ReceiptCharges `json:"charges"`
	CreatedAt    string         `json:"createdAt"`  // RFC 3339, UTC
	FinishedAt   string         `json:"finishedAt"` // RFC 3339, UTC
	ResultSHA256 string         `json:"resultSha256"`
	KeyID        string         `json:"keyId"`
	// TaskID names the task the call ran as (a long-running call answered later); absent
	// for a call answered in its own request.
	TaskID string `json:"taskId,omitempty"`
}

// ReceiptCharges are a call's charges in micro-USD.
type ReceiptCharges struct {
	ReservedMicro    int64 `json:"reservedMicro"`
	PartnerFeeMicro  int64 `json:"partnerFeeMicro"`
	PlatformFeeMicro int64 `json:"platformFeeMicro"`
	GasMicro         int64 `json:"gasMicro"`
	RefundedMicro    int64 `json:"refundedMicro"`
	TotalMicro       int64 `json:"totalMicro"`
}

// SignedReceipt is a receipt with its signature (standard base64 of Ed25519 over the
// canonical JSON of Receipt).
type SignedReceipt struct {
	Receipt   Receipt `json:"receipt"`
	Signature string  `json:"signature"`
}

// KeyID names a public key: the first 16 hex digits of the SHA-256 of its SPKI DER.
func KeyID(pub ed25519.PublicKey) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:8])
}

// ResultHash is the resultSha256 of a relayed result: the SHA-256, hex, of its canonical JSON
// (of "null" when there was none).
func ResultHash(result json.RawMessage) string {
	if len(result) == 0 {
		result = json.RawMessage("null")
	}
	canon, err := Canonicalize(result)
	if err != nil {
		canon = result
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:])
}

// SignReceipt signs r with the signer's key (r.KeyID is set to it).
func (s *Signer) SignReceipt(r Receipt) (SignedReceipt, error) {
	priv, id := s.k.signing() // one key for the id and the signature, even mid-rotation
	r.KeyID = id
	raw, err := json.Marshal(r)
	if err != nil {
		return SignedReceipt{}, err
	}
	canon, err := Canonicalize(raw)
	if err != nil {
		return SignedReceipt{}, err
	}
	return SignedReceipt{Receipt: r, Signature: base64.StdEncoding.EncodeToString(ed25519.Sign(priv, canon))}, nil
}

// VerifyReceipt checks a signed receipt against the one of keys its keyId names: the
// signature must be 64 bytes and verify over the receipt's canonical JSON.
func VerifyReceipt(sr SignedReceipt, keys ...ed25519.PublicKey) error {
	sig, err := base64.StdEncoding.DecodeString(sr.Signature)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return errors.New("the receipt's signature is not 64 bytes of standard base64")
	}
	raw, err := json.Marshal(sr.Receipt)
	if err != nil {
		return err
	}
	canon, err := Canonicalize(raw)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if KeyID(k) == sr.Receipt.KeyID && ed25519.Verify(k, canon, sig) {
			return nil
		}
	}
	return fmt.Errorf("the receipt does not verify with the service key %s", sr.Receipt.KeyID)
}

package signing

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Standard Webhooks (standardwebhooks.com, spec version 1.0.0): an event is POSTed with the
// headers webhook-id (the same on every retry: the receiver's idempotency key),
// webhook-timestamp (Unix seconds of the attempt) and webhook-signature, a space-separated list
// of "<version>,<base64 signature>" over "<id>.<timestamp>.<body>". Switchboard sends two:
// "v1," HMAC-SHA256 under the endpoint's secret ("whsec_" + base64, shown once) and "v1a,"
// Ed25519 under the service key (the key published at /.well-known/service-public-key).
const (
	WebhookIDHeader        = "webhook-id"
	WebhookTimestampHeader = "webhook-timestamp"
	WebhookSignatureHeader = "webhook-signature"
	// WebhookSecretPrefix marks an HMAC secret; WebhookPublicKeyPrefix an Ed25519 public key.
	WebhookSecretPrefix    = "whsec_"
	WebhookPublicKeyPrefix = "whpk_"
	// WebhookTolerance is how far a webhook-timestamp may be from the receiver's clock.
	WebhookTolerance = 5 * time.Minute
)

// WebhookContent is what both signatures cover: id.timestamp.body.
func WebhookContent(id string, timestamp int64, body []byte) []byte {
	out := make([]byte, 0, len(id)+len(body)+24)
	out = append(out, id...)
	out = append(out, '.')
	out = strconv.AppendInt(out, timestamp, 10)
	out = append(out, '.')
	return append(out, body...)
}

// WebhookSecretString is an HMAC secret as receivers are given it: "whsec_" + base64.
func WebhookSecretString(secret []byte) string {
	return WebhookSecretPrefix + base64.StdEncoding.EncodeToString(secret)
}

// ParseWebhookSecret reads a "whsec_..." secret (the prefix is optional) into its bytes.
func ParseWebhookSecret(s string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, WebhookSecretPrefix))
	if err != nil || len(b) == 0 {
		return nil, errors.New("a webhook secret is whsec_ followed by base64")
	}
	return b, nil
}

// WebhookPublicKeyString is an Ed25519 public key as Standard Webhooks writes it: "whpk_" + base64.
func WebhookPublicKeyString(pub ed25519.PublicKey) string {
	return WebhookPublicKeyPrefix + base64.StdEncoding.EncodeToString(pub)
}

// SignWebhookV1 is the "v1," signature: HMAC-SHA256 under secret.
func SignWebhookV1(secret []byte, id string, timestamp int64, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(WebhookContent(id, timestamp, body))
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// SignWebhookV1a is the "v1a," signature: Ed25519 under the service key.
func (s *Signer) SignWebhookV1a(id string, timestamp int64, body []byte) string {
	return "v1a," + s.SignBytes(WebhookContent(id, timestamp, body))
}

// WebhookVerifier checks Standard Webhooks signatures. Set Secret to accept "v1," signatures,
// PublicKeys to accept "v1a," ones (every key the service publishes during a rotation); one
// valid signature of either is enough.
type WebhookVerifier struct {
	Secret     []byte
	PublicKeys []ed25519.PublicKey
	Tolerance  time.Duration    // 0 means WebhookTolerance
	Now        func() time.Time // nil means time.Now
}

// ErrWebhookSignature is returned for a webhook no configured key signed.
var ErrWebhookSignature = errors.New("no webhook-signature matches")

// Verify checks a received webhook's headers against its raw body (verify before parsing it:
// a re-serialised body no longer matches) and returns its webhook-id, the receiver's key for
// processing it once.
func (v *WebhookVerifier) Verify(h http.Header, body []byte) (id string, err error) {
	id, tsText, sigs := h.Get(WebhookIDHeader), h.Get(WebhookTimestampHeader), h.Get(WebhookSignatureHeader)
	if id == "" || tsText == "" || sigs == "" {
		return "", errors.New("missing webhook-id, webhook-timestamp or webhook-signature")
	}
	ts, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return "", fmt.Errorf("webhook-timestamp %q is not Unix seconds", tsText)
	}
	now, tol := time.Now, v.Tolerance
	if v.Now != nil {
		now = v.Now
	}
	if tol <= 0 {
		tol = WebhookTolerance
	}
	if d := now().Sub(time.Unix(ts, 0)); d > tol || d < -tol {
		return "", fmt.Errorf("webhook-timestamp is %s from now, more than the %s allowed", d.Round(time.Second), tol)
	}
	content := WebhookContent(id, ts, body)
	for sig := range strings.FieldsSeq(sigs) {
		version, value, ok := strings.Cut(sig, ",")
		if !ok {
			continue
		}
		raw, err := base64.StdEncoding.DecodeString(value)
		if err != nil {
			continue
		}
		switch version {
		case "v1":
			if len(v.Secret) > 0 {
				m := hmac.New(sha256.New, v.Secret)
				m.Write(content)
				if hmac.Equal(m.Sum(nil), raw) {
					return id, nil
				}
			}
		case "v1a":
			for _, pub := range v.PublicKeys {
				if len(pub) == ed25519.PublicKeySize && ed25519.Verify(pub, content, raw) {
					return id, nil
				}
			}
		}
	}
	return "", ErrWebhookSignature
}

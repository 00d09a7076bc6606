package signing_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/signing"
)

func TestSign(t *testing.T) {
	priv := newKey(t)
	s := signing.NewSigner(priv)
	s.Now = func() time.Time { return t0 }
	env := &signing.Envelope{RequestID: "r1", IntentDefinitionID: "i1", UserID: "u1", Args: json.RawMessage(` { "b" : [1.0], "a" : "\u00e9" } `)}
	if err := s.Sign(env); err != nil {
		t.Fatal(err)
	}
	if env.Timestamp != t0.UnixMilli() {
		t.Errorf("timestamp %d", env.Timestamp)
	}
	if string(env.Args) != `{"a":"é","b":[1]}` {
		t.Errorf("args not canonical: %s", env.Args)
	}
	sig, err := base64.StdEncoding.DecodeString(env.ServiceSignature)
	if err != nil || len(sig) != 64 || len(env.ServiceSignature) != signing.SignatureBase64Len {
		t.Fatalf("signature %q", env.ServiceSignature)
	}
	payload, _ := signing.CanonicalPayload(env)
	want := `{"args":{"a":"é","b":[1]},"intentDefinitionId":"i1","requestId":"r1","timestamp":` + itoa(t0.UnixMilli()) + `,"userId":"u1"}`
	if string(payload) != want {
		t.Errorf("payload %s\nwant %s", payload, want)
	}
	if !ed25519.Verify(s.PublicKey(), payload, sig) {
		t.Error("signature does not verify")
	}
	body, _ := signing.MarshalEnvelope(env)
	wantBody := `{"args":{"a":"é","b":[1]},"intentDefinitionId":"i1","requestId":"r1","serviceSignature":"` + env.ServiceSignature + `","timestamp":` + itoa(t0.UnixMilli()) + `,"userId":"u1"}`
	if string(body) != wantBody {
		t.Errorf("body %s", body)
	}

	for name, bad := range map[string]*signing.Envelope{
		"no requestId":     {IntentDefinitionID: "i", UserID: "u"},
		"args array":       {RequestID: "r", Args: json.RawMessage(`[]`)},
		"args null":        {RequestID: "r", Args: json.RawMessage(`null`)},
		"args big integer": {RequestID: "r", Args: json.RawMessage(`{"wei":100000000000000000001}`)},
		"invalid UTF-8":    {RequestID: "r", UserID: "\xff"},
	} {
		if err := s.Sign(bad); err == nil {
			t.Errorf("%s: signed", name)
		}
	}
	if _, err := signing.MarshalEnvelope(&signing.Envelope{RequestID: "r"}); err == nil {
		t.Error("unsigned envelope marshalled")
	}
	empty := &signing.Envelope{RequestID: "r"}
	if err := s.Sign(empty); err != nil || string(empty.Args) != "{}" {
		t.Errorf("empty args: %v %s", err, empty.Args)
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestSignerPublicKeyPEM(t *testing.T) {
	priv := newKey(t)
	s := signing.NewSigner(priv)
	pub, err := signing.ParsePublicKeyPEM(s.PublicKeyPEM())
	if err != nil || !pub.Equal(priv.Public()) || !s.PublicKey().Equal(priv.Public()) {
		t.Fatalf("PEM does not hold the public key: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("NewSigner accepted a short key")
		}
	}()
	signing.NewSigner(ed25519.PrivateKey(make([]byte, 10)))
}

func TestSetHeaders(t *testing.T) {
	env := &signing.Envelope{RequestID: "r", IntentDefinitionID: "i", UserID: "u", Timestamp: 1700000000000, ServiceSignature: "sig"}
	h := http.Header{}
	signing.SetHeaders(h, env, signing.BindingREST)
	want := map[string]string{"Content-Type": "application/json", "Idempotency-Key": "r", "X-Service-Request-Id": "r",
		"X-Service-Intent-Id": "i", "X-Service-Signature": "sig", "X-Service-Timestamp": "1700000000000"}
	for k, v := range want {
		if h.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, h.Get(k), v)
		}
	}
	if len(h) != len(want) {
		t.Errorf("extra headers: %v", h)
	}
	signing.SetHeaders(h, env, signing.BindingMCPHTTP)
	if h.Get("X-Service-User-Id") != "u" {
		t.Error("MCP_HTTP without X-Service-User-Id")
	}
}

// Request IDs are UUIDs (version 7), unique, and ordered as they were made: the invocations
// they key are appended to their index.
func TestNewRequestID(t *testing.T) {
	v7 := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	last := ""
	for range 100 {
		id := signing.NewRequestID()
		if !v7.MatchString(id) || seen[id] || id <= last {
			t.Fatalf("bad, repeated or unordered id %q (after %q)", id, last)
		}
		seen[id], last = true, id
	}
}

func TestPseudonym(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	a := signing.Pseudonym(secret, "acct_1", "partner_A")
	if a != signing.Pseudonym(secret, "acct_1", "partner_A") {
		t.Error("not stable")
	}
	if !regexp.MustCompile(`^u_[a-z2-7]{32}$`).MatchString(a) {
		t.Errorf("format %q", a)
	}
	others := []string{
		signing.Pseudonym(secret, "acct_1", "partner_B"),                   // other partner
		signing.Pseudonym(secret, "acct_2", "partner_A"),                   // other account
		signing.Pseudonym([]byte("another secret"), "acct_1", "partner_A"), // other secret
		signing.Pseudonym(secret, "acct_1p", "artner_A"),                   // no ambiguity in concatenation
	}
	for _, o := range others {
		if o == a {
			t.Errorf("collision %q", o)
		}
	}
	if strings.Contains(a, "acct") {
		t.Error("pseudonym leaks the account id")
	}
	// Fixed value (recomputed independently with Python hmac), so a change of derivation (which would re-key every partner's users) is
	// caught.
	if got := signing.Pseudonym([]byte("k"), "a", "p"); got != pseudonymFixture {
		t.Errorf("derivation changed: %q", got)
	}
}

const pseudonymFixture = "u_larx2pjwk3b72se5wdcp2f6yeowplsbs"

func TestKeysPEM(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "key.pem")
	priv, created, err := signing.LoadOrCreatePrivateKey(path)
	if err != nil || !created {
		t.Fatalf("create: %v %v", created, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v %v", fi.Mode(), err)
	}
	again, created, err := signing.LoadOrCreatePrivateKey(path)
	if err != nil || created || !again.Equal(priv) {
		t.Fatalf("load: %v %v", created, err)
	}
	pubPEM, err := signing.MarshalPublicKeyPEM(priv.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(pubPEM), "-----BEGIN PUBLIC KEY-----") {
		t.Errorf("pub PEM %s", pubPEM)
	}
	pub, err := signing.ParsePublicKeyPEM(pubPEM)
	if err != nil || !pub.Equal(priv.Public()) {
		t.Fatal(err)
	}
	if _, err := signing.ParsePublicKeyPEM([]byte("junk")); err == nil {
		t.Error("junk public key accepted")
	}
	privPEM, _ := os.ReadFile(path)
	if _, err := signing.ParsePublicKeyPEM(privPEM); err == nil {
		t.Error("private key accepted as public")
	}
	if _, err := signing.ParsePrivateKeyPEM(pubPEM); err == nil {
		t.Error("public key accepted as private")
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.pem"), []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := signing.LoadOrCreatePrivateKey(filepath.Join(dir, "bad.pem")); err == nil {
		t.Error("junk key file accepted")
	}
}

package signing_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/signing"
)

var update = flag.Bool("update", false, "regenerate testdata/signing (vectors and test-only key files)")

// The test vectors are signed with a key derived from this published seed string. It is a
// TEST-ONLY key: anybody can recompute it. Never configure it anywhere.
const testSeedPhrase = "switchboard signing test vectors - TEST ONLY - never use this key"

var vectorsDir = filepath.Join("..", "testdata", "signing")

func testKey(t testing.TB) ed25519.PrivateKey {
	t.Helper()
	seed := sha256.Sum256([]byte(testSeedPhrase))
	return ed25519.NewKeyFromSeed(seed[:])
}

// vectorInputs are the sources of testdata/signing/vectors.json. Values are JSON text, kept
// as written (number literals and escapes included) in the file.
var vectorInputs = []struct {
	name  string
	value string
}{
	{"empty object", `{}`},
	{"empty array", `[]`},
	{"null", `null`},
	{"booleans and null kept", `{"t":true,"f":false,"n":null}`},
	{"nested objects sorted at every level", `{"b":{"z":1,"a":{"y":[3,2,1],"x":{}}},"a":[{"d":1,"c":2}]}`},
	{"arrays keep order", `[3,1,2,{"b":0,"a":0},["z","a"]]`},
	{"mixed array", `[null,true,false,"x",{"b":1,"a":2},[],[{}]]`},
	{"whitespace in input removed", "{ \"a\" : [ 1 , 2 ] ,\n\t\"b\" :\r\n \"c d\" }"},
	{"key order is UTF-16 not UTF-8 (U+E000 vs U+1F600)", `{"\uE000":"private use","😀":"emoji","z":"ascii","é":"latin"}`},
	{"key order with supplementary and BMP-high keys, raw", "{\"\ufb01\":1,\"\U00010000\":2,\"\uffff\":3,\"\U0010ffff\":4}"},
	{"unicode keys", `{"ä":1,"a":2,"ß":3,"日本":4,"Z":5,"\u0041":6}`},
	{"integer-like keys sort as strings", `{"10":"a","2":"b","1":"c","a":"d","-1":"e","01":"f","":"g"}`},
	{"emoji", `{"emoji":"😀 🇺🇳 👨‍👩‍👧","escaped pair":"\ud83d\ude00"}`},
	{"html characters not escaped", `{"s":"<script>alert('&amp;')</script>","k<>&":"\u003c\u003e\u0026"}`},
	{"U+2028 and U+2029 not escaped", "{\"raw\":\"a\u2028b\u2029c\",\"escaped\":\"a\\u2028b\\u2029c\"}"},
	{"escapes", `{"s":"quote\" backslash\\ slash\/ \b\f\n\r\t end"}`},
	{"control characters", `{"s":"\u0000\u0001\u0007\u000b\u000e\u001f\u007f\u0080\u00ff","upper hex":"\u001F\u00E9"}`},
	{"integers", `[0,-0,1,-1,42,9007199254740991,-9007199254740991,9007199254740992,123456789012345,1000000]`},
	{"fractions", `[0.1,-0.5,3.14159,1.0,100.00,0.000001,0.0000001,1.5e-7,0.30000000000000004,-0.0]`},
	{"exponents", `[1e21,1e20,1E3,1e+3,1e-7,-1e-7,1E-6,1.5E+300,5e-324,1.7976931348623157e308,123456789e-20,1000000000000000000000,100000000000000000000]`},
	{"numbers as strings stay strings", `{"amount":"12345678901234567890","price":"0.1"}`},
	{"deep nesting", `{"a":{"b":{"c":{"d":{"e":[[[{"f":null}]]]}}}}}`},
}

// envelopeInputs are signed envelopes: payload fields and a fixed timestamp.
var envelopeInputs = []struct {
	name string
	env  signing.Envelope
}{
	{"envelope: sample (a) query", signing.Envelope{
		RequestID: "7f9c2b1e-4d3a-4f6b-9c8d-1a2b3c4d5e6f", IntentDefinitionID: "int_01HZX3", UserID: "u_abcdefghijklmnopqrstuvwxyz234567",
		Args: json.RawMessage(`{"query":"price of ETH on base <now> & later"}`), Timestamp: 1767225600000}},
	{"envelope: sample (b) ticker and days", signing.Envelope{
		RequestID: "0b6b3c3e-8d2f-4a51-9a77-5f0c2d9e4b10", IntentDefinitionID: "int_chart", UserID: "u_2x3y4z",
		Args: json.RawMessage(`{"ticker":"SOL","days":30}`), Timestamp: 1767225600123}},
	{"envelope: empty args", signing.Envelope{
		RequestID: "3d1e8f40-2a7b-4c9d-8e0f-a1b2c3d4e5f6", IntentDefinitionID: "int_empty", UserID: "u_empty",
		Args: json.RawMessage(`{}`), Timestamp: 1767225600000}},
	{"envelope: nested args with unicode", signing.Envelope{
		RequestID: "c0ffee00-1234-4abc-8def-0123456789ab", IntentDefinitionID: "int_ünïcode", UserID: "u_😀",
		Args: json.RawMessage(`{"z":[1,2.5,{"y":null}],"a":{"\uE000":true,"😀":false},"amount":"1000000000000000000000"}`), Timestamp: 1767225600999}},
}

type vectorFile struct {
	Comment      string   `json:"comment"`
	PublicKeyPEM string   `json:"publicKeyPem"`
	Vectors      []vector `json:"vectors"`
}

type vector struct {
	Name      string          `json:"name"`
	Value     json.RawMessage `json:"value"`
	Envelope  json.RawMessage `json:"envelope,omitempty"`
	Canonical string          `json:"canonical"`
	Signature string          `json:"signature"`
}

func buildVectors(t *testing.T) vectorFile {
	t.Helper()
	priv := testKey(t)
	signer := signing.NewSigner(priv)
	vf := vectorFile{
		Comment:      "Canonical JSON and Ed25519 signature vectors. TEST-ONLY key (seed = SHA-256 of the phrase in signing/vectors_test.go); never trust it anywhere. Regenerate: go test ./signing -run TestVectors -update",
		PublicKeyPEM: string(signer.PublicKeyPEM()),
	}
	for _, in := range vectorInputs {
		canon, err := signing.Canonicalize([]byte(in.value))
		if err != nil {
			t.Fatalf("%s: %v", in.name, err)
		}
		vf.Vectors = append(vf.Vectors, vector{
			Name: in.name, Value: json.RawMessage(in.value), Canonical: string(canon),
			Signature: base64.StdEncoding.EncodeToString(ed25519.Sign(priv, canon)),
		})
	}
	for _, in := range envelopeInputs {
		env := in.env
		ts := env.Timestamp
		fixed := *signing.NewSigner(priv)
		fixed.Now = func() time.Time { return time.UnixMilli(ts) }
		if err := fixed.Sign(&env); err != nil {
			t.Fatalf("%s: %v", in.name, err)
		}
		payload, err := signing.CanonicalPayload(&env)
		if err != nil {
			t.Fatal(err)
		}
		body, err := signing.MarshalEnvelope(&env)
		if err != nil {
			t.Fatal(err)
		}
		// The value is the envelope without its signature, written with the original
		// (non-canonical) args and field order to exercise canonicalization.
		value, err := json.Marshal(struct {
			RequestID          string          `json:"requestId"`
			IntentDefinitionID string          `json:"intentDefinitionId"`
			UserID             string          `json:"userId"`
			Args               json.RawMessage `json:"args"`
			Timestamp          int64           `json:"timestamp"`
		}{env.RequestID, env.IntentDefinitionID, env.UserID, in.env.Args, env.Timestamp})
		if err != nil {
			t.Fatal(err)
		}
		vf.Vectors = append(vf.Vectors, vector{
			Name: in.name, Value: value, Envelope: body, Canonical: string(payload), Signature: env.ServiceSignature,
		})
	}
	return vf
}

func encodeVectors(t *testing.T, vf vectorFile) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(vf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestVectors(t *testing.T) {
	priv := testKey(t)
	pub := priv.Public().(ed25519.PublicKey)
	path := filepath.Join(vectorsDir, "vectors.json")
	if *update {
		privPEM, err := signing.MarshalPrivateKeyPEM(priv)
		if err != nil {
			t.Fatal(err)
		}
		pubPEM, _ := signing.MarshalPublicKeyPEM(pub)
		for name, data := range map[string][]byte{
			"vectors.json":              encodeVectors(t, buildVectors(t)),
			"TEST-ONLY-private-key.pem": privPEM,
			"TEST-ONLY-public-key.pem":  pubPEM,
		} {
			if err := os.WriteFile(filepath.Join(vectorsDir, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}

	// The committed key files are the derived test key.
	privPEM, err := os.ReadFile(filepath.Join(vectorsDir, "TEST-ONLY-private-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	filePriv, err := signing.ParsePrivateKeyPEM(privPEM)
	if err != nil || !filePriv.Equal(priv) {
		t.Fatalf("TEST-ONLY-private-key.pem is not the derived test key (err %v)", err)
	}
	pubPEM, err := os.ReadFile(filepath.Join(vectorsDir, "TEST-ONLY-public-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	if filePub, err := signing.ParsePublicKeyPEM(pubPEM); err != nil || !filePub.Equal(pub) {
		t.Fatalf("TEST-ONLY-public-key.pem is not the derived test key (err %v)", err)
	}

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, encodeVectors(t, buildVectors(t))) {
		t.Errorf("%s is out of date: run go test ./signing -run TestVectors -update", path)
	}
	var vf vectorFile
	if err := json.Unmarshal(data, &vf); err != nil {
		t.Fatal(err)
	}
	if filePub, err := signing.ParsePublicKeyPEM([]byte(vf.PublicKeyPEM)); err != nil || !filePub.Equal(pub) {
		t.Fatalf("publicKeyPem in vectors.json is not the test key")
	}
	if len(vf.Vectors) < len(vectorInputs)+len(envelopeInputs) {
		t.Fatalf("only %d vectors", len(vf.Vectors))
	}
	verifier := signing.NewVerifierFromKey(pub)
	for _, v := range vf.Vectors {
		t.Run(v.Name, func(t *testing.T) {
			canon, err := signing.Canonicalize(v.Value)
			if err != nil {
				t.Fatal(err)
			}
			if string(canon) != v.Canonical {
				t.Errorf("canonical\n got %s\nwant %s", canon, v.Canonical)
			}
			again, err := signing.Canonicalize(canon)
			if err != nil || !bytes.Equal(again, canon) {
				t.Errorf("not idempotent: %s (%v)", again, err)
			}
			sig, err := base64.StdEncoding.DecodeString(v.Signature)
			if err != nil || len(sig) != ed25519.SignatureSize {
				t.Fatalf("signature: %v (%d bytes)", err, len(sig))
			}
			if !ed25519.Verify(pub, []byte(v.Canonical), sig) {
				t.Error("signature does not verify")
			}
			if got := base64.StdEncoding.EncodeToString(ed25519.Sign(priv, canon)); got != v.Signature {
				t.Error("signature differs from a fresh signature (Ed25519 is deterministic)")
			}
			if v.Envelope != nil {
				var ts struct {
					Timestamp int64 `json:"timestamp"`
				}
				if err := json.Unmarshal(v.Envelope, &ts); err != nil {
					t.Fatal(err)
				}
				vv := signing.NewVerifierFromKey(pub, signing.WithClock(func() time.Time { return time.UnixMilli(ts.Timestamp) }))
				env, err := vv.Verify(t.Context(), v.Envelope, nil)
				if err != nil {
					t.Fatalf("envelope does not verify: %v", err)
				}
				if env.ServiceSignature != v.Signature {
					t.Error("envelope signature differs from the vector's")
				}
				if p, _ := signing.CanonicalPayload(env); string(p) != v.Canonical {
					t.Errorf("payload of verified envelope\n got %s\nwant %s", p, v.Canonical)
				}
				// Without a matching clock the same envelope is a replay.
				if _, err := verifier.Verify(t.Context(), v.Envelope, nil); err == nil {
					t.Error("old envelope accepted with the real clock")
				}
			}
		})
	}
}

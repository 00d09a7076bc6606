package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-hq/switchboard/signing"
)

// `switchboard verify-receipt` accepts a receipt signed by the key, from an invoke answer or
// alone, and exits non-zero for an altered one or another key.
func TestVerifyReceiptCommand(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	other, _, _ := ed25519.GenerateKey(nil)
	dir := t.TempDir()
	write := func(name string, k ed25519.PublicKey) string {
		pem, _ := signing.MarshalPublicKeyPEM(k)
		p := filepath.Join(dir, name)
		os.WriteFile(p, pem, 0o600)
		return p
	}
	keyFile, otherFile := write("key.pem", pub), write("other.pem", other)
	sr, err := signing.NewSigner(priv).SignReceipt(signing.Receipt{RequestID: "r-1", Handle: "@h", Success: true,
		Charges: signing.ReceiptCharges{TotalMicro: 3000}, ResultSHA256: signing.ResultHash([]byte(`{"a":1}`))})
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := json.Marshal(map[string]any{"success": true, "receipt": sr})
	alone, _ := json.Marshal(sr)
	sr.Receipt.Charges.TotalMicro = 1
	altered, _ := json.Marshal(sr)
	run := func(input []byte, key string) (string, error) {
		var out, errOut bytes.Buffer
		err := runVerifyReceipt(context.Background(), []string{"-key-file", key}, bytes.NewReader(input), &out, &errOut)
		return out.String(), err
	}
	for _, in := range [][]byte{answer, alone} {
		if out, err := run(in, keyFile); err != nil || !strings.HasPrefix(out, "OK: receipt of r-1") {
			t.Fatalf("a good receipt: %q %v", out, err)
		}
	}
	if _, err := run(altered, keyFile); err == nil {
		t.Fatal("an altered receipt verified")
	}
	if _, err := run(alone, otherFile); err == nil {
		t.Fatal("a receipt verified with another key")
	}
	if _, err := run([]byte(`{"success":true}`), keyFile); err == nil {
		t.Fatal("no receipt accepted")
	}
}

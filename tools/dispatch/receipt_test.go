package dispatch_test

import (
	"crypto/ed25519"
	"encoding/json"
	"testing"

	"github.com/switchboard-hq/switchboard/signing"
)

// Every answered call carries Switchboard's signed receipt: it verifies with the service key,
// names the caller only by the partner's pseudonym, hashes the relayed result, and is the same
// when the partner fetches it; altered, it does not verify; another account cannot fetch it.
func TestSignedReceipts(t *testing.T) {
	w := newWorld(t, "sqlite", nil)
	w.publish(t, "@receipted", "/cost", nil)
	status, out := w.invoke(t, w.caller, map[string]any{"message": "@receipted answer"})
	if status != 200 {
		t.Fatalf("invoke: %d %v", status, out)
	}
	raw, _ := json.Marshal(out["receipt"])
	var sr signing.SignedReceipt
	if err := json.Unmarshal(raw, &sr); err != nil {
		t.Fatal(err)
	}
	pub := w.env.App.SigningKey.Public().(ed25519.PublicKey)
	if err := signing.VerifyReceipt(sr, pub); err != nil {
		t.Fatalf("the receipt does not verify: %v", err)
	}
	result, _ := json.Marshal(out["result"])
	if sr.Receipt.RequestID != out["requestId"] || sr.Receipt.Charges.TotalMicro != 3000 || sr.Receipt.ResultSHA256 != signing.ResultHash(result) ||
		sr.Receipt.UserID != w.seen["/cost"][0].UserID || sr.Receipt.KeyID != signing.KeyID(pub) {
		t.Fatalf("receipt: %+v", sr.Receipt)
	}
	tampered := sr
	tampered.Receipt.Charges.TotalMicro = 1
	if signing.VerifyReceipt(tampered, pub) == nil {
		t.Fatal("an altered receipt verified")
	}
	// The partner fetches the same receipt; the caller (not the publisher) cannot.
	status, fetched := w.env.REST(t, "GET", "/v1/partner/receipts/"+sr.Receipt.RequestID, w.publisher, nil)
	again, _ := json.Marshal(fetched)
	if status != 200 || string(again) != string(raw) {
		t.Fatalf("fetched: %d %s\nwant %s", status, again, raw)
	}
	if status, _ := w.env.REST(t, "GET", "/v1/partner/receipts/"+sr.Receipt.RequestID, w.caller, nil); status != 404 {
		t.Fatalf("another account's receipt: %d", status)
	}
}

package partnerexample_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/signing/partnerexample"
)

// The write intent answers one proposed ERC-20 transfer of exactly the args' amount to the
// args' recipient, and refuses amounts it cannot express exactly.
func TestSendProposes(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	signer := signing.NewSigner(priv)
	tok := partnerexample.Token{Chain: "base", Address: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", Symbol: "USDC", Decimals: 6}
	mux := partnerexample.New(signing.NewVerifierFromKey(signer.PublicKey()), partnerexample.Config{CostMicro: 10_000, Send: &tok})
	srv := httptest.NewUnstartedServer(mux)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	call := func(args string) (int, map[string]any) {
		t.Helper()
		fields := signing.CallFields{RequestID: signing.NewRequestID(), IntentDefinitionID: "int_s", UserID: "u_s", Args: json.RawMessage(args)}
		client := &http.Client{Transport: signing.NewRESTRoundTripper(signer, fields, srv.Client().Transport)}
		resp, err := client.Post(srv.URL+partnerexample.SendPath, "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, out
	}
	status, out := call(`{"to":"0x00000000000000000000000000000000000000Bb","amount":"2.5"}`)
	if status != 200 || out["success"] != true || out["providerCostMicro"] != float64(10_000) {
		t.Fatalf("%d %v", status, out)
	}
	txs := out["result"].(map[string]any)["transactions"].([]any)
	want := map[string]any{"chain": "base", "to": "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913", "value": "0",
		"data": "0xa9059cbb" + "00000000000000000000000000000000000000000000000000000000000000bb" +
			"00000000000000000000000000000000000000000000000000000000002625a0"} // 2,500,000 units
	if len(txs) != 1 {
		t.Fatalf("transactions %v", txs)
	}
	for k, v := range want {
		if txs[0].(map[string]any)[k] != v {
			t.Fatalf("%s: %v, want %v", k, txs[0].(map[string]any)[k], v)
		}
	}
	for _, args := range []string{`{}`, `{"to":"0xbb","amount":"1"}`, `{"to":"0x00000000000000000000000000000000000000Bb","amount":"1.0000001"}`,
		`{"to":"0x00000000000000000000000000000000000000Bb","amount":"0"}`, `{"to":"0x00000000000000000000000000000000000000Bb","amount":"-1"}`,
		`{"to":"0x00000000000000000000000000000000000000Bb","amount":"1e3"}`, `{"to":"0x00000000000000000000000000000000000000Bb","amount":"1."}`} {
		if status, out := call(args); status != 400 || out["error"].(map[string]any)["code"] != "BAD_INPUT" {
			t.Errorf("%s: %d %v", args, status, out)
		}
	}
	for in, want := range map[string]string{"2.5": "2500000", "0.000001": "1", "10": "10000000", "007.10": "7100000"} {
		if n, err := partnerexample.Units(in, 6); err != nil || n.String() != want {
			t.Errorf("Units(%s) = %v %v, want %s", in, n, err, want)
		}
	}
	// Without a token, no write intent is served.
	plain := httptest.NewServer(partnerexample.New(signing.NewVerifierFromKey(signer.PublicKey()), partnerexample.Config{}))
	defer plain.Close()
	resp, err := http.Post(plain.URL+partnerexample.SendPath, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("send path without a token: %d", resp.StatusCode)
	}
}

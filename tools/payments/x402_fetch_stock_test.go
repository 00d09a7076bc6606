//go:build x402interop

package payments_test

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/contracts/anviltest"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/ledger"
)

// TestX402FetchPaysAStockSeller: x402_fetch pays a stock x402 seller (interop/x402-seller.mjs:
// @x402/express's paymentMiddleware, its resource server backed by @x402/core's facilitator
// with @x402/evm's exact EVM scheme, settling on anvil), once, and relays its answer and
// settlement; a repeated Idempotency-Key and a price above maxUsd reach the seller unpaid.
// Built only with -tags x402interop: interop/run runs it with SWITCHBOARD_NODE set to Node 22
// and the npm packages installed in interop/.
func TestX402FetchPaysAStockSeller(t *testing.T) {
	node := os.Getenv("SWITCHBOARD_NODE")
	if node == "" {
		t.Fatal("set SWITCHBOARD_NODE to a Node 22 binary with interop/node_modules installed (interop/run does)")
	}
	chain := anviltest.Start(t)
	certFile, keyFile := loopbackCert(t)
	payTo := crypto.PubkeyToAddress(chain.NewKey(t).PublicKey)
	const price = 10_000 // 0.01 USD
	url := startStockSeller(t, node, map[string]string{
		"RPC_URL": chain.URL, "CHAIN_ID": fmt.Sprint(anviltest.ChainID), "TOKEN": chain.Token.Hex(), "PAY_TO": payTo.Hex(),
		"FACILITATOR_KEY": hexutil.Encode(crypto.FromECDSA(chain.NewFundedKey(t))), "PRICE": fmt.Sprint(price),
		"CERT": certFile, "KEY": keyFile,
	})
	env := apptest.Start(t, apptest.Options{Dialect: "sqlite", Config: func(c *app.Config) {
		c.FlatFee = app.FlatFeeConfig{RPCURL: chain.URL, ChainID: anviltest.ChainID, Token: chain.Token.Hex(), Payer: chain.Payer.Hex(),
			RelayerKey: hexutil.Encode(crypto.FromECDSA(chain.Relayer)), Confirmations: 1, PlatformUSD: "0.01", PayoutInterval: "0"}
		c.AllowLocalEndpoints = true
		c.PartnerCAFile = certFile
	}})
	w := &fetchWorld{env: env, chain: chain}
	a := w.agent(t, "stock@example.com", true, nil)
	fetch := func(body map[string]any, headers map[string]string) (int, map[string]any) {
		body["url"] = url + "/weather"
		status, _, out := apptest.DoWith(t, "POST", env.URL+"/v1/x402/fetch", a.key, body, headers)
		return status, out
	}

	hdr := map[string]string{"Idempotency-Key": "stock-1"}
	status, out := fetch(map[string]any{"maxUsd": 0.05}, hdr)
	if status != 200 || out["status"] != float64(200) || !strings.Contains(fmt.Sprint(out["body"]), `"servedPaid":1`) || out["paidUsd"] != 0.01 {
		t.Fatalf("a paid fetch of the stock seller: %d %v", status, out)
	}
	pay, _ := out["payment"].(map[string]any)
	tx, _ := pay["txHash"].(string)
	if pay["payer"] != a.wallet.Hex() || !strings.EqualFold(fmt.Sprint(pay["payTo"]), payTo.Hex()) || pay["network"] != fmt.Sprintf("eip155:%d", anviltest.ChainID) || len(tx) != 66 {
		t.Fatalf("the payment as the stock seller settled it: %v", pay)
	}
	if got := chain.Balance(t, payTo); got != price {
		t.Fatalf("the seller holds %d, want %d", got, price)
	}
	// The same key answers the recorded answer; the seller is not asked again.
	if status, again := fetch(map[string]any{"maxUsd": 0.05}, hdr); status != 200 || fmt.Sprint(again["payment"]) != fmt.Sprint(out["payment"]) {
		t.Fatalf("the retry: %d %v", status, again)
	}
	// A price above maxUsd is refused with nothing signed.
	status, out = fetch(map[string]any{"maxUsd": 0.005}, nil)
	if e, _ := out["error"].(map[string]any); status != 403 || e["code"] != "POLICY_DENIED" {
		t.Fatalf("above maxUsd: %d %v", status, out)
	}
	if got := chain.Balance(t, payTo); got != price || chain.Balance(t, a.wallet) != 10_000_000-price {
		t.Fatalf("after the retry and the refusal: the seller holds %d, the wallet %d", got, chain.Balance(t, a.wallet))
	}
	rows := w.movements(t, a.userID)
	if len(rows) != 1 || rows[0].State != store.InvSucceeded || rows[0].TxHash == nil || *rows[0].TxHash != tx || rows[0].ValueMicro != price {
		t.Fatalf("records %+v", rows)
	}
	if err := env.App.Settled(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := ledger.Check(context.Background(), env.App.Store); err != nil {
		t.Fatalf("ledger-check: %v", err)
	}
}

// startStockSeller runs interop/x402-seller.mjs with env and returns its https URL.
func startStockSeller(t *testing.T, node string, env map[string]string) string {
	t.Helper()
	script, err := filepath.Abs("../../interop/x402-seller.mjs")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, script)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	port := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if p, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
				port <- p
			}
			t.Log("seller: " + sc.Text())
		}
	}()
	select {
	case p := <-port:
		return "https://127.0.0.1:" + p
	case <-time.After(60 * time.Second):
		t.Fatal("the stock seller did not start in 60 s")
		return ""
	}
}

// loopbackCert writes a self-signed certificate for 127.0.0.1 and its key (PEM files): the
// stock seller serves with it, and Switchboard's partner client trusts it as its CA.
func loopbackCert(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	pk, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/signing"
)

func TestParseFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		ok   bool
	}{
		{[]string{"-service-url", "https://x"}, true},
		{[]string{"-public-key-file", "k.pem", "-tls-cert", "c", "-tls-key", "k"}, true},
		{[]string{}, false},
		{[]string{"-service-url", "https://x", "-public-key-file", "k.pem"}, false},
		{[]string{"-service-url", "https://x", "-tls-cert", "c"}, false},
		{[]string{"-nope"}, false},
		{[]string{"-service-url", "https://x", "-send-token", "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"}, true},
		{[]string{"-service-url", "https://x", "-send-token", "0x8335"}, false},
		{[]string{"-service-url", "https://x", "-send-token", "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", "-send-decimals", "99"}, false},
	} {
		_, err := parseFlags(tt.args, &bytes.Buffer{})
		if (err == nil) != tt.ok {
			t.Errorf("%v: %v", tt.args, err)
		}
	}
}

// TestRun starts the command on a free port with a PEM key file and makes one signed call.
func TestRun(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	signer := signing.NewSigner(priv)
	keyFile := filepath.Join(t.TempDir(), "service.pem")
	if err := os.WriteFile(keyFile, signer.PublicKeyPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"-addr", addr, "-public-key-file", keyFile}, io.Discard) }()

	fields := signing.CallFields{RequestID: signing.NewRequestID(), IntentDefinitionID: "i", UserID: "u", Args: json.RawMessage(`{"query":"hi"}`)}
	client := &http.Client{Transport: signing.NewRESTRoundTripper(signer, fields, nil), Timeout: 5 * time.Second}
	var resp *http.Response
	for range 50 {
		resp, err = client.Post(fmt.Sprintf("http://%s/rest", addr), "application/json", nil)
		if err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Success bool `json:"success"`
	}
	json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if resp.StatusCode != 200 || !out.Success {
		t.Errorf("status %d success %v", resp.StatusCode, out.Success)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("shutdown: %v", err)
	}
}

// syncBuffer is the command's log, read while the server writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The README's partner quickstart as a new partner runs it: its openssl line makes the
// certificate the example partner serves HTTPS with; a signed call is answered with the
// quoted rate as providerCostMicro (what Switchboard pays the partner) and logged as
// verified, an unsigned one is refused and logged as refused, each on one line with its
// requestId.
func TestTheQuickstartCertificateAndOneLogLinePerCall(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "<!-- partner-tls -->\n```sh\n")
	if !ok {
		t.Fatal("the README has no partner-tls block")
	}
	line, _, _ := strings.Cut(block, "\n")
	if !strings.Contains(line, "openssl req ") {
		t.Fatalf("the partner quickstart's first line makes no certificate: %q", line)
	}
	if docs, err := os.ReadFile("../../docs/partners.md"); err != nil || !strings.Contains(string(docs), line) {
		t.Fatalf("docs/partners.md does not show the README's certificate line (%v)", err)
	}
	// Run where a checkout would be, with the temporary directory elsewhere: the key and the
	// certificate land in $tls, a fresh directory under TMPDIR, and nothing in the checkout.
	checkout, tmp := t.TempDir(), t.TempDir()
	cmd := exec.Command("bash", "-euc", line+"\nprintf %s \"$tls\"")
	cmd.Dir = checkout
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	made, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", line, err, made)
	}
	if left, _ := os.ReadDir(checkout); len(left) != 0 {
		t.Fatalf("the certificate line wrote %d files into the directory it ran in: %v", len(left), left)
	}
	dir := strings.TrimSpace(string(made))
	if filepath.Dir(dir) != tmp {
		t.Fatalf("$tls is %q, want a new directory under TMPDIR %s", dir, tmp)
	}
	certPEM, err := os.ReadFile(filepath.Join(dir, "cert.pem"))
	if err != nil {
		t.Fatal(err)
	}

	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	signer := signing.NewSigner(priv)
	keyFile := filepath.Join(dir, "service.pem")
	if err := os.WriteFile(keyFile, signer.PublicKeyPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(l.Addr().String())
	l.Close()
	logs := &syncBuffer{}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:" + port, "-public-key-file", keyFile,
			"-tls-cert", filepath.Join(dir, "cert.pem"), "-tls-key", filepath.Join(dir, "key.pem"), "-fee-rate", "0.05"}, logs)
	}()

	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(certPEM) {
		t.Fatal("cert.pem holds no certificate")
	}
	tlsConf := &tls.Config{RootCAs: roots}
	url := "https://localhost:" + port + "/rest" // the name the certificate is for
	fields := signing.CallFields{RequestID: signing.NewRequestID(), IntentDefinitionID: "i", UserID: "u", Args: json.RawMessage(`{"query":"hi"}`)}
	signed := &http.Client{Transport: signing.NewRESTRoundTripper(signer, fields, &http.Transport{TLSClientConfig: tlsConf}), Timeout: 5 * time.Second}
	var resp *http.Response
	for range 100 {
		if resp, err = signed.Post(url, "application/json", nil); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("a signed call over the quickstart's certificate: %v", err)
	}
	var out struct {
		Success           bool   `json:"success"`
		ProviderCostMicro *int64 `json:"providerCostMicro"`
	}
	json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if resp.StatusCode != 200 || !out.Success || out.ProviderCostMicro == nil || *out.ProviderCostMicro != 50_000 {
		t.Fatalf("status %d, success %v, providerCostMicro %v: want the quoted 0.05 USD reported as 50000", resp.StatusCode, out.Success, out.ProviderCostMicro)
	}

	plain := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConf}, Timeout: 5 * time.Second}
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"args":{"query":"hi"}}`))
	req.Header.Set(signing.HeaderRequestID, "forged-1")
	resp, err = plain.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("an unsigned call: %d", resp.StatusCode)
	}

	for i := 0; i < 100 && !strings.Contains(logs.String(), "forged-1"); i++ { // logged after the answer is written
		time.Sleep(10 * time.Millisecond)
	}
	var verified, refused int
	for _, l := range strings.Split(logs.String(), "\n") {
		switch {
		case strings.Contains(l, "signed call verified") && strings.Contains(l, "requestId="+fields.RequestID):
			verified++
		case strings.Contains(l, "signed call refused") && strings.Contains(l, "requestId=forged-1"):
			refused++
		}
	}
	if verified != 1 || refused != 1 {
		t.Fatalf("want one verified and one refused line, got %d and %d:\n%s", verified, refused, logs)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("shutdown: %v", err)
	}
}

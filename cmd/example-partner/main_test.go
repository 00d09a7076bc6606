package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
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

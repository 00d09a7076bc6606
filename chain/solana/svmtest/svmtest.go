// Package svmtest runs a real Solana runtime for tests: litesvm (the npm package installed in
// testdata/svm; scripts/test runs `npm ci` there) served over JSON-RPC by testdata/svm/server.mjs
// on a loopback port, with the harness's own methods to fund wallets, make mints, advance
// the block height and hold broadcasts.
package svmtest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	sol "github.com/gagliardetto/solana-go"
)

// SVM is a running harness.
type SVM struct {
	URL string
}

func dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "testdata", "svm")
}

// node is $SWITCHBOARD_SVM_NODE, else node on the PATH (litesvm runs on Node 20).
func node() string {
	if p := os.Getenv("SWITCHBOARD_SVM_NODE"); p != "" {
		return p
	}
	if p, err := exec.LookPath("node"); err == nil {
		return p
	}
	return "/usr/bin/node"
}

// Start runs the harness, stopped when t ends. It fails the test (never skips) when litesvm
// is not installed.
func Start(t testing.TB) *SVM {
	t.Helper()
	d := dir()
	if _, err := os.Stat(filepath.Join(d, "node_modules", "litesvm")); err != nil {
		t.Fatalf("litesvm is not installed: run `npm ci` in testdata/svm (scripts/test does): %v", err)
	}
	cmd := exec.Command(node(), "server.mjs")
	cmd.Dir = d
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the SVM harness: %v", err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() })
	port := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		port <- strings.TrimSpace(line)
	}()
	select {
	case p := <-port:
		if p == "" {
			t.Fatal("the SVM harness exited before listening")
		}
		return &SVM{URL: "http://127.0.0.1:" + p}
	case <-time.After(30 * time.Second):
		t.Fatal("the SVM harness did not start in 30s")
	}
	return nil
}

// Call runs one JSON-RPC method of the harness and decodes its result into out (nil: ignored).
func (s *SVM) Call(t testing.TB, out any, method string, params ...any) {
	t.Helper()
	if params == nil {
		params = []any{}
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, s.URL, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	if r.Error != nil {
		t.Fatalf("%s: %s", method, r.Error.Message)
	}
	if out != nil {
		if err := json.Unmarshal(r.Result, out); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
	}
}

// NewWallet is a fresh ed25519 seed and its address.
func NewWallet(t testing.TB) (seed []byte, address string) {
	t.Helper()
	seed = make([]byte, ed25519.SeedSize)
	rand.Read(seed)
	return seed, sol.PublicKeyFromBytes(ed25519.NewKeyFromSeed(seed)[32:]).String()
}

// Airdrop gives address lamports.
func (s *SVM) Airdrop(t testing.TB, address string, lamports uint64) {
	s.Call(t, nil, "svm_airdrop", address, lamports)
}

// CreateMint writes a fresh SPL Token mint with decimals and returns its address.
func (s *SVM) CreateMint(t testing.TB, decimals uint8) string {
	t.Helper()
	_, authority := NewWallet(t)
	_, mint := NewWallet(t)
	data := make([]byte, 82)
	binary.LittleEndian.PutUint32(data[0:], 1) // mint authority: Some
	auth := sol.MustPublicKeyFromBase58(authority)
	copy(data[4:36], auth[:])
	binary.LittleEndian.PutUint64(data[36:], 1<<40) // supply
	data[44] = decimals
	data[45] = 1 // initialized
	s.Call(t, nil, "svm_setAccount", mint, 1_461_600, sol.TokenProgramID.String(), base64.StdEncoding.EncodeToString(data))
	return mint
}

// FundTokens writes owner's associated token account of mint holding amount units.
func (s *SVM) FundTokens(t testing.TB, owner, mint string, amount uint64) string {
	t.Helper()
	o, m := sol.MustPublicKeyFromBase58(owner), sol.MustPublicKeyFromBase58(mint)
	ata, _, err := sol.FindAssociatedTokenAddress(o, m)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 165)
	copy(data[0:32], m[:])
	copy(data[32:64], o[:])
	binary.LittleEndian.PutUint64(data[64:], amount)
	data[108] = 1 // initialized
	s.Call(t, nil, "svm_setAccount", ata.String(), 2_039_280, sol.TokenProgramID.String(), base64.StdEncoding.EncodeToString(data))
	return ata.String()
}

// Advance moves the block height on by n blocks, with a new latest blockhash.
func (s *SVM) Advance(t testing.TB, n int) { s.Call(t, nil, "svm_advance", n) }

// Hold, while on, makes broadcasts answered but not landed (held until Release).
func (s *SVM) Hold(t testing.TB, on bool) { s.Call(t, nil, "svm_hold", on) }

// Release lands the held broadcasts still valid (land: late), else forgets them (lost). It
// answers how many landed.
func (s *SVM) Release(t testing.TB, land bool) int {
	var n int
	s.Call(t, &n, "svm_release", land)
	return n
}

// String names the harness in failures.
func (s *SVM) String() string { return fmt.Sprintf("svm at %s", s.URL) }

// Package tokenstest runs local servers that speak the token lookups' upstream protocols —
// CoinGecko, DefiLlama, Jupiter (price v3, tokens v2), EVM JSON-RPC (eth_chainId,
// eth_getBalance, eth_call to Multicall3 aggregate3) and Solana JSON-RPC (getBalance,
// getTokenAccountsByOwner) — answering from the hand-written fixtures in testdata/tokens.
// Each fake can be switched to fail (status, Retry-After, body) or to another fixture.
package tokenstest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// T0 is the instant the fixtures are written around (2026-11-18T11:06:40Z): "fresh" prices are
// stamped a minute before it, stale ones two hours before.
var T0 = time.Unix(1795000000, 0).UTC()

// Dir is the fixture directory, testdata/tokens at the module root.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "testdata", "tokens")
}

var (
	fixMu    sync.Mutex
	fixCache = map[string][]byte{}
)

// Fixture returns a fixture file's bytes (cached).
func Fixture(name string) []byte {
	fixMu.Lock()
	defer fixMu.Unlock()
	if b, ok := fixCache[name]; ok {
		return b
	}
	b, err := os.ReadFile(filepath.Join(Dir(), name))
	if err != nil {
		panic(fmt.Sprintf("fixture %s: %v", name, err))
	}
	fixCache[name] = b
	return b
}

func fixtureExists(name string) bool {
	_, err := os.Stat(filepath.Join(Dir(), name))
	return err == nil
}

func decodeFixture(name string, v any) {
	dec := json.NewDecoder(bytes.NewReader(Fixture(name)))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		panic(fmt.Sprintf("fixture %s: %v", name, err))
	}
}

// failure is a scripted error answer.
type failure struct {
	status     int
	retryAfter string
	bodyFile   string
}

// server is what every fake shares: a test server, a scripted failure, request counting.
type server struct {
	*httptest.Server
	mu    sync.Mutex
	fail  *failure
	hang  bool
	stop  chan struct{}
	calls map[string]int
	last  *http.Request
}

func (s *server) start(t testing.TB, h func(w http.ResponseWriter, r *http.Request)) {
	s.calls = map[string]int{}
	s.stop = make(chan struct{})
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.calls[route(r.URL.Path)]++
		s.last = r.Clone(r.Context())
		f, hang := s.fail, s.hang
		s.mu.Unlock()
		if hang {
			// Never answers: the client's deadline ends it. The body is read first so the
			// server notices the client hanging up; stop ends it when the test does.
			io.Copy(io.Discard, r.Body)
			select {
			case <-r.Context().Done():
			case <-s.stop:
			}
			return
		}
		if f != nil {
			if f.retryAfter != "" {
				w.Header().Set("Retry-After", f.retryAfter)
			}
			ct := "application/json"
			if strings.HasSuffix(f.bodyFile, ".html") {
				ct = "text/html"
			}
			w.Header().Set("Content-Type", ct)
			w.WriteHeader(f.status)
			if f.bodyFile != "" {
				w.Write(Fixture(f.bodyFile))
			}
			return
		}
		h(w, r)
	}))
	t.Cleanup(s.Close)
	t.Cleanup(func() { close(s.stop) }) // runs first: releases hanging handlers
}

// route names a request path for counting: its first two segments.
func route(p string) string {
	p = strings.TrimPrefix(p, "/api/v3") // CoinGecko's base path
	parts := strings.SplitN(strings.Trim(p, "/"), "/", 3)
	if len(parts) > 2 {
		parts = parts[:2]
	}
	return "/" + strings.Join(parts, "/")
}

// Fail makes every request answer status with the fixture bodyFile (may be "") and a
// Retry-After header when retryAfter is not "".
func (s *server) Fail(status int, retryAfter, bodyFile string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = &failure{status: status, retryAfter: retryAfter, bodyFile: bodyFile}
}

// Hang makes every request wait until the client gives up.
func (s *server) Hang() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hang = true
}

// Recover undoes Fail and Hang.
func (s *server) Recover() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail, s.hang = nil, false
}

// Calls counts requests whose path starts with the given route (e.g. "/simple/price"), or all
// requests when route is "".
func (s *server) Calls(prefix string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k, v := range s.calls {
		if prefix == "" || strings.HasPrefix(k, prefix) {
			n += v
		}
	}
	return n
}

// LastRequest is the last request received.
func (s *server) LastRequest() *http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// Upstreams are all the fakes.
type Upstreams struct {
	CoinGecko *CoinGecko
	DefiLlama *DefiLlama
	Jupiter   *Jupiter
	EVM       map[string]*EVMNode // by chain name
	Solana    *SolanaNode
}

// Start runs every fake; evmChains maps EVM chain names to chain ids.
func Start(t testing.TB, evmChains map[string]int64) *Upstreams {
	u := &Upstreams{CoinGecko: NewCoinGecko(t), DefiLlama: NewDefiLlama(t), Jupiter: NewJupiter(t),
		EVM: map[string]*EVMNode{}, Solana: NewSolanaNode(t)}
	for name, id := range evmChains {
		u.EVM[name] = NewEVMNode(t, name, id)
	}
	return u
}

package solana

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// node is a Solana RPC endpoint on loopback speaking JSON-RPC 2.0 as mainnet's does (batches,
// the {context, value} shape of getBalance and getTokenAccountsByOwner), answering from
// testdata/tokens/solana/accounts.json, the fixture the token tools' fake serves too, and
// from per-test overrides. It answers a batch in reverse order: clients must match by id.
type node struct {
	*httptest.Server
	mu       sync.Mutex
	owners   map[string]map[string]json.RawMessage // owner → "lamports" or a program id → value
	errors   map[string]string                     // method → JSON-RPC error message
	requests []string                              // each HTTP body
}

const (
	rich  = "8xzeSGWMVNyH4nNfWQjo5CYSH7a9REAPrs8HZcky3hrv" // SOL, 5 SPL Token accounts, 1 Token-2022
	small = "21wQsDYnQGUbE6SwTwqJTNH37wpXh2jyfoRjWJDctHCz" // no SOL, one JUP account
	usdc  = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"
)

func newNode(t *testing.T) *node {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "tokens", "solana", "accounts.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Owners map[string]map[string]json.RawMessage `json:"owners"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	n := &node{owners: f.Owners, errors: map[string]string{}}
	n.Server = httptest.NewServer(http.HandlerFunc(n.serve))
	t.Cleanup(n.Close)
	return n
}

type request struct {
	JSONRPC string            `json:"jsonrpc"`
	ID      json.RawMessage   `json:"id"`
	Method  string            `json:"method"`
	Params  []json.RawMessage `json:"params"`
}

func (n *node) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	n.mu.Lock()
	defer n.mu.Unlock()
	n.requests = append(n.requests, string(body))
	var reqs []request
	if err := json.Unmarshal(body, &reqs); err != nil {
		var one request
		if err := json.Unmarshal(body, &one); err != nil {
			io.WriteString(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`)
			return
		}
		json.NewEncoder(w).Encode(n.answer(one))
		return
	}
	out := make([]map[string]any, len(reqs))
	for i, req := range reqs {
		out[len(reqs)-1-i] = n.answer(req)
	}
	json.NewEncoder(w).Encode(out)
}

func (n *node) answer(req request) map[string]any {
	fail := func(code int, msg string) map[string]any {
		return map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": code, "message": msg}}
	}
	if msg, ok := n.errors[req.Method]; ok {
		return fail(-32005, msg)
	}
	var owner string
	if req.JSONRPC != "2.0" || len(req.Params) == 0 || json.Unmarshal(req.Params[0], &owner) != nil {
		return fail(-32602, "Invalid params")
	}
	ctx := map[string]any{"apiVersion": "2.2.14", "slot": 341197053}
	value := json.RawMessage("[]")
	switch req.Method {
	case "getBalance":
		value = json.RawMessage("0")
		if v, ok := n.owners[owner]["lamports"]; ok {
			value = v
		}
	case "getTokenAccountsByOwner":
		var filter struct {
			ProgramID string `json:"programId"`
		}
		var cfg struct {
			Encoding string `json:"encoding"`
		}
		if len(req.Params) != 3 || json.Unmarshal(req.Params[1], &filter) != nil || json.Unmarshal(req.Params[2], &cfg) != nil ||
			(filter.ProgramID != TokenProgram && filter.ProgramID != Token2022Program) || cfg.Encoding != "jsonParsed" {
			return fail(-32602, "Invalid params")
		}
		if v, ok := n.owners[owner][filter.ProgramID]; ok {
			value = v
		}
	default:
		return fail(-32601, "Method not found")
	}
	return map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{"context": ctx, "value": value}}
}

// set replaces one owner's lamports or one program's accounts.
func (n *node) set(owner, key, value string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.owners[owner] == nil {
		n.owners[owner] = map[string]json.RawMessage{}
	}
	n.owners[owner][key] = json.RawMessage(value)
}

func (n *node) fail(method, msg string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.errors[method] = msg
}

func (n *node) client() *Client { return NewClient(n.URL, n.Client(), time.Now) }

// account is a jsonParsed token account as getTokenAccountsByOwner returns it.
func account(pubkey, kind, mint, amount string, decimals any) string {
	raw, _ := json.Marshal(map[string]any{"pubkey": pubkey, "account": map[string]any{
		"data": map[string]any{"parsed": map[string]any{"type": kind, "info": map[string]any{
			"mint": mint, "state": "initialized", "isNative": false,
			"tokenAmount": map[string]any{"amount": amount, "decimals": decimals, "uiAmount": 1.5, "uiAmountString": "1.5"}}},
			"program": "spl-token", "space": 165},
		"executable": false, "lamports": 2039280, "owner": TokenProgram, "rentEpoch": uint64(18446744073709551615), "space": 165}})
	return string(raw)
}

func holdingsOf(t *testing.T, c *Client, owners ...string) []*Holdings {
	t.Helper()
	hs, err := c.Holdings(context.Background(), owners)
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != len(owners) {
		t.Fatalf("%d holdings for %d owners", len(hs), len(owners))
	}
	return hs
}

func describe(h *Holdings) string {
	var b strings.Builder
	b.WriteString(h.Lamports.String())
	for _, tok := range h.Tokens {
		b.WriteString(" " + tok.Mint + "=" + tok.Amount.String() + "/" + strconv.Itoa(tok.Decimals) + "@" + programName(tok.Program))
	}
	return b.String()
}

// Every owner's lamports and both token programs' accounts come back from one HTTP request
// of 3 calls per owner, matched by id although the node answers in reverse order; empty
// accounts are left out, and amounts are the raw integers, not uiAmount.
func TestHoldingsReadsLamportsAndBothTokenProgramsInOneBatch(t *testing.T) {
	n := newNode(t)
	hs := holdingsOf(t, n.client(), rich, small, "11111111111111111111111111111111")
	want := []string{
		"2500000000 EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v=150250000/6@SPL Token" +
			" 4iZ35JenmoLepfxDkSas2DXEdFnxRAWnDdjUQKjpW6wJ=1000000000/6@SPL Token" +
			" FkSrZ22YnoLqr53au3orrpGZYe84wg8dKtAPrz1uikJM=42000000000/9@SPL Token" +
			" 2b1kV6DkPAnxd5ixfnxCpjxmKwqjjaYmCZfHsFu24GXo=20500000/6@Token-2022",
		"0 JUPyiwrYJFskUPiHa7hkeR8VUtAeFoSYbKedZNsDvCN=1000000000/6@SPL Token",
		"0", // an owner the chain has never seen
	}
	for i, h := range hs {
		if got := describe(h); got != want[i] {
			t.Errorf("owner %d:\n got %s\nwant %s", i, got, want[i])
		}
	}
	if len(n.requests) != 1 {
		t.Fatalf("%d HTTP requests, want one batch", len(n.requests))
	}
	var batch []request
	if err := json.Unmarshal([]byte(n.requests[0]), &batch); err != nil || len(batch) != 9 {
		t.Fatalf("batch of %d calls (%v), want 9", len(batch), err)
	}
	if batch[0].Method != "getBalance" || batch[1].Method != "getTokenAccountsByOwner" || !bytes.Contains(batch[2].Params[1], []byte(Token2022Program)) {
		t.Fatalf("calls for the first owner: %s", n.requests[0])
	}
}

// One mint held in several accounts (an associated account and others, in either program) is
// one holding: the sum, in the program it was first seen in. Amounts past uint64 stay exact.
func TestHoldingsSumsAMintAcrossAccounts(t *testing.T) {
	n := newNode(t)
	const owner = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM"
	n.set(owner, "lamports", "18446744073709551615")
	n.set(owner, TokenProgram, "["+account("A1", "account", usdc, "1000000", 6)+","+account("A2", "account", usdc, "2500000", 6)+"]")
	n.set(owner, Token2022Program, "["+account("A3", "account", usdc, "18446744073709551615", 6)+"]")
	h := holdingsOf(t, n.client(), owner)[0]
	if h.Lamports.String() != "18446744073709551615" {
		t.Fatalf("lamports %s", h.Lamports)
	}
	want, _ := new(big.Int).SetString("18446744073713051615", 10)
	if len(h.Tokens) != 1 || h.Tokens[0].Amount.Cmp(want) != 0 || h.Tokens[0].Program != TokenProgram || h.Tokens[0].Decimals != 6 {
		t.Fatalf("holdings %s, want one USDC holding of %s in SPL Token", describe(h), want)
	}
}

// An account jsonParsed does not describe as a token account (a mint, a layout the node could
// not parse) is skipped, not read as a holding.
func TestHoldingsSkipsWhatIsNotATokenAccount(t *testing.T) {
	n := newNode(t)
	const owner = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM"
	n.set(owner, TokenProgram, "["+account("M1", "mint", usdc, "5", 6)+","+account("B1", "account", "", "7", 6)+","+account("C1", "account", usdc, "9", 6)+"]")
	if got := describe(holdingsOf(t, n.client(), owner)[0]); got != "0 "+usdc+"=9/6@SPL Token" {
		t.Fatalf("holdings %s", got)
	}
}

// A malformed answer is an error naming the call and what was wrong, never a guessed balance.
func TestHoldingsRefusesMalformedAnswers(t *testing.T) {
	const owner = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM"
	for _, tc := range []struct {
		name, key, value, want string
	}{
		{"negative lamports", "lamports", "-1", "getBalance: malformed value"},
		{"fractional lamports", "lamports", "1.5", "getBalance: malformed value"},
		{"no lamports", "lamports", "null", "getBalance: malformed value"},
		{"a uiAmount-style amount", TokenProgram, "[" + account("X1", "account", usdc, "1.5", 6) + "]", `getTokenAccountsByOwner (SPL Token): account X1: malformed amount "1.5"`},
		{"a negative amount", Token2022Program, "[" + account("X2", "account", usdc, "-3", 6) + "]", `getTokenAccountsByOwner (Token-2022): account X2: malformed amount`},
		{"decimals out of range", TokenProgram, "[" + account("X3", "account", usdc, "3", 37) + "]", `account X3: malformed decimals "37"`},
		{"decimals not an integer", TokenProgram, "[" + account("X4", "account", usdc, "3", 6.5) + "]", `account X4: malformed decimals`},
		{"accounts not a list", TokenProgram, `{"pubkey":"X5"}`, "getTokenAccountsByOwner (SPL Token)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newNode(t)
			n.set(owner, tc.key, tc.value)
			hs, err := n.client().Holdings(context.Background(), []string{rich, owner})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want it to say %q (holdings %v)", err, tc.want, hs)
			}
		})
	}
}

// A JSON-RPC error on any call (a node that rate-limits one method) fails the read and says
// which call it was.
func TestHoldingsReportsRPCErrors(t *testing.T) {
	for method, want := range map[string]string{
		"getBalance":              "getBalance: JSON-RPC error -32005: node is behind",
		"getTokenAccountsByOwner": "getTokenAccountsByOwner (SPL Token): JSON-RPC error -32005: node is behind",
	} {
		n := newNode(t)
		n.fail(method, "node is behind")
		if _, err := n.client().Holdings(context.Background(), []string{rich}); err == nil || err.Error() != want {
			t.Errorf("%s failing: err %v, want %q", method, err, want)
		}
	}
}

// A node that is down or answers something other than JSON-RPC is an error, not empty
// holdings.
func TestHoldingsReportsAnUnreachableOrBrokenNode(t *testing.T) {
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		io.WriteString(w, "<html>502 Bad Gateway</html>")
	}))
	defer broken.Close()
	if _, err := NewClient(broken.URL, broken.Client(), time.Now).Holdings(context.Background(), []string{rich}); err == nil {
		t.Fatal("a 502 from the node read as holdings")
	}
	down := httptest.NewServer(http.NotFoundHandler())
	url := down.URL
	down.Close()
	if _, err := NewClient(url, http.DefaultClient, time.Now).Holdings(context.Background(), []string{rich}); err == nil {
		t.Fatal("a node that is down read as holdings")
	}
}

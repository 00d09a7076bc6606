package tokenstest

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"testing"
)

type rpcRequest struct {
	JSONRPC string            `json:"jsonrpc"`
	ID      json.RawMessage   `json:"id"`
	Method  string            `json:"method"`
	Params  []json.RawMessage `json:"params"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// serveRPC answers a JSON-RPC 2.0 request or batch with call.
func serveRPC(w http.ResponseWriter, r *http.Request, call func(method string, params []json.RawMessage) (any, *rpcError)) {
	body, _ := io.ReadAll(r.Body)
	body = bytes.TrimSpace(body)
	answer := func(req rpcRequest) rpcResponse {
		if req.JSONRPC != "2.0" {
			return rpcResponse{JSONRPC: "2.0", ID: req.ID, Error: &rpcError{-32600, "invalid request"}}
		}
		res, e := call(req.Method, req.Params)
		return rpcResponse{JSONRPC: "2.0", ID: req.ID, Result: res, Error: e}
	}
	if len(body) > 0 && body[0] == '[' {
		var reqs []rpcRequest
		if err := json.Unmarshal(body, &reqs); err != nil {
			writeJSON(w, rpcResponse{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: &rpcError{-32700, "parse error"}})
			return
		}
		out := make([]rpcResponse, len(reqs))
		for i := range reqs { // answer in reverse order: clients must match by id
			out[len(reqs)-1-i] = answer(reqs[i])
		}
		writeJSON(w, out)
		return
	}
	var req rpcRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeJSON(w, rpcResponse{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: &rpcError{-32700, "parse error"}})
		return
	}
	writeJSON(w, answer(req))
}

// evmToken is a contract in the fake EVM state.
type evmToken struct {
	Name     string            `json:"name"`
	Symbol   string            `json:"symbol"`
	Decimals int               `json:"decimals"`
	Bytes32  bool              `json:"bytes32"` // name and symbol answered as bytes32 (e.g. MKR)
	Revert   bool              `json:"revert"`  // every call reverts
	Balances map[string]string `json:"balances"`
}

type evmState struct {
	GasPriceWei string               `json:"gasPriceWei"` // eth_gasPrice's answer (default 1 gwei)
	Native      map[string]string    `json:"native"`
	Tokens      map[string]*evmToken `json:"tokens"`
}

// EVMNode fakes an EVM chain's JSON-RPC endpoint from evm/<chain>.json (an empty chain when
// there is no such file). Contracts not in the state answer balanceOf with 0 and have no
// metadata, like an address without code.
type EVMNode struct {
	server
	ChainID int64
	state   evmState
	smu     sync.Mutex
	errMsg  string
}

// NewEVMNode starts a fake node for chain.
func NewEVMNode(t testing.TB, chain string, chainID int64) *EVMNode {
	n := &EVMNode{ChainID: chainID}
	if file := "evm/" + chain + ".json"; fixtureExists(file) {
		decodeFixture(file, &n.state)
	}
	n.start(t, func(w http.ResponseWriter, r *http.Request) { serveRPC(w, r, n.call) })
	return n
}

// ChainIDOverride makes eth_chainId answer id (a misconfigured endpoint).
func (n *EVMNode) ChainIDOverride(id int64) {
	n.smu.Lock()
	defer n.smu.Unlock()
	n.ChainID = id
}

// RPCError makes every method answer a JSON-RPC error with msg ("" to stop).
func (n *EVMNode) RPCError(msg string) {
	n.smu.Lock()
	defer n.smu.Unlock()
	n.errMsg = msg
}

func (n *EVMNode) call(method string, params []json.RawMessage) (any, *rpcError) {
	n.smu.Lock()
	defer n.smu.Unlock()
	if n.errMsg != "" {
		return nil, &rpcError{-32000, n.errMsg}
	}
	str := func(i int) string {
		var s string
		if i < len(params) {
			json.Unmarshal(params[i], &s)
		}
		return s
	}
	switch method {
	case "eth_chainId":
		return fmt.Sprintf("0x%x", n.ChainID), nil
	case "eth_gasPrice":
		gp := n.state.GasPriceWei
		if gp == "" {
			gp = "1000000000" // 1 gwei
		}
		return "0x" + bigOf(gp).Text(16), nil
	case "eth_getBalance":
		bal := bigOf(n.state.Native[strings.ToLower(str(0))])
		return "0x" + bal.Text(16), nil
	case "eth_call":
		var obj struct {
			To   string `json:"to"`
			Data string `json:"data"`
		}
		if len(params) == 0 || json.Unmarshal(params[0], &obj) != nil {
			return nil, &rpcError{-32602, "invalid params"}
		}
		data, err := hex.DecodeString(strings.TrimPrefix(obj.Data, "0x"))
		if err != nil {
			return nil, &rpcError{-32602, "invalid data"}
		}
		if strings.EqualFold(obj.To, "0xcA11bde05977b3631167028862bE2a173976CA11") && len(data) >= 4 && hex.EncodeToString(data[:4]) == "82ad56cb" {
			out, e := n.aggregate3(data[4:])
			if e != nil {
				return nil, e
			}
			return "0x" + hex.EncodeToString(out), nil
		}
		ok, ret := n.inner(strings.ToLower(obj.To), data)
		if !ok {
			return nil, &rpcError{3, "execution reverted"}
		}
		return "0x" + hex.EncodeToString(ret), nil
	}
	return nil, &rpcError{-32601, "the method " + method + " does not exist/is not available"}
}

func bigOf(s string) *big.Int {
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		return new(big.Int)
	}
	return n
}

// A second, independent reading of the ABI (word-indexed), so the client's encoder is not
// checked against itself.
func wordAt(b []byte, i int) []byte {
	if i < 0 || i+32 > len(b) {
		return nil
	}
	return b[i : i+32]
}

func intAt(b []byte, i int) int {
	w := wordAt(b, i)
	if w == nil {
		return -1
	}
	return int(new(big.Int).SetBytes(w).Int64())
}

func uintWord(n *big.Int) []byte {
	w := make([]byte, 32)
	n.FillBytes(w)
	return w
}

func abiString(s string) []byte {
	out := uintWord(big.NewInt(32))
	out = append(out, uintWord(big.NewInt(int64(len(s))))...)
	padded := make([]byte, (len(s)+31)/32*32)
	copy(padded, s)
	return append(out, padded...)
}

func (n *EVMNode) inner(target string, data []byte) (bool, []byte) {
	tok := n.state.Tokens[target]
	sel := ""
	if len(data) >= 4 {
		sel = hex.EncodeToString(data[:4])
	}
	if tok != nil && tok.Revert {
		return false, nil
	}
	switch sel {
	case "70a08231": // balanceOf(address)
		if len(data) != 36 {
			return false, nil
		}
		holder := "0x" + hex.EncodeToString(data[16:36])
		if tok == nil {
			return true, uintWord(new(big.Int))
		}
		return true, uintWord(bigOf(tok.Balances[holder]))
	case "06fdde03", "95d89b41": // name(), symbol()
		if tok == nil {
			return true, nil // no code: empty return data
		}
		s := tok.Name
		if sel == "95d89b41" {
			s = tok.Symbol
		}
		if tok.Bytes32 {
			w := make([]byte, 32)
			copy(w, s)
			return true, w
		}
		return true, abiString(s)
	case "313ce567": // decimals()
		if tok == nil {
			return true, nil
		}
		return true, uintWord(big.NewInt(int64(tok.Decimals)))
	}
	return false, nil
}

// aggregate3 decodes (address target, bool allowFailure, bytes callData)[] and encodes
// (bool success, bytes returnData)[].
func (n *EVMNode) aggregate3(args []byte) ([]byte, *rpcError) {
	bad := &rpcError{3, "execution reverted: bad aggregate3 calldata"}
	arr := intAt(args, 0)
	count := intAt(args, arr)
	if arr < 0 || count < 0 || count > 10000 {
		return nil, bad
	}
	head := arr + 32
	type res struct {
		ok   bool
		data []byte
	}
	results := make([]res, count)
	for i := range count {
		el := head + intAt(args, head+32*i)
		target := wordAt(args, el)
		allow := intAt(args, el+32)
		dataOff := intAt(args, el+64)
		dataLen := intAt(args, el+dataOff)
		start := el + dataOff + 32
		if target == nil || allow < 0 || dataLen < 0 || start+dataLen > len(args) {
			return nil, bad
		}
		ok, ret := n.inner("0x"+hex.EncodeToString(target[12:]), args[start:start+dataLen])
		if !ok && allow == 0 {
			return nil, &rpcError{3, "execution reverted: Multicall3: call failed"}
		}
		results[i] = res{ok, ret}
	}
	// Encode: offset to array, length, element offsets, elements (success, 0x40, len, data).
	var elems [][]byte
	for _, r := range results {
		ok := int64(0)
		if r.ok {
			ok = 1
		}
		e := append(uintWord(big.NewInt(ok)), uintWord(big.NewInt(64))...)
		e = append(e, uintWord(big.NewInt(int64(len(r.data))))...)
		padded := make([]byte, (len(r.data)+31)/32*32)
		copy(padded, r.data)
		elems = append(elems, append(e, padded...))
	}
	out := append(uintWord(big.NewInt(32)), uintWord(big.NewInt(int64(count)))...)
	off := 32 * count
	for _, e := range elems {
		out = append(out, uintWord(big.NewInt(int64(off)))...)
		off += len(e)
	}
	for _, e := range elems {
		out = append(out, e...)
	}
	return out, nil
}

// SolanaNode fakes a Solana RPC endpoint from solana/accounts.json.
type SolanaNode struct {
	server
	owners map[string]map[string]json.RawMessage
}

// NewSolanaNode starts the fake.
func NewSolanaNode(t testing.TB) *SolanaNode {
	s := &SolanaNode{}
	var f struct {
		Owners map[string]map[string]json.RawMessage `json:"owners"`
	}
	decodeFixture("solana/accounts.json", &f)
	s.owners = f.Owners
	s.start(t, func(w http.ResponseWriter, r *http.Request) { serveRPC(w, r, s.call) })
	return s
}

var solContext = map[string]any{"apiVersion": "2.2.14", "slot": 341197053}

func (s *SolanaNode) call(method string, params []json.RawMessage) (any, *rpcError) {
	var owner string
	if len(params) == 0 || json.Unmarshal(params[0], &owner) != nil {
		return nil, &rpcError{-32602, "Invalid params: missing pubkey"}
	}
	o := s.owners[owner]
	switch method {
	case "getBalance":
		lamports := json.RawMessage("0")
		if v, ok := o["lamports"]; ok {
			lamports = v
		}
		return map[string]any{"context": solContext, "value": lamports}, nil
	case "getTokenAccountsByOwner":
		var filter struct {
			ProgramID string `json:"programId"`
		}
		var cfg struct {
			Encoding string `json:"encoding"`
		}
		if len(params) < 3 || json.Unmarshal(params[1], &filter) != nil || json.Unmarshal(params[2], &cfg) != nil || filter.ProgramID == "" {
			return nil, &rpcError{-32602, "Invalid params"}
		}
		if cfg.Encoding != "jsonParsed" {
			return nil, &rpcError{-32602, "test fake: only jsonParsed encoding"}
		}
		accts := json.RawMessage("[]")
		if v, ok := o[filter.ProgramID]; ok {
			accts = v
		}
		return map[string]any{"context": solContext, "value": accts}, nil
	}
	return nil, &rpcError{-32601, "Method not found"}
}

package contracts

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/switchboard-hq/switchboard/chain/jsonrpc"
)

// The node's JSON-RPC, the few methods the relayer uses, over chain/jsonrpc; transactions are
// EIP-1559 (or EIP-155 legacy on a chain without a base fee), encoded with go-ethereum's rlp
// and signed here. This stands in for go-ethereum's ethclient and bind, which import
// core/types and with it KZG, BLS12-381 and the cgo libsecp256k1: an eighth of the service's
// cold build (docs/performance.md, "The first build") for twelve RPC methods.

// maxBody bounds one RPC answer (a receipt or a block range's logs).
const maxBody = 32 << 20

// errNotFound is a null answer: no such block, receipt.
var errNotFound = errors.New("not found")

// ErrNoCode is a call to an address without a contract.
var ErrNoCode = errors.New("no contract code at given address")

type node struct {
	rpc  *jsonrpc.Client
	http *http.Client
}

func newNode(rawURL string) (*node, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("want an http:// or https:// JSON-RPC URL")
	}
	hc := &http.Client{}
	return &node{rpc: jsonrpc.New(rawURL, hc, maxBody, time.Now), http: hc}, nil
}

// call runs method and decodes its result into result (nil: ignored).
func (n *node) call(ctx context.Context, result any, method string, params ...any) error {
	if params == nil {
		params = []any{}
	}
	c := &jsonrpc.Call{Method: method, Params: params}
	if err := n.rpc.Batch(ctx, c); err != nil {
		return err
	}
	var rpcErr *jsonrpc.Error
	if errors.As(c.Err, &rpcErr) {
		return &nodeError{rpcErr}
	}
	if c.Err != nil {
		return c.Err
	}
	if string(c.Result) == "null" {
		return errNotFound
	}
	if result == nil {
		return nil
	}
	if err := json.Unmarshal(c.Result, result); err != nil {
		return fmt.Errorf("%s: malformed result: %w", method, err)
	}
	return nil
}

// nodeError is the node's JSON-RPC error, read as its message alone ("execution reverted:
// reason", "nonce too low"), as go-ethereum's client showed it.
type nodeError struct{ err *jsonrpc.Error }

func (e *nodeError) Error() string { return e.err.Message }
func (e *nodeError) Unwrap() error { return e.err }

func (n *node) close() { n.http.CloseIdleConnections() }

func blockTag(number *big.Int) string {
	if number == nil {
		return "latest"
	}
	return hexutil.EncodeBig(number)
}

type header struct {
	Number  *hexutil.Big   `json:"number"`
	Time    hexutil.Uint64 `json:"timestamp"`
	BaseFee *hexutil.Big   `json:"baseFeePerGas"`
}

func (n *node) header(ctx context.Context, number *big.Int) (*header, error) {
	var h header
	if err := n.call(ctx, &h, "eth_getBlockByNumber", blockTag(number), false); err != nil {
		return nil, err
	}
	return &h, nil
}

func (n *node) blockNumber(ctx context.Context) (uint64, error) {
	var b hexutil.Uint64
	err := n.call(ctx, &b, "eth_blockNumber")
	return uint64(b), err
}

func (n *node) code(ctx context.Context, at common.Address, tag string) ([]byte, error) {
	var code hexutil.Bytes
	err := n.call(ctx, &code, "eth_getCode", at, tag)
	return code, err
}

func (n *node) quantity(ctx context.Context, method string, params ...any) (*big.Int, error) {
	var q hexutil.Big
	if err := n.call(ctx, &q, method, params...); err != nil {
		return nil, err
	}
	return q.ToInt(), nil
}

// callMsg is eth_call's and eth_estimateGas's transaction object, as ethclient sends it.
type callMsg struct {
	From                 common.Address  `json:"from"`
	To                   *common.Address `json:"to"`
	Input                hexutil.Bytes   `json:"input,omitempty"`
	Value                *hexutil.Big    `json:"value,omitempty"`
	GasPrice             *hexutil.Big    `json:"gasPrice,omitempty"`
	MaxFeePerGas         *hexutil.Big    `json:"maxFeePerGas,omitempty"`
	MaxPriorityFeePerGas *hexutil.Big    `json:"maxPriorityFeePerGas,omitempty"`
}

func (n *node) estimateGas(ctx context.Context, msg callMsg) (uint64, error) {
	var gas hexutil.Uint64
	err := n.call(ctx, &gas, "eth_estimateGas", msg)
	return uint64(gas), err
}

func (n *node) ethCall(ctx context.Context, msg callMsg) ([]byte, error) {
	var out hexutil.Bytes
	err := n.call(ctx, &out, "eth_call", msg, "latest")
	return out, err
}

func (n *node) sendRaw(ctx context.Context, t *tx) error {
	return n.call(ctx, nil, "eth_sendRawTransaction", hexutil.Bytes(t.raw))
}

// Receipt is a mined transaction's outcome.
type Receipt struct {
	TxHash      common.Hash
	Status      uint64 // ReceiptStatusSuccessful or 0 (reverted)
	BlockNumber uint64
	Logs        []Log
}

// ReceiptStatusSuccessful is a receipt's Status when the transaction succeeded.
const ReceiptStatusSuccessful = 1

// Log is one event a transaction emitted.
type Log struct {
	Address     common.Address
	Topics      []common.Hash
	Data        []byte
	BlockNumber uint64
	TxHash      common.Hash
	Index       uint64
}

type rpcLog struct {
	Address     common.Address `json:"address"`
	Topics      []common.Hash  `json:"topics"`
	Data        hexutil.Bytes  `json:"data"`
	BlockNumber hexutil.Uint64 `json:"blockNumber"`
	TxHash      common.Hash    `json:"transactionHash"`
	Index       hexutil.Uint64 `json:"logIndex"`
}

func (l rpcLog) log() Log {
	return Log{Address: l.Address, Topics: l.Topics, Data: l.Data, BlockNumber: uint64(l.BlockNumber), TxHash: l.TxHash, Index: uint64(l.Index)}
}

func (n *node) receipt(ctx context.Context, hash common.Hash) (*Receipt, error) {
	var r struct {
		TxHash      common.Hash    `json:"transactionHash"`
		Status      hexutil.Uint64 `json:"status"`
		BlockNumber hexutil.Uint64 `json:"blockNumber"`
		Logs        []rpcLog       `json:"logs"`
	}
	if err := n.call(ctx, &r, "eth_getTransactionReceipt", hash); err != nil {
		return nil, err
	}
	out := &Receipt{TxHash: r.TxHash, Status: uint64(r.Status), BlockNumber: uint64(r.BlockNumber)}
	for _, l := range r.Logs {
		out.Logs = append(out.Logs, l.log())
	}
	return out, nil
}

// filterLogs is eth_getLogs of address's logs from block `from` to the latest, matching topics
// (a nil position matches anything).
func (n *node) filterLogs(ctx context.Context, address common.Address, from uint64, topics [][]common.Hash) ([]Log, error) {
	var logs []rpcLog
	q := map[string]any{"address": []common.Address{address}, "topics": topics,
		"fromBlock": hexutil.EncodeUint64(from), "toBlock": "latest"}
	if err := n.call(ctx, &logs, "eth_getLogs", q); err != nil {
		return nil, err
	}
	out := make([]Log, len(logs))
	for i, l := range logs {
		out[i] = l.log()
	}
	return out, nil
}

// tx is a signed transaction: dynamic, EIP-1559 with tip and fee cap; else EIP-155 legacy at
// gasPrice.
type tx struct {
	chainID           *big.Int
	nonce             uint64
	gasPrice          *big.Int
	gasTipCap, feeCap *big.Int
	gas               uint64
	to                *common.Address // nil: contract creation
	value             *big.Int
	data              []byte
	raw               []byte // what eth_sendRawTransaction takes
	hash              common.Hash
	dynamic           bool
}

// tip and fee cap as the replacement bumps them (a legacy transaction's are its gas price).
func (t *tx) tip() *big.Int {
	if t.dynamic {
		return t.gasTipCap
	}
	return t.gasPrice
}

func (t *tx) cap() *big.Int {
	if t.dynamic {
		return t.feeCap
	}
	return t.gasPrice
}

// sign fills t's raw encoding and hash, signed by key.
func (t *tx) sign(key *ecdsa.PrivateKey) error {
	to := []byte{}
	if t.to != nil {
		to = t.to.Bytes()
	}
	fields := []any{t.nonce, t.gasPrice, t.gas, to, t.value, t.data}
	if t.dynamic {
		fields = []any{t.chainID, t.nonce, t.gasTipCap, t.feeCap, t.gas, to, t.value, t.data, []any{}}
	}
	unsigned := fields
	if !t.dynamic {
		unsigned = append(append([]any{}, fields...), t.chainID, uint64(0), uint64(0)) // EIP-155
	}
	enc, err := rlp.EncodeToBytes(unsigned)
	if err != nil {
		return err
	}
	if t.dynamic {
		enc = append([]byte{0x02}, enc...)
	}
	sig, err := signHash(Keccak256(enc).Bytes(), key)
	if err != nil {
		return err
	}
	r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:64])
	v := new(big.Int).SetUint64(uint64(sig[64]))
	if !t.dynamic {
		v.Add(v, new(big.Int).Add(new(big.Int).Lsh(t.chainID, 1), big.NewInt(35)))
	}
	raw, err := rlp.EncodeToBytes(append(append([]any{}, fields...), v, r, s))
	if err != nil {
		return err
	}
	if t.dynamic {
		raw = append([]byte{0x02}, raw...)
	}
	t.raw, t.hash = raw, Keccak256(raw)
	return nil
}

// createAddress is the address of the contract from deploys with nonce.
func createAddress(from common.Address, nonce uint64) common.Address {
	enc, _ := rlp.EncodeToBytes([]any{from.Bytes(), nonce})
	return common.BytesToAddress(Keccak256(enc).Bytes()[12:])
}

package evm

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/switchboard-hq/switchboard/chain/jsonrpc"
)

// What a wallet's send needs of the node: a priced transaction (fees, gas), the pending
// nonce, the broadcast and the receipt.

// ErrKnown is a broadcast the node refused because it already holds that transaction: a
// re-broadcast of a recorded send, not a failure.
var ErrKnown = errors.New("the node already knows the transaction")

// ErrNonceTooLow is a broadcast whose nonce the chain has already used: by this transaction
// (mined) or by another one (this one is dropped). Only the receipt tells which.
var ErrNonceTooLow = errors.New("nonce already used")

// Transfer is what a wallet moves: Amount of the native coin (Token nil, in wei) or of the
// ERC-20 at Token (in its units).
type Transfer struct {
	From   [20]byte
	To     [20]byte
	Token  *[20]byte
	Amount *big.Int
}

// Call is the transaction that makes the transfer: to the recipient with value, or to the
// token with transfer calldata.
func (tr Transfer) Call() (to [20]byte, value *big.Int, data []byte, err error) {
	if tr.Amount == nil || tr.Amount.Sign() <= 0 {
		return to, nil, nil, errors.New("a transfer moves a positive amount")
	}
	if tr.Token == nil {
		return tr.To, new(big.Int).Set(tr.Amount), nil, nil
	}
	data, err = TransferData(tr.To, tr.Amount)
	return *tr.Token, new(big.Int), data, err
}

type txObject struct {
	From                 string `json:"from"`
	To                   string `json:"to"`
	Value                string `json:"value"`
	Data                 string `json:"data,omitempty"`
	MaxFeePerGas         string `json:"maxFeePerGas,omitempty"`
	MaxPriorityFeePerGas string `json:"maxPriorityFeePerGas,omitempty"`
}

func hexQ(n *big.Int) string { return "0x" + n.Text(16) }

// one runs a single call through batch and returns its result.
func (c *Client) one(ctx context.Context, method string, params ...any) (json.RawMessage, error) {
	if params == nil {
		params = []any{}
	}
	call := &jsonrpc.Call{Method: method, Params: params}
	if err := c.batch(ctx, call); err != nil {
		return nil, err
	}
	if call.Err != nil {
		return nil, fmt.Errorf("%s: %w", method, call.Err)
	}
	return call.Result, nil
}

// Fees are EIP-1559 fees per gas in wei.
type Fees struct {
	Tip    *big.Int // max priority fee
	Cap    *big.Int // max fee: tip + twice the next block's base fee, so six full blocks in a row still include it
	Base   *big.Int // the next block's base fee
	Quoted *big.Int // what one gas is expected to cost: base + tip
}

// SuggestFees reads the next block's base fee (eth_feeHistory) and the node's priority fee
// (eth_maxPriorityFeePerGas) in one round trip.
func (c *Client) SuggestFees(ctx context.Context) (Fees, error) {
	hist := &jsonrpc.Call{Method: "eth_feeHistory", Params: []any{"0x1", "latest", []int{}}}
	tip := &jsonrpc.Call{Method: "eth_maxPriorityFeePerGas", Params: []any{}}
	if err := c.batch(ctx, hist, tip); err != nil {
		return Fees{}, err
	}
	return readFees(hist, tip)
}

// readFees reads the answers of eth_feeHistory and eth_maxPriorityFeePerGas as fees.
func readFees(hist, tip *jsonrpc.Call) (Fees, error) {
	if hist.Err != nil {
		return Fees{}, fmt.Errorf("eth_feeHistory: %w", hist.Err)
	}
	if tip.Err != nil {
		return Fees{}, fmt.Errorf("eth_maxPriorityFeePerGas: %w", tip.Err)
	}
	var h struct {
		BaseFeePerGas []json.RawMessage `json:"baseFeePerGas"`
	}
	if err := json.Unmarshal(hist.Result, &h); err != nil || len(h.BaseFeePerGas) == 0 {
		return Fees{}, fmt.Errorf("eth_feeHistory: no base fee (a chain without EIP-1559?)")
	}
	base, err := quantity(h.BaseFeePerGas[len(h.BaseFeePerGas)-1]) // the last is the next block's
	if err != nil {
		return Fees{}, fmt.Errorf("eth_feeHistory: %w", err)
	}
	t, err := quantity(tip.Result)
	if err != nil {
		return Fees{}, fmt.Errorf("eth_maxPriorityFeePerGas: %w", err)
	}
	fc := new(big.Int).Add(t, new(big.Int).Lsh(base, 1))
	return Fees{Tip: t, Cap: fc, Base: base, Quoted: new(big.Int).Add(base, t)}, nil
}

// EstimateGas is the node's gas estimate for the transfer at fees (eth_estimateGas): it fails
// when the transfer would revert (not enough tokens, not enough coin for value and gas).
func (c *Client) EstimateGas(ctx context.Context, tr Transfer, fees Fees) (uint64, error) {
	to, value, data, err := tr.Call()
	if err != nil {
		return 0, err
	}
	obj := txObject{From: hexAddr(tr.From), To: hexAddr(to), Value: hexQ(value),
		MaxFeePerGas: hexQ(fees.Cap), MaxPriorityFeePerGas: hexQ(fees.Tip)}
	if len(data) > 0 {
		obj.Data = "0x" + hex.EncodeToString(data)
	}
	res, err := c.one(ctx, "eth_estimateGas", obj)
	if err != nil {
		return 0, err
	}
	g, err := quantity(res)
	if err != nil || !g.IsUint64() {
		return 0, fmt.Errorf("eth_estimateGas: malformed gas %s", res)
	}
	return g.Uint64(), nil
}

// Quote prices the transfer: its fees and gas, everything of the transaction but the nonce.
// Its fee estimate is Gas x Fees.Quoted; at most Gas x GasFeeCap is paid.
func (c *Client) Quote(ctx context.Context, tr Transfer) (*Tx, Fees, error) {
	fees, err := c.SuggestFees(ctx)
	if err != nil {
		return nil, Fees{}, err
	}
	gas, err := c.EstimateGas(ctx, tr, fees)
	if err != nil {
		return nil, Fees{}, err
	}
	to, value, data, _ := tr.Call()
	return &Tx{ChainID: c.chainID, GasTipCap: fees.Tip, GasFeeCap: fees.Cap, Gas: gas, To: to, Value: value, Data: data}, fees, nil
}

// PendingNonce is the next nonce of addr counting the node's pending transactions.
func (c *Client) PendingNonce(ctx context.Context, addr [20]byte) (uint64, error) {
	return c.nonceAt(ctx, addr, "pending")
}

// LatestNonce is the number of addr's transactions in mined blocks.
func (c *Client) LatestNonce(ctx context.Context, addr [20]byte) (uint64, error) {
	return c.nonceAt(ctx, addr, "latest")
}

func (c *Client) nonceAt(ctx context.Context, addr [20]byte, tag string) (uint64, error) {
	res, err := c.one(ctx, "eth_getTransactionCount", hexAddr(addr), tag)
	if err != nil {
		return 0, err
	}
	n, err := quantity(res)
	if err != nil || !n.IsUint64() {
		return 0, fmt.Errorf("eth_getTransactionCount: malformed nonce %s", res)
	}
	return n.Uint64(), nil
}

// SendRaw broadcasts a signed transaction (eth_sendRawTransaction). A node that already holds
// it answers ErrKnown; one whose chain used its nonce, ErrNonceTooLow.
func (c *Client) SendRaw(ctx context.Context, raw []byte) error {
	_, err := c.one(ctx, "eth_sendRawTransaction", "0x"+hex.EncodeToString(raw))
	var rpcErr *jsonrpc.Error
	if err == nil || !errors.As(err, &rpcErr) {
		return err
	}
	msg := strings.ToLower(rpcErr.Message)
	switch {
	case strings.Contains(msg, "already known"), strings.Contains(msg, "already imported"),
		strings.Contains(msg, "known transaction"), strings.Contains(msg, "already exists"):
		return fmt.Errorf("%w: %w", ErrKnown, err)
	case strings.Contains(msg, "nonce too low"), strings.Contains(msg, "nonce has already been used"):
		return fmt.Errorf("%w: %w", ErrNonceTooLow, err)
	}
	return err
}

// Receipt is a mined transaction's outcome.
type Receipt struct {
	Success     bool
	BlockNumber uint64
	GasUsed     uint64
	// EffectiveGasPrice is what one gas cost, wei: GasUsed x EffectiveGasPrice is the fee paid.
	EffectiveGasPrice *big.Int
}

// Receipt is hash's receipt (eth_getTransactionReceipt); found is false while it is not mined
// (or the node never saw it).
func (c *Client) Receipt(ctx context.Context, hash [32]byte) (r *Receipt, found bool, err error) {
	res, err := c.one(ctx, "eth_getTransactionReceipt", "0x"+hex.EncodeToString(hash[:]))
	if err != nil {
		return nil, false, err
	}
	if string(res) == "null" || len(res) == 0 {
		return nil, false, nil
	}
	var raw struct {
		Status            json.RawMessage `json:"status"`
		BlockNumber       json.RawMessage `json:"blockNumber"`
		GasUsed           json.RawMessage `json:"gasUsed"`
		EffectiveGasPrice json.RawMessage `json:"effectiveGasPrice"`
	}
	if err := json.Unmarshal(res, &raw); err != nil {
		return nil, false, fmt.Errorf("eth_getTransactionReceipt: %w", err)
	}
	var q [4]*big.Int
	for i, f := range []json.RawMessage{raw.Status, raw.BlockNumber, raw.GasUsed, raw.EffectiveGasPrice} {
		if q[i], err = quantity(f); err != nil {
			return nil, false, fmt.Errorf("eth_getTransactionReceipt: %w", err)
		}
	}
	return &Receipt{Success: q[0].Sign() == 1, BlockNumber: q[1].Uint64(), GasUsed: q[2].Uint64(), EffectiveGasPrice: q[3]}, true, nil
}

// BlockNumber is the latest block's number.
func (c *Client) BlockNumber(ctx context.Context) (uint64, error) {
	res, err := c.one(ctx, "eth_blockNumber")
	if err != nil {
		return 0, err
	}
	n, err := quantity(res)
	if err != nil {
		return 0, fmt.Errorf("eth_blockNumber: %w", err)
	}
	return n.Uint64(), nil
}

package evm

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"unicode/utf8"

	"github.com/switchboard-hq/switchboard/chain/jsonrpc"
)

// A partner-proposed transaction (issue 49 item 2): what it does to the wallet, read from its
// value and calldata, and whether it runs, simulated from the wallet's address before anything
// is signed. The decoded effect is what the calldata claims of a standard ERC-20; a contract
// may do anything, which is why the simulation runs and the policies judge the contract.

// ERC-20 selectors a proposal is decoded by (keccak256 of the signature, first four bytes).
var (
	SelTransferFrom = [4]byte{0x23, 0xb8, 0x72, 0xdd} // transferFrom(address,address,uint256)
	SelApprove      = [4]byte{0x09, 0x5e, 0xa7, 0xb3} // approve(address,uint256)
	selError        = [4]byte{0x08, 0xc3, 0x79, 0xa0} // Error(string): require's revert
	selPanic        = [4]byte{0x4e, 0x48, 0x7b, 0x71} // Panic(uint256): assert, overflow
)

// Effect kinds.
const (
	EffectNative       = "native"       // value to an address, no calldata
	EffectTransfer     = "transfer"     // ERC-20 transfer(to, amount)
	EffectTransferFrom = "transferFrom" // ERC-20 transferFrom(owner, to, amount)
	EffectApprove      = "approve"      // ERC-20 approve(spender, amount)
	EffectCall         = "call"         // any other contract call, named by its selector
)

// unlimitedFloor is the least approval named unlimited: 2^255 (wallets and explorers show
// 2^256-1 and its near neighbours as "unlimited"; no real amount comes near).
var unlimitedFloor = new(big.Int).Lsh(big.NewInt(1), 255)

// Proposal is a transaction a partner proposes the wallet From makes.
type Proposal struct {
	From  [20]byte
	To    [20]byte
	Value *big.Int // wei; nil is 0
	Data  []byte
}

func (p Proposal) value() *big.Int {
	if p.Value == nil {
		return new(big.Int)
	}
	return new(big.Int).Set(p.Value)
}

// Effect is what a proposal does to the wallet, as decoded from it.
type Effect struct {
	Kind     string
	Contract [20]byte // the transaction's to
	Value    *big.Int // wei the wallet sends with it (every kind)
	// The ERC-20 kinds: the token is Contract; Amount its units; Recipient who receives them
	// (approve: the spender); Owner whose tokens transferFrom moves.
	Recipient [20]byte
	Owner     *[20]byte
	Amount    *big.Int
	Unlimited bool   // approve of 2^255 or more: named unlimited
	Selector  string // call: 0x and the calldata's first four bytes (fewer when it is shorter)
}

// TokenOut reports the token units the wallet itself gives away or lets be taken: a transfer's
// amount, a transferFrom's from the wallet, an approval's allowance; nil when none.
func (e Effect) TokenOut(wallet [20]byte) *big.Int {
	switch e.Kind {
	case EffectTransfer, EffectApprove:
		return e.Amount
	case EffectTransferFrom:
		if e.Owner != nil && *e.Owner == wallet {
			return e.Amount
		}
	}
	return nil
}

// Decode reads a proposal's effect. The ERC-20 kinds are read only from calldata of exactly
// their arguments with clean address words: anything else is a contract call by its selector,
// never a transfer shown from a guess.
func Decode(p Proposal) Effect {
	e := Effect{Kind: EffectNative, Contract: p.To, Value: p.value(), Recipient: p.To}
	if len(p.Data) == 0 {
		return e
	}
	e.Kind, e.Recipient = EffectCall, [20]byte{}
	if len(p.Data) < 4 {
		e.Selector = "0x" + hex.EncodeToString(p.Data)
		return e
	}
	var sel [4]byte
	copy(sel[:], p.Data)
	e.Selector = "0x" + hex.EncodeToString(sel[:])
	args := p.Data[4:]
	switch {
	case sel == SelTransfer && len(args) == 64 && isAddrWord(args[:32]):
		e.Kind = EffectTransfer
		copy(e.Recipient[:], args[12:32])
		e.Amount = new(big.Int).SetBytes(args[32:64])
	case sel == SelApprove && len(args) == 64 && isAddrWord(args[:32]):
		e.Kind = EffectApprove
		copy(e.Recipient[:], args[12:32])
		e.Amount = new(big.Int).SetBytes(args[32:64])
		e.Unlimited = e.Amount.Cmp(unlimitedFloor) >= 0
	case sel == SelTransferFrom && len(args) == 96 && isAddrWord(args[:32]) && isAddrWord(args[32:64]):
		e.Kind = EffectTransferFrom
		var owner [20]byte
		copy(owner[:], args[12:32])
		e.Owner = &owner
		copy(e.Recipient[:], args[44:64])
		e.Amount = new(big.Int).SetBytes(args[64:96])
	default:
		return e
	}
	e.Selector = ""
	return e
}

func isAddrWord(w []byte) bool {
	for _, b := range w[:12] {
		if b != 0 {
			return false
		}
	}
	return true
}

// ApproveData is the calldata of an ERC-20 approve of amount token units to spender.
func ApproveData(spender [20]byte, amount *big.Int) ([]byte, error) {
	if amount.Sign() < 0 || amount.BitLen() > 256 {
		return nil, fmt.Errorf("approve amount %s is not a uint256", amount)
	}
	out := append([]byte{}, SelApprove[:]...)
	out = append(out, word(spender[:])...)
	return append(out, word(amount.Bytes())...), nil
}

// ErrSimulationFailed is a proposal that does not run from the wallet: it reverts, or the node
// refuses it (funds for its value and gas). Such a transaction is never signed.
var ErrSimulationFailed = errors.New("the transaction fails in simulation")

// SimulationError says why a proposal failed its simulation; it is ErrSimulationFailed.
type SimulationError struct {
	Method   string // eth_call or eth_estimateGas
	Reverted bool
	Reason   string // the revert's Error(string), "panic 0x.." for Panic(uint256), else the node's message
	Data     []byte // the revert data as the node gave it
}

func (e *SimulationError) Error() string {
	what := "the node refused it"
	if e.Reverted {
		what = "it reverts"
	}
	if e.Reason != "" {
		return fmt.Sprintf("%s: %s: %s", e.Method, what, e.Reason)
	}
	return fmt.Sprintf("%s: %s", e.Method, what)
}

// Is makes a SimulationError ErrSimulationFailed.
func (e *SimulationError) Is(target error) bool { return target == ErrSimulationFailed }

// Simulation is a proposal run from the wallet: its decoded effect, the transaction that makes
// it (gas from eth_estimateGas, EIP-1559 fees; its nonce is the caller's lock's), the fees it
// was priced at (estimate: Tx.Gas x Fees.Quoted wei) and what the call returned.
type Simulation struct {
	Effect Effect
	Tx     *Tx
	Fees   Fees
	Return []byte
}

// Simulate runs p from its wallet at the latest block (eth_call), then estimates its gas at
// the suggested fees (eth_estimateGas). A revert or a node's refusal is a *SimulationError
// (ErrSimulationFailed); a node that cannot be reached is an error of its own, not a refusal.
func (c *Client) Simulate(ctx context.Context, p Proposal) (*Simulation, error) {
	obj := txObject{From: hexAddr(p.From), To: hexAddr(p.To), Value: hexQ(p.value())}
	if len(p.Data) > 0 {
		obj.Data = "0x" + hex.EncodeToString(p.Data)
	}
	call := &jsonrpc.Call{Method: "eth_call", Params: []any{obj, "latest"}}
	hist := &jsonrpc.Call{Method: "eth_feeHistory", Params: []any{"0x1", "latest", []int{}}}
	tip := &jsonrpc.Call{Method: "eth_maxPriorityFeePerGas", Params: []any{}}
	if err := c.batch(ctx, call, hist, tip); err != nil {
		return nil, err
	}
	var rpcErr *jsonrpc.Error
	if errors.As(call.Err, &rpcErr) {
		return nil, simulationError("eth_call", rpcErr)
	}
	if call.Err != nil {
		return nil, fmt.Errorf("eth_call: %w", call.Err)
	}
	ret, err := hexData(call.Result)
	if err != nil {
		return nil, fmt.Errorf("eth_call: %w", err)
	}
	fees, err := readFees(hist, tip)
	if err != nil {
		return nil, err
	}
	obj.MaxFeePerGas, obj.MaxPriorityFeePerGas = hexQ(fees.Cap), hexQ(fees.Tip)
	res, err := c.one(ctx, "eth_estimateGas", obj)
	if errors.As(err, &rpcErr) {
		return nil, simulationError("eth_estimateGas", rpcErr)
	}
	if err != nil {
		return nil, err
	}
	g, err := quantity(res)
	if err != nil || !g.IsUint64() {
		return nil, fmt.Errorf("eth_estimateGas: malformed gas %s", res)
	}
	tx := &Tx{ChainID: c.chainID, GasTipCap: fees.Tip, GasFeeCap: fees.Cap, Gas: g.Uint64(), To: p.To, Value: p.value(), Data: p.Data}
	return &Simulation{Effect: Decode(p), Tx: tx, Fees: fees, Return: ret}, nil
}

// simulationError reads a node's error to a call: a revert (code 3, or "revert" in its
// message) with its data decoded, else the node's refusal as it worded it.
func simulationError(method string, e *jsonrpc.Error) *SimulationError {
	se := &SimulationError{Method: method, Data: revertData(e.Data)}
	msg := strings.TrimSpace(e.Message)
	se.Reverted = e.Code == 3 || len(se.Data) > 0 || strings.Contains(strings.ToLower(msg), "revert")
	if reason, ok := RevertReason(se.Data); ok {
		se.Reason = reason
	} else {
		se.Reason = clip(msg, 200)
	}
	return se
}

// revertData reads the data of a node's revert error: a hex string, or an object holding one
// under "data" (some nodes nest it).
func revertData(raw json.RawMessage) []byte {
	if len(raw) == 0 {
		return nil
	}
	if b, err := hexData(raw); err == nil {
		return b
	}
	var nested struct {
		Data json.RawMessage `json:"data"`
	}
	if json.Unmarshal(raw, &nested) == nil && len(nested.Data) > 0 {
		if b, err := hexData(nested.Data); err == nil {
			return b
		}
	}
	return nil
}

// RevertReason decodes revert data: Error(string) to its message, Panic(uint256) to
// "panic 0x<code>"; ok false for anything else (a custom error, no data).
func RevertReason(data []byte) (string, bool) {
	if len(data) < 4 {
		return "", false
	}
	var sel [4]byte
	copy(sel[:], data)
	switch sel {
	case selError:
		r := reader(data[4:])
		off, err := r.uint(0)
		if err != nil {
			return "", false
		}
		s, err := r.bytesAt(off)
		if err != nil || !utf8.Valid(s) {
			return "", false
		}
		return clip(strings.ToValidUTF8(string(s), ""), 200), true
	case selPanic:
		if len(data) != 36 {
			return "", false
		}
		return "panic 0x" + new(big.Int).SetBytes(data[4:]).Text(16), true
	}
	return "", false
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

package contracts

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
)

// Client sends the relayer's transactions and reads contract state over one node's JSON-RPC.
// Sends are serialized so the relayer's nonces never collide; waiting for receipts is not.
type Client struct {
	eth           *node
	chainID       *big.Int
	key           *ecdsa.PrivateKey
	from          common.Address
	confirmations uint64
	send          sync.Mutex
	// StuckAfter is how long a sent transaction may stay unmined before it is replaced (same
	// nonce) with fees 25% higher, up to three times.
	StuckAfter time.Duration
}

// ErrReverted is a transaction (or its gas estimate) that the chain refused.
var ErrReverted = errors.New("the transaction reverted")

// Dial connects to url (http or https), checks its chain id, and acts with key (nil:
// read-only).
func Dial(ctx context.Context, url string, chainID int64, key *ecdsa.PrivateKey, confirmations int) (*Client, error) {
	eth, err := newNode(url)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", url, err)
	}
	got, err := eth.quantity(ctx, "eth_chainId")
	if err != nil {
		eth.close()
		return nil, fmt.Errorf("eth_chainId: %w", err)
	}
	if !got.IsInt64() || got.Int64() != chainID {
		eth.close()
		return nil, fmt.Errorf("the RPC endpoint serves chain %s, not %d", got, chainID)
	}
	c := &Client{eth: eth, chainID: got, key: key, confirmations: uint64(max(confirmations, 1)), StuckAfter: 45 * time.Second}
	if key != nil {
		c.from = AddressOf(&key.PublicKey)
	}
	return c, nil
}

// Close closes the connection.
func (c *Client) Close() { c.eth.close() }

// From is the relayer's address.
func (c *Client) From() common.Address { return c.from }

// ChainID is the chain's id.
func (c *Client) ChainID() int64 { return c.chainID.Int64() }

// Now is the latest block's timestamp: the clock EIP-3009 validity windows are checked against.
func (c *Client) Now(ctx context.Context) (time.Time, error) {
	h, err := c.eth.header(ctx, nil)
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(int64(h.Time), 0).UTC(), nil
}

// BlockTime is the timestamp of block n.
func (c *Client) BlockTime(ctx context.Context, n uint64) (time.Time, error) {
	h, err := c.eth.header(ctx, new(big.Int).SetUint64(n))
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(int64(h.Time), 0).UTC(), nil
}

// Deploy deploys ct with constructor args and waits for it.
func (c *Client) Deploy(ctx context.Context, ct Contract, args ...any) (common.Address, error) {
	if c.key == nil {
		return common.Address{}, errors.New("this client has no relayer key")
	}
	input, err := ct.ABI.Pack("", args...)
	if err != nil {
		return common.Address{}, err
	}
	c.send.Lock()
	tx, err := c.newTx(ctx, nil, append(append([]byte(nil), ct.Bytecode...), input...))
	if err == nil {
		err = c.eth.sendRaw(ctx, tx)
	}
	c.send.Unlock()
	if err != nil {
		return common.Address{}, revert(err)
	}
	if _, err := c.wait(ctx, tx, nil); err != nil {
		return common.Address{}, err
	}
	return createAddress(c.from, tx.nonce), nil
}

// newTx prices, signs and returns (unsent) the relayer's transaction to `to` (nil: a
// deployment) with data, as go-ethereum's bind did: the tip the node suggests, a fee cap of
// tip + 2 x the latest base fee (a legacy gas price on a chain without one), the node's gas
// estimate, the pending nonce. Call with c.send held.
func (c *Client) newTx(ctx context.Context, to *common.Address, data []byte) (*tx, error) {
	head, err := c.eth.header(ctx, nil)
	if err != nil {
		return nil, err
	}
	t := &tx{chainID: c.chainID, to: to, value: new(big.Int), data: data, dynamic: head.BaseFee != nil}
	msg := callMsg{From: c.from, To: to, Input: data, Value: (*hexutil.Big)(t.value)}
	if t.dynamic {
		if t.gasTipCap, err = c.eth.quantity(ctx, "eth_maxPriorityFeePerGas"); err != nil {
			return nil, err
		}
		t.feeCap = new(big.Int).Add(t.gasTipCap, new(big.Int).Mul(head.BaseFee.ToInt(), big.NewInt(2)))
		msg.MaxPriorityFeePerGas, msg.MaxFeePerGas = (*hexutil.Big)(t.gasTipCap), (*hexutil.Big)(t.feeCap)
	} else {
		if t.gasPrice, err = c.eth.quantity(ctx, "eth_gasPrice"); err != nil {
			return nil, err
		}
		msg.GasPrice = (*hexutil.Big)(t.gasPrice)
	}
	if to != nil {
		// Gas estimation cannot succeed without code for method invocations.
		code, err := c.eth.code(ctx, *to, "pending")
		if err != nil {
			return nil, err
		}
		if len(code) == 0 {
			return nil, ErrNoCode
		}
	}
	if t.gas, err = c.eth.estimateGas(ctx, msg); err != nil {
		return nil, err
	}
	nonce, err := c.eth.quantity(ctx, "eth_getTransactionCount", c.from, "pending")
	if err != nil {
		return nil, err
	}
	t.nonce = nonce.Uint64()
	if err := t.sign(c.key); err != nil {
		return nil, err
	}
	return t, nil
}

// signedCall is the relayer's signed, unsent transaction calling method of ct at `at`.
func (c *Client) signedCall(ctx context.Context, at common.Address, ct Contract, method string, args []any) (*tx, error) {
	input, err := ct.ABI.Pack(method, args...)
	if err != nil {
		return nil, err
	}
	return c.newTx(ctx, &at, input)
}

// Transact calls method on the contract at `at` as the relayer, and waits for the receipt
// and the configured confirmations. A call the chain would refuse fails before anything is
// sent (the gas estimate reverts: ErrReverted with the reason), costing no gas.
func (c *Client) Transact(ctx context.Context, at common.Address, ct Contract, method string, args ...any) (*Receipt, error) {
	if c.key == nil {
		return nil, errors.New("this client has no relayer key")
	}
	c.send.Lock()
	tx, err := c.signedCall(ctx, at, ct, method, args)
	if err == nil {
		err = c.eth.sendRaw(ctx, tx)
	}
	c.send.Unlock()
	if err != nil {
		return nil, revert(err)
	}
	return c.wait(ctx, tx, nil)
}

// TransactRecorded is Transact for a transfer that must never be sent twice unknowingly: the
// transaction is signed first, record gets its hash (to write it down), and only then is it
// sent. A crash after record leaves a hash whose receipt tells what happened.
func (c *Client) TransactRecorded(ctx context.Context, at common.Address, ct Contract, record func(tx common.Hash) error, method string, args ...any) (*Receipt, error) {
	if c.key == nil {
		return nil, errors.New("this client has no relayer key")
	}
	c.send.Lock()
	tx, err := c.signedCall(ctx, at, ct, method, args)
	if err != nil {
		c.send.Unlock()
		return nil, revert(err)
	}
	if err := record(tx.hash); err != nil {
		c.send.Unlock()
		return nil, err
	}
	err = c.eth.sendRaw(ctx, tx)
	c.send.Unlock()
	if err != nil {
		return nil, err
	}
	return c.wait(ctx, tx, record)
}

// Receipt returns a transaction's receipt; ok is false when the chain does not know it.
func (c *Client) Receipt(ctx context.Context, hash common.Hash) (*Receipt, bool, error) {
	rc, err := c.eth.receipt(ctx, hash)
	if errors.Is(err, errNotFound) {
		return nil, false, nil
	}
	return rc, err == nil, err
}

// wait waits for tx (or a replacement of it) to be mined and confirmed. A transaction left
// unmined for StuckAfter is replaced: the same nonce and call with 25% higher fees (record, when
// set, learns each replacement's hash first). Whichever is mined wins; the others can no longer be.
func (c *Client) wait(ctx context.Context, tx *tx, record func(common.Hash) error) (*Receipt, error) {
	sent := []common.Hash{tx.hash}
	replaceAt := time.Now().Add(c.StuckAfter)
	var rc *Receipt
	for rc == nil {
		for _, h := range sent {
			r, err := c.eth.receipt(ctx, h)
			if err == nil {
				rc = r
				break
			}
			if !errors.Is(err, errNotFound) {
				return nil, fmt.Errorf("receipt of %s: %w", h.Hex(), err)
			}
		}
		if rc != nil {
			break
		}
		if time.Now().After(replaceAt) && len(sent) < 4 && c.key != nil {
			next, err := c.replace(ctx, tx, record)
			if err != nil {
				return nil, err
			}
			if next != nil {
				tx = next
				sent = append(sent, next.hash)
			}
			replaceAt = time.Now().Add(c.StuckAfter)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for %s: %w", tx.hash.Hex(), ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	if rc.Status != ReceiptStatusSuccessful {
		return rc, fmt.Errorf("%w: %s", ErrReverted, rc.TxHash.Hex())
	}
	for c.confirmations > 1 {
		n, err := c.eth.blockNumber(ctx)
		if err != nil {
			return nil, err
		}
		if n+1 >= rc.BlockNumber+c.confirmations {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return rc, nil
}

// replace re-signs tx with the same nonce and 25% higher fees (as an EIP-1559 transaction)
// and sends it. nil: tx's nonce was used meanwhile (one of the sent transactions is being
// mined), nothing replaced.
func (c *Client) replace(ctx context.Context, old *tx, record func(common.Hash) error) (*tx, error) {
	bump := func(x *big.Int) *big.Int {
		return new(big.Int).Add(new(big.Int).Div(new(big.Int).Mul(x, big.NewInt(125)), big.NewInt(100)), big.NewInt(1))
	}
	next := &tx{chainID: c.chainID, nonce: old.nonce, gasTipCap: bump(old.tip()), feeCap: bump(old.cap()), gas: old.gas,
		to: old.to, value: old.value, data: old.data, dynamic: true}
	if err := next.sign(c.key); err != nil {
		return nil, err
	}
	if record != nil {
		if err := record(next.hash); err != nil {
			return nil, err
		}
	}
	c.send.Lock()
	err := c.eth.sendRaw(ctx, next)
	c.send.Unlock()
	if err != nil && strings.Contains(strings.ToLower(err.Error()), "nonce too low") {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("replace %s: %w", old.hash.Hex(), err)
	}
	return next, nil
}

// revert turns a node's "execution reverted: reason" into ErrReverted with the reason.
func revert(err error) error {
	msg := err.Error()
	if strings.Contains(msg, "revert") {
		return fmt.Errorf("%w: %s", ErrReverted, msg)
	}
	return err
}

// Call reads method of the contract at `at` (eth_call at the latest block).
func (c *Client) Call(ctx context.Context, at common.Address, ct Contract, method string, args ...any) ([]any, error) {
	input, err := ct.ABI.Pack(method, args...)
	if err != nil {
		return nil, err
	}
	out, err := c.eth.ethCall(ctx, callMsg{To: &at, Input: input}) // from the zero address, as bind called
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		// An empty answer: no contract there, or the call really returned nothing.
		if code, err := c.eth.code(ctx, at, "latest"); err != nil {
			return nil, err
		} else if len(code) == 0 {
			return nil, ErrNoCode
		}
	}
	return ct.ABI.Unpack(method, out)
}

// BalanceOf is a token balance in atomic units.
func (c *Client) BalanceOf(ctx context.Context, token, holder common.Address) (*big.Int, error) {
	out, err := c.Call(ctx, token, TestUSDC, "balanceOf", holder)
	if err != nil {
		return nil, err
	}
	return out[0].(*big.Int), nil
}

// AuthorizationUsed reports whether an EIP-3009 nonce of authorizer is spent.
func (c *Client) AuthorizationUsed(ctx context.Context, token, authorizer common.Address, nonce [32]byte) (bool, error) {
	out, err := c.Call(ctx, token, TestUSDC, "authorizationState", authorizer, nonce)
	if err != nil {
		return false, err
	}
	return out[0].(bool), nil
}

// Escrow is a FlatFeePayer escrow.
type Escrow struct {
	Payer, Partner        common.Address
	Amount, PartnerAmount *big.Int
	Ref                   [32]byte // the call it pays for (Ref of its requestId)
	State                 uint8    // 0 none, 1 held, 2 settled, 3 refunded
}

// Escrow states.
const (
	EscrowNone uint8 = iota
	EscrowHeld
	EscrowSettled
	EscrowRefunded
)

// EscrowID keys the escrow of the authorization (from, nonce), as the contract's escrowId.
func EscrowID(from common.Address, nonce [32]byte) [32]byte {
	return Keccak256(common.LeftPadBytes(from.Bytes(), 32), nonce[:])
}

// Ref is the escrow's reference to the call it pays for.
func Ref(requestID string) [32]byte {
	return Keccak256([]byte("switchboard/flat-fee/" + requestID))
}

// EscrowOf reads the escrow of the authorization (from, nonce) in the payer contract.
func (c *Client) EscrowOf(ctx context.Context, payer, from common.Address, nonce [32]byte) (Escrow, error) {
	out, err := c.Call(ctx, payer, FlatFeePayer, "escrows", EscrowID(from, nonce))
	if err != nil {
		return Escrow{}, err
	}
	return Escrow{Payer: out[0].(common.Address), Partner: out[1].(common.Address), Amount: out[2].(*big.Int),
		PartnerAmount: out[3].(*big.Int), Ref: out[4].([32]byte), State: out[5].(uint8)}, nil
}

// Transferred is an authorization found spent on chain: the transaction that used it, and
// what that transaction moved from its authorizer to the payer contract.
type Transferred struct {
	Tx    common.Hash
	Value *big.Int
}

// AuthorizedTransfer finds the transaction that used the authorization (from, nonce) of token
// and what it moved from `from` to `to` (nil Value: nothing). A TransferWithAuthorization to
// the payer contract submitted by someone else than the relayer is found this way.
func (c *Client) AuthorizedTransfer(ctx context.Context, token, from, to common.Address, nonce [32]byte) (*Transferred, error) {
	used := TestUSDC.ABI.Events["AuthorizationUsed"].ID
	logs, err := c.eth.filterLogs(ctx, token, 0, [][]common.Hash{{used}, {common.BytesToHash(from.Bytes())}, {common.Hash(nonce)}})
	if err != nil || len(logs) == 0 {
		return nil, err
	}
	rc, err := c.eth.receipt(ctx, logs[0].TxHash)
	if err != nil {
		return nil, err
	}
	out := &Transferred{Tx: logs[0].TxHash}
	transfer := TestUSDC.ABI.Events["Transfer"].ID
	for _, l := range rc.Logs {
		if l.Address == token && l.Index == logs[0].Index+1 && len(l.Topics) == 3 && l.Topics[0] == transfer &&
			l.Topics[1] == common.BytesToHash(from.Bytes()) && l.Topics[2] == common.BytesToHash(to.Bytes()) {
			out.Value = new(big.Int).SetBytes(l.Data)
		}
	}
	return out, nil
}

// UnclaimedTransfers lists the token's transfers into `to` by authorization (an
// AuthorizationUsed log followed by its Transfer) in the last `blocks` blocks: the candidates
// for an escrow nobody claimed.
func (c *Client) UnclaimedTransfers(ctx context.Context, token, to common.Address, blocks uint64) ([]AuthorizedTransferLog, error) {
	head, err := c.eth.blockNumber(ctx)
	if err != nil {
		return nil, err
	}
	from := uint64(0)
	if head > blocks {
		from = head - blocks
	}
	transfer := TestUSDC.ABI.Events["Transfer"].ID
	logs, err := c.eth.filterLogs(ctx, token, from, [][]common.Hash{{transfer}, nil, {common.BytesToHash(to.Bytes())}})
	if err != nil {
		return nil, err
	}
	used := TestUSDC.ABI.Events["AuthorizationUsed"].ID
	var out []AuthorizedTransferLog
	for _, l := range logs {
		if l.Index == 0 || len(l.Topics) != 3 {
			continue
		}
		rc, err := c.eth.receipt(ctx, l.TxHash)
		if err != nil {
			return nil, err
		}
		for _, a := range rc.Logs {
			if a.Index+1 == l.Index && a.Address == token && len(a.Topics) == 3 && a.Topics[0] == used && a.Topics[1] == l.Topics[1] {
				out = append(out, AuthorizedTransferLog{From: common.BytesToAddress(l.Topics[1].Bytes()), Nonce: a.Topics[2],
					Value: new(big.Int).SetBytes(l.Data), Tx: l.TxHash, Block: l.BlockNumber})
			}
		}
	}
	return out, nil
}

// AuthorizedTransferLog is one transfer by authorization found in the token's logs.
type AuthorizedTransferLog struct {
	From  common.Address
	Nonce [32]byte
	Value *big.Int
	Tx    common.Hash
	Block uint64
}

// Authorization is a signed EIP-3009 authorization to the payer contract, as the contract's
// pay takes it.
type Authorization struct {
	From        common.Address
	Value       *big.Int
	ValidAfter  *big.Int
	ValidBefore *big.Int
	Nonce       [32]byte
	V           uint8
	R           [32]byte
	S           [32]byte
	ViaReceive  bool
}

// The EIP-3009 authorizations the payer accepts.
const (
	ReceiveWithAuthorization  = "ReceiveWithAuthorization"
	TransferWithAuthorization = "TransferWithAuthorization"
)

// TypedData is the EIP-712 message a payer signs: primary (ReceiveWithAuthorization, the
// spec's path, or TransferWithAuthorization, x402's exact scheme) moving value of the token
// (domain name "USD Coin", version "2", like USDC) from `from` to the payer contract.
func TypedData(primary string, chainID int64, token, from, to common.Address, value *big.Int, validAfter, validBefore int64, nonce [32]byte) TypedMessage {
	fields := []TypedField{{Name: "from", Type: "address"}, {Name: "to", Type: "address"}, {Name: "value", Type: "uint256"},
		{Name: "validAfter", Type: "uint256"}, {Name: "validBefore", Type: "uint256"}, {Name: "nonce", Type: "bytes32"}}
	return TypedMessage{
		Types: map[string][]TypedField{
			"EIP712Domain": {{Name: "name", Type: "string"}, {Name: "version", Type: "string"}, {Name: "chainId", Type: "uint256"}, {Name: "verifyingContract", Type: "address"}},
			primary:        fields,
		},
		PrimaryType: primary,
		Domain: TypedDomain{Name: "USD Coin", Version: "2", ChainID: chainID,
			VerifyingContract: token.Hex()},
		Message: map[string]any{
			"from": from.Hex(), "to": to.Hex(), "value": value.String(),
			"validAfter": fmt.Sprint(validAfter), "validBefore": fmt.Sprint(validBefore), "nonce": hexutil.Encode(nonce[:]),
		},
	}
}

// Signer recovers who signed td with a 65-byte signature (v 27/28 or 0/1), and splits it.
func Signer(td TypedMessage, sig []byte) (common.Address, uint8, [32]byte, [32]byte, error) {
	var r, s [32]byte
	if len(sig) != 65 {
		return common.Address{}, 0, r, s, fmt.Errorf("the signature is %d bytes, not 65", len(sig))
	}
	hash, err := td.Hash()
	if err != nil {
		return common.Address{}, 0, r, s, err
	}
	rs := append([]byte(nil), sig...)
	v := rs[64]
	if v >= 27 {
		rs[64] = v - 27
	} else {
		v += 27
	}
	signer, err := recoverAddress(hash, rs)
	if err != nil {
		return common.Address{}, 0, r, s, fmt.Errorf("the signature does not recover a key: %w", err)
	}
	copy(r[:], sig[:32])
	copy(s[:], sig[32:64])
	return signer, v, r, s, nil
}

// Sign signs td with key (a wallet's side; tests and embedded wallets).
func Sign(td TypedMessage, key *ecdsa.PrivateKey) ([]byte, error) {
	hash, err := td.Hash()
	if err != nil {
		return nil, err
	}
	sig, err := signHash(hash, key)
	if err != nil {
		return nil, err
	}
	sig[64] += 27
	return sig, nil
}

// Nonce derives the EIP-3009 nonce (and escrow key) of a flat-fee call from its requestId, the
// chain and the payer contract, so one quote can be paid once, on one chain, to one contract.
func Nonce(chainID int64, payer common.Address, requestID string) [32]byte {
	return Keccak256([]byte(fmt.Sprintf("switchboard/flat-fee/%d/%s/%s", chainID, strings.ToLower(payer.Hex()), requestID)))
}

// Confirmed reports whether the transaction hash is mined, succeeded and has the configured
// confirmations (a transfer found on chain, not sent by this client's wait).
func (c *Client) Confirmed(ctx context.Context, hash common.Hash) (bool, error) {
	rc, ok, err := c.Receipt(ctx, hash)
	if err != nil || !ok {
		return false, err
	}
	if rc.Status != ReceiptStatusSuccessful {
		return false, fmt.Errorf("%w: %s", ErrReverted, hash.Hex())
	}
	n, err := c.eth.blockNumber(ctx)
	if err != nil {
		return false, err
	}
	return n+1 >= rc.BlockNumber+c.confirmations, nil
}

// Package transfer builds, signs and sends a wallet's own Solana transfers (tx.go writes the
// transactions out). It is apart from chain/solana (balances and reads), which reads only.
package transfer

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"time"

	"github.com/mr-tron/base58"

	"github.com/switchboard-hq/switchboard/chain/httpx"
	"github.com/switchboard-hq/switchboard/chain/jsonrpc"
	"github.com/switchboard-hq/switchboard/chain/solana"
)

// Client speaks the JSON-RPC methods a transfer takes to one Solana RPC endpoint.
type Client struct{ rpc *jsonrpc.Client }

// NewClient returns a client for the RPC endpoint at url, bounded as chain/solana's reads are.
func NewClient(url string, hc *http.Client, now func() time.Time) *Client {
	return &Client{rpc: jsonrpc.New(url, hc, solana.MaxBody, now)}
}

// A wallet's own transfers: SOL (the system program) and SPL tokens (TransferChecked, the
// recipient's associated token account created first when it is missing, its rent counted),
// built and signed here (tx.go); the JSON-RPC methods they take, over chain/jsonrpc.

// LamportsPerSignature is the base fee of one signature.
const LamportsPerSignature = 5000

// tokenAccountSize is an SPL token account's length (its rent-exempt minimum is the rent).
const tokenAccountSize = 165

// ErrBlockhashNotFound is a broadcast the cluster refused because its blockhash expired (or is
// unknown): these bytes can never land, and the send must be signed again.
var ErrBlockhashNotFound = errors.New("the transaction's blockhash is not found")

// ErrBelowRent is a SOL send to an account that does not exist yet of less than the
// rent-exempt minimum of an empty account: the cluster refuses to create such an account.
var ErrBelowRent = errors.New("below the rent-exempt minimum for a new account")

// ErrAlreadyProcessed is a broadcast of a transaction that has landed already.
var ErrAlreadyProcessed = errors.New("the transaction was already processed")

// Transfer is what a wallet moves: Amount lamports (Mint nil) or token units of Mint.
type Transfer struct {
	From   string
	To     string
	Mint   string // "" for SOL
	Amount *big.Int
}

// Plan is a transfer's instructions and what it costs the sender beyond the amount.
type Plan struct {
	Instructions []Instruction
	RentLamports uint64 // the recipient's token account, when this transfer creates it
	FeeLamports  uint64 // the base fee of the transaction's one signature
	CreatesATA   bool
}

func (c *Client) call(ctx context.Context, out any, method string, params ...any) error {
	if params == nil {
		params = []any{}
	}
	call := &jsonrpc.Call{Method: method, Params: params}
	if err := c.rpc.Batch(ctx, call); err != nil {
		return err
	}
	if call.Err != nil {
		return fmt.Errorf("%s: %w", method, call.Err)
	}
	if out == nil {
		return nil
	}
	if err := httpx.Decode(call.Result, out); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	return nil
}

// Account is an account's state (getAccountInfo).
type Account struct {
	Lamports uint64
	Owner    string
	Data     []byte
}

// AccountInfo is the account at addr, nil when it does not exist.
func (c *Client) AccountInfo(ctx context.Context, addr string) (*Account, error) {
	var res struct {
		Value *struct {
			Lamports uint64   `json:"lamports"`
			Owner    string   `json:"owner"`
			Data     []string `json:"data"`
		} `json:"value"`
	}
	if err := c.call(ctx, &res, "getAccountInfo", addr, map[string]string{"encoding": "base64", "commitment": "confirmed"}); err != nil {
		return nil, err
	}
	if res.Value == nil {
		return nil, nil
	}
	a := &Account{Lamports: res.Value.Lamports, Owner: res.Value.Owner}
	if len(res.Value.Data) > 0 {
		data, err := base64.StdEncoding.DecodeString(res.Value.Data[0])
		if err != nil {
			return nil, fmt.Errorf("getAccountInfo: %w", err)
		}
		a.Data = data
	}
	return a, nil
}

// Lamports is addr's SOL balance (getBalance).
func (c *Client) Lamports(ctx context.Context, addr string) (uint64, error) {
	var res struct {
		Value uint64 `json:"value"`
	}
	err := c.call(ctx, &res, "getBalance", addr, map[string]string{"commitment": "confirmed"})
	return res.Value, err
}

// TokenBalance is a token account's raw amount (getTokenAccountBalance).
func (c *Client) TokenBalance(ctx context.Context, tokenAccount string) (*big.Int, error) {
	var res struct {
		Value struct {
			Amount string `json:"amount"`
		} `json:"value"`
	}
	if err := c.call(ctx, &res, "getTokenAccountBalance", tokenAccount, map[string]string{"commitment": "confirmed"}); err != nil {
		return nil, err
	}
	n, ok := new(big.Int).SetString(res.Value.Amount, 10)
	if !ok {
		return nil, fmt.Errorf("getTokenAccountBalance: malformed amount %q", res.Value.Amount)
	}
	return n, nil
}

// RentExempt is the rent-exempt minimum of an account of size bytes.
func (c *Client) RentExempt(ctx context.Context, size int) (uint64, error) {
	var n uint64
	err := c.call(ctx, &n, "getMinimumBalanceForRentExemption", size)
	return n, err
}

// Blockhash is a recent blockhash and the last block height a transaction on it can land at.
type Blockhash struct {
	Hash                 string
	LastValidBlockHeight uint64
}

// LatestBlockhash is the cluster's latest blockhash (getLatestBlockhash, confirmed).
func (c *Client) LatestBlockhash(ctx context.Context) (Blockhash, error) {
	var res struct {
		Value struct {
			Blockhash            string `json:"blockhash"`
			LastValidBlockHeight uint64 `json:"lastValidBlockHeight"`
		} `json:"value"`
	}
	err := c.call(ctx, &res, "getLatestBlockhash", map[string]string{"commitment": "confirmed"})
	return Blockhash{Hash: res.Value.Blockhash, LastValidBlockHeight: res.Value.LastValidBlockHeight}, err
}

// BlockHeight is the cluster's block height (confirmed).
func (c *Client) BlockHeight(ctx context.Context) (uint64, error) {
	var n uint64
	err := c.call(ctx, &n, "getBlockHeight", map[string]string{"commitment": "confirmed"})
	return n, err
}

// TokenAccount is the associated token account of owner for mint.
func TokenAccount(owner, mint string) (string, error) {
	o, err := ParseKey(owner)
	if err != nil {
		return "", fmt.Errorf("owner: %w", err)
	}
	m, err := ParseKey(mint)
	if err != nil {
		return "", fmt.Errorf("mint: %w", err)
	}
	a, err := associatedTokenAddress(o, m)
	return a.String(), err
}

// PlanTransfer builds tr's instructions: a system transfer, or an SPL TransferChecked between
// the associated token accounts, preceded by the recipient's account's creation (idempotent,
// paid by the sender) when it does not exist yet.
func (c *Client) PlanTransfer(ctx context.Context, tr Transfer) (*Plan, error) {
	from, err := ParseKey(tr.From)
	if err != nil {
		return nil, fmt.Errorf("sender: %w", err)
	}
	to, err := ParseKey(tr.To)
	if err != nil {
		return nil, fmt.Errorf("recipient: %w", err)
	}
	if tr.Amount == nil || tr.Amount.Sign() <= 0 || !tr.Amount.IsUint64() {
		return nil, errors.New("a transfer moves a positive amount below 2^64")
	}
	p := &Plan{FeeLamports: LamportsPerSignature}
	if tr.Mint == "" {
		if err := c.checkRent(ctx, tr.To, tr.Amount); err != nil {
			return nil, err
		}
		p.Instructions = []Instruction{systemTransfer(tr.Amount.Uint64(), from, to)}
		return p, nil
	}
	mint, err := ParseKey(tr.Mint)
	if err != nil {
		return nil, fmt.Errorf("mint: %w", err)
	}
	decimals, program, err := c.mintDecimals(ctx, tr.Mint)
	if err != nil {
		return nil, err
	}
	if program != solana.TokenProgram {
		return nil, fmt.Errorf("mint %s belongs to %s: only SPL Token mints are sent", tr.Mint, solana.ProgramName(program))
	}
	src, err := associatedTokenAddress(from, mint)
	if err != nil {
		return nil, err
	}
	dst, err := associatedTokenAddress(to, mint)
	if err != nil {
		return nil, err
	}
	existing, err := c.AccountInfo(ctx, dst.String())
	if err != nil {
		return nil, err
	}
	if existing == nil {
		if p.RentLamports, err = c.RentExempt(ctx, tokenAccountSize); err != nil {
			return nil, err
		}
		p.Instructions = append(p.Instructions, createTokenAccount(from, dst, to, mint))
		p.CreatesATA = true
	}
	p.Instructions = append(p.Instructions, transferChecked(tr.Amount.Uint64(), decimals, src, mint, dst, from))
	return p, nil
}

// checkRent refuses a SOL send that would leave a new account below the rent-exempt minimum.
func (c *Client) checkRent(ctx context.Context, to string, amount *big.Int) error {
	existing, err := c.AccountInfo(ctx, to)
	if err != nil || existing != nil {
		return err
	}
	least, err := c.RentExempt(ctx, 0)
	if err != nil {
		return err
	}
	if amount.Cmp(new(big.Int).SetUint64(least)) < 0 {
		return fmt.Errorf("%w: send at least %d lamports to %s", ErrBelowRent, least, to)
	}
	return nil
}

// mintDecimals reads a mint's decimals (byte 44 of its account) and owning program.
func (c *Client) mintDecimals(ctx context.Context, mint string) (uint8, string, error) {
	a, err := c.AccountInfo(ctx, mint)
	if err != nil {
		return 0, "", err
	}
	if a == nil || len(a.Data) < 82 {
		return 0, "", fmt.Errorf("%s is not a token mint", mint)
	}
	return a.Data[44], a.Owner, nil
}

// Signed is a signed transaction: Raw its wire bytes, Signature its id (base58).
type Signed struct {
	Raw                  []byte
	Signature            string
	LastValidBlockHeight uint64
}

// Sign builds the plan's transaction on blockhash, paid and signed by the wallet whose
// ed25519 seed (32 bytes) is seed.
func (p *Plan) Sign(seed []byte, bh Blockhash) (*Signed, error) {
	if len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("signing key of %d bytes, need %d", len(seed), ed25519.SeedSize)
	}
	key := ed25519.NewKeyFromSeed(seed)
	defer clear(key)
	hash, err := ParseKey(bh.Hash) // a blockhash is 32 bytes in base58, as an address
	if err != nil {
		return nil, fmt.Errorf("blockhash: %w", err)
	}
	var payer PublicKey
	copy(payer[:], key[32:])
	msg, err := compile(p.Instructions, payer, hash)
	if err != nil {
		return nil, err
	}
	raw, sig := signTransaction(msg, key)
	return &Signed{Raw: raw, Signature: base58.Encode(sig), LastValidBlockHeight: bh.LastValidBlockHeight}, nil
}

// Address is the wallet address of an ed25519 seed.
func Address(seed []byte) string {
	return base58.Encode(ed25519.NewKeyFromSeed(seed)[32:])
}

// Simulate runs raw without landing it (simulateTransaction, signatures verified): the error
// names why it would fail.
func (c *Client) Simulate(ctx context.Context, raw []byte) error {
	var res struct {
		Value struct {
			Err  json.RawMessage `json:"err"`
			Logs []string        `json:"logs"`
		} `json:"value"`
	}
	if err := c.call(ctx, &res, "simulateTransaction", base64.StdEncoding.EncodeToString(raw),
		map[string]any{"encoding": "base64", "sigVerify": true, "commitment": "confirmed"}); err != nil {
		return err
	}
	if len(res.Value.Err) > 0 && string(res.Value.Err) != "null" {
		return fmt.Errorf("the transaction would fail: %s", res.Value.Err)
	}
	return nil
}

// SendRaw broadcasts raw (sendTransaction, preflight on): ErrBlockhashNotFound when its
// blockhash expired, ErrAlreadyProcessed when it landed already.
func (c *Client) SendRaw(ctx context.Context, raw []byte) error {
	err := c.call(ctx, nil, "sendTransaction", base64.StdEncoding.EncodeToString(raw),
		map[string]any{"encoding": "base64", "preflightCommitment": "confirmed", "maxRetries": 0})
	var rpcErr *jsonrpc.Error
	if err == nil || !errors.As(err, &rpcErr) {
		return err
	}
	msg := strings.ToLower(rpcErr.Message + " " + string(rpcErr.Data))
	switch {
	case strings.Contains(msg, "blockhash not found"), strings.Contains(msg, "blockhashnotfound"):
		return fmt.Errorf("%w: %w", ErrBlockhashNotFound, err)
	case strings.Contains(msg, "already been processed"), strings.Contains(msg, "alreadyprocessed"):
		return fmt.Errorf("%w: %w", ErrAlreadyProcessed, err)
	}
	return err
}

// Status is a signature's state; Found false while the cluster knows nothing of it.
type Status struct {
	Found  bool
	Slot   uint64
	Err    string // "" when the transaction succeeded
	Landed string // confirmationStatus: processed, confirmed, finalized
}

// SignatureStatus is sig's status, the transaction history searched.
func (c *Client) SignatureStatus(ctx context.Context, sig string) (Status, error) {
	var res struct {
		Value []*struct {
			Slot               uint64          `json:"slot"`
			Err                json.RawMessage `json:"err"`
			ConfirmationStatus string          `json:"confirmationStatus"`
		} `json:"value"`
	}
	if err := c.call(ctx, &res, "getSignatureStatuses", []string{sig}, map[string]bool{"searchTransactionHistory": true}); err != nil {
		return Status{}, err
	}
	if len(res.Value) != 1 {
		return Status{}, fmt.Errorf("getSignatureStatuses: %d statuses for one signature", len(res.Value))
	}
	v := res.Value[0]
	if v == nil {
		return Status{}, nil
	}
	s := Status{Found: true, Slot: v.Slot, Landed: v.ConfirmationStatus}
	if len(v.Err) > 0 && string(v.Err) != "null" {
		s.Err = string(v.Err)
	}
	return s, nil
}

// Expired reports whether a transaction valid through lastValid can no longer land: the
// cluster's block height is past it. Only together with an absent signature status does it
// prove the transaction will never land.
func (c *Client) Expired(ctx context.Context, lastValid uint64) (bool, error) {
	h, err := c.BlockHeight(ctx)
	if err != nil {
		return false, err
	}
	return h > lastValid, nil
}

// TokenAmountOf reads a token account's raw amount from its data (bytes 64..72), for callers
// that hold the account already.
func TokenAmountOf(data []byte) (uint64, error) {
	if len(data) < 72 {
		return 0, errors.New("not a token account")
	}
	return binary.LittleEndian.Uint64(data[64:72]), nil
}

// Package send moves a wallet's coins and tokens on EVM chains and Solana, exactly once per
// request id: Send prepares (EVM: a nonce under the cross-replica lock; the signature; the
// record) before it broadcasts, so a retry or a crash re-sends the recorded transaction and
// never signs a second one; Follow takes each open send to its receipt or, on Solana, past its
// blockhash's expiry. What a send is worth, who may make it and
// what it costs the account are the movement ticket's (tools/billing), not this package's.
package send

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/switchboard-hq/switchboard/chain/evm"
	"github.com/switchboard-hq/switchboard/chain/jsonrpc"
	"github.com/switchboard-hq/switchboard/chain/solana/transfer"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/sends"
	"github.com/switchboard-hq/switchboard/tools/service"
)

// Native is a send's Token when it moves the chain's own coin.
const Native = "native"

// ErrUnknownChain is a send on a chain no node is configured for.
var ErrUnknownChain = errors.New("no node is configured for the chain")

// ErrOtherRequest is a request id already recorded for another send (another account, chain,
// recipient, token or amount): the id names one send only.
var ErrOtherRequest = errors.New("the request id was used for another send")

// ErrNotBroadcast is a recorded send whose broadcast did not reach the node: retrying the same
// request id (or Follow) sends the same transaction.
var ErrNotBroadcast = errors.New("the signed transaction is recorded but did not reach the node")

// KeyFunc opens an account's signing key of one wallet family and that wallet's address:
// EVM, the 32-byte secp256k1 key (wallets.EVMKey); Solana, the 32-byte ed25519 seed. It
// refuses while the account's signing is off. The caller clears the key after one use.
type KeyFunc func(ctx context.Context, accountID string) (key []byte, address string, err error)

// Chain is one EVM chain sends go out on.
type Chain struct {
	Client *evm.Client
	// Confirmations is how many blocks (the receipt's own included) make a send confirmed;
	// 0 counts as 1.
	Confirmations uint64
}

// SolanaChain names Solana among a send's chains.
const SolanaChain = "solana"

// Config is where sends go out: the EVM chains by balances chain name ("base", ...) and
// Solana (nil: no Solana sends).
type Config struct {
	EVM    map[string]Chain
	Solana *transfer.Client
	// Failpoint (tests only; nil: none) is called at each step the crash matrix kills the
	// process at: FailJudged, FailSigned, FailBroadcast.
	Failpoint func(step string)
}

// The steps of a send Config.Failpoint names.
const (
	FailJudged    = "send-judged"    // the confirmed send is judged and recorded dispatching, not yet signed
	FailSigned    = "send-signed"    // the signed transaction is recorded, not yet broadcast
	FailBroadcast = "send-broadcast" // the node took the transaction, its submission not yet recorded
)

// Keys open the wallets' keys, one per family.
type Keys struct {
	EVM    KeyFunc
	Solana KeyFunc
}

// Sender sends from the embedded wallets.
type Sender struct {
	cfg   Config
	d     service.Deps
	sends sends.Sends
	keys  Keys
}

// New returns a sender.
func New(cfg Config, d service.Deps, q sends.Sends, keys Keys) *Sender {
	if cfg.Failpoint == nil {
		cfg.Failpoint = func(string) {}
	}
	return &Sender{cfg: cfg, d: d.WithDefaults(), sends: q, keys: keys}
}

// Request is one send.
type Request struct {
	RequestID string
	AccountID string
	Chain     string
	To        string   // an EVM address (0x...) or a Solana address
	Token     string   // a token's address or mint; Native (or "") for the chain's coin
	Amount    *big.Int // token units (wei, lamports for the native coin)
	// Quoted (EVM) is the transaction as the confirmation priced it (gas, fees); nil prices
	// it now. Its nonce is ignored: the lock gives it.
	Quoted *evm.Tx
}

func hexAddr(a [20]byte) string { return "0x" + hex.EncodeToString(a[:]) }

// evmTransfer reads r's EVM addresses.
func (r Request) evmTransfer(from [20]byte) (evm.Transfer, error) {
	to, err := evm.ParseAddress(r.To)
	if err != nil {
		return evm.Transfer{}, fmt.Errorf("recipient: %w", err)
	}
	tr := evm.Transfer{From: from, To: to, Amount: r.Amount}
	if r.Token != "" && r.Token != Native {
		tok, err := evm.ParseAddress(r.Token)
		if err != nil {
			return evm.Transfer{}, fmt.Errorf("token: %w", err)
		}
		tr.Token = &tok
	}
	return tr, nil
}

// record is the send row of r, as this package spells its addresses (EVM in lower case).
func (r Request) record(from string, now time.Time) *sends.Send {
	to, token := r.To, r.Token
	if token == "" {
		token = Native
	}
	if r.Chain != SolanaChain {
		to, token = strings.ToLower(to), strings.ToLower(token)
	}
	return &sends.Send{RequestID: r.RequestID, AccountID: r.AccountID, Chain: r.Chain, From: from,
		To: to, Token: token, Amount: r.Amount.String(), CreatedAt: now}
}

// same reports whether rec is the send r asks for.
func (r Request) same(rec *sends.Send) bool {
	want := r.record(rec.From, rec.CreatedAt)
	return rec.Kind == "" && rec.AccountID == want.AccountID && rec.Chain == want.Chain && rec.To == want.To &&
		rec.Token == want.Token && rec.Amount == want.Amount
}

func (s *Sender) chain(name string) (Chain, error) {
	c, ok := s.cfg.EVM[name]
	if !ok {
		return Chain{}, fmt.Errorf("%w: %q", ErrUnknownChain, name)
	}
	return c, nil
}

// Quote prices an EVM transfer from the wallet address from: the transaction but its nonce,
// and the fees it was priced at (fee estimate: Gas x Fees.Quoted wei).
func (s *Sender) Quote(ctx context.Context, from [20]byte, r Request) (*evm.Tx, evm.Fees, error) {
	c, err := s.chain(r.Chain)
	if err != nil {
		return nil, evm.Fees{}, err
	}
	tr, err := r.evmTransfer(from)
	if err != nil {
		return nil, evm.Fees{}, err
	}
	return c.Client.Quote(ctx, tr)
}

// Send makes the send r once: the first call prepares and broadcasts it; a later call of the
// same request id re-broadcasts the recorded transaction while it is open and answers the
// send as it stands. ErrNotBroadcast (with the recorded send) when the node could not be
// reached: the transaction is recorded, and a retry sends it.
func (s *Sender) Send(ctx context.Context, r Request) (*sends.Send, error) {
	if r.Amount == nil || r.Amount.Sign() <= 0 {
		return nil, errors.New("a send moves a positive amount")
	}
	if r.Chain == SolanaChain {
		return s.sendSolana(ctx, r)
	}
	c, err := s.chain(r.Chain)
	if err != nil {
		return nil, err
	}
	rec, err := s.sends.Get(ctx, r.RequestID)
	switch {
	case err == nil:
		// Recorded already: never signed again.
	case errors.Is(err, store.ErrNotFound):
		if rec, err = s.prepare(ctx, c, r); err != nil {
			return nil, err
		}
		s.cfg.Failpoint(FailSigned)
	default:
		return nil, fmt.Errorf("read send: %w", err)
	}
	if !r.same(rec) {
		return nil, ErrOtherRequest
	}
	if !rec.Open() {
		return rec, nil
	}
	return s.broadcast(ctx, c, rec)
}

// prepare prices the transaction (unless quoted), then signs and records it at the locked
// nonce. A concurrent call that recorded the request first wins: its send is answered.
func (s *Sender) prepare(ctx context.Context, c Chain, r Request) (*sends.Send, error) {
	key, address, err := s.keys.EVM(ctx, r.AccountID)
	if err != nil {
		return nil, fmt.Errorf("open the wallet key: %w", err)
	}
	defer clear(key)
	from, err := evm.ParseAddress(address)
	if err != nil {
		return nil, fmt.Errorf("wallet address: %w", err)
	}
	tr, err := r.evmTransfer(from)
	if err != nil {
		return nil, err
	}
	tx := r.Quoted
	if tx == nil {
		if tx, _, err = c.Client.Quote(ctx, tr); err != nil {
			return nil, fmt.Errorf("price the send: %w", err)
		}
	}
	next, err := c.Client.PendingNonce(ctx, from)
	if err != nil {
		return nil, fmt.Errorf("read the nonce: %w", err)
	}
	got, _, err := s.sends.Prepare(ctx, r.record(hexAddr(from), s.d.Now()), next, signAt(tx, key, from))
	if err != nil {
		return nil, fmt.Errorf("prepare the send: %w", err)
	}
	return got, nil
}

// signAt signs tx at the nonce the lock gives it, with the wallet key of address from: what a
// send and a proposal both record before they broadcast.
func signAt(tx *evm.Tx, key []byte, from [20]byte) func(nonce uint64) ([]byte, string, error) {
	return func(nonce uint64) ([]byte, string, error) {
		t := *tx
		t.Nonce = nonce
		signed, err := t.Sign(key)
		if err != nil {
			return nil, "", err
		}
		if signed.From != from {
			return nil, "", errors.New("the wallet key does not match the wallet's address")
		}
		return signed.Raw, "0x" + hex.EncodeToString(signed.Hash[:]), nil
	}
}

// broadcast sends rec's recorded transaction and answers the send as it then stands.
func (s *Sender) broadcast(ctx context.Context, c Chain, rec *sends.Send) (*sends.Send, error) {
	err := c.Client.SendRaw(ctx, rec.Raw)
	var rpcErr *jsonrpc.Error
	switch {
	case err == nil, errors.Is(err, evm.ErrKnown):
		s.cfg.Failpoint(FailBroadcast)
		if err := s.sends.Submitted(ctx, rec.RequestID, s.d.Now()); err != nil {
			return nil, fmt.Errorf("mark submitted: %w", err)
		}
	case errors.Is(err, evm.ErrNonceTooLow):
		// Mined already, or its nonce taken by another transaction: the receipt tells (Follow).
		if _, err := s.follow(ctx, c, rec); err != nil {
			return nil, err
		}
	case errors.As(err, &rpcErr):
		// The node refused these bytes outright (funds, fees): they are in no pool.
		if err := s.sends.Refused(ctx, rec.RequestID, refusal(rpcErr), s.d.Now()); err != nil && !errors.Is(err, sends.ErrNotOpen) {
			return nil, fmt.Errorf("mark refused: %w", err)
		}
	default:
		return rec, fmt.Errorf("%w: %w", ErrNotBroadcast, err)
	}
	return s.sends.Get(ctx, rec.RequestID)
}

func refusal(e *jsonrpc.Error) string {
	msg := strings.TrimSpace(e.Message)
	if len(msg) > 200 {
		msg = msg[:200]
	}
	return "the node refused the transaction: " + msg
}

// Follow takes every open send last touched before now to its end where the chain shows it:
// confirmed or failed by its receipt, dropped when its nonce was mined in another transaction;
// the rest are broadcast again (the same bytes). It answers how many it concluded; one send's
// error is logged and does not stop the others.
func (s *Sender) Follow(ctx context.Context) (int, error) {
	ended, err := s.FollowEnded(ctx)
	return len(ended), err
}

// FollowEnded is Follow answering the sends it saw end, as they were recorded when they did
// (concluded here or, a moment before, by another replica): what a movement's ticket is
// concluded with.
func (s *Sender) FollowEnded(ctx context.Context) ([]*sends.Send, error) {
	due, err := s.sends.Due(ctx, s.d.Now(), 100)
	if err != nil {
		return nil, fmt.Errorf("list open sends: %w", err)
	}
	var done []*sends.Send
	end := func(rec *sends.Send) {
		got, err := s.sends.Get(ctx, rec.RequestID)
		if err != nil {
			s.d.Log.Warn("read ended send", "request_id", rec.RequestID, "error", err)
			return
		}
		done = append(done, got)
	}
	for _, rec := range due {
		if rec.Chain == SolanaChain {
			if s.cfg.Solana == nil {
				continue
			}
			if ended, err := s.followSolana(ctx, rec); err != nil {
				s.d.Log.Warn("follow send", "request_id", rec.RequestID, "chain", rec.Chain, "error", err)
			} else if ended {
				end(rec)
			}
			continue
		}
		c, err := s.chain(rec.Chain)
		if err != nil {
			continue // a chain no longer configured
		}
		ended, err := s.follow(ctx, c, rec)
		if err != nil {
			s.d.Log.Warn("follow send", "request_id", rec.RequestID, "chain", rec.Chain, "error", err)
			continue
		}
		if ended {
			end(rec)
			continue
		}
		if _, err := s.broadcast(ctx, c, rec); err != nil {
			s.d.Log.Warn("re-broadcast send", "request_id", rec.RequestID, "chain", rec.Chain, "error", err)
		}
	}
	return done, nil
}

// follow concludes rec when the chain shows its end, and reports whether it did.
func (s *Sender) follow(ctx context.Context, c Chain, rec *sends.Send) (bool, error) {
	hash, err := parseHash(rec.TxHash)
	if err != nil {
		return false, err
	}
	if rec.Nonce == nil {
		return false, errors.New("an EVM send without a nonce")
	}
	from, err := evm.ParseAddress(rec.From)
	if err != nil {
		return false, err
	}
	// The mined count first, the receipt after: a count past the nonce with no receipt then
	// proves another transaction took it.
	mined, err := c.Client.LatestNonce(ctx, from)
	if err != nil {
		return false, err
	}
	r, found, err := c.Client.Receipt(ctx, hash)
	if err != nil {
		return false, err
	}
	now := s.d.Now()
	switch {
	case found:
		head, err := c.Client.BlockNumber(ctx)
		if err != nil {
			return false, err
		}
		if head+1 < r.BlockNumber+max(c.Confirmations, 1) {
			return false, nil
		}
		status, reason := sends.Confirmed, ""
		if !r.Success {
			status, reason = sends.Failed, "the transaction reverted"
		}
		fee := new(big.Int).Mul(new(big.Int).SetUint64(r.GasUsed), r.EffectiveGasPrice)
		return true, ignoreNotOpen(s.sends.Conclude(ctx, rec.RequestID, status, reason, fee.String(), int64(r.BlockNumber), now))
	case mined > uint64(*rec.Nonce):
		return true, ignoreNotOpen(s.sends.Conclude(ctx, rec.RequestID, sends.Dropped,
			"its nonce was used by another transaction", "", 0, now))
	}
	return false, nil
}

func ignoreNotOpen(err error) error {
	if errors.Is(err, sends.ErrNotOpen) {
		return nil
	}
	return err
}

func parseHash(s string) ([32]byte, error) {
	var h [32]byte
	b, err := hex.DecodeString(strings.TrimPrefix(s, "0x"))
	if err != nil || len(b) != 32 {
		return h, fmt.Errorf("malformed transaction hash %q", s)
	}
	copy(h[:], b)
	return h, nil
}

// Run follows open sends every interval until ctx ends. Every replica may run it: a send
// concluded twice ends once, and a re-broadcast sends the same recorded bytes.
func (s *Sender) Run(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if _, err := s.Follow(ctx); err != nil && ctx.Err() == nil {
			s.d.Log.Warn("follow sends", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

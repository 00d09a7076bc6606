package send

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/switchboard-hq/switchboard/chain/evm"
	"github.com/switchboard-hq/switchboard/chain/solana/transfer"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/sends"
)

// Partner-proposed transactions (issue 49 item 2), signed exactly once per request id as a
// wallet's own sends are: recorded with their signed bytes before the broadcast (an EVM one at
// the nonce taken under the cross-replica lock), re-sent as those bytes on a retry, followed to
// their receipt. What is signed is the partner's transaction as it was shown: an EVM call
// {to, data, value} at the gas and fees it was simulated at; on Solana the partner's message
// bytes themselves, with the wallet as their fee payer and only signer. A Solana proposal whose
// blockhash expires unlanded ends dropped: Switchboard never signs a message of its own making
// in its place. Simulation is checked again just before signing: a proposal that no longer runs
// is never signed.

// ErrProposalChanged is a proposal whose transaction differs from the one its confirmation was
// simulated and shown with.
var ErrProposalChanged = errors.New("the proposed transaction is not the one shown")

// expiredProposal is why a Solana proposal that can no longer land ended.
const expiredProposal = "its blockhash expired before it landed; the partner must propose it again"

// Proposal is one partner-proposed transaction to sign from the account's wallet.
type Proposal struct {
	RequestID string
	AccountID string
	Chain     string
	// EVM: the call.
	To    string
	Value *big.Int // wei; nil is 0
	Data  []byte
	// Simulated (EVM) is the transaction as the confirmation simulated and priced it (gas,
	// fees); nil simulates now. Its nonce is ignored: the lock gives it.
	Simulated *evm.Tx
	// Solana: the partner's transaction, base64.
	Transaction string
}

func (p Proposal) value() *big.Int {
	if p.Value == nil {
		return new(big.Int)
	}
	return p.Value
}

// SimulateProposal runs an EVM proposal from the wallet address from: its decoded effect and
// the transaction that makes it (evm.ErrSimulationFailed when it does not run).
func (s *Sender) SimulateProposal(ctx context.Context, from [20]byte, p Proposal) (*evm.Simulation, error) {
	c, err := s.chain(p.Chain)
	if err != nil {
		return nil, err
	}
	to, err := evm.ParseAddress(p.To)
	if err != nil {
		return nil, fmt.Errorf("contract: %w", err)
	}
	return c.Client.Simulate(ctx, evm.Proposal{From: from, To: to, Value: p.value(), Data: p.Data})
}

// SimulateSolanaProposal parses a Solana proposal for the wallet address from, names the mints
// of its token effects and simulates it (transfer.ErrSimulationFailed when it does not run).
func (s *Sender) SimulateSolanaProposal(ctx context.Context, from string, p Proposal) (*transfer.Proposed, *transfer.Simulation, error) {
	if s.cfg.Solana == nil {
		return nil, nil, fmt.Errorf("%w: %q", ErrUnknownChain, SolanaChain)
	}
	prop, err := transfer.ParseProposed(p.Transaction, from)
	if err != nil {
		return nil, nil, err
	}
	if err := s.cfg.Solana.ResolveMints(ctx, prop); err != nil {
		return nil, nil, err
	}
	sim, err := s.cfg.Solana.SimulateProposed(ctx, prop)
	return prop, sim, err
}

// record is the send row of p, as this package spells its addresses.
func (p Proposal) record(from string, data string, amount *big.Int) *sends.Send {
	return &sends.Send{RequestID: p.RequestID, AccountID: p.AccountID, Chain: p.Chain, From: from,
		To: strings.ToLower(p.To), Token: Native, Amount: amount.String(), Kind: sends.KindProposed, Data: data}
}

// sameProposal reports whether rec is the proposal p asks for.
func (p Proposal) sameProposal(rec *sends.Send) bool {
	if rec.Kind != sends.KindProposed || rec.AccountID != p.AccountID || rec.Chain != p.Chain {
		return false
	}
	if p.Chain == SolanaChain {
		prop, err := transfer.ParseProposed(p.Transaction, rec.From)
		return err == nil && rec.Data == base64.StdEncoding.EncodeToString(prop.Message)
	}
	return rec.To == strings.ToLower(p.To) && rec.Amount == p.value().String() && rec.Data == "0x"+hex.EncodeToString(p.Data)
}

// SendProposed signs and sends the proposal p once: the first call simulates it again, signs
// and records it, then broadcasts; a later call of the same request id re-broadcasts the
// recorded transaction while it is open and answers the send as it stands (ErrOtherRequest
// when the id was used for anything else). ErrNotBroadcast (with the recorded send) when the
// node could not be reached: a retry sends the same bytes.
func (s *Sender) SendProposed(ctx context.Context, p Proposal) (*sends.Send, error) {
	rec, err := s.sends.Get(ctx, p.RequestID)
	fresh := false
	switch {
	case err == nil:
		// Recorded already: never signed again.
	case errors.Is(err, store.ErrNotFound):
		if p.Chain == SolanaChain {
			rec, fresh, err = s.prepareSolanaProposal(ctx, p)
		} else {
			rec, err = s.prepareProposal(ctx, p)
		}
		if err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("read send: %w", err)
	}
	if !p.sameProposal(rec) {
		return nil, ErrOtherRequest
	}
	if !rec.Open() {
		return rec, nil
	}
	if rec.Chain == SolanaChain {
		got, err := s.broadcastSolana(ctx, rec, fresh)
		if err == nil && fresh && got.Status == sends.Prepared {
			// Fresh bytes the cluster refused for their blockhash: they can never land.
			if err := s.expireProposed(ctx, got); err != nil {
				return nil, fmt.Errorf("end the expired proposal: %w", err)
			}
			return s.sends.Get(ctx, got.RequestID)
		}
		return got, err
	}
	c, err := s.chain(rec.Chain)
	if err != nil {
		return nil, err
	}
	return s.broadcast(ctx, c, rec)
}

// prepareProposal checks the EVM proposal still runs, then signs and records it at the locked
// nonce, at the gas and fees it was shown with.
func (s *Sender) prepareProposal(ctx context.Context, p Proposal) (*sends.Send, error) {
	c, err := s.chain(p.Chain)
	if err != nil {
		return nil, err
	}
	key, address, err := s.keys.EVM(ctx, p.AccountID)
	if err != nil {
		return nil, fmt.Errorf("open the wallet key: %w", err)
	}
	defer clear(key)
	from, err := evm.ParseAddress(address)
	if err != nil {
		return nil, fmt.Errorf("wallet address: %w", err)
	}
	sim, err := s.SimulateProposal(ctx, from, p)
	if err != nil {
		return nil, fmt.Errorf("simulate the proposal: %w", err)
	}
	tx := sim.Tx
	if q := p.Simulated; q != nil {
		if q.To != sim.Tx.To || q.Value == nil || q.Value.Cmp(sim.Tx.Value) != 0 || !bytes.Equal(q.Data, sim.Tx.Data) || q.ChainID != sim.Tx.ChainID {
			return nil, ErrProposalChanged
		}
		tx = q
	}
	next, err := c.Client.PendingNonce(ctx, from)
	if err != nil {
		return nil, fmt.Errorf("read the nonce: %w", err)
	}
	row := p.record(hexAddr(from), "0x"+hex.EncodeToString(p.Data), p.value())
	row.CreatedAt = s.d.Now()
	got, _, err := s.sends.Prepare(ctx, row, next, signAt(tx, key, from))
	if err != nil {
		return nil, fmt.Errorf("prepare the proposal: %w", err)
	}
	return got, nil
}

// prepareSolanaProposal checks the Solana proposal still runs, signs its message and records
// it; fresh reports these bytes were recorded by this call (never sent before).
func (s *Sender) prepareSolanaProposal(ctx context.Context, p Proposal) (*sends.Send, bool, error) {
	key, address, err := s.keys.Solana(ctx, p.AccountID)
	if err != nil {
		return nil, false, fmt.Errorf("open the wallet key: %w", err)
	}
	defer clear(key)
	prop, _, err := s.SimulateSolanaProposal(ctx, address, p)
	if err != nil {
		return nil, false, fmt.Errorf("simulate the proposal: %w", err)
	}
	signed, err := s.cfg.Solana.SignProposed(ctx, prop, key)
	if err != nil {
		return nil, false, err
	}
	out := new(big.Int).Sub(prop.LamportsOut(), new(big.Int).SetUint64(prop.FeeLamports))
	row := p.record(address, base64.StdEncoding.EncodeToString(prop.Message), out)
	row.To, row.CreatedAt = "", s.d.Now()
	row.Raw, row.TxHash, row.ValidUntil = signed.Raw, signed.Signature, int64(signed.LastValidBlockHeight)
	// A concurrent call that recorded first wins; these bytes were never sent.
	rec, fresh, err := s.sends.Record(ctx, row)
	if err != nil {
		return nil, false, fmt.Errorf("record the proposal: %w", err)
	}
	return rec, fresh, nil
}

// expireProposed ends a Solana proposal that can no longer land: dropped, never re-signed.
func (s *Sender) expireProposed(ctx context.Context, rec *sends.Send) error {
	return ignoreNotOpen(s.sends.Conclude(ctx, rec.RequestID, sends.Dropped, expiredProposal, "", 0, s.d.Now()))
}

// solanaFee is what a landed Solana send paid, in lamports: the base fee of its signature, and
// for a proposal the priority fee its compute budget set.
func solanaFee(rec *sends.Send) string {
	if rec.Kind == sends.KindProposed {
		if p, err := transfer.ParseProposed(base64.StdEncoding.EncodeToString(rec.Raw), rec.From); err == nil {
			return fmt.Sprint(p.FeeLamports)
		}
	}
	return fmt.Sprint(transfer.LamportsPerSignature)
}

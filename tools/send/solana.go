package send

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/switchboard-hq/switchboard/chain/jsonrpc"
	"github.com/switchboard-hq/switchboard/chain/solana/transfer"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/sends"
)

// Solana has no nonces: a transaction lives until its blockhash expires. A send is recorded
// with its signed bytes and their last valid block height before it is broadcast; retries
// re-send those bytes; it is signed again (a fresh blockhash) only once the old signature
// provably can no longer land: the block height is past its last valid height and the cluster
// has no status for it. Only a first broadcast of fresh bytes that the node refuses outright
// ends the send failed: a refusal of a re-broadcast proves nothing of the earlier one.

// QuoteSolana plans a Solana transfer from the wallet address from: what it costs the
// sender beyond the amount (base fee, and the recipient's token account's rent when the send
// creates it).
func (s *Sender) QuoteSolana(ctx context.Context, from string, r Request) (*transfer.Plan, error) {
	if s.cfg.Solana == nil {
		return nil, fmt.Errorf("%w: %q", ErrUnknownChain, SolanaChain)
	}
	return s.cfg.Solana.PlanTransfer(ctx, solanaTransfer(from, r.To, r.Token, r.Amount))
}

func solanaTransfer(from, to, token string, amount *big.Int) transfer.Transfer {
	if token == Native {
		token = ""
	}
	return transfer.Transfer{From: from, To: to, Mint: token, Amount: amount}
}

func (s *Sender) sendSolana(ctx context.Context, r Request) (*sends.Send, error) {
	if s.cfg.Solana == nil {
		return nil, fmt.Errorf("%w: %q", ErrUnknownChain, SolanaChain)
	}
	rec, err := s.sends.Get(ctx, r.RequestID)
	fresh := false
	switch {
	case err == nil:
	case errors.Is(err, store.ErrNotFound):
		key, address, err := s.keys.Solana(ctx, r.AccountID)
		if err != nil {
			return nil, fmt.Errorf("open the wallet key: %w", err)
		}
		defer clear(key)
		signed, err := s.signSolana(ctx, key, solanaTransfer(address, r.To, r.Token, r.Amount))
		if err != nil {
			return nil, err
		}
		row := r.record(address, s.d.Now())
		row.Raw, row.TxHash, row.ValidUntil = signed.Raw, signed.Signature, int64(signed.LastValidBlockHeight)
		// A concurrent call that recorded first wins; these bytes were never sent.
		if rec, fresh, err = s.sends.Record(ctx, row); err != nil {
			return nil, fmt.Errorf("record the send: %w", err)
		}
		if fresh {
			s.cfg.Failpoint(FailSigned)
		}
	default:
		return nil, fmt.Errorf("read send: %w", err)
	}
	if !r.same(rec) {
		return nil, ErrOtherRequest
	}
	if !rec.Open() {
		return rec, nil
	}
	return s.broadcastSolana(ctx, rec, fresh)
}

// signSolana plans tr on the latest blockhash and signs it with the wallet's seed.
func (s *Sender) signSolana(ctx context.Context, seed []byte, tr transfer.Transfer) (*transfer.Signed, error) {
	if transfer.Address(seed) != tr.From {
		return nil, errors.New("the wallet key does not match the wallet's address")
	}
	plan, err := s.cfg.Solana.PlanTransfer(ctx, tr)
	if err != nil {
		return nil, fmt.Errorf("plan the send: %w", err)
	}
	bh, err := s.cfg.Solana.LatestBlockhash(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the blockhash: %w", err)
	}
	return plan.Sign(seed, bh)
}

// broadcastSolana sends rec's recorded bytes; fresh says they were signed in this call and
// never sent before.
func (s *Sender) broadcastSolana(ctx context.Context, rec *sends.Send, fresh bool) (*sends.Send, error) {
	err := s.cfg.Solana.SendRaw(ctx, rec.Raw)
	var rpcErr *jsonrpc.Error
	switch {
	case err == nil, errors.Is(err, transfer.ErrAlreadyProcessed):
		s.cfg.Failpoint(FailBroadcast)
		if err := s.sends.Submitted(ctx, rec.RequestID, s.d.Now()); err != nil {
			return nil, fmt.Errorf("mark submitted: %w", err)
		}
	case errors.Is(err, transfer.ErrBlockhashNotFound):
		// Expired before it went out: Follow signs it again once that is proven.
	case errors.As(err, &rpcErr):
		if !fresh {
			break // an earlier broadcast of these bytes may still land: Follow decides
		}
		if err := s.sends.Refused(ctx, rec.RequestID, refusal(rpcErr), s.d.Now()); err != nil && !errors.Is(err, sends.ErrNotOpen) {
			return nil, fmt.Errorf("mark refused: %w", err)
		}
	default:
		return rec, fmt.Errorf("%w: %w", ErrNotBroadcast, err)
	}
	return s.sends.Get(ctx, rec.RequestID)
}

// followSolana concludes rec by its signature's status, signs it again once its blockhash
// provably expired unlanded, or re-broadcasts the same bytes; it reports whether rec ended.
func (s *Sender) followSolana(ctx context.Context, rec *sends.Send) (bool, error) {
	c := s.cfg.Solana
	// The height first, the status after: a height past the last valid one and then no status
	// prove the bytes can never land.
	height, err := c.BlockHeight(ctx)
	if err != nil {
		return false, err
	}
	st, err := c.SignatureStatus(ctx, rec.TxHash)
	if err != nil {
		return false, err
	}
	now := s.d.Now()
	if st.Found {
		status, reason := sends.Confirmed, ""
		if st.Err != "" {
			status, reason = sends.Failed, "the transaction failed: "+truncate(st.Err)
		}
		fee := solanaFee(rec)
		return true, ignoreNotOpen(s.sends.Conclude(ctx, rec.RequestID, status, reason, fee, int64(st.Slot), now))
	}
	if height <= uint64(rec.ValidUntil) {
		_, err := s.broadcastSolana(ctx, rec, false)
		return false, err
	}
	if rec.Kind == sends.KindProposed {
		return true, s.expireProposed(ctx, rec) // the partner's message: never re-made here
	}
	key, address, err := s.keys.Solana(ctx, rec.AccountID)
	if err != nil {
		return false, fmt.Errorf("open the wallet key: %w", err)
	}
	defer clear(key)
	if address != rec.From {
		return false, errors.New("the account's Solana wallet is not the send's sender")
	}
	amount, ok := new(big.Int).SetString(rec.Amount, 10)
	if !ok {
		return false, fmt.Errorf("malformed amount %q", rec.Amount)
	}
	signed, err := s.signSolana(ctx, key, solanaTransfer(rec.From, rec.To, rec.Token, amount))
	if err != nil {
		return false, err
	}
	if err := s.sends.Resigned(ctx, rec.RequestID, rec.TxHash, signed.Raw, signed.Signature, int64(signed.LastValidBlockHeight), now); err != nil {
		return false, ignoreNotOpen(err)
	}
	rec.Raw, rec.TxHash, rec.ValidUntil = signed.Raw, signed.Signature, int64(signed.LastValidBlockHeight)
	got, err := s.broadcastSolana(ctx, rec, true)
	return got != nil && !got.Open(), err
}

func truncate(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 200 {
		return s[:200]
	}
	return s
}

package payments

import (
	"context"
	"math/big"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/switchboard-hq/switchboard/contracts"
)

// orphanGrace is how long a transfer into the payer contract outside any escrow waits for
// its call's paid retry (which adopts it) before the sweeper refunds it.
const orphanGrace = 5 * time.Minute

// orphanBlocks is how far back the sweeper looks for such transfers (hours on a test network;
// small enough for a public node's log range limit).
const orphanBlocks = 5_000

// refundOrphans refunds the transfers by authorization into the payer contract that no
// escrow holds: a TransferWithAuthorization submitted to the token by someone else, whose
// paid retry never came (or came for a quote already paid). The contract adopts each into an
// escrow of no call, then refunds it, so no such amount stays in the contract. It returns how
// many it refunded.
func (s *Service) refundOrphans(ctx context.Context) (int, error) {
	found, err := s.chain.UnclaimedTransfers(ctx, s.cfg.Token, s.cfg.Payer, orphanBlocks)
	if err != nil {
		return 0, err
	}
	chainNow, err := s.chain.Now(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, t := range found {
		e, err := s.chain.EscrowOf(ctx, s.cfg.Payer, t.From, t.Nonce)
		if err != nil {
			return n, err
		}
		if e.State != contracts.EscrowNone {
			continue // paid through the contract, or adopted already
		}
		at, err := s.chain.BlockTime(ctx, t.Block)
		if err != nil {
			return n, err
		}
		if chainNow.Sub(at) < orphanGrace {
			continue
		}
		if _, err := s.chain.Transact(ctx, s.cfg.Payer, contracts.FlatFeePayer, "adopt", [32]byte{}, common.Address{}, new(big.Int), t.From, t.Nonce, t.Value); err != nil {
			return n, err
		}
		rc, err := s.chain.Transact(ctx, s.cfg.Payer, contracts.FlatFeePayer, "refund", contracts.EscrowID(t.From, t.Nonce))
		if err != nil {
			return n, err
		}
		n++
		s.log.WarnContext(ctx, "refunded a transfer into the payer contract that no call claimed", "from", t.From.Hex(), "transfer_tx", t.Tx.Hex(), "refund_tx", rc.TxHash.Hex())
	}
	return n, nil
}

package payments

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"math/big"
	"strconv"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/switchboard-hq/switchboard/contracts"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/flatpay"
	"github.com/switchboard-hq/switchboard/store/invocations"
	"github.com/switchboard-hq/switchboard/store/ledger"
	"github.com/switchboard-hq/switchboard/store/partners"
	"github.com/switchboard-hq/switchboard/store/payouts"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/webhooks"
)

// Reconcile concludes the payments a crash or a lost answer left behind, exactly once each (the
// contract settles or refunds an escrow at most once): a held payment whose call finished is
// settled (success) or refunded; one whose call was never dispatched (the process died between
// payment and dispatch) is refunded and its call ended; a submission whose answer was lost is
// looked up on chain; an x402 payment left dispatching is judged by its authorization's state
// (ReconcileFetches). Safe on several replicas. It returns how many it concluded.
func (s *Service) Reconcile(ctx context.Context) (int, error) {
	n := 0
	cutoff := s.now().UTC().Add(-30 * time.Second)
	held, err := flatpay.New(s.store).In(ctx, flatpay.Held, cutoff, 100)
	if err != nil {
		return 0, err
	}
	for _, p := range held {
		inv, err := invocations.New(s.store).ByID(ctx, p.RequestID)
		if err != nil {
			return n, err
		}
		switch inv.State {
		case store.InvDispatching:
			continue // dispatch's recovery concludes the call first
		case store.InvSucceeded:
			_, err = s.Conclude(ctx, p.RequestID, true)
		case store.InvAwaitingPayment:
			if _, err = s.Conclude(ctx, p.RequestID, false); err == nil {
				err = s.abandon(ctx, inv)
			}
		default:
			_, err = s.Conclude(ctx, p.RequestID, false)
		}
		if err != nil {
			return n, err
		}
		n++
		s.log.WarnContext(ctx, "concluded a flat-fee payment left behind", "request_id", p.RequestID, "call", inv.State)
	}
	submitted, err := flatpay.New(s.store).In(ctx, flatpay.Submitted, s.now().UTC().Add(-2*time.Minute), 100)
	if err != nil {
		return n, err
	}
	for _, p := range submitted {
		var nonce [32]byte
		copy(nonce[:], common.FromHex(p.Nonce))
		e, err := s.chain.EscrowOf(ctx, common.HexToAddress(p.PayerContract), common.HexToAddress(p.PayerAddress), nonce)
		if err != nil {
			return n, err
		}
		if e.State == contracts.EscrowNone {
			p.State, p.Reason, p.UpdatedAt = flatpay.Failed, "the submission never reached the chain", s.now().UTC()
			if _, err := s.move(ctx, p, flatpay.Submitted); err != nil {
				return n, err
			}
		} else if _, err := s.found(ctx, p, e); err != nil {
			var te *tools.Error
			if !errors.As(err, &te) {
				return n, err
			}
		}
		n++
	}
	if s.topups != nil {
		followed, err := s.topups.ReconcileTopups(ctx)
		n += followed
		if err != nil {
			return n, err
		}
	}
	fetched, err := s.ReconcileFetches(ctx)
	n += fetched
	if err != nil {
		return n, err
	}
	orphans, err := s.refundOrphans(ctx)
	return n + orphans, err
}

// abandon ends a paid call that was never dispatched, with an answer saying so, through
// billing's seam for a call's record (Close).
func (s *Service) abandon(ctx context.Context, inv *store.Invocation) error {
	e := tools.Errorf(tools.CodeUnavailable, "request %s was paid but never dispatched (the service restarted); the payment was refunded on chain. Ask for a new quote", inv.RequestID)
	raw, _ := json.Marshal(tools.Body{Error: e})
	answer := string(raw)
	now := s.now().UTC()
	_, err := s.billing.Close(ctx, inv, store.Outcome{State: store.InvFailed, Answer: &answer, FinishedAt: &now, OutcomeCode: string(e.Code), OutcomeMessage: e.Message},
		"paid but never dispatched: refunded on chain by the sweeper")
	return err
}

// Payouts pays every partner's accrued per-call fees (their payable books on the ledger with
// an EVM payout address for this chain) in the stablecoin, from the relayer's balance: one
// transfer per address, each recorded before it is sent and mirrored on the ledger, so a run
// can be repeated safely.
func (s *Service) Payouts(ctx context.Context) ([]*payouts.Payout, error) {
	if err := s.resumePayouts(ctx); err != nil {
		return nil, err
	}
	books, err := ledger.BookBalances(ctx, s.store, "partner:")
	if err != nil {
		return nil, err
	}
	var out []*payouts.Payout
	for _, b := range books {
		addr, ok := s.payoutAddress(b.Book)
		if !ok || b.Micro <= 0 {
			continue
		}
		p, err := s.payOne(ctx, b, addr)
		if err != nil {
			return out, err
		}
		out = append(out, p)
	}
	return out, nil
}

// payoutAddress reads the address of a payable book partner:<id>:evm[:<chain>]:<address>
// whose key is this chain's (or the bare evm namespace).
func (s *Service) payoutAddress(book string) (common.Address, bool) {
	parts := strings.Split(book, ":")
	var addr string
	switch {
	case len(parts) == 4 && parts[0] == "partner" && parts[2] == "evm":
		addr = parts[3]
	case len(parts) == 5 && parts[0] == "partner" && parts[2] == "evm" && parts[3] == fmt.Sprint(s.cfg.ChainID):
		addr = parts[4]
	}
	if !common.IsHexAddress(addr) {
		return common.Address{}, false
	}
	return common.HexToAddress(addr), true
}

const bookPayoutsPending = "payouts:pending"

func (s *Service) payOne(ctx context.Context, b ledger.BookBalance, addr common.Address) (*payouts.Payout, error) {
	now := s.now().UTC()
	p := &payouts.Payout{ID: fmt.Sprintf("po_%d_%s", now.UnixNano(), addr.Hex()[2:10]), Book: b.Book, ChainID: s.cfg.ChainID, Address: addr.Hex(),
		AmountAtomic: b.Micro, State: payouts.Pending, CreatedAt: now, UpdatedAt: now}
	if err := s.store.InTx(ctx, func(ctx context.Context, q *store.Q) error {
		if err := payouts.Insert(ctx, q, p); err != nil {
			return err
		}
		return ledger.Post(ctx, q, "", "payout "+p.ID, now,
			ledger.Posting{Book: b.Book, Micro: -b.Micro, Kind: "payout"},
			ledger.Posting{Book: bookPayoutsPending, Micro: b.Micro, Kind: "payout"})
	}); err != nil {
		return nil, err
	}
	rc, err := s.chain.TransactRecorded(ctx, s.cfg.Token, contracts.TestUSDC, func(tx common.Hash) error {
		p.Tx, p.UpdatedAt = tx.Hex(), s.now().UTC()
		return payouts.New(s.store).Update(ctx, p)
	}, "transfer", addr, bigInt(b.Micro))
	if err != nil && p.Tx == "" || errors.Is(err, contracts.ErrReverted) {
		if ferr := s.failPayout(ctx, p, err); ferr != nil {
			return p, fmt.Errorf("payout to %s failed (%v), and recording that failed too: %w", p.Address, err, ferr)
		}
		return p, fmt.Errorf("payout to %s: %w", p.Address, err)
	}
	if err != nil {
		return p, err // sent, outcome unknown: resumePayouts reads its receipt next run
	}
	return p, s.donePayout(ctx, p, rc.TxHash.Hex())
}

func (s *Service) donePayout(ctx context.Context, p *payouts.Payout, tx string) error {
	p.State, p.Tx, p.UpdatedAt = payouts.Done, tx, s.now().UTC()
	return s.closePayout(ctx, p, "payout "+p.ID+" "+tx,
		ledger.Posting{Book: bookPayoutsPending, Micro: -p.AmountAtomic, Kind: "payout"},
		ledger.Posting{Book: "external:payouts:" + p.Address, Micro: p.AmountAtomic, Kind: "payout"})
}

// failPayout records that a payout never reached the chain: its amount goes back to the
// partner's book. The error is the recording's only (nil once it is recorded).
func (s *Service) failPayout(ctx context.Context, p *payouts.Payout, cause error) error {
	p.State, p.Reason, p.UpdatedAt = payouts.Failed, fmt.Sprint(cause), s.now().UTC()
	return s.closePayout(ctx, p, "payout "+p.ID+" failed",
		ledger.Posting{Book: bookPayoutsPending, Micro: -p.AmountAtomic, Kind: "payout"},
		ledger.Posting{Book: p.Book, Micro: p.AmountAtomic, Kind: "payout"})
}

// closePayout moves a pending payout to p.State and posts its ledger legs in one transaction,
// only if it was still pending: a payout half-recorded, or concluded by another run first, is
// never posted twice.
func (s *Service) closePayout(ctx context.Context, p *payouts.Payout, memo string, legs ...ledger.Posting) error {
	err := s.store.InTx(ctx, func(ctx context.Context, q *store.Q) error {
		moved, err := payouts.Move(ctx, q, p, payouts.Pending)
		if err != nil || !moved {
			return err
		}
		if err := ledger.Post(ctx, q, "", memo, p.UpdatedAt, legs...); err != nil {
			return err
		}
		if p.State != payouts.Done {
			return nil
		}
		return s.emitSettled(ctx, q, p)
	})
	if err != nil {
		return fmt.Errorf("record payout %s as %s: %w", p.ID, p.State, err)
	}
	return nil
}

// resumePayouts settles the pending payouts of an interrupted run by their receipts.
func (s *Service) resumePayouts(ctx context.Context) error {
	pending, err := payouts.New(s.store).In(ctx, payouts.Pending)
	if err != nil {
		return err
	}
	for _, p := range pending {
		if p.Tx == "" {
			if err := s.failPayout(ctx, p, errors.New("the run stopped before the transfer was signed")); err != nil {
				return err
			}
			s.log.WarnContext(ctx, "payout never signed: its amount went back to the partner's book", "payout", p.ID)
			continue
		}
		rc, ok, err := s.chain.Receipt(ctx, common.HexToHash(p.Tx))
		if err != nil {
			return err
		}
		switch {
		case !ok:
			// Signed but never mined: it may still be in a mempool; leave it for the operator
			// rather than risk paying twice.
			s.log.WarnContext(ctx, "payout transfer not mined yet", "payout", p.ID, "tx", p.Tx)
		case rc.Status == 1:
			if err := s.donePayout(ctx, p, p.Tx); err != nil {
				return err
			}
		default:
			if err := s.failPayout(ctx, p, errors.New("the transfer reverted")); err != nil {
				return err
			}
		}
	}
	return nil
}

func bigInt(n int64) *big.Int { return big.NewInt(n) }

// emitSettled writes payout.settled for the partner whose book was paid, in the payout's
// transaction.
func (s *Service) emitSettled(ctx context.Context, q *store.Q, p *payouts.Payout) error {
	parts := strings.SplitN(p.Book, ":", 3) // partner:<id>:<payout>
	if len(parts) < 3 || parts[0] != "partner" {
		return nil
	}
	accountID, err := partners.AccountOf(ctx, q, parts[1])
	if err != nil {
		return fmt.Errorf("the account of partner %s: %w", parts[1], err)
	}
	if accountID == "" { // a book with no partner row: the payout stands, no one to tell
		return nil
	}
	return webhooks.Emit(ctx, q, webhooks.PayoutSettled, accountID, p.UpdatedAt, webhooks.PayoutData{
		PayoutID: p.ID, ChainID: p.ChainID, Address: p.Address, AmountAtomic: strconv.FormatInt(p.AmountAtomic, 10), Tx: p.Tx})
}

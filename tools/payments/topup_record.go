package payments

import (
	"context"
	"fmt"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/topups"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/webhooks"
)

// A credited top-up is a movement on the record like a call: one invocations row of kind
// topup, named by the top-up's requestId, written by billing in the transaction that credits
// it. The credit moves the top-up out of submitted in that transaction, so the row is written
// once whatever is retried, replayed or swept.

// credit books a confirmed top-up once: the row leaves submitted in the same transaction as
// the credit, its ledger transaction (chain:treasury -> the user's available credit) and its
// record (an invocations row of kind topup, by the same requestId, which ledger-check matches
// to both). The cap was checked before the transfer was submitted; money that arrived is
// credited whatever happened to the balance meanwhile.
func (t *Topups) credit(ctx context.Context, row *topups.CreditTopup, tx string) (TopupOutput, error) {
	now := t.now().UTC()
	err := t.store.InTx(ctx, func(ctx context.Context, q *store.Q) error {
		row.State, row.PayTx, row.UpdatedAt = topups.Credited, tx, now
		moved, err := topups.Move(ctx, q, row, topups.Submitted)
		if err != nil || !moved {
			return err
		}
		available, err := t.pay.billing.BookTopup(ctx, q, billing.Topup{RequestID: row.RequestID, AccountID: row.AccountID, KeyID: row.KeyID,
			Micro: row.AmountAtomic, Network: topupNetwork(row), TxHash: tx, Payer: row.PayerAddress, Asked: row.CreatedAt}, now)
		if err != nil {
			return err
		}
		return webhooks.Emit(ctx, q, webhooks.CreditToppedUp, row.AccountID, now, webhooks.TopupData{RequestID: row.RequestID,
			CreditedUsd: tools.USD(row.AmountAtomic).String(), CreditUsd: tools.USD(available).String(),
			Network: topupNetwork(row), Payer: row.PayerAddress, TxHash: tx})
	})
	if err != nil {
		return TopupOutput{}, fmt.Errorf("credit top-up %s: %w", row.RequestID, err)
	}
	return t.answer(ctx, row)
}

// answer is a credited top-up's answer, with the account's credit now.
func (t *Topups) answer(ctx context.Context, row *topups.CreditTopup) (TopupOutput, error) {
	cur, err := t.rows.Get(ctx, row.RequestID)
	if err != nil {
		return TopupOutput{}, err
	}
	if cur.State != topups.Credited {
		return t.follow(ctx, cur) // another call moved it meanwhile
	}
	ca, err := t.store.Credit(ctx, cur.AccountID)
	if err != nil {
		return TopupOutput{}, err
	}
	return TopupOutput{CreditedUsd: tools.USD(cur.AmountAtomic), CreditUsd: tools.USD(ca.AvailableMicro), Network: fmt.Sprintf("eip155:%d", cur.ChainID),
		TxHash: cur.PayTx, RequestID: cur.RequestID, payer: cur.PayerAddress}, nil
}

// topupNetwork is the CAIP-2 id of the chain row was paid on.
func topupNetwork(row *topups.CreditTopup) string { return fmt.Sprintf("eip155:%d", row.ChainID) }

package billing

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/tools"
)

// Topup is a confirmed credit top-up to book: the credit bought on Network by TxHash, asked
// for at Asked by KeyID ("" for a portal session), named by RequestID (its ledger transaction
// and its record).
type Topup struct {
	RequestID, AccountID, KeyID string
	Micro                       int64
	Network, TxHash, Payer      string
	Asked                       time.Time
}

// BookTopup books t inside q's transaction, the one that moves the top-up to credited: the
// credit (TopUpIn: chain:treasury -> the account's available credit) and its record, an
// invocations row of kind topup by the same requestId, valued at the credit bought and
// costing nothing (no fee columns), so no usage chart or policy window counts it as spending.
// ledger-check matches the two. It answers the new available credit.
func (s *Service) BookTopup(ctx context.Context, q *store.Q, t Topup, now time.Time) (int64, error) {
	available, err := s.TopUpIn(ctx, q, t.AccountID, t.Micro, t.RequestID, "top-up "+t.TxHash, now)
	if err != nil {
		return 0, err
	}
	args, err := json.Marshal(map[string]any{"amountUsd": tools.USD(t.Micro)})
	if err != nil {
		return 0, err
	}
	network, tx := t.Network, t.TxHash
	inv := &store.Invocation{RequestID: t.RequestID, AccountID: t.AccountID, KeyID: t.KeyID, Handle: "credit_topup",
		Args: string(args), Kind: store.KindTopup, Network: &network, TxHash: &tx, ValueMicro: t.Micro,
		Outcome: store.Outcome{State: store.InvSucceeded, FinishedAt: &now}, CreatedAt: t.Asked, DispatchedAt: &now}
	if err := q.InsertInvocation(ctx, inv); err != nil {
		return 0, fmt.Errorf("record top-up %s: %w", t.RequestID, err)
	}
	detail := fmt.Sprintf("credited %s USD, paid by %s in %s", tools.USD(t.Micro), t.Payer, t.TxHash)
	return available, q.AddEvent(ctx, t.RequestID, store.InvSucceeded, detail, now)
}

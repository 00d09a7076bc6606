package store

import (
	"context"
	"time"
)

// IntentEarnings sums one intent's invocations since a moment.
type IntentEarnings struct {
	IntentID        string `bun:"intent_id"`
	Handle          string `bun:"handle"`
	PartnerFeeMicro int64  `bun:"partner_fee_micro"`
	Calls           int    `bun:"calls"`
	Succeeded       int    `bun:"succeeded"`
}

// PayoutEarnings sums the partner fees booked to one payout address since a moment.
type PayoutEarnings struct {
	Book        string `bun:"book"`
	AmountMicro int64  `bun:"amount_micro"`
}

// EarningsByIntent sums the invocations of the partner's intents since `since`.
func (s *Store) EarningsByIntent(ctx context.Context, partnerID string, since time.Time) ([]IntentEarnings, error) {
	var out []IntentEarnings
	err := s.db.NewRaw(`SELECT i.intent_id, i.handle, COALESCE(SUM(i.partner_fee_micro), 0) AS partner_fee_micro,
		COUNT(*) AS calls, SUM(CASE WHEN i.state = ? THEN 1 ELSE 0 END) AS succeeded
		FROM invocations i JOIN partner_intents p ON p.id = i.intent_id
		WHERE p.partner_id = ? AND i.created_at >= ? AND i.state NOT IN (?, ?, ?)
		GROUP BY i.intent_id, i.handle ORDER BY i.handle`, InvSucceeded, partnerID, since, InvAwaitingConfirmation, InvAwaitingPayment, InvDeclined).Scan(ctx, &out)
	return out, normalize(err)
}

// EarningsByPayout sums the partner fees booked since `since` to the books named with
// bookPrefix (a partner's payout books: ledger.PartnerPayable(partnerID, "")).
func (s *Store) EarningsByPayout(ctx context.Context, bookPrefix string, since time.Time) ([]PayoutEarnings, error) {
	var out []PayoutEarnings
	err := s.db.NewRaw(`SELECT book, SUM(amount_micro) AS amount_micro FROM ledger_entries
		WHERE kind = 'partner_fee' AND amount_micro > 0 AND book LIKE ? AND created_at >= ?
		GROUP BY book ORDER BY book`, bookPrefix+"%", since).Scan(ctx, &out)
	return out, normalize(err)
}

// RecentInvocations lists an intent's latest invocations, newest first.
func (s *Store) RecentInvocations(ctx context.Context, intentID string, limit int) ([]*Invocation, error) {
	var out []*Invocation
	err := s.db.NewSelect().Model(&out).Where("intent_id = ? AND state NOT IN (?, ?, ?)", intentID, InvAwaitingConfirmation, InvAwaitingPayment, InvDeclined).
		OrderExpr("created_at DESC").Limit(int64(limit)).Scan(ctx)
	return out, normalize(err)
}

// SpentSince sums what an account's finished invocations cost it since `since`: the
// infrastructure reserve it kept plus the partner and platform fees and gas.
func (s *Store) SpentSince(ctx context.Context, accountID string, since time.Time) (int64, error) {
	var sum int64
	err := s.db.NewRaw(`SELECT COALESCE(SUM(reserve_micro - refunded_micro + partner_fee_micro + platform_fee_micro + gas_micro), 0)
		FROM invocations WHERE account_id = ? AND created_at >= ? AND finished_at IS NOT NULL AND state <> ?`, accountID, since, InvDeclined).Scan(ctx, &sum)
	return sum, normalize(err)
}

// AccountInvocations lists an account's latest invocations, newest first.
func (s *Store) AccountInvocations(ctx context.Context, accountID string, limit int) ([]*Invocation, error) {
	var out []*Invocation
	err := s.db.NewSelect().Model(&out).Where("account_id = ?", accountID).OrderExpr("created_at DESC").Limit(int64(limit)).Scan(ctx)
	return out, normalize(err)
}

package store

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// The portal's charts and call logs: aggregates and pages over invocations, bounded by a
// window and a limit, on the (account_id, created_at) and (intent_id, created_at) indexes.

// dayOf is the SQL expression of a timestamp column's UTC calendar day, "2006-01-02".
func (s *Store) dayOf(col string) string {
	if s.postgres {
		return "to_char(" + col + " AT TIME ZONE 'UTC', 'YYYY-MM-DD')"
	}
	return "date(" + col + ")" // SQLite's date() reads the stored offset and answers in UTC
}

// costOf is what a finished invocation cost its caller: the infrastructure reserve it kept
// plus the partner and platform fees and gas (SpentSince's sum, row by row).
const costOf = "(reserve_micro - refunded_micro + partner_fee_micro + platform_fee_micro + gas_micro)"

// DaySpend is what one key of an account spent on one UTC day.
type DaySpend struct {
	Day        string `bun:"day"`
	KeyID      string `bun:"key_id"`
	Calls      int    `bun:"calls"`
	SpentMicro int64  `bun:"spent_micro"`
}

// SpendByDay sums an account's finished invocations since `since` by UTC day and key.
func (s *Store) SpendByDay(ctx context.Context, accountID string, since time.Time) ([]DaySpend, error) {
	var out []DaySpend
	day := s.dayOf("created_at")
	err := s.db.NewRaw(`SELECT `+day+` AS day, key_id, COUNT(*) AS calls, COALESCE(SUM(`+costOf+`), 0) AS spent_micro
		FROM invocations WHERE account_id = ? AND created_at >= ? AND finished_at IS NOT NULL
		GROUP BY `+day+`, key_id ORDER BY day, key_id`, accountID, since).Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("spend by day: %w", normalize(err))
	}
	return out, nil
}

// IntentDay is one intent's finished calls on one UTC day.
type IntentDay struct {
	Day         string `bun:"day"`
	Calls       int    `bun:"calls"`
	Succeeded   int    `bun:"succeeded"`
	EarnedMicro int64  `bun:"earned_micro"`
}

// IntentDaily sums an intent's finished calls since `since` by UTC day.
func (s *Store) IntentDaily(ctx context.Context, intentID string, since time.Time) ([]IntentDay, error) {
	var out []IntentDay
	day := s.dayOf("created_at")
	err := s.db.NewRaw(`SELECT `+day+` AS day, COUNT(*) AS calls, SUM(CASE WHEN state = ? THEN 1 ELSE 0 END) AS succeeded,
		COALESCE(SUM(partner_fee_micro), 0) AS earned_micro
		FROM invocations WHERE intent_id = ? AND created_at >= ? AND finished_at IS NOT NULL
		GROUP BY `+day+` ORDER BY day`, InvSucceeded, intentID, since).Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("intent daily: %w", normalize(err))
	}
	return out, nil
}

// DayLatency is one answered call's latency and its UTC day.
type DayLatency struct {
	Day       string `bun:"day"`
	LatencyMs int64  `bun:"latency_ms"`
}

// IntentLatencies lists the latencies of an intent's answered calls since `since`, the
// newest `limit` of them (percentiles are computed from this sample).
func (s *Store) IntentLatencies(ctx context.Context, intentID string, since time.Time, limit int) ([]DayLatency, error) {
	var out []DayLatency
	err := s.db.NewRaw(`SELECT `+s.dayOf("created_at")+` AS day, latency_ms FROM invocations
		WHERE intent_id = ? AND created_at >= ? AND finished_at IS NOT NULL AND latency_ms IS NOT NULL
		ORDER BY created_at DESC LIMIT ?`, intentID, since, limit).Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("intent latencies: %w", normalize(err))
	}
	return out, nil
}

// CallQuery selects one page of call log, newest first. Exactly one of AccountID (the
// caller's calls) and PartnerID (calls to the partner's intents, quotes never sent to the
// partner left out) is set.
type CallQuery struct {
	AccountID string
	PartnerID string
	KeyID     string // "" for any
	IntentID  string // "" for any
	State     string // "" for any
	// Before is the keyset cursor: only calls older than (BeforeAt, BeforeID).
	BeforeAt *time.Time
	BeforeID string
	Limit    int
}

// callColumns are what a call log row shows; args and answer are read by the detail view.
var callColumns = []string{"request_id", "account_id", "key_id", "intent_id", "handle", "category", "state",
	"http_status", "outcome_code", "latency_ms", "reserve_micro", "refunded_micro", "partner_fee_micro",
	"platform_fee_micro", "gas_micro", "created_at", "finished_at"}

// Calls returns one page of call log.
func (s *Store) Calls(ctx context.Context, q CallQuery) ([]*Invocation, error) {
	if (q.AccountID == "") == (q.PartnerID == "") {
		return nil, fmt.Errorf("calls: want exactly one of account and partner")
	}
	var out []*Invocation
	sel := s.db.NewSelect().Model(&out)
	for _, c := range callColumns {
		sel = sel.ColumnExpr("?TableAlias.?", bun.Ident(c))
	}
	if q.AccountID != "" {
		sel = sel.Where("?TableAlias.account_id = ?", q.AccountID)
	} else {
		sel = sel.Where("?TableAlias.intent_id IN (SELECT id FROM partner_intents WHERE partner_id = ?)", q.PartnerID).
			Where("?TableAlias.state NOT IN (?, ?)", InvAwaitingConfirmation, InvAwaitingPayment)
	}
	if q.KeyID != "" {
		sel = sel.Where("?TableAlias.key_id = ?", q.KeyID)
	}
	if q.IntentID != "" {
		sel = sel.Where("?TableAlias.intent_id = ?", q.IntentID)
	}
	if q.State != "" {
		sel = sel.Where("?TableAlias.state = ?", q.State)
	}
	if q.BeforeAt != nil {
		sel = sel.Where("(?TableAlias.created_at < ? OR (?TableAlias.created_at = ? AND ?TableAlias.request_id < ?))",
			*q.BeforeAt, *q.BeforeAt, q.BeforeID)
	}
	err := sel.OrderExpr("?TableAlias.created_at DESC, ?TableAlias.request_id DESC").Limit(int64(q.Limit)).Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("calls: %w", normalize(err))
	}
	return out, nil
}

// PublisherIntents lists a partner's listed intents (active, not archived), by handle, at
// most limit.
func (s *Store) PublisherIntents(ctx context.Context, partnerID string, limit int) ([]*PartnerIntent, error) {
	var out []*PartnerIntent
	sel := s.db.NewSelect().Model(&out)
	for _, c := range searchColumns {
		sel = sel.ColumnExpr("?TableAlias.?", bun.Ident(c))
	}
	err := sel.Where("partner_id = ? AND is_active = ? AND archived_at IS NULL", partnerID, true).
		OrderExpr("public_identifier ASC").Limit(int64(limit)).Scan(ctx)
	return out, normalize(err)
}

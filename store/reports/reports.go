// Package reports keeps the read-only reports over calls and the ledger: spend and latency per
// day, call history with keyset paging, partners' earnings, and the platform books' totals.
package reports

import (
	"context"
	"fmt"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/dberr"
	"github.com/switchboard-hq/switchboard/store/ledger"
	"github.com/uptrace/bun"
)

// Reports are the reports over calls and the ledger.
type Reports interface {
	// SpendByDay sums an account's finished invocations since `since` by UTC day and key.
	SpendByDay(ctx context.Context, accountID string, since time.Time) ([]DaySpend, error)
	// IntentDaily sums an intent's finished calls since `since` by UTC day.
	IntentDaily(ctx context.Context, intentID string, since time.Time) ([]IntentDay, error)
	// IntentLatencies lists the latencies of an intent's answered calls since `since`, the
	// newest `limit` of them (percentiles are computed from this sample).
	IntentLatencies(ctx context.Context, intentID string, since time.Time, limit int) ([]DayLatency, error)
	// Calls returns one page of call log.
	Calls(ctx context.Context, q CallQuery) ([]*store.Invocation, error)
	// EarningsByIntent sums the invocations of the partner's intents since `since`.
	EarningsByIntent(ctx context.Context, partnerID string, since time.Time) ([]IntentEarnings, error)
	// EarningsByPayout sums the partner fees of the partner's calls made since `since` by the
	// payout book they are owed to: read from the calls' rows, which carry it from their record
	// on, where the ledger posts a budget lease's calls when it is settled.
	EarningsByPayout(ctx context.Context, partnerID string, since time.Time) ([]PayoutEarnings, error)
	// RecentInvocations lists an intent's latest invocations, newest first.
	RecentInvocations(ctx context.Context, intentID string, limit int) ([]*store.Invocation, error)
	// AccountInvocations lists an account's latest invocations, newest first.
	AccountInvocations(ctx context.Context, accountID string, limit int) ([]*store.Invocation, error)
	// LedgerTotals reads the totals (read-only). The credit sums scan one row per account, the
	// book sums use the ledger's book index, so it is cheap enough to read at a metrics scrape.
	LedgerTotals(ctx context.Context, books ...string) (Totals, error)
}

// New returns the reports queries of st.
func New(st *store.Store) Reports { return &queries{st: st, db: st.DB(), postgres: st.Postgres()} }

// queries is Reports on the store's database.
type queries struct {
	st       *store.Store
	db       *bun.DB
	postgres bool
}

// The portal's charts and call logs: aggregates and pages over invocations, bounded by a
// window and a limit, on the (account_id, created_at) and (intent_id, created_at) indexes.

// dayOf is the SQL expression of a timestamp column's UTC calendar day, "2006-01-02".
func (s *queries) dayOf(col string) string {
	if s.postgres {
		return "to_char(" + col + " AT TIME ZONE 'UTC', 'YYYY-MM-DD')"
	}
	return "date(" + col + ")" // SQLite's date() reads the stored offset and answers in UTC
}

// costOf is what a finished invocation cost its caller: the infrastructure reserve it kept
// plus the partner and platform fees and gas (invocations.Invocations.SpentSince's sum, row
// by row).
const costOf = "(reserve_micro - refunded_micro + partner_fee_micro + platform_fee_micro + gas_micro)"

// DaySpend is what one key of an account spent on one UTC day.
type DaySpend struct {
	Day        string `bun:"day"`
	KeyID      string `bun:"key_id"`
	Calls      int    `bun:"calls"`
	SpentMicro int64  `bun:"spent_micro"`
}

func (s *queries) SpendByDay(ctx context.Context, accountID string, since time.Time) ([]DaySpend, error) {
	var out []DaySpend
	day := s.dayOf("created_at")
	err := s.db.NewRaw(`SELECT `+day+` AS day, key_id, COUNT(*) AS calls, COALESCE(SUM(`+costOf+`), 0) AS spent_micro
		FROM invocations WHERE account_id = ? AND created_at >= ? AND finished_at IS NOT NULL
		GROUP BY `+day+`, key_id ORDER BY day, key_id`, accountID, since).Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("spend by day: %w", dberr.Normalize(err))
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

func (s *queries) IntentDaily(ctx context.Context, intentID string, since time.Time) ([]IntentDay, error) {
	var out []IntentDay
	day := s.dayOf("created_at")
	err := s.db.NewRaw(`SELECT `+day+` AS day, COUNT(*) AS calls, SUM(CASE WHEN state = ? THEN 1 ELSE 0 END) AS succeeded,
		COALESCE(SUM(partner_fee_micro), 0) AS earned_micro
		FROM invocations WHERE intent_id = ? AND created_at >= ? AND finished_at IS NOT NULL
		GROUP BY `+day+` ORDER BY day`, store.InvSucceeded, intentID, since).Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("intent daily: %w", dberr.Normalize(err))
	}
	return out, nil
}

// DayLatency is one answered call's latency and its UTC day.
type DayLatency struct {
	Day       string `bun:"day"`
	LatencyMs int64  `bun:"latency_ms"`
}

func (s *queries) IntentLatencies(ctx context.Context, intentID string, since time.Time, limit int) ([]DayLatency, error) {
	var out []DayLatency
	err := s.db.NewRaw(`SELECT `+s.dayOf("created_at")+` AS day, latency_ms FROM invocations
		WHERE intent_id = ? AND created_at >= ? AND finished_at IS NOT NULL AND latency_ms IS NOT NULL
		ORDER BY created_at DESC LIMIT ?`, intentID, since, limit).Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("intent latencies: %w", dberr.Normalize(err))
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
	Kind      string // "" for any: store.KindCall, store.KindTopup, ...
	// Before is the keyset cursor: only calls older than (BeforeAt, BeforeID).
	BeforeAt *time.Time
	BeforeID string
	Limit    int
}

// callColumns are what a call log row shows; args and answer are read by the detail view.
var callColumns = []string{"request_id", "account_id", "key_id", "intent_id", "handle", "category", "state",
	"http_status", "outcome_code", "latency_ms", "reserve_micro", "refunded_micro", "partner_fee_micro",
	"platform_fee_micro", "gas_micro", "created_at", "finished_at", "kind", "network", "tx_hash", "value_micro"}

func (s *queries) Calls(ctx context.Context, q CallQuery) ([]*store.Invocation, error) {
	if (q.AccountID == "") == (q.PartnerID == "") {
		return nil, fmt.Errorf("calls: want exactly one of account and partner")
	}
	var out []*store.Invocation
	sel := s.db.NewSelect().Model(&out)
	for _, c := range callColumns {
		sel = sel.ColumnExpr("?TableAlias.?", bun.Ident(c))
	}
	if q.AccountID != "" {
		sel = sel.Where("?TableAlias.account_id = ?", q.AccountID)
	} else {
		sel = sel.Where("?TableAlias.intent_id IN (SELECT id FROM partner_intents WHERE partner_id = ?)", q.PartnerID).
			Where("?TableAlias.state NOT IN (?, ?)", store.InvAwaitingConfirmation, store.InvAwaitingPayment)
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
	if q.Kind != "" {
		sel = sel.Where("?TableAlias.kind = ?", q.Kind)
	}
	if q.BeforeAt != nil {
		sel = sel.Where("(?TableAlias.created_at < ? OR (?TableAlias.created_at = ? AND ?TableAlias.request_id < ?))",
			*q.BeforeAt, *q.BeforeAt, q.BeforeID)
	}
	err := sel.OrderExpr("?TableAlias.created_at DESC, ?TableAlias.request_id DESC").Limit(int64(q.Limit)).Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("calls: %w", dberr.Normalize(err))
	}
	return out, nil
}

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

func (s *queries) EarningsByIntent(ctx context.Context, partnerID string, since time.Time) ([]IntentEarnings, error) {
	var out []IntentEarnings
	err := s.db.NewRaw(`SELECT i.intent_id, i.handle, COALESCE(SUM(i.partner_fee_micro), 0) AS partner_fee_micro,
		COUNT(*) AS calls, SUM(CASE WHEN i.state = ? THEN 1 ELSE 0 END) AS succeeded
		FROM invocations i JOIN partner_intents p ON p.id = i.intent_id
		WHERE p.partner_id = ? AND i.created_at >= ? AND i.state NOT IN (?, ?, ?)
		GROUP BY i.intent_id, i.handle ORDER BY i.handle`, store.InvSucceeded, partnerID, since, store.InvAwaitingConfirmation, store.InvAwaitingPayment, store.InvDeclined).Scan(ctx, &out)
	return out, dberr.Normalize(err)
}

func (s *queries) EarningsByPayout(ctx context.Context, partnerID string, since time.Time) ([]PayoutEarnings, error) {
	var out []PayoutEarnings
	// By the partner's intents, as EarningsByIntent: each intent's calls since `since` are one
	// range of invocations_intent_idx, where the payout book alone would scan every call.
	err := s.db.NewRaw(`SELECT i.payout_book AS book, SUM(i.partner_fee_micro) AS amount_micro
		FROM invocations i JOIN partner_intents p ON p.id = i.intent_id
		WHERE p.partner_id = ? AND i.created_at >= ? AND i.partner_fee_micro > 0
		GROUP BY i.payout_book ORDER BY i.payout_book`, partnerID, since).Scan(ctx, &out)
	return out, dberr.Normalize(err)
}

func (s *queries) RecentInvocations(ctx context.Context, intentID string, limit int) ([]*store.Invocation, error) {
	var out []*store.Invocation
	err := s.db.NewSelect().Model(&out).Where("intent_id = ? AND state NOT IN (?, ?, ?)", intentID, store.InvAwaitingConfirmation, store.InvAwaitingPayment, store.InvDeclined).
		OrderExpr("created_at DESC").Limit(int64(limit)).Scan(ctx)
	return out, dberr.Normalize(err)
}

func (s *queries) AccountInvocations(ctx context.Context, accountID string, limit int) ([]*store.Invocation, error) {
	var out []*store.Invocation
	err := s.db.NewSelect().Model(&out).Where("account_id = ?", accountID).OrderExpr("created_at DESC").Limit(int64(limit)).Scan(ctx)
	return out, dberr.Normalize(err)
}

// Totals is the money the service holds for monitoring: every account's credit summed, and
// the balances of named ledger books (micro-USD).
type Totals struct {
	AvailableMicro int64
	ReservedMicro  int64
	Books          map[string]int64 // each book asked for; 0 when it has no entries
}

func (s *queries) LedgerTotals(ctx context.Context, books ...string) (Totals, error) {
	t := Totals{Books: make(map[string]int64, len(books))}
	if err := s.db.NewSelect().Model((*store.CreditAccount)(nil)).
		ColumnExpr("COALESCE(SUM(available_micro), 0), COALESCE(SUM(reserved_micro), 0)").
		Scan(ctx, &t.AvailableMicro, &t.ReservedMicro); err != nil {
		return t, dberr.Normalize(err)
	}
	for _, b := range books {
		t.Books[b] = 0
	}
	if len(books) == 0 {
		return t, nil
	}
	var sums []ledger.BookBalance
	if err := s.db.NewSelect().Model((*ledger.Entry)(nil)).ColumnExpr("book, SUM(amount_micro) AS micro").
		Where("book IN (?)", bun.List(books)).Group("book").Scan(ctx, &sums); err != nil {
		return t, dberr.Normalize(err)
	}
	for _, b := range sums {
		t.Books[b.Book] = b.Micro
	}
	return t, nil
}

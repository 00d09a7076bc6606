package partners

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/ledger"
	"github.com/switchboard-hq/switchboard/tools"
)

// EarningsInput is partner_earnings' input.
type EarningsInput struct {
	Since    *time.Time `json:"since,omitempty" jsonschema_description:"start of the period (RFC 3339); default 30 days ago"`
	IntentID string     `json:"intentId,omitempty" jsonschema:"maxLength=64" jsonschema_description:"also list this intent's recent calls"`
}

// IntentEarnings is one intent's period.
type IntentEarnings struct {
	IntentID      string    `json:"intentId"`
	Handle        string    `json:"handle"`
	PartnerFeeUsd tools.USD `json:"partnerFeeUsd" jsonschema_description:"partner fees earned (settled calls)"`
	Calls         int       `json:"calls" jsonschema_description:"dispatched calls, whatever their outcome"`
	Succeeded     int       `json:"succeeded"`
}

// PayoutEarnings is what accrued to one payout address (payables on the ledger; paying them
// out on chain is a later step).
type PayoutEarnings struct {
	Payout        string    `json:"payout" jsonschema_description:"namespace:chain:address, or unassigned"`
	PartnerFeeUsd tools.USD `json:"partnerFeeUsd"`
}

// RecentCall is one of an intent's latest calls.
type RecentCall struct {
	RequestID         string    `json:"requestId"`
	State             string    `json:"state" jsonschema_description:"succeeded, failed, cancelled, outcome_unknown or dispatching"`
	OutcomeCode       string    `json:"outcomeCode,omitempty"`
	HTTPStatus        int       `json:"httpStatus,omitempty"`
	LatencyMs         int64     `json:"latencyMs,omitempty" jsonschema_description:"from dispatch to outcome"`
	OutputSchemaValid *bool     `json:"outputSchemaValid,omitempty"`
	PartnerFeeUsd     tools.USD `json:"partnerFeeUsd"`
	At                time.Time `json:"at"`
}

// EarningsOutput is the Partner's earnings over the period.
type EarningsOutput struct {
	Since    time.Time        `json:"since"`
	TotalUsd tools.USD        `json:"totalUsd"`
	ByIntent []IntentEarnings `json:"byIntent"`
	ByPayout []PayoutEarnings `json:"byPayout"`
	Recent   []RecentCall     `json:"recent" jsonschema_description:"the intent's latest 20 calls, when intentId is given"`
}

// Earnings reports the caller's Partner earnings since in.Since.
func (s *Service) Earnings(ctx context.Context, accountID string, in EarningsInput) (EarningsOutput, error) {
	since := s.now().AddDate(0, 0, -30)
	if in.Since != nil {
		since = in.Since.UTC()
	}
	out := EarningsOutput{Since: since, ByIntent: []IntentEarnings{}, ByPayout: []PayoutEarnings{}, Recent: []RecentCall{}}
	if in.IntentID != "" {
		if _, err := s.owned(ctx, accountID, in.IntentID); err != nil {
			return out, err
		}
	}
	p, err := s.rows.ByAccount(ctx, accountID)
	if errors.Is(err, store.ErrNotFound) {
		return out, nil // nothing published yet
	}
	if err != nil {
		return out, err
	}
	byIntent, err := s.reports.EarningsByIntent(ctx, p.ID, since)
	if err != nil {
		return out, err
	}
	for _, e := range byIntent {
		out.ByIntent = append(out.ByIntent, IntentEarnings{IntentID: e.IntentID, Handle: e.Handle, PartnerFeeUsd: tools.USD(e.PartnerFeeMicro), Calls: e.Calls, Succeeded: e.Succeeded})
		out.TotalUsd += tools.USD(e.PartnerFeeMicro)
	}
	byPayout, err := s.reports.EarningsByPayout(ctx, p.ID, since)
	if err != nil {
		return out, err
	}
	for _, e := range byPayout {
		out.ByPayout = append(out.ByPayout, PayoutEarnings{Payout: strings.TrimPrefix(e.Book, ledger.PartnerPayable(p.ID, "")), PartnerFeeUsd: tools.USD(e.AmountMicro)})
	}
	if in.IntentID != "" {
		recent, err := s.reports.RecentInvocations(ctx, in.IntentID, 20)
		if err != nil {
			return out, err
		}
		for _, inv := range recent {
			c := RecentCall{RequestID: inv.RequestID, State: inv.State, OutcomeCode: inv.OutcomeCode, OutputSchemaValid: inv.OutputSchemaValid,
				PartnerFeeUsd: tools.USD(inv.PartnerFeeMicro), At: inv.CreatedAt.UTC()}
			if inv.HTTPStatus != nil {
				c.HTTPStatus = *inv.HTTPStatus
			}
			if inv.DispatchedAt != nil && inv.FinishedAt != nil {
				c.LatencyMs = inv.FinishedAt.Sub(*inv.DispatchedAt).Milliseconds()
			}
			out.Recent = append(out.Recent, c)
		}
	}
	return out, nil
}

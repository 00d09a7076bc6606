// Package billing charges invocations honestly: a reservation for infrastructure at the start
// of a turn, the partner fee and platform fee only on success, a refund otherwise, all as
// balanced ledger transactions. A sweeper refunds reservations abandoned by a crash.
package billing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/tools"
)

// Config prices invocations. All amounts are micro-USD.
type Config struct {
	InfraCostMicro     int64 // reserved at the start of every invocation, consumed on success
	PlatformFeeBps     int64 // platform fee in basis points of the partner fee
	StartingGrantMicro int64 // credit granted to a new account (test environment)
	SweepMargin        time.Duration
}

// DefaultConfig: 1,000 micro-USD infrastructure reservation, 10% platform fee, 10 USD of
// starting credit, 30 s sweep margin.
func DefaultConfig() Config {
	return Config{InfraCostMicro: 1_000, PlatformFeeBps: 1_000, StartingGrantMicro: 10_000_000, SweepMargin: 30 * time.Second}
}

// Service moves credit.
type Service struct {
	store *store.Store
	cfg   Config
	now   func() time.Time
	log   *slog.Logger
}

// NewService builds the billing service.
func NewService(st *store.Store, cfg Config, now func() time.Time, log *slog.Logger) *Service {
	return &Service{store: st, cfg: cfg, now: now, log: log}
}

// Config returns the prices.
func (s *Service) Config() Config { return s.cfg }

// PlatformFee is the platform's basis points on a partner fee, rounded half up.
func (s *Service) PlatformFee(partnerFeeMicro int64) int64 {
	return (partnerFeeMicro*s.cfg.PlatformFeeBps + 5_000) / 10_000
}

// Charge is what an invocation reserved and was charged, for the caller's answer.
type Charge struct {
	ReservedMicro    int64 `json:"reservedMicro" jsonschema_description:"reserved at the start for infrastructure"`
	PartnerFeeMicro  int64 `json:"partnerFeeMicro" jsonschema_description:"charged for the partner (0 unless the call succeeded)"`
	PlatformFeeMicro int64 `json:"platformFeeMicro" jsonschema_description:"the platform's fee on the partner fee"`
	RefundedMicro    int64 `json:"refundedMicro" jsonschema_description:"returned to your credit (the reservation, when the call failed)"`
}

// Quote is the most an invocation can cost.
type Quote struct {
	ReserveMicro        int64
	MaxPartnerFeeMicro  int64
	MaxPlatformFeeMicro int64
}

// WorstMicro is the worst case of a quote.
func (q Quote) WorstMicro() int64 {
	return q.ReserveMicro + q.MaxPartnerFeeMicro + q.MaxPlatformFeeMicro
}

// QuoteFor prices a call whose partner fee is at most maxPartnerFee.
func (s *Service) QuoteFor(maxPartnerFeeMicro int64) Quote {
	return Quote{ReserveMicro: s.cfg.InfraCostMicro, MaxPartnerFeeMicro: maxPartnerFeeMicro, MaxPlatformFeeMicro: s.PlatformFee(maxPartnerFeeMicro)}
}

// Check refuses, without writing anything, a call whose worst case does not fit the key's
// spend limit or the account's credit right now.
func (s *Service) Check(ctx context.Context, key *store.APIKey, q Quote) error {
	spent, err := s.store.Spent(ctx, key.ID)
	if err != nil {
		return err
	}
	if spent+q.WorstMicro() > key.SpendLimitMicro {
		return spendLimitError(spent, q.WorstMicro(), key.SpendLimitMicro)
	}
	ca, err := s.store.Credit(ctx, key.AccountID)
	if err != nil {
		return err
	}
	if ca.AvailableMicro-ca.HeldMicro < q.WorstMicro() {
		return creditError(ca.AvailableMicro-ca.HeldMicro, q.WorstMicro())
	}
	return nil
}

// Reserve starts the turn: the infrastructure reservation moves to reserved and the worst case
// is held. Refusals (SPEND_LIMIT, INSUFFICIENT_CREDITS) write nothing. deadline is when the
// sweeper may refund the reservation if nobody settled it (the call's timeout plus a margin).
func (s *Service) Reserve(ctx context.Context, requestID string, key *store.APIKey, q Quote, callTimeout time.Duration) error {
	now := s.now().UTC()
	err := s.store.Reserve(ctx, &store.Reservation{
		RequestID: requestID, AccountID: key.AccountID, KeyID: key.ID,
		ReservedMicro: q.ReserveMicro, WorstMicro: q.WorstMicro(),
		ExpiresAt: now.Add(callTimeout + s.cfg.SweepMargin), CreatedAt: now,
	}, key.SpendLimitMicro)
	switch {
	case errors.Is(err, store.ErrSpendLimit):
		spent, _ := s.store.Spent(ctx, key.ID)
		return spendLimitError(spent, q.WorstMicro(), key.SpendLimitMicro).Wrap(err)
	case errors.Is(err, store.ErrInsufficientCredits):
		ca, _ := s.store.Credit(ctx, key.AccountID)
		return creditError(ca.AvailableMicro-ca.HeldMicro, q.WorstMicro()).Wrap(err)
	}
	return err
}

func spendLimitError(spent, worst, limit int64) *tools.Error {
	return tools.Errorf(tools.CodeSpendLimit, "this call may cost up to %s USD and the key has spent %s of its %s USD limit; use a key with a higher spendLimitUsd",
		tools.USD(worst), tools.USD(spent), tools.USD(limit)).
		WithDetails(map[string]any{"spentUsd": tools.USD(spent), "spendLimitUsd": tools.USD(limit), "maxChargeUsd": tools.USD(worst)})
}

func creditError(free, worst int64) *tools.Error {
	return tools.Errorf(tools.CodeInsufficientCredits, "this call may cost up to %s USD and the account has %s USD of credit free; add credit, or wait for calls in flight to finish",
		tools.USD(worst), tools.USD(max(free, 0))).
		WithDetails(map[string]any{"creditUsd": tools.USD(max(free, 0)), "maxChargeUsd": tools.USD(worst)})
}

// Settle charges a successful call: partner fee (already capped by the caller at the listed
// price) to payoutBook, the platform fee on it, and the reservation consumed.
func (s *Service) Settle(ctx context.Context, requestID string, q Quote, partnerFeeMicro int64, payoutBook string) (Charge, error) {
	fee := min(partnerFeeMicro, q.MaxPartnerFeeMicro)
	platform := s.PlatformFee(fee)
	ok, err := s.store.Settle(ctx, requestID, store.Settlement{PartnerFeeMicro: fee, PlatformFeeMicro: platform, PartnerBook: payoutBook}, s.now().UTC())
	if err != nil {
		return Charge{}, fmt.Errorf("settle %s: %w", requestID, err)
	}
	if !ok {
		return Charge{}, fmt.Errorf("settle %s: reservation already closed (swept?)", requestID)
	}
	return Charge{ReservedMicro: q.ReserveMicro, PartnerFeeMicro: fee, PlatformFeeMicro: platform}, nil
}

// Refund returns the reservation of a failed or cancelled call. A reservation already closed
// (e.g. swept) is not refunded twice.
func (s *Service) Refund(ctx context.Context, requestID string, q Quote, reason string) (Charge, error) {
	ok, err := s.store.Refund(ctx, requestID, reason, s.now().UTC())
	if err != nil {
		return Charge{}, fmt.Errorf("refund %s: %w", requestID, err)
	}
	c := Charge{ReservedMicro: q.ReserveMicro}
	if ok {
		c.RefundedMicro = q.ReserveMicro
	}
	return c, nil
}

// Grant adds credit to an account (operator command, starting grant).
func (s *Service) Grant(ctx context.Context, accountID string, micro int64, memo string) error {
	return s.store.Grant(ctx, accountID, micro, memo, s.now().UTC())
}

// Sweep refunds every reservation whose deadline passed and returns how many it refunded.
func (s *Service) Sweep(ctx context.Context) (int, error) {
	ids, err := s.store.ExpiredReservations(ctx, s.now().UTC(), 500)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range ids {
		ok, err := s.store.Refund(ctx, id, "swept: never settled", s.now().UTC())
		if err != nil {
			return n, err
		}
		if ok {
			n++
			s.log.WarnContext(ctx, "refunded an abandoned reservation", "request_id", id)
		}
	}
	return n, nil
}

// RunSweeper sweeps every interval until ctx ends.
func (s *Service) RunSweeper(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
				s.log.ErrorContext(ctx, "sweep reservations", "err", err)
			}
		}
	}
}

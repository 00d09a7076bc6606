// Package billing charges invocations honestly: a reservation for infrastructure at the start
// of a turn, the partner fee and platform fee only on success, a refund otherwise, all as
// balanced ledger transactions. A sweeper refunds reservations abandoned by a crash.
package billing

import (
	"context"
	"errors"
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
func (s *Service) Check(ctx context.Context, p *tools.Principal, q Quote) error {
	spent, err := s.store.Spent(ctx, p.KeyID)
	if err != nil {
		return err
	}
	if spent+q.WorstMicro() > p.SpendLimitMicro {
		return spendLimitError(spent, q.WorstMicro(), p.SpendLimitMicro)
	}
	ca, err := s.store.Credit(ctx, p.AccountID)
	if err != nil {
		return err
	}
	if ca.AvailableMicro-ca.HeldMicro < q.WorstMicro() {
		return creditError(ca.AvailableMicro-ca.HeldMicro, q.WorstMicro())
	}
	return nil
}

// Reservation builds the start-of-turn reservation of a call: the infrastructure cost moves
// to reserved and the worst case is held. deadline is when the sweeper may refund it if nobody
// settled it: the call's timeout plus a margin.
func (s *Service) Reservation(requestID string, p *tools.Principal, q Quote, callTimeout time.Duration) *store.Reservation {
	now := s.now().UTC()
	return &store.Reservation{
		RequestID: requestID, AccountID: p.AccountID, KeyID: p.KeyID,
		ReservedMicro: q.ReserveMicro, WorstMicro: q.WorstMicro(),
		ExpiresAt: now.Add(callTimeout + s.cfg.SweepMargin), CreatedAt: now,
	}
}

// Reserve writes a reservation on its own (the dispatcher writes it with the invocation).
func (s *Service) Reserve(ctx context.Context, requestID string, p *tools.Principal, q Quote, callTimeout time.Duration) error {
	return s.Refusal(ctx, s.store.Reserve(ctx, s.Reservation(requestID, p, q, callTimeout), p.SpendLimitMicro), p, q)
}

// Refusal turns the store's refusals of a reservation into SPEND_LIMIT and
// INSUFFICIENT_CREDITS errors that say what to do; other errors pass through.
func (s *Service) Refusal(ctx context.Context, err error, p *tools.Principal, q Quote) error {
	switch {
	case errors.Is(err, store.ErrSpendLimit):
		spent, _ := s.store.Spent(ctx, p.KeyID)
		return spendLimitError(spent, q.WorstMicro(), p.SpendLimitMicro).Wrap(err)
	case errors.Is(err, store.ErrInsufficientCredits):
		ca, _ := s.store.Credit(ctx, p.AccountID)
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

// Settlement prices a successful call: the partner fee capped at the quote's (the listed
// per-call price), the platform fee on it, the reservation consumed.
func (s *Service) Settlement(q Quote, partnerFeeMicro int64, payoutBook string) (store.Settlement, Charge) {
	fee := min(max(partnerFeeMicro, 0), q.MaxPartnerFeeMicro)
	platform := s.PlatformFee(fee)
	return store.Settlement{PartnerFeeMicro: fee, PlatformFeeMicro: platform, PartnerBook: payoutBook},
		Charge{ReservedMicro: q.ReserveMicro, PartnerFeeMicro: fee, PlatformFeeMicro: platform}
}

// Bounds on money that enters an account. Grants are checked before anything is written and
// the balance cap under the balance lock, so no sum can overflow and nothing is half-written.
const (
	MaxGrantMicro   = 1_000_000 * 1_000_000     // one grant: 1,000,000 USD
	MaxBalanceMicro = 1_000_000_000 * 1_000_000 // an account's available + reserved credit: 1,000,000,000 USD
)

// Grant adds credit to an account (operator command, starting grant).
func (s *Service) Grant(ctx context.Context, accountID string, micro int64, memo string) error {
	if micro <= 0 || micro > MaxGrantMicro {
		return tools.Errorf(tools.CodeBadInput, "a grant is more than 0 and at most %s USD, got %s USD; split a larger amount", tools.USD(MaxGrantMicro), tools.USD(micro))
	}
	err := s.store.Grant(ctx, accountID, micro, MaxBalanceMicro, memo, s.now().UTC())
	if errors.Is(err, store.ErrBalanceCap) {
		return tools.Errorf(tools.CodeBadInput, "this grant would bring the account's credit over the %s USD cap; nothing was credited", tools.USD(MaxBalanceMicro)).Wrap(err)
	}
	return err
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

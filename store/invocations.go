package store

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// Invocation states.
const (
	InvAwaitingConfirmation = "awaiting_confirmation"
	InvDispatching          = "dispatching"
	InvSucceeded            = "succeeded"
	InvFailed               = "failed"
	InvCancelled            = "cancelled"
	// InvOutcomeUnknown is the end of a dispatch nobody finished (a crash, a database loss)
	// and whose outcome could not be learned again: the partner may or may not have acted.
	InvOutcomeUnknown = "outcome_unknown"
)

// ErrAlreadyFinished is FinishInvocation on an invocation that another process finished first.
var ErrAlreadyFinished = errors.New("the invocation was finished already")

// ErrReservationClosed is a settlement whose reservation was already closed (refunded by an
// older sweeper): the outcome can be recorded, but nothing can be charged.
var ErrReservationClosed = errors.New("the reservation was closed already")

// Invocation is one call of a partner intent, from quote to outcome.
type Invocation struct {
	bun.BaseModel `bun:"table:invocations"`

	RequestID           string     `bun:"request_id,pk"`
	AccountID           string     `bun:"account_id,notnull"`
	KeyID               string     `bun:"key_id,notnull"`
	IntentID            string     `bun:"intent_id,notnull"`
	Handle              string     `bun:"handle,notnull"`
	Category            string     `bun:"category,notnull"`
	IntentRevision      int        `bun:"intent_revision,notnull"`
	Args                string     `bun:"args,notnull"`
	State               string     `bun:"state,notnull"`
	ReserveMicro        int64      `bun:"reserve_micro,notnull"`
	MaxPartnerFeeMicro  int64      `bun:"max_partner_fee_micro,notnull"`
	MaxPlatformFeeMicro int64      `bun:"max_platform_fee_micro,notnull"`
	Attempts            int        `bun:"attempts,notnull"`
	HTTPStatus          *int       `bun:"http_status"`
	OutcomeCode         string     `bun:"outcome_code,notnull"`
	OutcomeMessage      string     `bun:"outcome_message,notnull"`
	OutputSchemaValid   *bool      `bun:"output_schema_valid"`
	PartnerFeeMicro     int64      `bun:"partner_fee_micro,notnull"`
	PlatformFeeMicro    int64      `bun:"platform_fee_micro,notnull"`
	RefundedMicro       int64      `bun:"refunded_micro,notnull"`
	Answer              *string    `bun:"answer"` // the JSON answer or error body, replayed to a repeated confirmation
	CreatedAt           time.Time  `bun:"created_at,notnull"`
	DispatchedAt        *time.Time `bun:"dispatched_at"`
	FinishedAt          *time.Time `bun:"finished_at"`
}

// InvocationEvent is one state transition.
type InvocationEvent struct {
	bun.BaseModel `bun:"table:invocation_events"`

	ID        string    `bun:"id,pk"`
	RequestID string    `bun:"request_id,notnull"`
	Seq       int       `bun:"seq,notnull"` // order within the invocation
	State     string    `bun:"state,notnull"`
	Detail    string    `bun:"detail,notnull"`
	At        time.Time `bun:"at,notnull"`
}

// addEvent appends a transition, numbered after the invocation's last one.
func addEvent(ctx context.Context, tx bun.Tx, inv *Invocation, state, detail string, at time.Time) error {
	var last int
	if err := tx.NewSelect().Model((*InvocationEvent)(nil)).ColumnExpr("COALESCE(MAX(seq), 0)").
		Where("request_id = ?", inv.RequestID).Scan(ctx, &last); err != nil {
		return err
	}
	_, err := tx.NewInsert().Model(&InvocationEvent{ID: uuid.NewString(), RequestID: inv.RequestID, Seq: last + 1,
		State: state, Detail: detail, At: at}).Exec(ctx)
	return err
}

// CreateInvocation records a new invocation in its first state.
func (s *Store) CreateInvocation(ctx context.Context, inv *Invocation, detail string) error {
	return s.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewInsert().Model(inv).Exec(ctx); err != nil {
			return err
		}
		return addEvent(ctx, tx, inv, inv.State, detail, inv.CreatedAt)
	})
}

// Invocation returns an account's invocation by request id.
func (s *Store) Invocation(ctx context.Context, accountID, requestID string) (*Invocation, error) {
	inv := new(Invocation)
	err := s.db.NewSelect().Model(inv).Where("request_id = ? AND account_id = ?", requestID, accountID).Scan(ctx)
	if err != nil {
		return nil, normalize(err)
	}
	return inv, nil
}

// InvocationByID returns any invocation (operator view).
func (s *Store) InvocationByID(ctx context.Context, requestID string) (*Invocation, error) {
	inv := new(Invocation)
	if err := s.db.NewSelect().Model(inv).Where("request_id = ?", requestID).Scan(ctx); err != nil {
		return nil, normalize(err)
	}
	return inv, nil
}

// InvocationEvents lists an invocation's transitions in order.
func (s *Store) InvocationEvents(ctx context.Context, requestID string) ([]InvocationEvent, error) {
	var evs []InvocationEvent
	err := s.db.NewSelect().Model(&evs).Where("request_id = ?", requestID).OrderExpr("seq ASC").Scan(ctx)
	return evs, normalize(err)
}

// StartInvocation puts inv in state dispatching and reserves its credit, in one transaction.
// With from == "" inv is new and inserted; otherwise it must be in state from (a quote being
// confirmed), and moved reports false when it was not (another call confirmed it first).
// A refusal of the reservation (ErrSpendLimit, ErrInsufficientCredits) writes nothing.
func (s *Store) StartInvocation(ctx context.Context, inv *Invocation, from string, r *Reservation, keySpendLimit int64) (moved bool, err error) {
	err = s.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		at := r.CreatedAt
		if from == "" {
			inv.State, inv.DispatchedAt = InvDispatching, &at
			if _, err := tx.NewInsert().Model(inv).Exec(ctx); err != nil {
				return err
			}
		} else {
			res, err := tx.NewUpdate().Model((*Invocation)(nil)).
				Set("state = ?", InvDispatching).Set("dispatched_at = ?", at).
				Where("request_id = ? AND state = ?", inv.RequestID, from).Exec(ctx)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil || n != 1 {
				return err
			}
			inv.State, inv.DispatchedAt = InvDispatching, &at
		}
		if err := s.reserveTx(ctx, tx, r, keySpendLimit); err != nil {
			return err
		}
		moved = true
		return addEvent(ctx, tx, inv, InvDispatching, "credit reserved", at)
	})
	return moved, err
}

// Attempt is one call to the partner, recorded with the outcome.
type Attempt struct {
	Detail string
	At     time.Time
}

// FinishInvocation records the attempts, settles (st non-nil) or refunds the reservation of
// a dispatched invocation, and writes the outcome fields of inv with its final transition,
// in one transaction. Only one process finishes an invocation: the others get
// ErrAlreadyFinished and nothing they wrote lands, so a call is never settled twice.
func (s *Store) FinishInvocation(ctx context.Context, inv *Invocation, attempts []Attempt, st *Settlement, refundReason, detail string) error {
	return s.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		// Claim first: the row lock makes a concurrent finisher wait, then find it finished.
		res, err := tx.NewUpdate().Model((*Invocation)(nil)).Set("state = ?", inv.State).
			Where("request_id = ? AND state = ?", inv.RequestID, InvDispatching).Exec(ctx)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			if err != nil {
				return err
			}
			return ErrAlreadyFinished
		}
		for _, a := range attempts {
			if err := addEvent(ctx, tx, inv, "attempt", a.Detail, a.At); err != nil {
				return err
			}
		}
		inv.Attempts = len(attempts)
		switch {
		case st != nil:
			ok, err := s.settleTx(ctx, tx, inv.RequestID, *st, *inv.FinishedAt)
			if err != nil {
				return err
			}
			if !ok {
				return ErrReservationClosed
			}
		case inv.DispatchedAt != nil:
			if _, err := s.refundTx(ctx, tx, inv.RequestID, refundReason, *inv.FinishedAt); err != nil {
				return err
			}
		}
		if _, err := tx.NewUpdate().Model(inv).
			Column("state", "attempts", "http_status", "outcome_code", "outcome_message", "output_schema_valid",
				"partner_fee_micro", "platform_fee_micro", "refunded_micro", "answer", "finished_at").
			WherePK().Exec(ctx); err != nil {
			return err
		}
		return addEvent(ctx, tx, inv, inv.State, detail, *inv.FinishedAt)
	})
}

// StuckInvocations lists invocations still dispatching after their reservation's deadline:
// the process that dispatched them crashed or lost its database before finishing.
func (s *Store) StuckInvocations(ctx context.Context, now time.Time, limit int) ([]*Invocation, error) {
	var invs []*Invocation
	err := s.db.NewSelect().Model(&invs).
		Where("state = ?", InvDispatching).
		Where("EXISTS (SELECT 1 FROM reservations r WHERE r.request_id = invocation.request_id AND (r.expires_at < ? OR r.state <> ?))", now, ReservationOpen).
		OrderExpr("dispatched_at ASC").Limit(int64(limit)).Scan(ctx)
	return invs, normalize(err)
}

// OutputSchemaMismatches counts an intent's results that did not match its outputSchema.
func (s *Store) OutputSchemaMismatches(ctx context.Context, intentID string) (int, error) {
	n, err := s.db.NewSelect().Model((*Invocation)(nil)).
		Where("intent_id = ? AND output_schema_valid = ?", intentID, false).Count(ctx)
	return int(n), normalize(err)
}

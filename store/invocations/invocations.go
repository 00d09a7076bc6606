// Package invocations reads the invocations (a call's or a movement's record) outside a
// transaction: one by its request id, its history, the ones a sweeper finishes, and the sums
// and counts read from them. The model (store.Invocation) and the statements a call's
// transaction runs stay in store: the commit engine's Recorder names them.
package invocations

import (
	"context"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/dberr"
)

// Invocations are the reads of invocations outside a caller's transaction.
type Invocations interface {
	// Get returns an account's invocation by request id (store.ErrNotFound: none).
	Get(ctx context.Context, accountID, requestID string) (*store.Invocation, error)
	// ByID returns any invocation (operator view; store.ErrNotFound: none).
	ByID(ctx context.Context, requestID string) (*store.Invocation, error)
	// Events lists an invocation's transitions in order: its event rows, or the trail of a
	// call recorded whole in its own row.
	Events(ctx context.Context, requestID string) ([]store.InvocationEvent, error)
	// Stuck lists invocations still dispatching after their reservation's deadline: the
	// process that dispatched them crashed or lost its database before finishing.
	Stuck(ctx context.Context, now time.Time, limit int) ([]*store.Invocation, error)
	// Dispatching lists on-chain movements of kind (store.KindSend, ...) still dispatching
	// that were dispatched before before, oldest first: those whose process may have died
	// before it concluded them.
	Dispatching(ctx context.Context, kind string, before time.Time, limit int) ([]*store.Invocation, error)
	// OutputSchemaMismatches counts an intent's results that did not match its outputSchema.
	OutputSchemaMismatches(ctx context.Context, intentID string) (int, error)
	// SpentSince sums what an account's finished invocations cost it since `since`: the
	// infrastructure reserve it kept plus the partner and platform fees and gas.
	SpentSince(ctx context.Context, accountID string, since time.Time) (int64, error)
}

// New is the invocations of st (its database is read when a query runs: a service built of
// no store, as billing's price tests build one, holds them unused).
func New(st *store.Store) Invocations { return invocations{st: st} }

type invocations struct{ st *store.Store }

func (s invocations) Get(ctx context.Context, accountID, requestID string) (*store.Invocation, error) {
	inv := new(store.Invocation)
	err := s.st.DB().NewSelect().Model(inv).Where("request_id = ? AND account_id = ?", requestID, accountID).Scan(ctx)
	if err != nil {
		return nil, dberr.Normalize(err)
	}
	return inv, nil
}

func (s invocations) ByID(ctx context.Context, requestID string) (*store.Invocation, error) {
	inv := new(store.Invocation)
	if err := s.st.DB().NewSelect().Model(inv).Where("request_id = ?", requestID).Scan(ctx); err != nil {
		return nil, dberr.Normalize(err)
	}
	return inv, nil
}

func (s invocations) Events(ctx context.Context, requestID string) ([]store.InvocationEvent, error) {
	var evs []store.InvocationEvent
	if err := s.st.DB().NewSelect().Model(&evs).Where("request_id = ?", requestID).OrderExpr("seq ASC").Scan(ctx); err != nil || len(evs) > 0 {
		return evs, dberr.Normalize(err)
	}
	var trail []*string
	if err := s.st.DB().NewSelect().Model((*store.Invocation)(nil)).Column("trail").Where("request_id = ?", requestID).Scan(ctx, &trail); err != nil {
		return nil, dberr.Normalize(err)
	}
	if len(trail) == 0 || trail[0] == nil {
		return nil, nil
	}
	return store.TrailEvents(requestID, *trail[0])
}

func (s invocations) Stuck(ctx context.Context, now time.Time, limit int) ([]*store.Invocation, error) {
	var invs []*store.Invocation
	err := s.st.DB().NewSelect().Model(&invs).
		Where("state = ?", store.InvDispatching).
		Where("EXISTS (SELECT 1 FROM reservations r WHERE r.request_id = invocation.request_id AND (r.expires_at < ? OR r.state <> ?))", now, store.ReservationOpen).
		OrderExpr("dispatched_at ASC").Limit(int64(limit)).Scan(ctx)
	return invs, dberr.Normalize(err)
}

func (s invocations) Dispatching(ctx context.Context, kind string, before time.Time, limit int) ([]*store.Invocation, error) {
	var invs []*store.Invocation
	err := s.st.DB().NewSelect().Model(&invs).
		Where("state = ?", store.InvDispatching).Where("kind = ?", kind).Where("dispatched_at < ?", before).
		OrderExpr("dispatched_at ASC").Limit(int64(limit)).Scan(ctx)
	return invs, dberr.Normalize(err)
}

func (s invocations) OutputSchemaMismatches(ctx context.Context, intentID string) (int, error) {
	n, err := s.st.DB().NewSelect().Model((*store.Invocation)(nil)).
		Where("intent_id = ? AND output_schema_valid = ?", intentID, false).Count(ctx)
	return int(n), dberr.Normalize(err)
}

func (s invocations) SpentSince(ctx context.Context, accountID string, since time.Time) (int64, error) {
	var sum int64
	err := s.st.DB().NewRaw(`SELECT COALESCE(SUM(reserve_micro - refunded_micro + partner_fee_micro + platform_fee_micro + gas_micro), 0)
		FROM invocations WHERE account_id = ? AND created_at >= ? AND finished_at IS NOT NULL AND state <> ?`, accountID, since, store.InvDeclined).Scan(ctx, &sum)
	return sum, dberr.Normalize(err)
}

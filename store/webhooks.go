package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/uptrace/bun"
)

// Webhook delivery states.
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed" // retried for the whole window and given up (replayable)
)

// WebhookEndpoint is a URL an account receives its events at.
type WebhookEndpoint struct {
	bun.BaseModel `bun:"table:webhook_endpoints"`

	ID             string     `bun:"id,pk"`
	AccountID      string     `bun:"account_id,notnull"`
	URL            string     `bun:"url,notnull"`
	Description    string     `bun:"description,notnull"`
	EventTypes     []string   `bun:"event_types,notnull,type:text"` // empty: every type
	SecretSalt     []byte     `bun:"secret_salt,notnull"`
	CreatedAt      time.Time  `bun:"created_at,notnull"`
	FailingSince   *time.Time `bun:"failing_since"`
	DisabledAt     *time.Time `bun:"disabled_at"`
	DisabledReason string     `bun:"disabled_reason,notnull"`
}

// WebhookEvent is one event in the outbox: its exact body, addressed to an account.
type WebhookEvent struct {
	bun.BaseModel `bun:"table:webhook_events"`

	ID        string     `bun:"id,pk"` // the webhook-id
	AccountID string     `bun:"account_id,notnull"`
	Type      string     `bun:"type,notnull"`
	Body      string     `bun:"body,notnull"`
	CreatedAt time.Time  `bun:"created_at,notnull"`
	FannedAt  *time.Time `bun:"fanned_at"`
}

// WebhookDelivery is one event on its way to one endpoint.
type WebhookDelivery struct {
	bun.BaseModel `bun:"table:webhook_deliveries"`

	ID            string     `bun:"id,pk"`
	EventID       string     `bun:"event_id,notnull"`
	EndpointID    string     `bun:"endpoint_id,notnull"`
	AccountID     string     `bun:"account_id,notnull"`
	State         string     `bun:"state,notnull"`
	Attempts      int        `bun:"attempts,notnull"`
	NextAttemptAt time.Time  `bun:"next_attempt_at,notnull"`
	LeaseUntil    *time.Time `bun:"lease_until"`
	LeasedBy      string     `bun:"leased_by,notnull"`
	LastStatus    int        `bun:"last_status,notnull"`
	LastError     string     `bun:"last_error,notnull"`
	CreatedAt     time.Time  `bun:"created_at,notnull"`
	DeliveredAt   *time.Time `bun:"delivered_at"`
}

// WebhookAttempt is one try of a delivery.
type WebhookAttempt struct {
	bun.BaseModel `bun:"table:webhook_attempts"`

	ID         string    `bun:"id,pk"`
	DeliveryID string    `bun:"delivery_id,notnull"`
	At         time.Time `bun:"at,notnull"`
	Status     int       `bun:"status,notnull"`
	Error      string    `bun:"error,notnull"`
	DurationMs int64     `bun:"duration_ms,notnull"`
}

// InsertWebhookEvent writes an event to the outbox inside q's transaction, so it exists if and
// only if what caused it committed. On PostgreSQL it is queued with the transaction's other
// writes (no round trip of its own).
func (q *Q) InsertWebhookEvent(ctx context.Context, ev *WebhookEvent) error {
	return q.write(ctx, q.tx.NewInsert().Model(ev))
}

// insertWebhookEvents writes events inside a plain transaction (the store's own Tx methods).
func insertWebhookEvents(ctx context.Context, tx bun.Tx, evs []*WebhookEvent) error {
	if len(evs) == 0 {
		return nil
	}
	_, err := tx.NewInsert().Model(&evs).Exec(ctx)
	return err
}

// CreateWebhookEndpoint stores an endpoint unless its account already holds max of them.
func (s *Store) CreateWebhookEndpoint(ctx context.Context, ep *WebhookEndpoint, max int) error {
	return s.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		n, err := tx.NewSelect().Model((*WebhookEndpoint)(nil)).Where("account_id = ?", ep.AccountID).Count(ctx)
		if err != nil {
			return err
		}
		if n >= int64(max) {
			return ErrConflict
		}
		_, err = tx.NewInsert().Model(ep).Exec(ctx)
		return err
	})
}

// WebhookEndpoints lists an account's endpoints, oldest first.
func (s *Store) WebhookEndpoints(ctx context.Context, accountID string) ([]*WebhookEndpoint, error) {
	var out []*WebhookEndpoint
	err := s.db.NewSelect().Model(&out).Where("account_id = ?", accountID).OrderExpr("created_at ASC, id ASC").Scan(ctx)
	return out, normalize(err)
}

// WebhookEndpoint reads one of an account's endpoints (ErrNotFound for another account's).
func (s *Store) WebhookEndpoint(ctx context.Context, accountID, id string) (*WebhookEndpoint, error) {
	ep := new(WebhookEndpoint)
	err := s.db.NewSelect().Model(ep).Where("id = ? AND account_id = ?", id, accountID).Scan(ctx)
	return ep, normalize(err)
}

// DeleteWebhookEndpoint removes an account's endpoint with its deliveries and their attempts.
func (s *Store) DeleteWebhookEndpoint(ctx context.Context, accountID, id string) error {
	return s.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		// Children first: SQLite enforces no ON DELETE CASCADE unless foreign keys are on.
		sub := tx.NewSelect().Model((*WebhookDelivery)(nil)).Column("id").Where("endpoint_id = ?", id)
		if _, err := tx.NewDelete().Model((*WebhookAttempt)(nil)).Where("delivery_id IN (?)", sub).Exec(ctx); err != nil {
			return err
		}
		if _, err := tx.NewDelete().Model((*WebhookDelivery)(nil)).Where("endpoint_id = ?", id).Exec(ctx); err != nil {
			return err
		}
		res, err := tx.NewDelete().Model((*WebhookEndpoint)(nil)).Where("id = ? AND account_id = ?", id, accountID).Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNotFound
		}
		return nil
	})
}

// FanOutWebhookEvents creates the deliveries of up to limit events not yet fanned out: one per
// endpoint of the event's account that existed when the event happened, is not disabled and
// takes its type (match decides). Replicas skip each other's rows (SKIP LOCKED); SQLite's write
// transaction is exclusive. It returns how many events it fanned out.
func (s *Store) FanOutWebhookEvents(ctx context.Context, now time.Time, limit int, newID func() string, match func(ep *WebhookEndpoint, eventType string) bool) (int, error) {
	var n int
	err := s.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var evs []*WebhookEvent
		q := tx.NewSelect().Model(&evs).Where("fanned_at IS NULL").OrderExpr("created_at ASC").Limit(int64(limit))
		if s.postgres {
			q = q.For("UPDATE SKIP LOCKED")
		}
		if err := q.Scan(ctx); err != nil {
			return err
		}
		n = len(evs)
		if n == 0 {
			return nil
		}
		accounts := map[string][]*WebhookEndpoint{}
		var ids []string
		var ds []*WebhookDelivery
		for _, ev := range evs {
			ids = append(ids, ev.ID)
			eps, ok := accounts[ev.AccountID]
			if !ok {
				if err := tx.NewSelect().Model(&eps).Where("account_id = ? AND disabled_at IS NULL", ev.AccountID).Scan(ctx); err != nil {
					return err
				}
				accounts[ev.AccountID] = eps
			}
			for _, ep := range eps {
				if ep.CreatedAt.After(ev.CreatedAt) || !match(ep, ev.Type) {
					continue
				}
				ds = append(ds, &WebhookDelivery{ID: newID(), EventID: ev.ID, EndpointID: ep.ID, AccountID: ev.AccountID,
					State: DeliveryPending, NextAttemptAt: now, CreatedAt: now})
			}
		}
		if len(ds) > 0 {
			if _, err := tx.NewInsert().Model(&ds).On("CONFLICT DO NOTHING").Exec(ctx); err != nil {
				return err
			}
		}
		_, err := tx.NewUpdate().Model((*WebhookEvent)(nil)).Set("fanned_at = ?", now).Where("id IN (?)", bun.List(ids)).Exec(ctx)
		return err
	})
	return n, err
}

// ClaimWebhookDeliveries leases up to limit pending deliveries due at now, of endpoints not
// disabled, to owner until leaseUntil: another replica claims them only once the lease has
// run out (a replica that died mid-send), so two never send one at once.
func (s *Store) ClaimWebhookDeliveries(ctx context.Context, owner string, now, leaseUntil time.Time, limit int) ([]string, error) {
	var ids []string
	err := s.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		ids = nil
		due := tx.NewSelect().TableExpr("webhook_deliveries AS d").Column("d.id").
			Join("JOIN webhook_endpoints AS e ON e.id = d.endpoint_id").
			Where("d.state = ? AND d.next_attempt_at <= ?", DeliveryPending, now).
			Where("(d.lease_until IS NULL OR d.lease_until <= ?)", now).
			Where("e.disabled_at IS NULL").
			OrderExpr("d.next_attempt_at ASC").Limit(int64(limit))
		if s.postgres {
			due = due.For("UPDATE OF d SKIP LOCKED")
		}
		return tx.NewUpdate().Model((*WebhookDelivery)(nil)).
			Set("lease_until = ?", leaseUntil).Set("leased_by = ?", owner).
			Where("id IN (?)", due).Returning("id").Scan(ctx, &ids)
	})
	return ids, normalize(err)
}

// WebhookSend is what one attempt needs: the delivery, its event and its endpoint.
type WebhookSend struct {
	Delivery *WebhookDelivery
	Event    *WebhookEvent
	Endpoint *WebhookEndpoint
}

// WebhookSendOf reads a claimed delivery with its event and endpoint.
func (s *Store) WebhookSendOf(ctx context.Context, deliveryID string) (*WebhookSend, error) {
	out := &WebhookSend{Delivery: new(WebhookDelivery), Event: new(WebhookEvent), Endpoint: new(WebhookEndpoint)}
	if err := s.db.NewSelect().Model(out.Delivery).Where("id = ?", deliveryID).Scan(ctx); err != nil {
		return nil, normalize(err)
	}
	if err := s.db.NewSelect().Model(out.Event).Where("id = ?", out.Delivery.EventID).Scan(ctx); err != nil {
		return nil, normalize(err)
	}
	if err := s.db.NewSelect().Model(out.Endpoint).Where("id = ?", out.Delivery.EndpointID).Scan(ctx); err != nil {
		return nil, normalize(err)
	}
	return out, nil
}

// WebhookOutcome is what an attempt ended in, as the caller decided it.
type WebhookOutcome struct {
	Attempt   *WebhookAttempt
	Delivered bool
	// Next is when to try again; zero gives up (state failed) when not delivered.
	Next time.Time
	// Disable disables the endpoint with this reason ("" leaves it enabled).
	Disable string
}

// ErrLeaseLost says a delivery's lease passed to another replica before the attempt was
// recorded: the other replica records its own.
var ErrLeaseLost = errors.New("the delivery's lease was taken over")

// RecordWebhookAttempt writes an attempt and its outcome in one transaction, if owner still
// holds the delivery's lease: the delivery's state and next try, the endpoint's run of
// failures (failing_since, cleared by a success), and, when out.Disable is set, the endpoint
// disabled with its reason and an account event. It reports whether the endpoint was disabled
// by this attempt.
func (s *Store) RecordWebhookAttempt(ctx context.Context, owner string, send *WebhookSend, out WebhookOutcome, newID func() string) (disabled bool, _ error) {
	d, at := send.Delivery, out.Attempt.At
	err := s.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		disabled = false
		upd := tx.NewUpdate().Model((*WebhookDelivery)(nil)).Where("id = ? AND leased_by = ? AND state = ?", d.ID, owner, DeliveryPending).
			Set("attempts = attempts + 1").Set("last_status = ?", out.Attempt.Status).Set("last_error = ?", out.Attempt.Error).
			Set("lease_until = NULL").Set("leased_by = ''")
		switch {
		case out.Delivered:
			upd = upd.Set("state = ?", DeliveryDelivered).Set("delivered_at = ?", at)
		case out.Next.IsZero():
			upd = upd.Set("state = ?", DeliveryFailed)
		default:
			upd = upd.Set("next_attempt_at = ?", out.Next)
		}
		res, err := upd.Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrLeaseLost
		}
		if _, err := tx.NewInsert().Model(out.Attempt).Exec(ctx); err != nil {
			return err
		}
		ep := tx.NewUpdate().Model((*WebhookEndpoint)(nil)).Where("id = ?", d.EndpointID)
		if out.Delivered {
			_, err = ep.Set("failing_since = NULL").Exec(ctx)
			return err
		}
		if _, err := ep.Set("failing_since = COALESCE(failing_since, ?)", at).Exec(ctx); err != nil {
			return err
		}
		if out.Disable == "" {
			return nil
		}
		res, err = tx.NewUpdate().Model((*WebhookEndpoint)(nil)).Where("id = ? AND disabled_at IS NULL", d.EndpointID).
			Set("disabled_at = ?", at).Set("disabled_reason = ?", out.Disable).Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil // another replica disabled it first, and told the owner
		}
		disabled = true
		_, err = tx.NewInsert().Model(&AccountEvent{ID: newID(), AccountID: d.AccountID, Kind: EventWebhookEndpointDisabled,
			Detail: send.Endpoint.URL + ": " + out.Disable, CreatedAt: at}).Exec(ctx)
		return err
	})
	return disabled, err
}

// WebhookDeliveryFilter narrows a listing of deliveries.
type WebhookDeliveryFilter struct {
	EndpointID string
	State      string
	Before     time.Time // created strictly before (keyset paging); zero: newest
	Limit      int
}

// WebhookDeliveryRow is a delivery as listed, with its event's type and endpoint's URL.
type WebhookDeliveryRow struct {
	WebhookDelivery `bun:",extend"`
	EventType       string `bun:"event_type"`
	URL             string `bun:"url"`
}

// WebhookDeliveries lists an account's deliveries, newest first.
func (s *Store) WebhookDeliveries(ctx context.Context, accountID string, f WebhookDeliveryFilter) ([]*WebhookDeliveryRow, error) {
	var out []*WebhookDeliveryRow
	q := s.db.NewSelect().Model(&out).
		ColumnExpr("webhook_delivery.*").ColumnExpr("ev.type AS event_type").ColumnExpr("ep.url AS url").
		Join("JOIN webhook_events AS ev ON ev.id = webhook_delivery.event_id").
		Join("JOIN webhook_endpoints AS ep ON ep.id = webhook_delivery.endpoint_id").
		Where("webhook_delivery.account_id = ?", accountID).
		OrderExpr("webhook_delivery.created_at DESC, webhook_delivery.id DESC").Limit(int64(f.Limit))
	if f.EndpointID != "" {
		q = q.Where("webhook_delivery.endpoint_id = ?", f.EndpointID)
	}
	if f.State != "" {
		q = q.Where("webhook_delivery.state = ?", f.State)
	}
	if !f.Before.IsZero() {
		q = q.Where("webhook_delivery.created_at < ?", f.Before)
	}
	err := q.Scan(ctx)
	return out, normalize(err)
}

// WebhookAttempts lists the attempts of deliveries, oldest first, by delivery.
func (s *Store) WebhookAttempts(ctx context.Context, deliveryIDs []string) (map[string][]*WebhookAttempt, error) {
	out := map[string][]*WebhookAttempt{}
	if len(deliveryIDs) == 0 {
		return out, nil
	}
	var all []*WebhookAttempt
	if err := s.db.NewSelect().Model(&all).Where("delivery_id IN (?)", bun.List(deliveryIDs)).OrderExpr("at ASC, id ASC").Scan(ctx); err != nil {
		return nil, normalize(err)
	}
	for _, a := range all {
		out[a.DeliveryID] = append(out[a.DeliveryID], a)
	}
	return out, nil
}

// ReplayWebhookDelivery makes an account's delivery due again at now, whatever its state (a
// delivered one is sent again, with the same webhook-id). A disabled endpoint is enabled
// again with it (reenabled): the owner says it works again. ErrNotFound for another account's.
func (s *Store) ReplayWebhookDelivery(ctx context.Context, accountID, id string, now time.Time) (d *WebhookDelivery, reenabled bool, _ error) {
	err := s.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		d, reenabled = new(WebhookDelivery), false
		if err := tx.NewSelect().Model(d).Where("id = ? AND account_id = ?", id, accountID).Scan(ctx); err != nil {
			return err
		}
		res, err := tx.NewUpdate().Model((*WebhookEndpoint)(nil)).Where("id = ? AND disabled_at IS NOT NULL", d.EndpointID).
			Set("disabled_at = NULL").Set("disabled_reason = ''").Set("failing_since = NULL").Exec(ctx)
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		reenabled = n > 0
		d.State, d.NextAttemptAt, d.DeliveredAt = DeliveryPending, now, nil
		_, err = tx.NewUpdate().Model(d).Column("state", "next_attempt_at", "delivered_at").WherePK().Exec(ctx)
		return err
	})
	return d, reenabled, normalize(err)
}

// NextWebhookAttemptAt is when the earliest pending delivery is due (zero: none), for tests
// that drive the clock and for the portal.
func (s *Store) NextWebhookAttemptAt(ctx context.Context) (time.Time, error) {
	d := new(WebhookDelivery)
	err := s.db.NewSelect().Model(d).Where("state = ?", DeliveryPending).OrderExpr("next_attempt_at ASC").Limit(1).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, nil
	}
	return d.NextAttemptAt, normalize(err)
}

// PartnerAccountID reads the account a partner belongs to, inside q's transaction ("" when
// there is no such partner).
func (q *Q) PartnerAccountID(ctx context.Context, partnerID string) (string, error) {
	tx, err := q.now(ctx)
	if err != nil {
		return "", err
	}
	var ids []string
	err = tx.NewSelect().Model((*Partner)(nil)).Column("account_id").Where("id = ?", partnerID).Limit(1).Scan(ctx, &ids)
	if err != nil || len(ids) == 0 {
		return "", err
	}
	return ids[0], nil
}

// WebhookWork reports, by two indexed reads outside any transaction, whether events wait to be
// fanned out and whether a delivery is due at now: an idle worker's round then takes no write
// transaction (on SQLite every transaction takes the one writer's lock).
func (s *Store) WebhookWork(ctx context.Context, now time.Time) (fanOut, due bool, _ error) {
	fanOut, err := s.db.NewSelect().Model((*WebhookEvent)(nil)).Where("fanned_at IS NULL").Limit(1).Exists(ctx)
	if err != nil {
		return false, false, normalize(err)
	}
	due, err = s.db.NewSelect().Model((*WebhookDelivery)(nil)).Where("state = ? AND next_attempt_at <= ?", DeliveryPending, now).Limit(1).Exists(ctx)
	return fanOut, due, normalize(err)
}

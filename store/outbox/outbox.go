// Package outbox keeps the webhook endpoints an account receives its events at, and each
// event's deliveries and their attempts (the events themselves are written by the store,
// in the transactions that cause them: store.WebhookEvent).
package outbox

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/dberr"
	"github.com/switchboard-hq/switchboard/store/sessions"
	"github.com/uptrace/bun"
)

// Outbox is the queries of webhook endpoints and deliveries.
type Outbox interface {
	// CreateWebhookEndpoint stores an endpoint unless its account already holds max of them.
	CreateWebhookEndpoint(ctx context.Context, ep *Endpoint, max int) error
	// WebhookEndpoints lists an account's endpoints, oldest first.
	WebhookEndpoints(ctx context.Context, accountID string) ([]*Endpoint, error)
	// WebhookEndpoint reads one of an account's endpoints (dberr.ErrNotFound for another account's).
	WebhookEndpoint(ctx context.Context, accountID, id string) (*Endpoint, error)
	// DeleteWebhookEndpoint removes an account's endpoint with its deliveries and their attempts.
	DeleteWebhookEndpoint(ctx context.Context, accountID, id string) error
	// FanOutWebhookEvents creates the deliveries of up to limit events not yet fanned out: one per
	// endpoint of the event's account that existed when the event happened, is not disabled and
	// takes its type (match decides). Replicas skip each other's rows (SKIP LOCKED); SQLite's write
	// transaction is exclusive. It returns how many events it fanned out.
	FanOutWebhookEvents(ctx context.Context, now time.Time, limit int, newID func() string, match func(ep *Endpoint, eventType string) bool) (int, error)
	// ClaimWebhookDeliveries leases up to caps.Limit pending deliveries due at now, of endpoints
	// neither disabled nor paused, to owner until leaseUntil, within the shares of caps counted
	// with every delivery in flight (leased, by any replica): another replica claims them only
	// once the lease has run out (a replica that died mid-send), so two never send one at once.
	ClaimWebhookDeliveries(ctx context.Context, owner string, now, leaseUntil time.Time, caps Caps) ([]string, error)
	// WebhookSendOf reads a claimed delivery with its event and endpoint.
	WebhookSendOf(ctx context.Context, deliveryID string) (*Send, error)
	// RecordWebhookAttempt writes an attempt and its outcome in one transaction, if owner still
	// holds the delivery's lease: the delivery's state and next try, the endpoint's run of
	// failures (failing_since, cleared by a success), and, when out.Disable is set, the endpoint
	// disabled with its reason and an account event. It reports whether the endpoint was disabled
	// by this attempt.
	RecordWebhookAttempt(ctx context.Context, owner string, send *Send, out Outcome, newID func() string) (disabled bool, _ error)
	// WebhookDeliveries lists an account's deliveries, newest first.
	WebhookDeliveries(ctx context.Context, accountID string, f DeliveryFilter) ([]*DeliveryRow, error)
	// WebhookAttempts lists the attempts of deliveries, oldest first, by delivery.
	WebhookAttempts(ctx context.Context, deliveryIDs []string) (map[string][]*Attempt, error)
	// ReplayWebhookDelivery makes an account's delivery due again at now, whatever its state (a
	// delivered one is sent again, with the same webhook-id), with a new retry window from now
	// and its backoff from the start. A disabled endpoint is enabled again with it (reenabled):
	// the owner says it works again. dberr.ErrNotFound for another account's.
	ReplayWebhookDelivery(ctx context.Context, accountID, id string, now time.Time) (d *Delivery, reenabled bool, _ error)
	// NextWebhookAttemptAt is when the earliest pending delivery is due (zero: none): tests
	// move their clock to it.
	NextWebhookAttemptAt(ctx context.Context) (time.Time, error)
	// PruneWebhookEvents deletes up to limit events written before before, with their
	// deliveries and attempts, once they have been fanned out and none of their deliveries is
	// pending; it returns how many events it deleted.
	PruneWebhookEvents(ctx context.Context, before time.Time, limit int) (int, error)
	// WebhookWork reports, by two indexed reads outside any transaction, whether events wait to be
	// fanned out and whether a delivery is due at now: an idle worker's round then takes no write
	// transaction (on SQLite every transaction takes the one writer's lock).
	WebhookWork(ctx context.Context, now time.Time) (fanOut, due bool, _ error)
}

// New returns the outbox queries of st.
func New(st *store.Store) Outbox { return &queries{st: st, db: st.DB(), postgres: st.Postgres()} }

type queries struct {
	st       *store.Store
	db       *bun.DB
	postgres bool
}

// Webhook delivery states.
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed" // retried for the whole window and given up (replayable)
)

// Endpoint is a URL an account receives its events at.
type Endpoint struct {
	bun.BaseModel `bun:"table:webhook_endpoints,alias:webhook_endpoint"`

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
	// PausedUntil: an attempt timed out, and none is made before this time (nil: not paused);
	// once it has passed, the endpoint is on trial (one attempt at a time) until one succeeds.
	PausedUntil *time.Time `bun:"paused_until"`
}

// Delivery is one event on its way to one endpoint.
type Delivery struct {
	bun.BaseModel `bun:"table:webhook_deliveries,alias:webhook_delivery"`

	ID            string     `bun:"id,pk"`
	EventID       string     `bun:"event_id,notnull"`
	EndpointID    string     `bun:"endpoint_id,notnull"`
	AccountID     string     `bun:"account_id,notnull"`
	State         string     `bun:"state,notnull"`
	Attempts      int        `bun:"attempts,notnull"` // in the current retry window: the backoff's exponent
	NextAttemptAt time.Time  `bun:"next_attempt_at,notnull"`
	LeaseUntil    *time.Time `bun:"lease_until"`
	LeasedBy      string     `bun:"leased_by,notnull"`
	LastStatus    int        `bun:"last_status,notnull"`
	LastError     string     `bun:"last_error,notnull"`
	CreatedAt     time.Time  `bun:"created_at,notnull"`
	DeliveredAt   *time.Time `bun:"delivered_at"`
	// RetryFrom is when the current retry window began, set by a replay; nil is at CreatedAt
	// (never set at creation, so rows a previous release creates mid-upgrade read the same).
	RetryFrom *time.Time `bun:"retry_from"`
}

// RetryWindowStart is when the delivery's current retry window began: its creation, or its
// latest replay.
func (d *Delivery) RetryWindowStart() time.Time {
	if d.RetryFrom != nil {
		return *d.RetryFrom
	}
	return d.CreatedAt
}

// Attempt is one try of a delivery.
type Attempt struct {
	bun.BaseModel `bun:"table:webhook_attempts,alias:webhook_attempt"`

	ID         string    `bun:"id,pk"`
	DeliveryID string    `bun:"delivery_id,notnull"`
	At         time.Time `bun:"at,notnull"`
	Status     int       `bun:"status,notnull"`
	Error      string    `bun:"error,notnull"`
	DurationMs int64     `bun:"duration_ms,notnull"`
}

// CreateWebhookEndpoint stores an endpoint unless its account already holds max of them.
func (s *queries) CreateWebhookEndpoint(ctx context.Context, ep *Endpoint, max int) error {
	return s.st.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		n, err := tx.NewSelect().Model((*Endpoint)(nil)).Where("account_id = ?", ep.AccountID).Count(ctx)
		if err != nil {
			return err
		}
		if n >= int64(max) {
			return dberr.ErrConflict
		}
		_, err = tx.NewInsert().Model(ep).Exec(ctx)
		return err
	})
}

// WebhookEndpoints lists an account's endpoints, oldest first.
func (s *queries) WebhookEndpoints(ctx context.Context, accountID string) ([]*Endpoint, error) {
	var out []*Endpoint
	err := s.db.NewSelect().Model(&out).Where("account_id = ?", accountID).OrderExpr("created_at ASC, id ASC").Scan(ctx)
	return out, dberr.Normalize(err)
}

// WebhookEndpoint reads one of an account's endpoints (dberr.ErrNotFound for another account's).
func (s *queries) WebhookEndpoint(ctx context.Context, accountID, id string) (*Endpoint, error) {
	ep := new(Endpoint)
	err := s.db.NewSelect().Model(ep).Where("id = ? AND account_id = ?", id, accountID).Scan(ctx)
	return ep, dberr.Normalize(err)
}

// DeleteWebhookEndpoint removes an account's endpoint with its deliveries and their attempts.
func (s *queries) DeleteWebhookEndpoint(ctx context.Context, accountID, id string) error {
	return s.st.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		// Children first: SQLite enforces no ON DELETE CASCADE unless foreign keys are on.
		sub := tx.NewSelect().Model((*Delivery)(nil)).Column("id").Where("endpoint_id = ?", id)
		if _, err := tx.NewDelete().Model((*Attempt)(nil)).Where("delivery_id IN (?)", sub).Exec(ctx); err != nil {
			return err
		}
		if _, err := tx.NewDelete().Model((*Delivery)(nil)).Where("endpoint_id = ?", id).Exec(ctx); err != nil {
			return err
		}
		res, err := tx.NewDelete().Model((*Endpoint)(nil)).Where("id = ? AND account_id = ?", id, accountID).Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return dberr.ErrNotFound
		}
		return nil
	})
}

// FanOutWebhookEvents creates the deliveries of up to limit events not yet fanned out: one per
// endpoint of the event's account that existed when the event happened, is not disabled and
// takes its type (match decides). Replicas skip each other's rows (SKIP LOCKED); SQLite's write
// transaction is exclusive. It returns how many events it fanned out.
func (s *queries) FanOutWebhookEvents(ctx context.Context, now time.Time, limit int, newID func() string, match func(ep *Endpoint, eventType string) bool) (int, error) {
	var n int
	err := s.st.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var evs []*store.WebhookEvent
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
		accounts := map[string][]*Endpoint{}
		var ids []string
		var ds []*Delivery
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
				due := now
				if ep.PausedUntil != nil && ep.PausedUntil.After(now) {
					due = *ep.PausedUntil // not sent to a paused endpoint before its pause ends
				}
				ds = append(ds, &Delivery{ID: newID(), EventID: ev.ID, EndpointID: ep.ID, AccountID: ev.AccountID,
					State: DeliveryPending, NextAttemptAt: due, CreatedAt: now})
			}
		}
		if len(ds) > 0 {
			if _, err := tx.NewInsert().Model(&ds).On("CONFLICT DO NOTHING").Exec(ctx); err != nil {
				return err
			}
		}
		_, err := tx.NewUpdate().Model((*store.WebhookEvent)(nil)).Set("fanned_at = ?", now).Where("id IN (?)", bun.List(ids)).Exec(ctx)
		return err
	})
	return n, err
}

// Caps bound a claim: at most Limit deliveries, and no more in flight (leased by any replica,
// this claim's included) than PerEndpoint to one endpoint (1 to an endpoint whose pause has
// ended: it is on trial) and PerAccount to one account's endpoints. 0 is no bound.
type Caps struct {
	Limit       int
	PerEndpoint int
	PerAccount  int
}

// Candidate is a due delivery a claim may take, in the order it is offered.
type Candidate struct {
	ID, EndpointID, AccountID string
	// Trial: its endpoint's pause has ended and no attempt has succeeded since.
	Trial bool
}

// InFlight counts the deliveries leased now, by endpoint and by account.
type InFlight struct {
	Endpoint map[string]int
	Account  map[string]int
}

// Pick chooses from candidates, in their order, those that fit caps beside what is already
// in flight: the fairness rules of a claim. The candidates come round-robin (every account's
// oldest due first, then every account's second, ...), so one account's backlog never hides
// another's delivery.
func Pick(cands []Candidate, busy InFlight, caps Caps) []string {
	ep, acct := map[string]int{}, map[string]int{}
	for k, v := range busy.Endpoint {
		ep[k] = v
	}
	for k, v := range busy.Account {
		acct[k] = v
	}
	var out []string
	for _, c := range cands {
		if caps.Limit > 0 && len(out) >= caps.Limit {
			break
		}
		perEndpoint := caps.PerEndpoint
		if c.Trial {
			perEndpoint = 1
		}
		if perEndpoint > 0 && ep[c.EndpointID] >= perEndpoint || caps.PerAccount > 0 && acct[c.AccountID] >= caps.PerAccount {
			continue
		}
		ep[c.EndpointID]++
		acct[c.AccountID]++
		out = append(out, c.ID)
	}
	return out
}

// ClaimWebhookDeliveries leases the due deliveries that fit caps (Outbox). The candidates are
// each endpoint's oldest due, ranked per account in SQL, so that what one claim reads is
// bounded by the endpoints and their shares, not by any one endpoint's backlog; Pick then
// applies the shares beside the deliveries already in flight.
func (s *queries) ClaimWebhookDeliveries(ctx context.Context, owner string, now, leaseUntil time.Time, caps Caps) ([]string, error) {
	if caps.Limit <= 0 {
		return nil, nil
	}
	var ids []string
	err := s.st.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		ids = nil
		var leased []struct {
			EndpointID string `bun:"endpoint_id"`
			AccountID  string `bun:"account_id"`
			N          int    `bun:"n"`
		}
		if err := tx.NewSelect().TableExpr("webhook_deliveries").ColumnExpr("endpoint_id, account_id, COUNT(*) AS n").
			Where("lease_until > ? AND state = ?", now, DeliveryPending).GroupExpr("endpoint_id, account_id").Scan(ctx, &leased); err != nil {
			return err
		}
		busy := InFlight{Endpoint: map[string]int{}, Account: map[string]int{}}
		for _, l := range leased {
			busy.Endpoint[l.EndpointID] += l.N
			busy.Account[l.AccountID] += l.N
		}
		perEndpoint, perAccount := bound(caps.PerEndpoint), bound(caps.PerAccount)
		// Enough candidates that the ones a busy endpoint or account must skip never leave
		// the claim short.
		limit := caps.Limit + perAccount*len(busy.Account) + perEndpoint*len(busy.Endpoint)
		var cands []struct {
			ID         string `bun:"id"`
			EndpointID string `bun:"endpoint_id"`
			AccountID  string `bun:"account_id"`
			Trial      bool   `bun:"trial"`
		}
		// Each endpoint's oldest due deliveries are read through its own index range (the
		// endpoint_due index), so a backlog costs its endpoint's share of rows, not a scan:
		// a LATERAL join on PostgreSQL, which SQLite lacks and whose planner takes the IN form
		// the same way (PostgreSQL would run that subquery for every delivery).
		due := `SELECT h.id, h.endpoint_id, h.account_id, h.next_attempt_at FROM webhook_deliveries AS h
			WHERE h.endpoint_id = e.id AND h.state = ?0 AND h.next_attempt_at <= ?1 AND (h.lease_until IS NULL OR h.lease_until <= ?1)
			ORDER BY h.next_attempt_at LIMIT ?2`
		from := "webhook_endpoints AS e JOIN webhook_deliveries AS d ON d.id IN (SELECT id FROM (" + due + ") AS h)"
		if s.postgres {
			// Only the endpoints with something due are looked up: PostgreSQL hashes that set
			// from the due rows, where one lookup per endpoint of the deployment would cost more.
			from = `(SELECT * FROM webhook_endpoints WHERE id IN (SELECT endpoint_id FROM webhook_deliveries
				WHERE state = ?0 AND next_attempt_at <= ?1)) AS e CROSS JOIN LATERAL (` + due + ") AS d"
		}
		err := tx.NewRaw(`SELECT id, endpoint_id, account_id, trial FROM (
			SELECT id, endpoint_id, account_id, trial, n, next_attempt_at,
				ROW_NUMBER() OVER (PARTITION BY account_id ORDER BY n, next_attempt_at, id) AS m
			FROM (
				SELECT d.id, d.endpoint_id, d.account_id, d.next_attempt_at,
					CASE WHEN e.paused_until IS NULL THEN 0 ELSE 1 END AS trial,
					ROW_NUMBER() OVER (PARTITION BY d.endpoint_id ORDER BY d.next_attempt_at, d.id) AS n
				FROM `+from+`
				WHERE e.disabled_at IS NULL AND (e.paused_until IS NULL OR e.paused_until <= ?1)
			) AS by_endpoint
		) AS by_account WHERE m <= ?3 ORDER BY m, n, next_attempt_at, id LIMIT ?4`,
			DeliveryPending, now, perEndpoint, perAccount, limit).Scan(ctx, &cands)
		if err != nil {
			return err
		}
		offered := make([]Candidate, len(cands))
		for i, c := range cands {
			offered[i] = Candidate{ID: c.ID, EndpointID: c.EndpointID, AccountID: c.AccountID, Trial: c.Trial}
		}
		picked := Pick(offered, busy, caps)
		if len(picked) == 0 {
			return nil
		}
		// The lease is taken only if nobody took it since the read: a row another replica holds
		// (or is claiming) is skipped, never waited for.
		take := tx.NewSelect().TableExpr("webhook_deliveries").Column("id").
			Where("id IN (?) AND state = ? AND (lease_until IS NULL OR lease_until <= ?)", bun.List(picked), DeliveryPending, now)
		if s.postgres {
			take = take.For("UPDATE SKIP LOCKED")
		}
		return tx.NewUpdate().Model((*Delivery)(nil)).
			Set("lease_until = ?", leaseUntil).Set("leased_by = ?", owner).
			Where("id IN (?)", take).Returning("id").Scan(ctx, &ids)
	})
	return ids, dberr.Normalize(err)
}

// bound is a cap as SQL takes it: 0 (no bound) is the most a query could rank.
func bound(n int) int {
	if n <= 0 {
		return 1 << 30
	}
	return n
}

// Send is what one attempt needs: the delivery, its event and its endpoint.
type Send struct {
	Delivery *Delivery
	Event    *store.WebhookEvent
	Endpoint *Endpoint
}

// WebhookSendOf reads a claimed delivery with its event and endpoint.
func (s *queries) WebhookSendOf(ctx context.Context, deliveryID string) (*Send, error) {
	out := &Send{Delivery: new(Delivery), Event: new(store.WebhookEvent), Endpoint: new(Endpoint)}
	if err := s.db.NewSelect().Model(out.Delivery).Where("id = ?", deliveryID).Scan(ctx); err != nil {
		return nil, dberr.Normalize(err)
	}
	if err := s.db.NewSelect().Model(out.Event).Where("id = ?", out.Delivery.EventID).Scan(ctx); err != nil {
		return nil, dberr.Normalize(err)
	}
	if err := s.db.NewSelect().Model(out.Endpoint).Where("id = ?", out.Delivery.EndpointID).Scan(ctx); err != nil {
		return nil, dberr.Normalize(err)
	}
	return out, nil
}

// Outcome is what an attempt ended in, as the caller decided it.
type Outcome struct {
	Attempt   *Attempt
	Delivered bool
	// Next is when to try again; zero gives up (state failed) when not delivered.
	Next time.Time
	// Disable disables the endpoint with this reason ("" leaves it enabled).
	Disable string
	// Pause pauses the endpoint until then (zero: not paused): its pending deliveries not in
	// flight, and those fanned out meanwhile, wait until then.
	Pause time.Time
}

// ErrLeaseLost says a delivery's lease passed to another replica before the attempt was
// recorded: the other replica records its own.
var ErrLeaseLost = errors.New("the delivery's lease was taken over")

// RecordWebhookAttempt writes an attempt and its outcome in one transaction, if owner still
// holds the delivery's lease: the delivery's state and next try, the endpoint's run of
// failures (failing_since, cleared by a success), and, when out.Disable is set, the endpoint
// disabled with its reason and an account event. It reports whether the endpoint was disabled
// by this attempt.
func (s *queries) RecordWebhookAttempt(ctx context.Context, owner string, send *Send, out Outcome, newID func() string) (disabled bool, _ error) {
	d, at := send.Delivery, out.Attempt.At
	err := s.st.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		disabled = false
		upd := tx.NewUpdate().Model((*Delivery)(nil)).Where("id = ? AND leased_by = ? AND state = ?", d.ID, owner, DeliveryPending).
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
		ep := tx.NewUpdate().Model((*Endpoint)(nil)).Where("id = ?", d.EndpointID)
		if out.Delivered {
			_, err = ep.Set("failing_since = NULL").Set("paused_until = NULL").Exec(ctx)
			return err
		}
		if _, err := ep.Set("failing_since = COALESCE(failing_since, ?)", at).Exec(ctx); err != nil {
			return err
		}
		if !out.Pause.IsZero() {
			if _, err := tx.NewUpdate().Model((*Endpoint)(nil)).Where("id = ? AND (paused_until IS NULL OR paused_until < ?)", d.EndpointID, out.Pause).
				Set("paused_until = ?", out.Pause).Exec(ctx); err != nil {
				return err
			}
			// What waits for the endpoint waits for the pause too (not what another replica
			// is sending now): the claims' scans stay clear of it, and listings show when.
			if _, err := tx.NewUpdate().Model((*Delivery)(nil)).Set("next_attempt_at = ?", out.Pause).
				Where("endpoint_id = ? AND state = ? AND next_attempt_at < ?", d.EndpointID, DeliveryPending, out.Pause).
				Where("(lease_until IS NULL OR lease_until <= ?)", at).Exec(ctx); err != nil {
				return err
			}
		}
		if out.Disable == "" {
			return nil
		}
		res, err = tx.NewUpdate().Model((*Endpoint)(nil)).Where("id = ? AND disabled_at IS NULL", d.EndpointID).
			Set("disabled_at = ?", at).Set("disabled_reason = ?", out.Disable).Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil // another replica disabled it first, and told the owner
		}
		disabled = true
		_, err = tx.NewInsert().Model(&sessions.AccountEvent{ID: newID(), AccountID: d.AccountID, Kind: sessions.EventWebhookEndpointDisabled,
			Detail: send.Endpoint.URL + ": " + out.Disable, CreatedAt: at}).Exec(ctx)
		return err
	})
	return disabled, err
}

// DeliveryFilter narrows a listing of deliveries.
type DeliveryFilter struct {
	EndpointID string
	State      string
	// Before and BeforeID page newest first on (created_at, id): the deliveries after the one
	// created at Before with id BeforeID. Deliveries fanned out in one round share created_at,
	// so the time alone would skip or repeat some. BeforeID "" takes those created strictly
	// before Before; zero Before starts at the newest.
	Before   time.Time
	BeforeID string
	Limit    int
}

// DeliveryRow is a delivery as listed, with its event's type and endpoint's URL.
type DeliveryRow struct {
	Delivery  `bun:",extend"`
	EventType string `bun:"event_type"`
	URL       string `bun:"url"`
}

// WebhookDeliveries lists an account's deliveries, newest first.
func (s *queries) WebhookDeliveries(ctx context.Context, accountID string, f DeliveryFilter) ([]*DeliveryRow, error) {
	var out []*DeliveryRow
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
	switch {
	case !f.Before.IsZero() && f.BeforeID != "":
		q = q.Where("(webhook_delivery.created_at < ? OR (webhook_delivery.created_at = ? AND webhook_delivery.id < ?))", f.Before, f.Before, f.BeforeID)
	case !f.Before.IsZero():
		q = q.Where("webhook_delivery.created_at < ?", f.Before)
	}
	err := q.Scan(ctx)
	return out, dberr.Normalize(err)
}

// WebhookAttempts lists the attempts of deliveries, oldest first, by delivery.
func (s *queries) WebhookAttempts(ctx context.Context, deliveryIDs []string) (map[string][]*Attempt, error) {
	out := map[string][]*Attempt{}
	if len(deliveryIDs) == 0 {
		return out, nil
	}
	var all []*Attempt
	if err := s.db.NewSelect().Model(&all).Where("delivery_id IN (?)", bun.List(deliveryIDs)).OrderExpr("at ASC, id ASC").Scan(ctx); err != nil {
		return nil, dberr.Normalize(err)
	}
	for _, a := range all {
		out[a.DeliveryID] = append(out[a.DeliveryID], a)
	}
	return out, nil
}

// ReplayWebhookDelivery makes an account's delivery due again now, with a new retry window
// (Outbox).
func (s *queries) ReplayWebhookDelivery(ctx context.Context, accountID, id string, now time.Time) (d *Delivery, reenabled bool, _ error) {
	err := s.st.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		d, reenabled = new(Delivery), false
		if err := tx.NewSelect().Model(d).Where("id = ? AND account_id = ?", id, accountID).Scan(ctx); err != nil {
			return err
		}
		res, err := tx.NewUpdate().Model((*Endpoint)(nil)).Where("id = ? AND disabled_at IS NOT NULL", d.EndpointID).
			Set("disabled_at = NULL").Set("disabled_reason = ''").Set("failing_since = NULL").Exec(ctx)
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		reenabled = n > 0
		// The owner says the receiver works again: its pause ends with the replay, and what
		// waited for the pause is due now.
		ep := new(Endpoint)
		if err := tx.NewSelect().Model(ep).Column("paused_until").Where("id = ?", d.EndpointID).Scan(ctx); err != nil {
			return err
		}
		if ep.PausedUntil != nil {
			if _, err := tx.NewUpdate().Model((*Endpoint)(nil)).Where("id = ?", d.EndpointID).Set("paused_until = NULL").Exec(ctx); err != nil {
				return err
			}
			if _, err := tx.NewUpdate().Model((*Delivery)(nil)).Set("next_attempt_at = ?", now).
				Where("endpoint_id = ? AND state = ? AND next_attempt_at > ? AND next_attempt_at <= ?", d.EndpointID, DeliveryPending, now, *ep.PausedUntil).Exec(ctx); err != nil {
				return err
			}
		}
		// A new window and backoff from its first step: a delivery given up after 24 hours is
		// otherwise given up again after one attempt, and retried at the cap.
		d.State, d.NextAttemptAt, d.DeliveredAt, d.Attempts, d.RetryFrom = DeliveryPending, now, nil, 0, &now
		_, err = tx.NewUpdate().Model(d).Column("state", "next_attempt_at", "delivered_at", "attempts", "retry_from").WherePK().Exec(ctx)
		return err
	})
	return d, reenabled, dberr.Normalize(err)
}

// NextWebhookAttemptAt is when the earliest pending delivery is due (Outbox).
func (s *queries) NextWebhookAttemptAt(ctx context.Context) (time.Time, error) {
	d := new(Delivery)
	err := s.db.NewSelect().Model(d).Where("state = ?", DeliveryPending).OrderExpr("next_attempt_at ASC").Limit(1).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, nil
	}
	return d.NextAttemptAt, dberr.Normalize(err)
}

// WebhookWork reports, by two indexed reads outside any transaction, whether events wait to be
// fanned out and whether a delivery is due at now: an idle worker's round then takes no write
// transaction (on SQLite every transaction takes the one writer's lock).
func (s *queries) WebhookWork(ctx context.Context, now time.Time) (fanOut, due bool, _ error) {
	fanOut, err := s.db.NewSelect().Model((*store.WebhookEvent)(nil)).Where("fanned_at IS NULL").Limit(1).Exists(ctx)
	if err != nil {
		return false, false, dberr.Normalize(err)
	}
	due, err = s.db.NewSelect().Model((*Delivery)(nil)).Where("state = ? AND next_attempt_at <= ?", DeliveryPending, now).Limit(1).Exists(ctx)
	return fanOut, due, dberr.Normalize(err)
}

// PruneWebhookEvents deletes old events that nothing waits to deliver (Outbox).
func (s *queries) PruneWebhookEvents(ctx context.Context, before time.Time, limit int) (int, error) {
	var n int
	err := s.st.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var ids []string
		err := tx.NewSelect().Table("webhook_events").Column("id").
			Where("created_at < ? AND fanned_at IS NOT NULL", before).
			Where("NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = webhook_events.id AND d.state = ?)", DeliveryPending).
			OrderExpr("created_at ASC").Limit(int64(limit)).Scan(ctx, &ids)
		if err != nil || len(ids) == 0 {
			return err
		}
		// Children first: SQLite enforces no ON DELETE CASCADE unless foreign keys are on.
		deliveries := tx.NewSelect().Model((*Delivery)(nil)).Column("id").Where("event_id IN (?)", bun.List(ids))
		if _, err := tx.NewDelete().Model((*Attempt)(nil)).Where("delivery_id IN (?)", deliveries).Exec(ctx); err != nil {
			return err
		}
		if _, err := tx.NewDelete().Model((*Delivery)(nil)).Where("event_id IN (?)", bun.List(ids)).Exec(ctx); err != nil {
			return err
		}
		if _, err := tx.NewDelete().Table("webhook_events").Where("id IN (?)", bun.List(ids)).Exec(ctx); err != nil {
			return err
		}
		n = len(ids)
		return nil
	})
	return n, dberr.Normalize(err)
}

package store

import (
	"context"
	"time"

	"github.com/uptrace/bun"
)

// The webhook outbox's events live here, beside the writes that cause them (store/outbox
// holds the endpoints and deliveries).

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

// InsertWebhookEvent writes an event to the outbox inside q's transaction, so it exists if and
// only if what caused it committed. On PostgreSQL it is queued with the transaction's other
// writes (no round trip of its own); a recording Q hands it to its recorder, which writes it
// with the rest of the job's rows (a call recorded on a budget lease).
func (q *Q) InsertWebhookEvent(ctx context.Context, ev *WebhookEvent) error {
	if q.rec != nil {
		q.rec.WebhookEvent(*ev)
		return nil
	}
	return q.write(ctx, q.eventStmt(ev))
}

// eventStmt is InsertWebhookEvent's statement.
func (q *Q) eventStmt(ev *WebhookEvent) statement { return q.tx.NewInsert().Model(ev) }

// AddWebhookEvents writes events in a transaction of their own (an event of something that
// wrote nothing else: a refused call).
func (s *Store) AddWebhookEvents(ctx context.Context, evs ...*WebhookEvent) error {
	return s.Tx(ctx, func(ctx context.Context, tx bun.Tx) error { return InsertWebhookEvents(ctx, tx, evs) })
}

// InsertWebhookEvents writes events inside a plain transaction (the store's own Tx methods and
// the query sets of store/*).
func InsertWebhookEvents(ctx context.Context, tx bun.Tx, evs []*WebhookEvent) error {
	if len(evs) == 0 {
		return nil
	}
	_, err := tx.NewInsert().Model(&evs).Exec(ctx)
	return err
}

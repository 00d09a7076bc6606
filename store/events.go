package store

import (
	"context"
	"time"

	"github.com/uptrace/bun"
)

// Account event kinds.
const (
	EventWalletExported = "wallet_exported"
	// EventWebhookEndpointDisabled: an endpoint failed for days and was disabled (no session did it).
	EventWebhookEndpointDisabled = "webhook_endpoint_disabled"
)

// AccountEvent is something done to an account that its human must hear of on every device.
type AccountEvent struct {
	bun.BaseModel `bun:"table:account_events"`

	ID         string    `bun:"id,pk"`
	AccountID  string    `bun:"account_id,notnull"`
	Kind       string    `bun:"kind,notnull"`
	SessionID  string    `bun:"session_id,notnull"` // the session that did it
	ClientAddr string    `bun:"client_addr,notnull"`
	Detail     string    `bun:"detail,notnull"`
	CreatedAt  time.Time `bun:"created_at,notnull"`
}

// RecordAccountEvent stores an event, with the webhook events it causes in its transaction.
func (s *Store) RecordAccountEvent(ctx context.Context, ev *AccountEvent, events ...*WebhookEvent) error {
	return s.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewInsert().Model(ev).Exec(ctx); err != nil {
			return err
		}
		return insertWebhookEvents(ctx, tx, events)
	})
}

// AccountEvents lists an account's events, newest first.
func (s *Store) AccountEvents(ctx context.Context, accountID string) ([]*AccountEvent, error) {
	var out []*AccountEvent
	err := s.db.NewSelect().Model(&out).Where("account_id = ?", accountID).OrderExpr("created_at DESC").Scan(ctx)
	return out, normalize(err)
}

// TakeUnseenEvents returns the account's events that another session did after this session
// began and after it last showed events, oldest first, and marks them shown for this session:
// each is shown once per session.
func (s *Store) TakeUnseenEvents(ctx context.Context, accountID, sessionID string, now time.Time) ([]*AccountEvent, error) {
	var out []*AccountEvent
	err := s.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		out = nil
		sess := new(Session)
		if err := tx.NewSelect().Model(sess).Where("id = ? AND account_id = ?", sessionID, accountID).Scan(ctx); err != nil {
			return err
		}
		// From the session's start (an event of that very instant included) or after what it showed.
		cond, since := "created_at >= ?", sess.CreatedAt
		if sess.EventsSeenAt != nil {
			cond, since = "created_at > ?", *sess.EventsSeenAt
		}
		if err := tx.NewSelect().Model(&out).Where("account_id = ? AND session_id <> ?", accountID, sessionID).Where(cond, since).
			OrderExpr("created_at ASC").Scan(ctx); err != nil || len(out) == 0 {
			return err
		}
		_, err := tx.NewUpdate().Model((*Session)(nil)).Set("events_seen_at = ?", now).Where("id = ?", sessionID).Exec(ctx)
		return err
	})
	return out, err
}

// ExportWallets reads the account's wallets for their owner's export and records the event
// that audits it in the same transaction: open turns the rows into what is shown and returns
// the event; when open fails, or the event cannot be written, nothing is recorded and nothing
// may be shown. open may run again when the transaction is retried: it must only compute.
func (s *Store) ExportWallets(ctx context.Context, accountID string, open func([]*Wallet) (*AccountEvent, []*WebhookEvent, error)) error {
	return s.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var ws []*Wallet
		if err := tx.NewSelect().Model(&ws).Where("account_id = ?", accountID).OrderExpr("family ASC").Scan(ctx); err != nil {
			return err
		}
		ev, events, err := open(ws)
		if err != nil {
			return err
		}
		if _, err = tx.NewInsert().Model(ev).Exec(ctx); err != nil {
			return err
		}
		return insertWebhookEvents(ctx, tx, events)
	})
}

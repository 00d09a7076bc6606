// Package sessions keeps the portal's sessions of signed-in humans and the account events
// each session must show once (a wallet export done on another device).
package sessions

import (
	"context"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/dberr"
	"github.com/uptrace/bun"
)

// Sessions are the queries of portal sessions and account events.
type Sessions interface {
	// CreateSession stores a new session.
	CreateSession(ctx context.Context, sess *Session) error
	// SessionByTokenHash finds a session by the hash of its token, or ErrNotFound.
	SessionByTokenHash(ctx context.Context, hash string) (*Session, error)
	// TouchSession records activity on a live session.
	TouchSession(ctx context.Context, id string, at time.Time) error
	// Sessions lists an account's live (unrevoked) sessions, newest first.
	Sessions(ctx context.Context, accountID string) ([]*Session, error)
	// RevokeSessions revokes one of the account's sessions (id != "") or all of them, and says
	// how many it revoked.
	RevokeSessions(ctx context.Context, accountID, id string, at time.Time) (int, error)
	// SessionByID finds one of the account's sessions.
	SessionByID(ctx context.Context, accountID, id string) (*Session, error)
	// RecordAccountEvent stores an event, with the webhook events it causes in its transaction.
	RecordAccountEvent(ctx context.Context, ev *AccountEvent, events ...*store.WebhookEvent) error
	// AccountEvents lists an account's events, newest first.
	AccountEvents(ctx context.Context, accountID string) ([]*AccountEvent, error)
	// TakeUnseenEvents returns the account's events that another session did after this
	// session began and after it last showed events, oldest first, and marks them shown for
	// this session: each is shown once per session.
	TakeUnseenEvents(ctx context.Context, accountID, sessionID string, now time.Time) ([]*AccountEvent, error)
	// ExportWallets reads the account's wallets for their owner's export and records the event
	// that audits it in the same transaction: open turns the rows into what is shown and
	// returns the event; when open fails, or the event cannot be written, nothing is recorded
	// and nothing may be shown. open may run again when the transaction is retried: it must
	// only compute.
	ExportWallets(ctx context.Context, accountID string, open func([]*accounts.Wallet) (*AccountEvent, []*store.WebhookEvent, error)) error
}

// New returns the sessions queries of st.
func New(st *store.Store) Sessions { return &queries{st: st, db: st.DB()} }

// queries is Sessions on the store's database.
type queries struct {
	st *store.Store
	db *bun.DB
}

// Session is a signed-in human's portal session.
type Session struct {
	bun.BaseModel `bun:"table:sessions"`

	ID         string     `bun:"id,pk"`
	AccountID  string     `bun:"account_id,notnull"`
	TokenHash  string     `bun:"token_hash,notnull"`
	Method     string     `bun:"method,notnull"` // how the human signed in: email_code, oidc:<issuer>
	ClientAddr string     `bun:"client_addr,notnull"`
	UserAgent  string     `bun:"user_agent,notnull"`
	CreatedAt  time.Time  `bun:"created_at,notnull"`
	LastSeenAt time.Time  `bun:"last_seen_at,notnull"`
	ExpiresAt  time.Time  `bun:"expires_at,notnull"` // the absolute expiry
	RevokedAt  *time.Time `bun:"revoked_at"`
	// EventsSeenAt is when this session last showed the account's events (AccountEvent).
	EventsSeenAt *time.Time `bun:"events_seen_at"`
}

func (s *queries) CreateSession(ctx context.Context, sess *Session) error {
	_, err := s.db.NewInsert().Model(sess).Exec(ctx)
	return dberr.Normalize(err)
}

func (s *queries) SessionByTokenHash(ctx context.Context, hash string) (*Session, error) {
	sess := new(Session)
	if err := s.db.NewSelect().Model(sess).Where("token_hash = ?", hash).Scan(ctx); err != nil {
		return nil, dberr.Normalize(err)
	}
	return sess, nil
}

func (s *queries) TouchSession(ctx context.Context, id string, at time.Time) error {
	_, err := s.db.NewUpdate().Model((*Session)(nil)).Set("last_seen_at = ?", at).
		Where("id = ? AND revoked_at IS NULL", id).Exec(ctx)
	return dberr.Normalize(err)
}

func (s *queries) Sessions(ctx context.Context, accountID string) ([]*Session, error) {
	var out []*Session
	err := s.db.NewSelect().Model(&out).Where("account_id = ? AND revoked_at IS NULL", accountID).
		OrderExpr("created_at DESC").Scan(ctx)
	return out, dberr.Normalize(err)
}

func (s *queries) RevokeSessions(ctx context.Context, accountID, id string, at time.Time) (int, error) {
	q := s.db.NewUpdate().Model((*Session)(nil)).Set("revoked_at = ?", at).
		Where("account_id = ? AND revoked_at IS NULL", accountID)
	if id != "" {
		q = q.Where("id = ?", id)
	}
	res, err := q.Exec(ctx)
	if err != nil {
		return 0, dberr.Normalize(err)
	}
	n, err := res.RowsAffected()
	return int(n), dberr.Normalize(err)
}

func (s *queries) SessionByID(ctx context.Context, accountID, id string) (*Session, error) {
	sess := new(Session)
	if err := s.db.NewSelect().Model(sess).Where("id = ? AND account_id = ?", id, accountID).Scan(ctx); err != nil {
		return nil, dberr.Normalize(err)
	}
	return sess, nil
}

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

func (s *queries) RecordAccountEvent(ctx context.Context, ev *AccountEvent, events ...*store.WebhookEvent) error {
	return s.st.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewInsert().Model(ev).Exec(ctx); err != nil {
			return err
		}
		return store.InsertWebhookEvents(ctx, tx, events)
	})
}

func (s *queries) AccountEvents(ctx context.Context, accountID string) ([]*AccountEvent, error) {
	var out []*AccountEvent
	err := s.db.NewSelect().Model(&out).Where("account_id = ?", accountID).OrderExpr("created_at DESC").Scan(ctx)
	return out, dberr.Normalize(err)
}

func (s *queries) TakeUnseenEvents(ctx context.Context, accountID, sessionID string, now time.Time) ([]*AccountEvent, error) {
	var out []*AccountEvent
	err := s.st.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
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

func (s *queries) ExportWallets(ctx context.Context, accountID string, open func([]*accounts.Wallet) (*AccountEvent, []*store.WebhookEvent, error)) error {
	return s.st.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var ws []*accounts.Wallet
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
		return store.InsertWebhookEvents(ctx, tx, events)
	})
}

package store

import (
	"context"
	"time"

	"github.com/uptrace/bun"
)

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

// CreateSession stores a new session.
func (s *Store) CreateSession(ctx context.Context, sess *Session) error {
	_, err := s.db.NewInsert().Model(sess).Exec(ctx)
	return normalize(err)
}

// SessionByTokenHash finds a session by the hash of its token, or ErrNotFound.
func (s *Store) SessionByTokenHash(ctx context.Context, hash string) (*Session, error) {
	sess := new(Session)
	if err := s.db.NewSelect().Model(sess).Where("token_hash = ?", hash).Scan(ctx); err != nil {
		return nil, normalize(err)
	}
	return sess, nil
}

// TouchSession records activity on a live session.
func (s *Store) TouchSession(ctx context.Context, id string, at time.Time) error {
	_, err := s.db.NewUpdate().Model((*Session)(nil)).Set("last_seen_at = ?", at).
		Where("id = ? AND revoked_at IS NULL", id).Exec(ctx)
	return normalize(err)
}

// Sessions lists an account's live (unrevoked) sessions, newest first.
func (s *Store) Sessions(ctx context.Context, accountID string) ([]*Session, error) {
	var out []*Session
	err := s.db.NewSelect().Model(&out).Where("account_id = ? AND revoked_at IS NULL", accountID).
		OrderExpr("created_at DESC").Scan(ctx)
	return out, normalize(err)
}

// RevokeSessions revokes one of the account's sessions (id != "") or all of them, and says how
// many it revoked.
func (s *Store) RevokeSessions(ctx context.Context, accountID, id string, at time.Time) (int, error) {
	q := s.db.NewUpdate().Model((*Session)(nil)).Set("revoked_at = ?", at).
		Where("account_id = ? AND revoked_at IS NULL", accountID)
	if id != "" {
		q = q.Where("id = ?", id)
	}
	res, err := q.Exec(ctx)
	if err != nil {
		return 0, normalize(err)
	}
	n, err := res.RowsAffected()
	return int(n), normalize(err)
}

// SessionByID finds one of the account's sessions.
func (s *Store) SessionByID(ctx context.Context, accountID, id string) (*Session, error) {
	sess := new(Session)
	if err := s.db.NewSelect().Model(sess).Where("id = ? AND account_id = ?", id, accountID).Scan(ctx); err != nil {
		return nil, normalize(err)
	}
	return sess, nil
}

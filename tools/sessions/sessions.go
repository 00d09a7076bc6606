// Package sessions keeps the portal's signed-in humans: server-side sessions behind an opaque
// cookie token (only its hash is stored), with idle and absolute expiry, listable and
// revocable one by one or all at once. An authenticated session is a tools.Principal, so the
// portal calls the same tools, with the same checks, as MCP and REST.
package sessions

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	sessionstore "github.com/switchboard-hq/switchboard/store/sessions"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/keys"
	"github.com/switchboard-hq/switchboard/tools/service"
)

// Config bounds sessions and what a signed-in human may do.
type Config struct {
	Idle     time.Duration // a session unused this long ends: 12 h
	Absolute time.Duration // a session ends this long after sign-in, used or not: 30 days
	// Ceiling is the account's own ceiling: the limits of the keys a human may issue, and the
	// session's rate limit.
	Ceiling keys.Limits
}

// Service runs sessions.
type Service struct {
	cfg      Config
	accounts accounts.Accounts
	sessions sessionstore.Sessions
	now      func() time.Time
}

// NewService builds the session service.
func NewService(cfg Config, d service.Deps) *Service {
	d = d.WithDefaults()
	return &Service{cfg: cfg, accounts: accounts.New(d.Store), sessions: sessionstore.New(d.Store), now: d.Now}
}

// ErrNoSession is a cookie that names no live session: sign in again.
var ErrNoSession = errors.New("no live session")

func hash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// Start opens a session for accountID and returns the cookie's token (shown only now).
func (s *Service) Start(ctx context.Context, accountID, method, clientAddr, userAgent string) (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	token := base64.RawURLEncoding.EncodeToString(b)
	now := s.now().UTC()
	if len(userAgent) > 200 {
		userAgent = userAgent[:200]
	}
	sess := &sessionstore.Session{ID: uuid.NewString(), AccountID: accountID, TokenHash: hash(token), Method: method,
		ClientAddr: clientAddr, UserAgent: userAgent, CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(s.cfg.Absolute)}
	if err := s.sessions.CreateSession(ctx, sess); err != nil {
		return "", err
	}
	return token, nil
}

// Authenticate resolves a cookie's token to the Principal of its session (SessionID set),
// refusing (ErrNoSession) a revoked, idle or expired one.
func (s *Service) Authenticate(ctx context.Context, token string) (*tools.Principal, error) {
	if token == "" {
		return nil, ErrNoSession
	}
	sess, err := s.sessions.SessionByTokenHash(ctx, hash(token))
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrNoSession
	}
	if err != nil {
		return nil, err
	}
	now := s.now().UTC()
	if sess.RevokedAt != nil || !now.Before(sess.ExpiresAt) || now.Sub(sess.LastSeenAt) >= s.cfg.Idle {
		return nil, ErrNoSession
	}
	if now.Sub(sess.LastSeenAt) > time.Minute { // bounded bookkeeping: one write a minute
		if err := s.sessions.TouchSession(ctx, sess.ID, now); err != nil {
			return nil, err
		}
	}
	return &tools.Principal{
		AccountID: sess.AccountID, Method: tools.AuthSession, SessionID: sess.ID,
		Scopes:          tools.ScopeNames(),
		SpendLimitMicro: s.cfg.Ceiling.SpendMicro, RateLimitPerMinute: s.cfg.Ceiling.RatePerMinute,
	}, nil
}

// Info is what a human sees of a session.
type Info struct {
	ID         string    `json:"id"`
	Method     string    `json:"method" jsonschema_description:"how it signed in: email_code, or oidc:<issuer>"`
	ClientAddr string    `json:"clientAddr"`
	UserAgent  string    `json:"userAgent"`
	CreatedAt  time.Time `json:"createdAt"`
	LastSeenAt time.Time `json:"lastSeenAt"`
}

// List returns the account's live sessions, newest first.
func (s *Service) List(ctx context.Context, accountID string) ([]Info, error) {
	all, err := s.sessions.Sessions(ctx, accountID)
	if err != nil {
		return nil, err
	}
	now := s.now().UTC()
	var live []Info
	for _, sess := range all {
		if now.Before(sess.ExpiresAt) && now.Sub(sess.LastSeenAt) < s.cfg.Idle {
			live = append(live, Info{ID: sess.ID, Method: sess.Method, ClientAddr: sess.ClientAddr, UserAgent: sess.UserAgent,
				CreatedAt: sess.CreatedAt, LastSeenAt: sess.LastSeenAt})
		}
	}
	return live, nil
}

// Revoke ends one of the account's sessions (id) or, with id "", all of them. An id that is
// not one of the account's sessions (another account's, or none) is NOT_FOUND; one already
// ended is ended.
func (s *Service) Revoke(ctx context.Context, accountID, id string) (int, error) {
	n, err := s.sessions.RevokeSessions(ctx, accountID, id, s.now().UTC())
	if err != nil || n > 0 || id == "" {
		return n, err
	}
	if _, err := s.sessions.SessionByID(ctx, accountID, id); errors.Is(err, store.ErrNotFound) {
		return 0, tools.Errorf(tools.CodeNotFound, "no session %q in this account; the settings page lists your sessions", id)
	} else if err != nil {
		return 0, err
	}
	return 0, nil
}

// FreshWindow is how recent a sign-in must be for a sensitive change (turning signing on).
const FreshWindow = 10 * time.Minute

// SetSigning turns on or off Switchboard's signing with the account's embedded wallets on
// its agents' behalf. Turning it on needs a sign-in of the last FreshWindow: a stolen or
// forgotten session alone cannot enable it.
func (s *Service) SetSigning(ctx context.Context, p *tools.Principal, on bool) error {
	if on {
		sess, err := s.sessions.SessionByID(ctx, p.AccountID, p.SessionID)
		if err != nil {
			return err
		}
		if s.now().UTC().Sub(sess.CreatedAt) > FreshWindow {
			return tools.Errorf(tools.CodeForbidden, "turning signing on needs a fresh sign-in (within %d minutes): sign out, sign in again, and turn it on", int(FreshWindow.Minutes()))
		}
	}
	return s.accounts.SetSigning(ctx, p.AccountID, on)
}

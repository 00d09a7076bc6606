package store

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/switchboard-hq/switchboard/store/watch"
)

// OAuthClient is a client that registered itself (RFC 7591): a public client (PKCE, no secret).
type OAuthClient struct {
	bun.BaseModel `bun:"table:oauth_clients"`

	ID           string    `bun:"id,pk"`
	Name         string    `bun:"name,notnull"`
	RedirectURIs []string  `bun:"redirect_uris,notnull,type:text"`
	ClientURI    string    `bun:"client_uri,notnull"`
	CreatedAt    time.Time `bun:"created_at,notnull"`
}

// OAuthCode is an authorization code, single use.
type OAuthCode struct {
	bun.BaseModel `bun:"table:oauth_codes"`

	Hash          string     `bun:"hash,pk"`
	ClientID      string     `bun:"client_id,notnull"`
	GrantID       string     `bun:"grant_id,notnull"`
	RedirectURI   string     `bun:"redirect_uri,notnull"`
	CodeChallenge string     `bun:"code_challenge,notnull"`
	Resource      string     `bun:"resource,notnull"`
	ExpiresAt     time.Time  `bun:"expires_at,notnull"`
	UsedAt        *time.Time `bun:"used_at"`
}

// OAuthGrant is a human's consent to one client, backed by an API key with the chosen scopes
// and limits.
type OAuthGrant struct {
	bun.BaseModel `bun:"table:oauth_grants,alias:g"`

	ID         string     `bun:"id,pk"`
	ClientID   string     `bun:"client_id,notnull"`
	AccountID  string     `bun:"account_id,notnull"`
	KeyID      string     `bun:"key_id,notnull"`
	Resource   string     `bun:"resource,notnull"`
	CreatedAt  time.Time  `bun:"created_at,notnull"`
	LastUsedAt *time.Time `bun:"last_used_at"`
	RevokedAt  *time.Time `bun:"revoked_at"`
	RevokedWhy string     `bun:"revoked_why,notnull"`

	Client *OAuthClient `bun:"-"` // filled by OAuthGrants
}

// OAuthToken is an access or refresh token, stored by hash.
type OAuthToken struct {
	bun.BaseModel `bun:"table:oauth_tokens"`

	Hash      string     `bun:"hash,pk"`
	GrantID   string     `bun:"grant_id,notnull"`
	Kind      string     `bun:"kind,notnull"` // access or refresh
	ExpiresAt time.Time  `bun:"expires_at,notnull"`
	UsedAt    *time.Time `bun:"used_at"` // a refresh token, when it was rotated
	CreatedAt time.Time  `bun:"created_at,notnull"`
}

// CreateOAuthClient writes a registered client.
func (s *Store) CreateOAuthClient(ctx context.Context, c *OAuthClient) error {
	_, err := s.db.NewInsert().Model(c).Exec(ctx)
	return normalize(err)
}

// OAuthClientByID returns a client.
func (s *Store) OAuthClientByID(ctx context.Context, id string) (*OAuthClient, error) {
	c := new(OAuthClient)
	if err := s.db.NewSelect().Model(c).Where("id = ?", id).Scan(ctx); err != nil {
		return nil, normalize(err)
	}
	return c, nil
}

// PutOAuthClient writes a client described by its metadata document (its id is the
// document's URL) as last fetched: the document may have changed since an earlier grant.
func (q *Q) PutOAuthClient(ctx context.Context, c *OAuthClient) error {
	if err := q.flush(ctx); err != nil {
		return err
	}
	_, err := q.tx.NewInsert().Model(c).
		On("CONFLICT (id) DO UPDATE").
		Set("name = EXCLUDED.name").Set("redirect_uris = EXCLUDED.redirect_uris").Set("client_uri = EXCLUDED.client_uri").
		Exec(ctx)
	return err
}

// InsertOAuthGrant, InsertOAuthCode and InsertOAuthToken write inside q's transaction.
func (q *Q) InsertOAuthGrant(ctx context.Context, g *OAuthGrant) error {
	if err := q.flush(ctx); err != nil {
		return err
	}
	_, err := q.tx.NewInsert().Model(g).Exec(ctx)
	return err
}

// InsertOAuthCode writes a code.
func (q *Q) InsertOAuthCode(ctx context.Context, c *OAuthCode) error {
	if err := q.flush(ctx); err != nil {
		return err
	}
	_, err := q.tx.NewInsert().Model(c).Exec(ctx)
	return err
}

// InsertOAuthToken writes a token.
func (q *Q) InsertOAuthToken(ctx context.Context, t *OAuthToken) error {
	if err := q.flush(ctx); err != nil {
		return err
	}
	_, err := q.tx.NewInsert().Model(t).Exec(ctx)
	return err
}

// UseOAuthCode marks a code used and returns it; used is false when it was used already (the
// caller revokes its grant: a replayed code).
func (q *Q) UseOAuthCode(ctx context.Context, hash string, now time.Time) (c *OAuthCode, first bool, err error) {
	if err := q.flush(ctx); err != nil {
		return nil, false, err
	}
	c = new(OAuthCode)
	if err := q.forUpdate(q.tx.NewSelect().Model(c).Where("hash = ?", hash)).Scan(ctx); err != nil {
		return nil, false, normalize(err)
	}
	if c.UsedAt != nil {
		return c, false, nil
	}
	_, err = q.tx.NewUpdate().Model((*OAuthCode)(nil)).Set("used_at = ?", now).Where("hash = ?", hash).Exec(ctx)
	return c, true, err
}

// LockOAuthToken reads a token for update.
func (q *Q) LockOAuthToken(ctx context.Context, hash string) (*OAuthToken, error) {
	if err := q.flush(ctx); err != nil {
		return nil, err
	}
	t := new(OAuthToken)
	if err := q.forUpdate(q.tx.NewSelect().Model(t).Where("hash = ?", hash)).Scan(ctx); err != nil {
		return nil, normalize(err)
	}
	return t, nil
}

// MarkOAuthTokenUsed records a refresh token's rotation.
func (q *Q) MarkOAuthTokenUsed(ctx context.Context, hash string, now time.Time) error {
	if err := q.flush(ctx); err != nil {
		return err
	}
	_, err := q.tx.NewUpdate().Model((*OAuthToken)(nil)).Set("used_at = ?", now).Where("hash = ?", hash).Exec(ctx)
	return err
}

// OAuthGrantTx reads a grant inside q's transaction.
func (q *Q) OAuthGrant(ctx context.Context, id string) (*OAuthGrant, error) {
	if err := q.flush(ctx); err != nil {
		return nil, err
	}
	g := new(OAuthGrant)
	if err := q.tx.NewSelect().Model(g).Where("id = ?", id).Scan(ctx); err != nil {
		return nil, normalize(err)
	}
	return g, nil
}

// RevokeOAuthGrant ends a grant, its tokens and its backing key at once. It returns the grant
// and the keys it revoked (none when the grant had ended already), for the key.revoked event
// its caller writes in the same transaction.
func (q *Q) RevokeOAuthGrant(ctx context.Context, id, why string, now time.Time) (*OAuthGrant, []string, error) {
	g, err := q.OAuthGrant(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	if g.RevokedAt != nil {
		return g, nil, nil
	}
	if _, err := q.tx.NewUpdate().Model((*OAuthGrant)(nil)).Set("revoked_at = ?", now).Set("revoked_why = ?", why).Where("id = ?", id).Exec(ctx); err != nil {
		return nil, nil, err
	}
	if _, err := q.tx.NewDelete().Model((*OAuthToken)(nil)).Where("grant_id = ?", id).Exec(ctx); err != nil {
		return nil, nil, err
	}
	// The grant's key, and (were there any) every key minted under it: nothing a grant
	// created outlives it. Under the account's lock, as every change to its live keys.
	if err := q.store.lockAccountKeys(ctx, q.tx, g.AccountID); err != nil {
		return nil, nil, err
	}
	revoked, err := revokeTree(ctx, q.tx, g.AccountID, g.KeyID, now)
	if err != nil {
		return nil, nil, err
	}
	for _, id := range revoked {
		q.changed = append(q.changed, watch.Change{Kind: watch.KeyChange, ID: id})
	}
	return g, revoked, q.store.watch.Announce(ctx, q.tx, watch.KeyChange, revoked...)
}

// OAuthAccess returns an access token and its grant (ErrNotFound: unknown or revoked).
func (s *Store) OAuthAccess(ctx context.Context, hash string) (*OAuthToken, *OAuthGrant, error) {
	t := new(OAuthToken)
	if err := s.db.NewSelect().Model(t).Where("hash = ? AND kind = 'access'", hash).Scan(ctx); err != nil {
		return nil, nil, normalize(err)
	}
	g := new(OAuthGrant)
	if err := s.db.NewSelect().Model(g).Where("id = ?", t.GrantID).Scan(ctx); err != nil {
		return nil, nil, normalize(err)
	}
	return t, g, nil
}

// TouchOAuthGrant records a grant's use.
func (s *Store) TouchOAuthGrant(ctx context.Context, id string, now time.Time) error {
	_, err := s.db.NewUpdate().Model((*OAuthGrant)(nil)).Set("last_used_at = ?", now).Where("id = ?", id).Exec(ctx)
	return normalize(err)
}

// OAuthGrants lists an account's live grants (those whose code was exchanged) with their
// clients, newest first.
func (s *Store) OAuthGrants(ctx context.Context, accountID string) ([]*OAuthGrant, error) {
	var out []*OAuthGrant
	if err := s.db.NewSelect().Model(&out).Where("account_id = ? AND revoked_at IS NULL", accountID).
		Where("EXISTS (SELECT 1 FROM oauth_tokens t WHERE t.grant_id = g.id)").
		OrderExpr("created_at DESC").Scan(ctx); err != nil {
		return nil, normalize(err)
	}
	for _, g := range out {
		c, err := s.OAuthClientByID(ctx, g.ClientID)
		if err != nil {
			return nil, err
		}
		g.Client = c
	}
	return out, nil
}

// KeyByID returns a key.
func (s *Store) KeyByID(ctx context.Context, id string) (*APIKey, error) {
	k := new(APIKey)
	if err := s.db.NewSelect().Model(k).Where("id = ?", id).Scan(ctx); err != nil {
		return nil, normalize(err)
	}
	return k, nil
}

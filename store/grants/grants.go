// Package grants keeps the OAuth grants humans give MCP hosts (tools/oauth is the
// authorization server): the clients that registered or are described by a metadata document,
// the single-use authorization codes, the grants (each backed by an API key) and their access
// and refresh tokens, stored by hash.
package grants

import (
	"context"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/dberr"
	"github.com/uptrace/bun"
)

// Client is a client that registered itself (RFC 7591) or is described by its metadata
// document: a public client (PKCE, no secret).
type Client struct {
	bun.BaseModel `bun:"table:oauth_clients"`

	ID           string    `bun:"id,pk"`
	Name         string    `bun:"name,notnull"`
	RedirectURIs []string  `bun:"redirect_uris,notnull,type:text"`
	ClientURI    string    `bun:"client_uri,notnull"`
	CreatedAt    time.Time `bun:"created_at,notnull"`
}

// Code is an authorization code, single use.
type Code struct {
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

// Grant is a human's consent to one client, backed by an API key with the chosen scopes and
// limits.
type Grant struct {
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

	Client *Client `bun:"-"` // filled by Live
}

// Token is an access or refresh token, stored by hash.
type Token struct {
	bun.BaseModel `bun:"table:oauth_tokens"`

	Hash      string     `bun:"hash,pk"`
	GrantID   string     `bun:"grant_id,notnull"`
	Kind      string     `bun:"kind,notnull"` // access or refresh
	ExpiresAt time.Time  `bun:"expires_at,notnull"`
	UsedAt    *time.Time `bun:"used_at"` // a refresh token, when it was rotated
	CreatedAt time.Time  `bun:"created_at,notnull"`
}

// Grants are the queries of OAuth grants outside a transaction; what a transaction does is
// the package's functions of a *store.Q.
type Grants interface {
	// CreateClient writes a registered client.
	CreateClient(ctx context.Context, c *Client) error
	// Client returns a client, or store.ErrNotFound.
	Client(ctx context.Context, id string) (*Client, error)
	// Access returns an access token and its grant (store.ErrNotFound: unknown or revoked).
	Access(ctx context.Context, hash string) (*Token, *Grant, error)
	// Touch records a grant's use.
	Touch(ctx context.Context, id string, now time.Time) error
	// Live lists an account's live grants (those whose code was exchanged) with their
	// clients, newest first.
	Live(ctx context.Context, accountID string) ([]*Grant, error)
}

// New returns the grant queries of st.
func New(st *store.Store) Grants { return &queries{db: st.DB()} }

// queries is Grants on the store's database.
type queries struct{ db *bun.DB }

func (s *queries) CreateClient(ctx context.Context, c *Client) error {
	_, err := s.db.NewInsert().Model(c).Exec(ctx)
	return dberr.Normalize(err)
}

func (s *queries) Client(ctx context.Context, id string) (*Client, error) {
	c := new(Client)
	if err := s.db.NewSelect().Model(c).Where("id = ?", id).Scan(ctx); err != nil {
		return nil, dberr.Normalize(err)
	}
	return c, nil
}

func (s *queries) Access(ctx context.Context, hash string) (*Token, *Grant, error) {
	t := new(Token)
	if err := s.db.NewSelect().Model(t).Where("hash = ? AND kind = 'access'", hash).Scan(ctx); err != nil {
		return nil, nil, dberr.Normalize(err)
	}
	g := new(Grant)
	if err := s.db.NewSelect().Model(g).Where("id = ?", t.GrantID).Scan(ctx); err != nil {
		return nil, nil, dberr.Normalize(err)
	}
	return t, g, nil
}

func (s *queries) Touch(ctx context.Context, id string, now time.Time) error {
	_, err := s.db.NewUpdate().Model((*Grant)(nil)).Set("last_used_at = ?", now).Where("id = ?", id).Exec(ctx)
	return dberr.Normalize(err)
}

func (s *queries) Live(ctx context.Context, accountID string) ([]*Grant, error) {
	var out []*Grant
	if err := s.db.NewSelect().Model(&out).Where("account_id = ? AND revoked_at IS NULL", accountID).
		Where("EXISTS (SELECT 1 FROM oauth_tokens t WHERE t.grant_id = g.id)").
		OrderExpr("created_at DESC").Scan(ctx); err != nil {
		return nil, dberr.Normalize(err)
	}
	for _, g := range out {
		c, err := s.Client(ctx, g.ClientID)
		if err != nil {
			return nil, err
		}
		g.Client = c
	}
	return out, nil
}

// PutClient writes, inside q's transaction, a client described by its metadata document (its
// id is the document's URL) as last fetched: the document may have changed since an earlier
// grant.
func PutClient(ctx context.Context, q *store.Q, c *Client) error {
	tx, err := q.Tx(ctx)
	if err != nil {
		return err
	}
	_, err = tx.NewInsert().Model(c).
		On("CONFLICT (id) DO UPDATE").
		Set("name = EXCLUDED.name").Set("redirect_uris = EXCLUDED.redirect_uris").Set("client_uri = EXCLUDED.client_uri").
		Exec(ctx)
	return err
}

// Insert writes a grant, a code or a token (a pointer to one) inside q's transaction.
func Insert[Row Grant | Code | Token](ctx context.Context, q *store.Q, row *Row) error {
	tx, err := q.Tx(ctx)
	if err != nil {
		return err
	}
	_, err = tx.NewInsert().Model(row).Exec(ctx)
	return err
}

// UseCode marks a code used inside q's transaction and returns it; first is false when it
// was used already (the caller revokes its grant: a replayed code).
func UseCode(ctx context.Context, q *store.Q, hash string, now time.Time) (c *Code, first bool, err error) {
	tx, err := q.Tx(ctx)
	if err != nil {
		return nil, false, err
	}
	c = new(Code)
	if err := q.ForUpdate(tx.NewSelect().Model(c).Where("hash = ?", hash)).Scan(ctx); err != nil {
		return nil, false, dberr.Normalize(err)
	}
	if c.UsedAt != nil {
		return c, false, nil
	}
	_, err = tx.NewUpdate().Model((*Code)(nil)).Set("used_at = ?", now).Where("hash = ?", hash).Exec(ctx)
	return c, true, err
}

// LockToken reads a token for update inside q's transaction.
func LockToken(ctx context.Context, q *store.Q, hash string) (*Token, error) {
	tx, err := q.Tx(ctx)
	if err != nil {
		return nil, err
	}
	t := new(Token)
	if err := q.ForUpdate(tx.NewSelect().Model(t).Where("hash = ?", hash)).Scan(ctx); err != nil {
		return nil, dberr.Normalize(err)
	}
	return t, nil
}

// MarkTokenUsed records a refresh token's rotation inside q's transaction.
func MarkTokenUsed(ctx context.Context, q *store.Q, hash string, now time.Time) error {
	tx, err := q.Tx(ctx)
	if err != nil {
		return err
	}
	_, err = tx.NewUpdate().Model((*Token)(nil)).Set("used_at = ?", now).Where("hash = ?", hash).Exec(ctx)
	return err
}

// Read reads a grant inside q's transaction.
func Read(ctx context.Context, q *store.Q, id string) (*Grant, error) {
	tx, err := q.Tx(ctx)
	if err != nil {
		return nil, err
	}
	g := new(Grant)
	if err := tx.NewSelect().Model(g).Where("id = ?", id).Scan(ctx); err != nil {
		return nil, dberr.Normalize(err)
	}
	return g, nil
}

// Revoke ends a grant, its tokens and its backing key (with every key minted under it) at
// once, inside q's transaction. It returns the grant and the keys it revoked (none when the
// grant had ended already), for the key.revoked event its caller writes in the same
// transaction.
func Revoke(ctx context.Context, q *store.Q, id, why string, now time.Time) (*Grant, []string, error) {
	g, err := Read(ctx, q, id)
	if err != nil {
		return nil, nil, err
	}
	if g.RevokedAt != nil {
		return g, nil, nil
	}
	tx, err := q.Tx(ctx)
	if err != nil {
		return nil, nil, err
	}
	if _, err := tx.NewUpdate().Model((*Grant)(nil)).Set("revoked_at = ?", now).Set("revoked_why = ?", why).Where("id = ?", id).Exec(ctx); err != nil {
		return nil, nil, err
	}
	if _, err := tx.NewDelete().Model((*Token)(nil)).Where("grant_id = ?", id).Exec(ctx); err != nil {
		return nil, nil, err
	}
	// Nothing a grant created outlives it.
	revoked, err := accounts.RevokeTree(ctx, q, g.AccountID, g.KeyID, now)
	return g, revoked, err
}

// Package oauth is Switchboard as an OAuth 2.1 authorization server for MCP hosts (the MCP
// authorization spec): client ID metadata documents (an https client_id, MCP 2026-07-28; see
// cimd.go), dynamic client registration (RFC 7591, deprecated by MCP 2026-07-28 and kept for
// older hosts) of public clients, the
// authorization code grant with PKCE (S256 only), exact redirect-URI matching (loopback ports
// may vary, RFC 8252), tokens bound to the MCP resource (RFC 8707), refresh tokens rotated on
// every use with reuse detection, and revocation (RFC 7009). A grant is a human's consent,
// backed by an API key holding the scopes and limits they chose, so a token resolves to the
// same Principal as a key and the kernel enforces it the same way.
package oauth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/grants"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/keys"
	"github.com/switchboard-hq/switchboard/tools/service"
	"github.com/switchboard-hq/switchboard/tools/webhooks"
)

// Token prefixes: an access token is a bearer for /mcp; a refresh token is only ever sent to
// the token endpoint.
const (
	AccessPrefix  = "sbat_"
	RefreshPrefix = "sbrt_"
)

// Config configures the authorization server.
type Config struct {
	Issuer     string // the base URL
	Resource   string // the protected resource: <base>/mcp
	AccessTTL  time.Duration
	RefreshTTL time.Duration
	CodeTTL    time.Duration
	// Metadata fetches client metadata documents (a client_id that is an https URL): the
	// partner client's guarded HTTP client. nil turns them off (registration only).
	Metadata *http.Client
}

// Service issues and checks grants and tokens.
type Service struct {
	cfg      Config
	store    *store.Store
	accounts accounts.Accounts
	grants   grants.Grants
	now      func() time.Time
	meta     *metadataClients // nil: no client metadata documents
}

// New builds the service.
func New(cfg Config, d service.Deps) *Service {
	d = d.WithDefaults()
	if cfg.AccessTTL == 0 {
		cfg.AccessTTL = time.Hour
	}
	if cfg.RefreshTTL == 0 {
		cfg.RefreshTTL = 30 * 24 * time.Hour
	}
	if cfg.CodeTTL == 0 {
		cfg.CodeTTL = 5 * time.Minute
	}
	s := &Service{cfg: cfg, store: d.Store, accounts: accounts.New(d.Store), grants: grants.New(d.Store), now: d.Now}
	if cfg.Metadata != nil {
		s.meta = newMetadataClients(cfg.Metadata, d.Now)
	}
	return s
}

// MetadataDocuments reports whether clients may identify by a metadata document URL.
func (s *Service) MetadataDocuments() bool { return s.meta != nil }

// Config returns the configuration.
func (s *Service) Config() Config { return s.cfg }

// Error is an OAuth error answer (RFC 6749 §5.2): its code and description.
type Error struct {
	Code        string `json:"error"`
	Description string `json:"error_description"`
	Status      int    `json:"-"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Description }

func oerr(status int, code, format string, a ...any) *Error {
	return &Error{Code: code, Description: fmt.Sprintf(format, a...), Status: status}
}

// Registration is a client's registration request and our answer (RFC 7591).
type Registration struct {
	ClientID                string   `json:"client_id,omitempty"`
	ClientIDIssuedAt        int64    `json:"client_id_issued_at,omitempty"`
	ClientName              string   `json:"client_name,omitempty"`
	ClientURI               string   `json:"client_uri,omitempty"`
	RedirectURIs            []string `json:"redirect_uris"`
	GrantTypes              []string `json:"grant_types,omitempty"`
	ResponseTypes           []string `json:"response_types,omitempty"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method,omitempty"`
	Scope                   string   `json:"scope,omitempty"`
}

// Limits on what a registering client may claim.
const (
	maxRedirects   = 5
	maxRedirectLen = 512
	maxNameLen     = 100
)

// Register records a public client. Redirect URIs must be https or http on a loopback address
// (RFC 8252 §7.3), as the MCP authorization spec requires ("All redirect URIs MUST be either
// localhost or use HTTPS"); never with user info or a fragment. A client asking for a secret
// gets a public client (token_endpoint_auth_method none).
func (s *Service) Register(ctx context.Context, r Registration) (Registration, *Error) {
	bad := func(format string, a ...any) (Registration, *Error) {
		return Registration{}, oerr(400, "invalid_client_metadata", format, a...)
	}
	if len(r.RedirectURIs) == 0 || len(r.RedirectURIs) > maxRedirects {
		return Registration{}, oerr(400, "invalid_redirect_uri", "give 1 to %d redirect_uris", maxRedirects)
	}
	for _, u := range r.RedirectURIs {
		if err := checkRedirect(u); err != nil {
			return Registration{}, oerr(400, "invalid_redirect_uri", "%s: %v", tools.Clip(u, 80, "..."), err)
		}
	}
	for _, g := range r.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			return bad("grant_types may only be authorization_code and refresh_token, not %q", tools.Clip(g, 40, "..."))
		}
	}
	for _, rt := range r.ResponseTypes {
		if rt != "code" {
			return bad("response_types may only be code, not %q", tools.Clip(rt, 40, "..."))
		}
	}
	name := strings.TrimSpace(r.ClientName)
	if name == "" {
		name = "An MCP client"
	}
	if len([]rune(name)) > maxNameLen || tools.CheckText("client_name", name) != nil || strings.ContainsAny(name, "\r\n") {
		return bad("client_name must be one line of at most %d characters", maxNameLen)
	}
	if r.ClientURI != "" {
		if u, err := url.Parse(r.ClientURI); err != nil || u.Scheme != "https" || len(r.ClientURI) > maxRedirectLen {
			return bad("client_uri must be an https URL")
		}
	}
	c := &grants.Client{ID: "mcp_" + uuid.NewString(), Name: name, RedirectURIs: r.RedirectURIs, ClientURI: r.ClientURI, CreatedAt: s.now().UTC()}
	if err := s.grants.CreateClient(ctx, c); err != nil {
		return Registration{}, oerr(500, "server_error", "the registration could not be stored; try again")
	}
	return Registration{ClientID: c.ID, ClientIDIssuedAt: c.CreatedAt.Unix(), ClientName: c.Name, ClientURI: c.ClientURI, RedirectURIs: c.RedirectURIs,
		GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"}, TokenEndpointAuthMethod: "none"}, nil
}

func checkRedirect(raw string) error {
	if len(raw) > maxRedirectLen {
		return fmt.Errorf("longer than %d characters", maxRedirectLen)
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() {
		return errors.New("not an absolute URI")
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return errors.New("a redirect URI has no fragment")
	}
	// user:password@ would show the human one host and send the code to another's credentials.
	if u.User != nil {
		return errors.New("a redirect URI carries no user info (user:password@); give the plain https URL")
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		if u.Host == "" {
			return errors.New("https without a host")
		}
	case "http":
		if !loopback(u.Hostname()) {
			return errors.New("http is allowed only on a loopback address (127.0.0.1, [::1], localhost); use https")
		}
	default:
		// The MCP authorization spec: "All redirect URIs MUST be either localhost or use HTTPS".
		return fmt.Errorf("the scheme %q is not allowed: the MCP authorization spec takes https, or http on a loopback address (a native app listens on 127.0.0.1)", tools.Clip(u.Scheme, 20, "..."))
	}
	return nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// RedirectMatches reports whether given is one of the client's redirect URIs: exactly, or for
// a loopback http URI with any port (RFC 8252 §7.3: native apps pick a free port).
func RedirectMatches(c *grants.Client, given string) bool {
	if slices.Contains(c.RedirectURIs, given) {
		return true
	}
	g, err := url.Parse(given)
	if err != nil || g.Scheme != "http" || !loopback(g.Hostname()) {
		return false
	}
	for _, r := range c.RedirectURIs {
		u, err := url.Parse(r)
		if err == nil && u.Scheme == "http" && u.Hostname() == g.Hostname() && u.Path == g.Path && u.RawQuery == g.RawQuery {
			return true
		}
	}
	return false
}

// Request is a checked authorization request.
type Request struct {
	Client        *grants.Client
	RedirectURI   string
	State         string
	CodeChallenge string
	Resource      string
	Scopes        []string // asked for; the human chooses
}

// CheckAuthorize validates an authorization request. redirectable is false when the error
// must be shown to the human rather than sent to the redirect URI (unknown client, bad
// redirect URI: RFC 6749 §4.1.2.1).
func (s *Service) CheckAuthorize(ctx context.Context, q url.Values) (req *Request, redirectable bool, e *Error) {
	id := q.Get("client_id")
	var c *grants.Client
	switch {
	case IsMetadataClientID(id) && s.meta != nil:
		var oe *Error
		if c, oe = s.meta.resolve(ctx, id); oe != nil {
			return nil, false, oe
		}
	default:
		var err error
		if c, err = s.grants.Client(ctx, id); err != nil {
			return nil, false, oerr(400, "invalid_client", "unknown client_id: the MCP host must register first (%s)", s.cfg.Issuer+"/oauth/register")
		}
	}
	redirect := q.Get("redirect_uri")
	if redirect == "" && len(c.RedirectURIs) == 1 {
		redirect = c.RedirectURIs[0]
	}
	// A metadata document lists its redirect URIs exactly, ports included: no loopback
	// port latitude for a client that published what it uses.
	if (IsMetadataClientID(c.ID) && !slices.Contains(c.RedirectURIs, redirect)) || !RedirectMatches(c, redirect) {
		return nil, false, oerr(400, "invalid_request", "redirect_uri %q is not one this client registered", tools.Clip(redirect, 120, "..."))
	}
	// A client registered before the rules tightened keeps its row, not its old redirect URIs.
	if err := checkRedirect(redirect); err != nil {
		return nil, false, oerr(400, "invalid_request", "redirect_uri %q: %v; register the client again", tools.Clip(redirect, 120, "..."), err)
	}
	req = &Request{Client: c, RedirectURI: redirect, State: q.Get("state")}
	switch {
	case q.Get("response_type") != "code":
		return req, true, oerr(400, "unsupported_response_type", "response_type must be code")
	case q.Get("code_challenge") == "":
		return req, true, oerr(400, "invalid_request", "PKCE is required: send code_challenge and code_challenge_method=S256")
	case q.Get("code_challenge_method") != "S256":
		return req, true, oerr(400, "invalid_request", "code_challenge_method must be S256 (plain is not accepted)")
	case len(q.Get("code_challenge")) != 43:
		return req, true, oerr(400, "invalid_request", "code_challenge must be the base64url SHA-256 of the verifier (43 characters)")
	}
	req.CodeChallenge = q.Get("code_challenge")
	req.Resource = s.cfg.Resource
	if r := q.Get("resource"); r != "" && strings.TrimRight(r, "/") != s.cfg.Resource {
		return req, true, oerr(400, "invalid_target", "resource must be %s", s.cfg.Resource)
	}
	req.Scopes = strings.Fields(q.Get("scope"))
	return req, true, nil
}

// Consent records the human's consent to req, backed by keyID (an API key of accountID holding
// the chosen scopes and limits), and returns the authorization code for the redirect.
func (s *Service) Consent(ctx context.Context, req *Request, accountID, keyID string) (string, error) {
	code := secret("")
	now := s.now().UTC()
	g := &grants.Grant{ID: uuid.NewString(), ClientID: req.Client.ID, AccountID: accountID, KeyID: keyID, Resource: req.Resource, CreatedAt: now}
	err := s.store.InTx(ctx, func(ctx context.Context, q *store.Q) error {
		if IsMetadataClientID(req.Client.ID) {
			// The client as its document described it at consent (grants refer to it).
			if err := grants.PutClient(ctx, q, req.Client); err != nil {
				return err
			}
		}
		if err := grants.Insert(ctx, q, g); err != nil {
			return err
		}
		return grants.Insert(ctx, q, &grants.Code{Hash: hash(code), ClientID: req.Client.ID, GrantID: g.ID, RedirectURI: req.RedirectURI,
			CodeChallenge: req.CodeChallenge, Resource: req.Resource, ExpiresAt: now.Add(s.cfg.CodeTTL)})
	})
	return code, err
}

// Tokens is the token endpoint's answer.
type Tokens struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	RefreshToken string `json:"refresh_token"`
	Scope        string `json:"scope,omitempty"`
}

// Exchange answers the token endpoint: grant_type authorization_code or refresh_token.
func (s *Service) Exchange(ctx context.Context, f url.Values) (Tokens, *Error) {
	switch f.Get("grant_type") {
	case "authorization_code":
		return s.exchangeCode(ctx, f)
	case "refresh_token":
		return s.refresh(ctx, f)
	default:
		return Tokens{}, oerr(400, "unsupported_grant_type", "grant_type must be authorization_code or refresh_token")
	}
}

func (s *Service) exchangeCode(ctx context.Context, f url.Values) (Tokens, *Error) {
	now := s.now().UTC()
	var out Tokens
	var oe *Error
	err := s.store.InTx(ctx, func(ctx context.Context, q *store.Q) error {
		oe = nil
		c, first, err := grants.UseCode(ctx, q, hash(f.Get("code")), now)
		if errors.Is(err, store.ErrNotFound) {
			oe = oerr(400, "invalid_grant", "unknown authorization code")
			return nil
		}
		if err != nil {
			return err
		}
		switch {
		case !first:
			// A code used twice was stolen or replayed: end everything issued from it.
			oe = oerr(400, "invalid_grant", "this authorization code was used already; its grant is revoked. Start the authorization again")
			return revokeGrant(ctx, q, c.GrantID, "authorization code reused", now)
		case now.After(c.ExpiresAt):
			oe = oerr(400, "invalid_grant", "the authorization code expired; start the authorization again")
		case f.Get("client_id") != c.ClientID:
			oe = oerr(400, "invalid_grant", "the code was issued to another client_id")
		case f.Get("redirect_uri") != c.RedirectURI:
			oe = oerr(400, "invalid_grant", "redirect_uri must be the one of the authorization request")
		case !verifierMatches(f.Get("code_verifier"), c.CodeChallenge):
			oe = oerr(400, "invalid_grant", "code_verifier does not match the code_challenge")
		case f.Get("resource") != "" && strings.TrimRight(f.Get("resource"), "/") != c.Resource:
			oe = oerr(400, "invalid_target", "resource must be %s", c.Resource)
		}
		if oe != nil {
			// The code is spent: the grant it was for can never be completed.
			return revokeGrant(ctx, q, c.GrantID, "authorization code exchange failed: "+oe.Code, now)
		}
		g, err := grants.Read(ctx, q, c.GrantID)
		if err != nil {
			return err
		}
		if g.RevokedAt != nil {
			oe = oerr(400, "invalid_grant", "the grant was revoked")
			return nil
		}
		out, err = s.issue(ctx, q, g.ID, now)
		return err
	})
	if err != nil {
		return Tokens{}, oerr(500, "server_error", "try again")
	}
	return out, oe
}

func (s *Service) refresh(ctx context.Context, f url.Values) (Tokens, *Error) {
	now := s.now().UTC()
	var out Tokens
	var oe *Error
	err := s.store.InTx(ctx, func(ctx context.Context, q *store.Q) error {
		oe = nil
		t, err := grants.LockToken(ctx, q, hash(f.Get("refresh_token")))
		if errors.Is(err, store.ErrNotFound) || (err == nil && t.Kind != "refresh") {
			oe = oerr(400, "invalid_grant", "unknown or revoked refresh token; start the authorization again")
			return nil
		}
		if err != nil {
			return err
		}
		g, err := grants.Read(ctx, q, t.GrantID)
		if err != nil {
			return err
		}
		switch {
		case t.UsedAt != nil:
			// Refresh tokens rotate: a second use means two parties hold it.
			oe = oerr(400, "invalid_grant", "this refresh token was used already; the grant is revoked. Start the authorization again")
			return revokeGrant(ctx, q, g.ID, "refresh token reused", now)
		case g.RevokedAt != nil:
			oe = oerr(400, "invalid_grant", "the grant was revoked")
		case now.After(t.ExpiresAt):
			oe = oerr(400, "invalid_grant", "the refresh token expired; start the authorization again")
		case f.Get("client_id") != "" && f.Get("client_id") != g.ClientID:
			oe = oerr(400, "invalid_grant", "the refresh token was issued to another client_id")
		case f.Get("resource") != "" && strings.TrimRight(f.Get("resource"), "/") != g.Resource:
			oe = oerr(400, "invalid_target", "resource must be %s", g.Resource)
		}
		if oe != nil {
			return nil
		}
		if err := grants.MarkTokenUsed(ctx, q, t.Hash, now); err != nil {
			return err
		}
		out, err = s.issue(ctx, q, g.ID, now)
		return err
	})
	if err != nil {
		return Tokens{}, oerr(500, "server_error", "try again")
	}
	return out, oe
}

func (s *Service) issue(ctx context.Context, q *store.Q, grantID string, now time.Time) (Tokens, error) {
	access, refresh := secret(AccessPrefix), secret(RefreshPrefix)
	if err := grants.Insert(ctx, q, &grants.Token{Hash: hash(access), GrantID: grantID, Kind: "access", ExpiresAt: now.Add(s.cfg.AccessTTL), CreatedAt: now}); err != nil {
		return Tokens{}, err
	}
	if err := grants.Insert(ctx, q, &grants.Token{Hash: hash(refresh), GrantID: grantID, Kind: "refresh", ExpiresAt: now.Add(s.cfg.RefreshTTL), CreatedAt: now}); err != nil {
		return Tokens{}, err
	}
	return Tokens{AccessToken: access, TokenType: "Bearer", ExpiresIn: int64(s.cfg.AccessTTL.Seconds()), RefreshToken: refresh}, nil
}

// Revoke ends the grant of a token (access or refresh): RFC 7009 answers 200 whatever the token.
func (s *Service) Revoke(ctx context.Context, token string) error {
	now := s.now().UTC()
	return s.store.InTx(ctx, func(ctx context.Context, q *store.Q) error {
		t, err := grants.LockToken(ctx, q, hash(token))
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		return revokeGrant(ctx, q, t.GrantID, "revoked by the client", now)
	})
}

// revokeGrant ends grant id inside q's transaction and tells its account which keys ended
// with it (key.revoked, in the same transaction).
func revokeGrant(ctx context.Context, q *store.Q, id, why string, now time.Time) error {
	g, revoked, err := grants.Revoke(ctx, q, id, why, now)
	if err != nil || len(revoked) == 0 {
		return err
	}
	return webhooks.Emit(ctx, q, webhooks.KeyRevoked, g.AccountID, now,
		webhooks.KeyRevokedData{KeyID: g.KeyID, Revoked: revoked, GrantID: g.ID, Reason: "OAuth connection ended: " + why})
}

// RevokeGrant ends an account's grant (the portal's Revoke button): its tokens and key at once.
func (s *Service) RevokeGrant(ctx context.Context, accountID, grantID string) error {
	now := s.now().UTC()
	return s.store.InTx(ctx, func(ctx context.Context, q *store.Q) error {
		g, err := grants.Read(ctx, q, grantID)
		if errors.Is(err, store.ErrNotFound) || err == nil && g.AccountID != accountID {
			return tools.Errorf(tools.CodeNotFound, "no connection %s in this account; the Connections page lists yours", grantID)
		}
		if err != nil {
			return err // a database failure is not "no such connection"
		}
		return revokeGrant(ctx, q, grantID, "revoked by the account", now)
	})
}

// Connection is a live grant as its account sees it: the client and the scopes of the key
// that backs it.
type Connection struct {
	*grants.Grant
	Scopes []string // nil when the key cannot be read
}

// Connections lists an account's live connections, newest first (the portal's Connections
// page).
func (s *Service) Connections(ctx context.Context, accountID string) ([]Connection, error) {
	live, err := s.grants.Live(ctx, accountID)
	if err != nil {
		return nil, err
	}
	out := make([]Connection, 0, len(live))
	for _, g := range live {
		c := Connection{Grant: g}
		// The scopes are shown beside the connection; one unreadable key does not hide the
		// list, and the grant still names its client and can be revoked.
		if k, err := s.accounts.KeyByID(ctx, g.KeyID); err == nil {
			c.Scopes = k.Scopes
		}
		out = append(out, c)
	}
	return out, nil
}

// ErrInvalidToken is an access token that is unknown, expired, revoked or for another resource.
var ErrInvalidToken = errors.New("invalid token")

// Authenticate resolves an access token to the Principal of its grant's key.
func (s *Service) Authenticate(ctx context.Context, token string) (*tools.Principal, error) {
	now := s.now().UTC()
	t, g, err := s.grants.Access(ctx, hash(token))
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: unknown or revoked", ErrInvalidToken)
	}
	if err != nil {
		return nil, err
	}
	switch {
	case now.After(t.ExpiresAt):
		return nil, fmt.Errorf("%w: expired; refresh it", ErrInvalidToken)
	case g.RevokedAt != nil:
		return nil, fmt.Errorf("%w: the connection was revoked", ErrInvalidToken)
	case g.Resource != s.cfg.Resource:
		return nil, fmt.Errorf("%w: issued for %s, not %s", ErrInvalidToken, g.Resource, s.cfg.Resource)
	}
	key, err := s.accounts.KeyByID(ctx, g.KeyID)
	if err != nil {
		return nil, err
	}
	if key.RevokedAt != nil {
		return nil, fmt.Errorf("%w: the connection's key was revoked", ErrInvalidToken)
	}
	if g.LastUsedAt == nil || now.Sub(*g.LastUsedAt) > time.Minute {
		_ = s.grants.Touch(ctx, g.ID, now) // bookkeeping; never fails the call
	}
	p, err := keys.ResolveKey(ctx, s.store, key)
	if err != nil {
		return nil, err
	}
	p.Method = tools.AuthOAuth
	return p, nil
}

func secret(prefix string) string {
	b := make([]byte, 32)
	rand.Read(b)
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

func hash(s string) string {
	h := sha256.Sum256([]byte(s))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

// verifierMatches checks a PKCE verifier (43 to 128 unreserved characters) against its S256
// challenge, in constant time.
func verifierMatches(verifier, challenge string) bool {
	if len(verifier) < 43 || len(verifier) > 128 {
		return false
	}
	sum := sha256.Sum256([]byte(verifier))
	got := base64.RawURLEncoding.EncodeToString(sum[:])
	return subtle.ConstantTimeCompare([]byte(got), []byte(challenge)) == 1
}

package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-hq/switchboard/store/grants"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/jsonlimit"
)

// Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document, the MCP
// 2026-07-28 way for a host to identify itself): the client_id is an https URL, and the
// document at that URL is the client's registration. It is fetched through the partner
// client's SSRF guard (public addresses only, verified TLS, no redirects), bounded in size and
// time, and kept as long as its HTTP caching headers allow. Its client_name is the client's
// own claim; what the document proves is the domain it is served from.

// Bounds of a metadata document fetch.
const (
	MaxMetadataBytes   = 16 << 10
	MetadataTimeout    = 5 * time.Second
	maxMetadataCacheTT = 24 * time.Hour
	maxMetadataCached  = 1024
	maxMetadataFetches = 8 // at once, process-wide: the authorize endpoint is open to anyone
)

// IsMetadataClientID reports whether a client_id names a metadata document (registered
// clients' ids start with mcp_).
func IsMetadataClientID(id string) bool { return strings.HasPrefix(id, "https://") }

// ClientDomain is the host a metadata document client_id is served from ("" for others).
func ClientDomain(clientID string) string {
	if !IsMetadataClientID(clientID) {
		return ""
	}
	u, err := url.Parse(clientID)
	if err != nil {
		return ""
	}
	return u.Host
}

// metadataDoc is the part of a client metadata document (RFC 7591 fields) read here.
type metadataDoc struct {
	ClientID                string   `json:"client_id"`
	ClientName              string   `json:"client_name"`
	ClientURI               string   `json:"client_uri"`
	RedirectURIs            []string `json:"redirect_uris"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	ClientSecret            string   `json:"client_secret"`
}

type cachedClient struct {
	client *grants.Client
	until  time.Time
}

// metadataClients fetches and caches metadata documents.
type metadataClients struct {
	http    *http.Client
	now     func() time.Time
	slots   chan struct{}
	timeout time.Duration

	mu    sync.Mutex
	cache map[string]cachedClient
}

func newMetadataClients(c *http.Client, now func() time.Time) *metadataClients {
	return &metadataClients{http: c, now: now, slots: make(chan struct{}, maxMetadataFetches), timeout: MetadataTimeout, cache: map[string]cachedClient{}}
}

func invalidClient(format string, a ...any) *Error {
	return oerr(400, "invalid_client", format, a...)
}

// checkMetadataURL applies the draft's rules to a client_id URL: https, a host, a path, no
// dot segments, no fragment, no user info.
func checkMetadataURL(id string) error {
	if len(id) > 2048 {
		return errors.New("longer than 2048 characters")
	}
	u, err := url.Parse(id)
	switch {
	case err != nil || u.Scheme != "https" || u.Host == "" || u.Opaque != "":
		return errors.New("not an https URL with a host")
	case u.User != nil:
		return errors.New("it carries user info")
	case u.Fragment != "" || strings.Contains(id, "#"):
		return errors.New("it has a fragment")
	case u.Path == "" || u.Path == "/":
		return errors.New("it has no path (e.g. https://app.example/oauth/client.json)")
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if seg == "." || seg == ".." {
			return errors.New("it has a . or .. path segment")
		}
	}
	return nil
}

// resolve returns the client a metadata document describes, from the cache while it is fresh.
func (m *metadataClients) resolve(ctx context.Context, id string) (*grants.Client, *Error) {
	if err := checkMetadataURL(id); err != nil {
		return nil, invalidClient("client_id %s is not a usable metadata document URL: %v", tools.Clip(id, 120, "..."), err)
	}
	now := m.now()
	m.mu.Lock()
	if c, ok := m.cache[id]; ok && now.Before(c.until) {
		m.mu.Unlock()
		return c.client, nil
	}
	m.mu.Unlock()

	select {
	case m.slots <- struct{}{}:
		defer func() { <-m.slots }()
	default:
		return nil, oerr(503, "temporarily_unavailable", "too many client metadata documents are being fetched; try again in a moment")
	}
	c, ttl, oe := m.fetch(ctx, id)
	if oe != nil {
		return nil, oe
	}
	if ttl > 0 {
		m.mu.Lock()
		if len(m.cache) >= maxMetadataCached {
			for k, v := range m.cache {
				if !now.Before(v.until) || len(m.cache) >= maxMetadataCached {
					delete(m.cache, k)
				}
			}
		}
		m.cache[id] = cachedClient{client: c, until: now.Add(ttl)}
		m.mu.Unlock()
	}
	return c, nil
}

func (m *metadataClients) fetch(ctx context.Context, id string) (*grants.Client, time.Duration, *Error) {
	ctx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, id, nil)
	if err != nil {
		return nil, 0, invalidClient("client_id %s cannot be fetched: %v", tools.Clip(id, 120, "..."), err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := m.http.Do(req)
	if err != nil {
		return nil, 0, invalidClient("the client metadata document %s could not be fetched (%v); the MCP host must serve it over https from a public address", tools.Clip(id, 120, "..."), unwrap(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, 0, invalidClient("the client metadata document %s answered HTTP %d, not 200 (redirects are not followed)", tools.Clip(id, 120, "..."), resp.StatusCode)
	}
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct != "" && ct != "application/json" && !strings.HasSuffix(ct, "+json") {
		return nil, 0, invalidClient("the client metadata document %s is %s, not application/json", tools.Clip(id, 120, "..."), ct)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxMetadataBytes+1))
	if err != nil {
		return nil, 0, invalidClient("the client metadata document %s could not be read: %v", tools.Clip(id, 120, "..."), unwrap(err))
	}
	if len(body) > MaxMetadataBytes {
		return nil, 0, invalidClient("the client metadata document %s is larger than %d bytes", tools.Clip(id, 120, "..."), MaxMetadataBytes)
	}
	if err := jsonlimit.Depth(body); err != nil {
		return nil, 0, invalidClient("the client metadata document %s is %v", tools.Clip(id, 120, "..."), err)
	}
	var doc metadataDoc
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, 0, invalidClient("the client metadata document %s is not a JSON object: %v", tools.Clip(id, 120, "..."), err)
	}
	c, oe := checkMetadata(id, doc)
	if oe != nil {
		return nil, 0, oe
	}
	c.CreatedAt = m.now().UTC()
	return c, freshness(resp.Header, m.now()), nil
}

func unwrap(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// checkMetadata validates a document the way Register validates a registration, plus the
// draft's rules: client_id equal to the URL, no shared secret.
func checkMetadata(id string, doc metadataDoc) (*grants.Client, *Error) {
	switch {
	case doc.ClientID != id:
		return nil, invalidClient("the client metadata document's client_id %q is not its URL %s", tools.Clip(doc.ClientID, 120, "..."), tools.Clip(id, 120, "..."))
	case doc.ClientSecret != "" || strings.HasPrefix(doc.TokenEndpointAuthMethod, "client_secret"):
		return nil, invalidClient("a client metadata document cannot carry a shared secret (token_endpoint_auth_method must be none)")
	case doc.TokenEndpointAuthMethod != "" && doc.TokenEndpointAuthMethod != "none":
		return nil, invalidClient("token_endpoint_auth_method %q is not supported here: Switchboard takes public clients with PKCE (none)", tools.Clip(doc.TokenEndpointAuthMethod, 40, "..."))
	case len(doc.RedirectURIs) == 0 || len(doc.RedirectURIs) > maxRedirects:
		return nil, invalidClient("the client metadata document must list 1 to %d redirect_uris", maxRedirects)
	}
	for _, u := range doc.RedirectURIs {
		if err := checkRedirect(u); err != nil {
			return nil, invalidClient("redirect_uri %s: %v", tools.Clip(u, 80, "..."), err)
		}
	}
	for _, g := range doc.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			return nil, invalidClient("grant_types may only be authorization_code and refresh_token, not %q", tools.Clip(g, 40, "..."))
		}
	}
	for _, rt := range doc.ResponseTypes {
		if rt != "code" {
			return nil, invalidClient("response_types may only be code, not %q", tools.Clip(rt, 40, "..."))
		}
	}
	name := strings.TrimSpace(doc.ClientName)
	if name == "" || len([]rune(name)) > maxNameLen || tools.CheckText("client_name", name) != nil || strings.ContainsAny(name, "\r\n") {
		return nil, invalidClient("client_name is required: one line of at most %d characters", maxNameLen)
	}
	if doc.ClientURI != "" {
		if u, err := url.Parse(doc.ClientURI); err != nil || u.Scheme != "https" || len(doc.ClientURI) > maxRedirectLen {
			return nil, invalidClient("client_uri must be an https URL")
		}
	}
	return &grants.Client{ID: id, Name: name, RedirectURIs: slices.Clone(doc.RedirectURIs), ClientURI: doc.ClientURI}, nil
}

// freshness is how long a response may be reused (RFC 9111 for a private cache):
// Cache-Control no-store and no-cache mean not at all, max-age wins over Expires, and nothing
// said means nothing kept. It is capped at a day so a changed document is read again.
func freshness(h http.Header, now time.Time) time.Duration {
	maxAge := -1
	for _, d := range strings.Split(strings.ToLower(h.Get("Cache-Control")), ",") {
		name, value, _ := strings.Cut(strings.TrimSpace(d), "=")
		switch name {
		case "no-store", "no-cache":
			return 0
		case "max-age":
			if n, err := strconv.Atoi(strings.Trim(value, `"`)); err == nil && n >= 0 {
				maxAge = n
			}
		}
	}
	var ttl time.Duration
	switch {
	case maxAge >= 0:
		ttl = time.Duration(maxAge) * time.Second
	case h.Get("Expires") != "":
		exp, err := http.ParseTime(h.Get("Expires"))
		if err != nil {
			return 0 // an invalid Expires means already expired
		}
		date := now
		if d, err := http.ParseTime(h.Get("Date")); err == nil {
			date = d
		}
		ttl = exp.Sub(date)
	}
	return max(0, min(ttl, maxMetadataCacheTT))
}

package tools

import "slices"

// AuthMethod is how a Principal proved who it is.
type AuthMethod string

// The ways in. Each door has an authenticator that produces a Principal; tools see only that.
const (
	AuthAPIKey  AuthMethod = "api_key" // x-api-key or Authorization: Bearer, MCP and REST; SWITCHBOARD_API_KEY on stdio
	AuthSession AuthMethod = "session" // a signed-in human on the portal
	AuthOAuth   AuthMethod = "oauth"   // an MCP host's OAuth access token, resolved to its grant's key
)

// Principal is who is calling: the account, what it may do, and how it authenticated.
type Principal struct {
	AccountID          string
	Method             AuthMethod
	KeyID              string // the API key, for AuthAPIKey
	SessionID          string // the portal session, for AuthSession
	Scopes             []string
	SpendLimitMicro    int64
	RateLimitPerMinute int
	// Ancestors are the keys above KeyID in its tree, nearest first (none for a root, a
	// session): a call counts against each one's spend and rate limits too, so minting never
	// multiplies them. Parents never change, so it is resolved once, at authentication.
	Ancestors []Ancestor
}

// Ancestor is a key above a principal's key, with the limits its descendants share.
type Ancestor struct {
	KeyID              string
	SpendLimitMicro    int64
	RateLimitPerMinute int
}

// HasScope reports whether the principal carries scope.
func (p *Principal) HasScope(scope Scope) bool { return slices.Contains(p.Scopes, string(scope)) }

// ID identifies the principal for rate limits and logs: the key or the session.
func (p *Principal) ID() string {
	if p.KeyID != "" {
		return p.KeyID
	}
	return "session:" + p.SessionID
}

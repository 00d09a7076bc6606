package oauth

import (
	"context"
	"net/url"
	"time"

	"github.com/switchboard-hq/switchboard/tools"
)

// The portal's Connections page as tools (tools.SessionOnly): the account's human lists the
// MCP hosts it connected and revokes them. An MCP host never sees another's grant, nor its own
// through these: it revokes its token at /oauth/revoke.

// ConnectionInfo is a live connection as the page shows it.
type ConnectionInfo struct {
	ID           string     `json:"id"`
	Name         string     `json:"name" jsonschema_description:"the host's name, as it registered"`
	RedirectHost string     `json:"redirectHost" jsonschema_description:"where its sign-in sends the human back"`
	Scopes       []string   `json:"scopes" jsonschema_description:"the scopes of its key; empty when the key cannot be read"`
	Created      time.Time  `json:"createdAt"`
	LastUsed     *time.Time `json:"lastUsedAt,omitempty"`
}

// ConnectionsOutput is the account's live connections, newest first.
type ConnectionsOutput struct {
	Connections []ConnectionInfo `json:"connections"`
}

// RevokeConnectionInput names the connection to end.
type RevokeConnectionInput struct {
	ConnectionID string `json:"connectionId" jsonschema:"minLength=1,maxLength=64"`
}

// RevokeConnectionOutput confirms it.
type RevokeConnectionOutput struct {
	Revoked bool `json:"revoked"`
}

// Tools returns connection_list and connection_revoke.
func (s *Service) Tools() []*tools.Tool {
	return []*tools.Tool{
		tools.New(tools.Def{Name: "connection_list", Title: "List MCP connections", Access: tools.SessionOnly,
			Annotations: tools.Annotations{ReadOnly: tools.Bool(true), OpenWorld: tools.Bool(false)},
			Description: "List the MCP hosts connected to the account by signing in (OAuth), newest first, with the scopes of each one's key."},
			func(ctx context.Context, c *tools.Caller, _ struct{}) (ConnectionsOutput, error) {
				conns, err := s.Connections(ctx, c.Principal.AccountID)
				out := ConnectionsOutput{Connections: make([]ConnectionInfo, 0, len(conns))}
				for _, cn := range conns {
					row := ConnectionInfo{ID: cn.ID, Created: cn.CreatedAt, LastUsed: cn.LastUsedAt, Scopes: cn.Scopes}
					if cn.Client != nil {
						row.Name = cn.Client.Name
						if len(cn.Client.RedirectURIs) > 0 {
							if u, err := url.Parse(cn.Client.RedirectURIs[0]); err == nil {
								row.RedirectHost = u.Scheme + "://" + u.Host
							}
						}
					}
					out.Connections = append(out.Connections, row)
				}
				return out, err
			}),
		tools.New(tools.Def{Name: "connection_revoke", Title: "Revoke an MCP connection", Access: tools.SessionOnly,
			Annotations: tools.Annotations{ReadOnly: tools.Bool(false), Destructive: tools.Bool(true), Idempotent: true, OpenWorld: tools.Bool(false)},
			Description: "End an MCP host's connection to the account: its tokens and its key stop working at once. Another account's connection is NOT_FOUND."},
			func(ctx context.Context, c *tools.Caller, in RevokeConnectionInput) (RevokeConnectionOutput, error) {
				err := s.RevokeGrant(ctx, c.Principal.AccountID, in.ConnectionID)
				return RevokeConnectionOutput{Revoked: err == nil}, err
			}),
	}
}

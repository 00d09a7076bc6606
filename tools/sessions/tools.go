package sessions

import (
	"context"
	"strings"

	sessionstore "github.com/switchboard-hq/switchboard/store/sessions"
	"github.com/switchboard-hq/switchboard/tools"
)

// The portal's settings as tools (tools.SessionOnly): a signed-in human lists and revokes the
// account's sessions and turns signing on or off. Signing in and out stay the portal's own
// authentication (Start, Authenticate, Revoke of the session itself).

// ListOutput is the account's live sessions.
type ListOutput struct {
	Sessions []Info `json:"sessions"`
	Current  string `json:"current" jsonschema_description:"the id of the session that asked"`
}

// RevokeInput names the session to sign out.
type RevokeInput struct {
	SessionID string `json:"sessionId" jsonschema:"minLength=1,maxLength=64"`
}

// RevokeOutput says how many sessions ended (0: it had ended already).
type RevokeOutput struct {
	Revoked int `json:"revoked"`
}

// SigningInput turns signing on the agents' behalf on or off.
type SigningInput struct {
	On bool `json:"on"`
}

// SigningOutput is the setting now.
type SigningOutput struct {
	Signing bool `json:"signing"`
}

var (
	readOnly = tools.Annotations{ReadOnly: tools.Bool(true), OpenWorld: tools.Bool(false)}
	writes   = tools.Annotations{ReadOnly: tools.Bool(false), Destructive: tools.Bool(false), Idempotent: true, OpenWorld: tools.Bool(false)}
)

// Tools returns session_list, session_revoke and signing_set.
func (s *Service) Tools() []*tools.Tool {
	return []*tools.Tool{
		tools.New(tools.Def{Name: "session_list", Title: "List sign-in sessions", Access: tools.SessionOnly, Annotations: readOnly,
			Description: "List the account's live portal sessions (where and how each signed in, when it was last used), newest first, and which one is asking."},
			func(ctx context.Context, c *tools.Caller, _ struct{}) (ListOutput, error) {
				list, err := s.List(ctx, c.Principal.AccountID)
				return ListOutput{Sessions: list, Current: c.Principal.SessionID}, err
			}),
		tools.New(tools.Def{Name: "session_revoke", Title: "Sign a session out", Access: tools.SessionOnly,
			Annotations: tools.Annotations{ReadOnly: tools.Bool(false), Destructive: tools.Bool(true), Idempotent: true, OpenWorld: tools.Bool(false)},
			Description: "Sign out one of the account's portal sessions, on whatever device it is; it stops working at once. Another account's session is NOT_FOUND."},
			func(ctx context.Context, c *tools.Caller, in RevokeInput) (RevokeOutput, error) {
				n, err := s.Revoke(ctx, c.Principal.AccountID, in.SessionID)
				return RevokeOutput{Revoked: n}, err
			}),
		tools.New(tools.Def{Name: "signing_set", Title: "Turn signing on or off", Access: tools.SessionOnly, Annotations: writes,
			Description: "Turn on or off Switchboard's signing with the account's embedded wallets on its agents' behalf. " +
				"Turning it on needs a sign-in of the last 10 minutes (FORBIDDEN otherwise: sign in again)."},
			func(ctx context.Context, c *tools.Caller, in SigningInput) (SigningOutput, error) {
				return SigningOutput{Signing: in.On}, s.SetSigning(ctx, c.Principal, in.On)
			}),
	}
}

// Notice is what another session did to the account that this session has not shown yet (a
// wallet key export), as a sentence for the page; each event is told once per session.
func (s *Service) Notice(ctx context.Context, p *tools.Principal) (string, error) {
	evs, err := s.sessions.TakeUnseenEvents(ctx, p.AccountID, p.SessionID, s.now().UTC())
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, ev := range evs {
		if ev.Kind == sessionstore.EventWalletExported {
			b.WriteString("Your wallets' private keys were exported from another session (" + ev.ClientAddr + ") at " +
				ev.CreatedAt.UTC().Format("2 Jan 2006, 15:04 UTC") + ". If this was not you, move your funds to a new wallet and sign out everywhere in Settings. ")
		}
	}
	return strings.TrimSpace(b.String()), nil
}

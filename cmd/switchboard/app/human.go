package app

import (
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/switchboard-hq/switchboard/portal"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/integrations"
	"github.com/switchboard-hq/switchboard/tools/keys"
	"github.com/switchboard-hq/switchboard/tools/oauth"
	"github.com/switchboard-hq/switchboard/tools/onboarding"
	"github.com/switchboard-hq/switchboard/tools/partners"
	"github.com/switchboard-hq/switchboard/tools/service"
	"github.com/switchboard-hq/switchboard/tools/sessions"
	"github.com/switchboard-hq/switchboard/tools/usage"
	"github.com/switchboard-hq/switchboard/tools/wallets"
)

// humanServices are the services behind the portal: its sessions and MCP authorization, and
// the session-only tools it calls through the kernel (none without a way to sign in).
type humanServices struct {
	providers []portal.OIDCProvider
	sessions  *sessions.Service
	oauth     *oauth.Service
	integ     *integrations.Service
	ceiling   keys.Limits
	tools     []*tools.Tool
}

// newHumanServices builds them before the kernel, which registers their tools. The portal
// signs humans in with an e-mail code or an identity provider: with neither, none is built.
func newHumanServices(cfg Config, d service.Deps, mailer onboarding.Mailer, ob *onboarding.Service, keySvc *keys.Service, partnerSvc *partners.Service,
	settled tools.Settled, metadata *http.Client, sealer *wallets.Sealer) (humanServices, error) {
	providers, err := cfg.Providers()
	if err != nil || (mailer == nil && len(providers) == 0) {
		return humanServices{}, err
	}
	idle, err1 := time.ParseDuration(cfg.SessionIdle)
	maxAge, err2 := time.ParseDuration(cfg.SessionMaxAge)
	if err1 != nil || err2 != nil || idle < time.Minute || maxAge < idle {
		return humanServices{}, fmt.Errorf("SWITCHBOARD_SESSION_IDLE=%q, SWITCHBOARD_SESSION_MAX_AGE=%q: want Go durations, idle at least 1m and at most the max age", cfg.SessionIdle, cfg.SessionMaxAge)
	}
	h := humanServices{providers: providers, ceiling: keySvc.Defaults(), integ: integrations.NewService(d),
		// MCP hosts sign in through the portal (MCP authorization): tokens resolve like keys.
		oauth: oauth.New(oauth.Config{Issuer: cfg.PublicBaseURL(), Resource: cfg.PublicBaseURL() + "/mcp", Metadata: metadata}, d)}
	h.sessions = sessions.NewService(sessions.Config{Idle: idle, Absolute: maxAge, Ceiling: h.ceiling}, d)
	// The charts and call logs read like every reader: after the account's pending outcomes.
	use := usage.NewService(usage.Config{Settled: settled, UserID: partnerSvc.UserID}, d)
	h.tools = slices.Concat(h.sessions.Tools(), use.Tools(), h.integ.Tools(), h.oauth.Tools())
	if mailer != nil { // the export asks for an e-mailed code
		h.tools = append(h.tools, wallets.NewExporter(d, sealer, ob.SignIn).Tools()...)
	}
	return h, nil
}

// accessTokens is the kernel authenticator's way to MCP hosts' OAuth access tokens; nil (none
// accepted) where nobody can sign in.
func (h humanServices) accessTokens() keys.Tokens {
	if h.oauth == nil {
		return nil
	}
	return h.oauth.Authenticate
}

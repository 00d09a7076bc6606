package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/switchboard-hq/switchboard/rest"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/oauth"
)

// mcpChallenge makes /mcp an OAuth protected resource (RFC 9728, MCP authorization) without
// closing the door agents onboard through: initialize, tools/list and the public tools
// (agent_signup, agent_verify) work with no credentials, while a tools/call of a tool that
// needs a key, sent with none, and any request with an access token that is no longer valid,
// answer 401 with WWW-Authenticate naming the resource metadata. An MCP host that does OAuth
// starts the sign-in there; any other client reads in the body how to get a key.
func mcpChallenge(next http.Handler, k *tools.Kernel, o *oauth.Service) http.Handler {
	meta := o.Config().Issuer + "/.well-known/oauth-protected-resource/mcp"
	challenge := func(w http.ResponseWriter, oauthErr, msg string) {
		h := fmt.Sprintf(`Bearer resource_metadata=%q`, meta)
		if oauthErr != "" {
			h += fmt.Sprintf(`, error=%q, error_description=%q`, oauthErr, msg)
		}
		w.Header().Set("WWW-Authenticate", h)
		rest.WriteError(w, tools.Errorf(tools.CodeUnauthenticated, "%s", msg))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cred, e := tools.KeyFromHeader(r.Header)
		switch {
		case e != nil:
			rest.WriteError(w, e)
			return
		case strings.HasPrefix(cred, oauth.AccessPrefix):
			if _, err := o.Authenticate(r.Context(), cred); err != nil && !store.IsUnavailable(err) {
				challenge(w, "invalid_token", fmt.Sprintf("the access token is not valid (%v): refresh it or connect again", err))
				return
			}
		case cred == "" && r.Method == http.MethodPost:
			body, ok := rereadBody(w, r)
			if !ok {
				return
			}
			if tool := keyedCall(body, k); tool != "" {
				challenge(w, "", tool+" needs an API key or a sign-in: an MCP host that supports MCP authorization signs in at "+meta+
					"; otherwise send a key as x-api-key or Authorization: Bearer (no key yet? call agent_signup with an e-mail inbox you can read, then agent_verify with the code; without an inbox, ask a human for a key)")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// keyedCall returns the tool of a tools/call (single or in a batch) that needs a key, or "".
// Keys are matched exactly, as the go-sdk matches them (encoding/json's structs would also
// take "Name" for "name"), so this reads the call the go-sdk runs.
func keyedCall(body []byte, k *tools.Kernel) string {
	var msgs []map[string]json.RawMessage
	if t := bytes.TrimSpace(body); len(t) > 0 && t[0] == '[' {
		if json.Unmarshal(t, &msgs) != nil {
			return ""
		}
	} else {
		var m map[string]json.RawMessage
		if json.Unmarshal(body, &m) != nil {
			return ""
		}
		msgs = append(msgs, m)
	}
	for _, m := range msgs {
		var method string
		var params map[string]json.RawMessage
		if json.Unmarshal(m["method"], &method) != nil || method != "tools/call" || json.Unmarshal(m["params"], &params) != nil {
			continue
		}
		var name string
		json.Unmarshal(params["name"], &name)
		if t := k.Tool(name); t != nil && t.Access.NeedsKey() {
			return name
		}
	}
	return ""
}

// accessTokensNotHere refuses an OAuth access token on /v1: tokens are bound to the MCP
// resource (RFC 8707); REST takes API keys.
func accessTokensNotHere(next http.Handler, o *oauth.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if cred, _ := tools.KeyFromHeader(r.Header); strings.HasPrefix(cred, oauth.AccessPrefix) { // two credentials: refused by the REST door
			rest.WriteError(w, tools.Errorf(tools.CodeUnauthenticated, "this access token was issued for %s, not the REST API; use an API key on /v1", o.Config().Resource))
			return
		}
		next.ServeHTTP(w, r)
	})
}

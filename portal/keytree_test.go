package portal_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

// Nothing an OAuth grant creates outlives it, and a grant acts on no other key (issue 35): a
// token granted only read minted an API key that kept working after /oauth/revoke, and
// revoked the account's full-scope primary key. The portal's signed-in human still revokes
// any key of the account.
func TestOAuthGrantMintsAndRevokesNoKeys(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			env := apptest.Start(t, apptest.Options{Dialect: dialect})
			ctx := context.Background()
			acct := env.Onboard(t, "owner@example.com")
			primary, accountID := acct["apiKey"].(string), acct["userId"].(string)
			_, list := env.REST(t, "GET", "/v1/keys", primary, nil)
			primaryID := list["keys"].([]any)[0].(map[string]any)["id"].(string)

			st, reg := register(t, env, map[string]any{"client_name": "Host", "redirect_uris": []string{"http://127.0.0.1:5555/callback"}})
			if st != 201 {
				t.Fatalf("register: %d %v", st, reg)
			}
			c := &oauthClient{t: t, env: env, id: reg["client_id"].(string), redirect: "http://127.0.0.1:5555/callback"}
			h := newHuman(t, env)
			noFollow(h)
			h.signIn("owner@example.com")
			verifier, challenge := pkce("k")
			back := h.consent(c.authorizeURL(challenge, nil), url.Values{"decision": {"allow"}, "scopes": {"read"}})
			st, tok := c.token(url.Values{"grant_type": {"authorization_code"}, "code": {back.Query().Get("code")}, "client_id": {c.id},
				"redirect_uri": {c.redirect}, "code_verifier": {verifier}, "resource": {env.URL + "/mcp"}})
			if st != 200 {
				t.Fatalf("exchange: %d %v", st, tok)
			}
			before, err := accounts.New(env.App.Store).Keys(ctx, accountID)
			if err != nil {
				t.Fatal(err)
			}

			cs := env.MCP(t, tok["access_token"].(string))
			if out, e := apptest.CallTool(t, cs, "api_key_create", map[string]any{"name": "escape", "scopes": []string{"read"}}); e == nil || e.Code != "FORBIDDEN" || !strings.Contains(e.Message, "portal") {
				t.Fatalf("a read token minting a key: %v %v", out, e)
			}
			if _, e := apptest.CallTool(t, cs, "api_key_revoke", map[string]any{"keyId": primaryID}); e == nil || e.Code != "FORBIDDEN" {
				t.Fatalf("a read token revoking the primary key: %v", e)
			}
			out, e := apptest.CallTool(t, cs, "api_key_list", nil)
			if e != nil || len(out["keys"].([]any)) != 1 || strings.Contains(out["keys"].([]any)[0].(map[string]any)["name"].(string), "escape") {
				t.Fatalf("a token lists the key behind its grant alone: %v %v", out, e)
			}
			if status, _ := env.REST(t, "GET", "/v1/account", primary, nil); status != 200 {
				t.Fatalf("the primary key after the token's attempts: %d", status)
			}

			// Revoked by the client: the grant's key goes, and no key was added meanwhile.
			if resp, err := http.PostForm(env.URL+"/oauth/revoke", url.Values{"token": {tok["refresh_token"].(string)}}); err != nil || resp.StatusCode != 200 {
				t.Fatalf("revoke: %v %v", resp, err)
			}
			after, err := accounts.New(env.App.Store).Keys(ctx, accountID)
			if err != nil {
				t.Fatal(err)
			}
			if len(after) != len(before) {
				t.Fatalf("the grant added keys: %d before its revocation, %d after", len(before), len(after))
			}
			for _, k := range after {
				if k.RevokedAt == nil && k.ID != primaryID {
					t.Fatalf("key %s (%s) outlived the grant's revocation", k.ID, k.Name)
				}
			}

			// The portal's human revokes any key of the account, a key's child included.
			status, child := env.REST(t, "POST", "/v1/keys", primary, map[string]any{"name": "child", "scopes": []string{"read"}})
			if status != 201 {
				t.Fatalf("mint: %d %v", status, child)
			}
			h.get("/developer/api-keys")
			if st, page := h.post("/developer/api-keys/"+child["id"].(string)+"/revoke", url.Values{"csrf": {h.csrf()}}, false); st != 200 || !strings.Contains(page, "API keys") {
				t.Fatalf("the human revoking a child key: %d", st)
			}
			if status, _ := env.REST(t, "GET", "/v1/account", child["secret"].(string), nil); status != 401 {
				t.Fatalf("a key the human revoked: %d", status)
			}
		})
	}
}

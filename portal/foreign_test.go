package portal_test

import (
	"bytes"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/signing/partnerexample"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

// logBuffer is a log sink the test reads while the server writes to it.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Account B, signed in and posting with its own valid form token, acts on account A's key,
// session, intent (each of the intent page's actions) and MCP connection, and on ids that are
// nobody's: every one answers 404 with the portal's HTML error page, is logged below ERROR, and
// A's resources are as they were.
func TestAnotherAccountsIDsAre404(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			logs := &logBuffer{}
			env, partner := withPartnerOn(t, apptest.Options{Dialect: dialect, Log: logs})

			// Account A: an agent's key, an active intent, two browser sessions, an MCP connection.
			key := env.Onboard(t, "alice@example.com")["apiKey"].(string)
			_, acct := env.REST(t, "GET", "/v1/account", key, nil)
			keyID := acct["keyId"].(string)
			st, out := env.REST(t, "POST", "/v1/partner/intents", key, map[string]any{"publicIdentifier": "@alices", "name": "Alice's", "description": "d",
				"category": "QUERY", "toolEndpoint": partner.URL + partnerexample.RESTPath, "feeRate": 0})
			if st != 201 {
				t.Fatalf("publish: %d %v", st, out)
			}
			intentID := out["id"].(string)
			if st, out := env.REST(t, "POST", "/v1/partner/intents/"+intentID+"/active", key, map[string]any{"active": true}); st != 200 {
				t.Fatalf("activate: %d %v", st, out)
			}
			a := newHuman(t, env)
			noFollow(a)
			a.signIn("alice@example.com")
			a2 := newHuman(t, env)
			a2.signIn("alice@example.com")
			_, page := a.get("/developer/settings")
			sessionID := between(t, page, `action="/developer/sessions/`, `/revoke"`)

			_, reg := register(t, env, map[string]any{"client_name": "Alice Host", "redirect_uris": []string{"http://127.0.0.1:5555/callback"}})
			c := &oauthClient{t: t, env: env, id: reg["client_id"].(string), redirect: "http://127.0.0.1:5555/callback"}
			verifier, challenge := pkce("a")
			back := a.consent(c.authorizeURL(challenge, nil), url.Values{"decision": {"allow"}, "scopes": {"read"}})
			_, tok := c.token(url.Values{"grant_type": {"authorization_code"}, "code": {back.Query().Get("code")}, "client_id": {c.id},
				"redirect_uri": {c.redirect}, "code_verifier": {verifier}})
			access, _ := tok["access_token"].(string)
			_, page = a.get("/developer/connections")
			connectionID := between(t, page, `action="/developer/connections/`, `/revoke"`)

			intentBefore := alicesIntent(t, env, key, intentID)
			if intentBefore["isActive"] != true {
				t.Fatalf("A's intent is not active to begin with: %v", intentBefore)
			}

			// Account B.
			b := newHuman(t, env)
			b.signIn("bob@example.com")
			b.get("/developer/api-keys")
			token := b.csrf()
			logsBefore := len(logs.String())

			for _, tc := range []struct {
				path string
				form url.Values
			}{
				{"/developer/api-keys/" + keyID + "/revoke", nil},
				{"/developer/sessions/" + sessionID + "/revoke", nil},
				{"/developer/connections/" + connectionID + "/revoke", nil},
				{"/developer/intents/" + intentID, url.Values{"action": {"test"}}},
				{"/developer/intents/" + intentID, url.Values{"action": {"activate"}}},
				{"/developer/intents/" + intentID, url.Values{"action": {"deactivate"}}},
				{"/developer/intents/" + intentID, url.Values{"action": {"archive"}}},
				{"/developer/intents/" + intentID, url.Values{"action": {"update"}, "name": {"Bob's now"}, "description": {"taken"},
					"toolEndpoint": {partner.URL + partnerexample.RESTPath}, "timeoutMs": {"5000"}, "feeRate": {"1"}}},
				// Ids that are nobody's.
				{"/developer/api-keys/key_nothing/revoke", nil},
				{"/developer/sessions/nothing/revoke", nil},
				{"/developer/connections/nothing/revoke", nil},
				{"/developer/intents/nothing", url.Values{"action": {"archive"}}},
			} {
				form := url.Values{"csrf": {token}}
				for k, v := range tc.form {
					form[k] = v
				}
				st, body := b.post(tc.path, form, false)
				if st != 404 || !strings.Contains(body, "<!doctype html>") || !strings.Contains(body, "<h1>Not Found</h1>") {
					t.Errorf("B posts %s %v: %d, want 404 and the error page:\n%s", tc.path, tc.form, st, body)
				}
			}
			if st, body := b.get("/developer/intents/" + intentID); st != 404 || !strings.Contains(body, "<h1>Not Found</h1>") {
				t.Errorf("B opens A's intent page: %d, want 404 and the error page:\n%s", st, body)
			}

			// Logged, and never at ERROR.
			logged := logs.String()[logsBefore:]
			if strings.Contains(logged, "level=ERROR") || strings.Count(logged, "msg=portal") < 13 || !strings.Contains(logged, "level=INFO msg=portal") {
				t.Errorf("logs of B's attempts (want 13 INFO lines, no ERROR):\n%s", logged)
			}

			// A's resources are as they were.
			if st, _ := env.REST(t, "GET", "/v1/account", key, nil); st != 200 {
				t.Errorf("A's key after B's revoke: %d", st)
			}
			if st, body := a2.get("/developer"); st != 200 || !strings.Contains(body, "<h1>Account</h1>") {
				t.Errorf("A's second session after B's revoke: %d", st)
			}
			if st := mcpStatus(t, env, access); st != 200 {
				t.Errorf("A's MCP connection after B's revoke: %d", st)
			}
			if after := alicesIntent(t, env, key, intentID); fmt.Sprint(after) != fmt.Sprint(intentBefore) {
				t.Errorf("A's intent changed:\nbefore %v\nafter  %v", intentBefore, after)
			}
		})
	}
}

// alicesIntent is intent id as its owner's key lists it.
func alicesIntent(t *testing.T, env *apptest.Env, key, id string) map[string]any {
	t.Helper()
	st, out := env.REST(t, "GET", "/v1/partner/intents?includeArchived=true", key, nil)
	if st != 200 {
		t.Fatalf("list intents: %d %v", st, out)
	}
	for _, it := range out["intents"].([]any) {
		if m := it.(map[string]any); m["id"] == id {
			return m
		}
	}
	t.Fatalf("intent %s is not listed: %v", id, out)
	return nil
}

// between is the text of page between the first prefix and the next suffix.
func between(t *testing.T, page, prefix, suffix string) string {
	t.Helper()
	i := strings.Index(page, prefix)
	if i < 0 {
		t.Fatalf("no %q on the page:\n%s", prefix, page)
	}
	rest := page[i+len(prefix):]
	return rest[:strings.Index(rest, suffix)]
}

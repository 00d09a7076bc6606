package portal_test

import (
	"encoding/json"
	"html"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
)

var (
	desktopRe   = regexp.MustCompile(`(?s)<pre id="snippet-desktop">(.*?)</pre>`)
	anySecretRe = regexp.MustCompile(`<pre id="secret">(sb_(?:test|live)_[1-9A-HJ-NP-Za-km-z]+)</pre>`)
)

// issuedDesktopSnippet signs a human in, issues a key on the portal and returns the key and
// the Claude Desktop snippet as the copy button copies it (the text, unescaped).
func issuedDesktopSnippet(t *testing.T, env *apptest.Env) (secret, snippet string) {
	t.Helper()
	h := newHuman(t, env)
	h.signIn("desktop@example.com")
	_, body := h.post("/developer/api-keys", url.Values{"csrf": {h.csrf()}, "name": {"desktop"}, "scopes": {"read"}}, false)
	m, d := anySecretRe.FindStringSubmatch(body), desktopRe.FindStringSubmatch(body)
	if m == nil || d == nil {
		t.Fatalf("no key or no Claude Desktop snippet on the issued key's page:\n%s", body)
	}
	return m[1], html.UnescapeString(d[1])
}

// Issue 46 item 7: the portal's Claude Desktop snippet carries real values. A local test
// server (the browser on its machine, SQLite in its data directory) gets a stdio entry with
// the key and the data directory this server uses, valid JSON as pasted; no placeholder path.
func TestDesktopSnippetRunsStdioOnThisServersData(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	secret, snippet := issuedDesktopSnippet(t, env)
	var cfg struct {
		MCPServers map[string]struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(snippet), &cfg); err != nil {
		t.Fatalf("the snippet is not JSON as pasted: %v\n%s", err, snippet)
	}
	s := cfg.MCPServers["switchboard"]
	if s.Command != "switchboard" || len(s.Args) != 1 || s.Args[0] != "stdio" || s.Env["SWITCHBOARD_API_KEY"] != secret ||
		s.Env["SWITCHBOARD_DATA_DIR"] != env.App.Config.DataDir || strings.Contains(snippet, "/path/to") {
		t.Fatalf("the stdio snippet should carry the key and this server's data directory %q:\n%s", env.App.Config.DataDir, snippet)
	}
}

// A server whose data a local stdio cannot share as pasted (production here: stdio would need
// its secrets) offers Claude Desktop its URL, a custom connector that signs in: no stdio entry,
// no path of the server's.
func TestDesktopSnippetOffersTheURLElsewhere(t *testing.T) {
	env := apptest.Start(t, apptest.Options{Config: func(c *apptest.Config) { c.Env = "production" }})
	secret, snippet := issuedDesktopSnippet(t, env)
	if strings.TrimSpace(snippet) != env.App.Config.PublicBaseURL()+"/mcp" || strings.Contains(snippet, secret) {
		t.Fatalf("the Claude Desktop snippet of a production server should be its /mcp URL: %q", snippet)
	}
}

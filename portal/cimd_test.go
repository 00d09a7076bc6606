package portal_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools/partners/partnertest"
)

// An MCP 2026-07-28 host identifies by a client metadata document: the authorization server
// advertises it, fetches the document (here from a TLS server on loopback, allowed in this
// development setup; production's guard refuses such addresses), matches redirect URIs
// exactly, shows the client's domain on the consent page with its name as the client's own
// claim, and issues tokens to the URL client_id. Registration still works beside it.
func TestClientIDMetadataDocument(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { testClientIDMetadataDocument(t, dialect) })
	}
}

func testClientIDMetadataDocument(t *testing.T, dialect string) {
	const redirect = "http://127.0.0.1:7777/callback"
	var fetches atomic.Int32
	docs := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		id := "https://" + r.Host + r.URL.Path
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=300")
		name := "Example Host"
		if r.URL.Path == "/liar.json" {
			id = "https://claude.ai/oauth/client.json"
		}
		json.NewEncoder(w).Encode(map[string]any{"client_id": id, "client_name": name, "redirect_uris": []string{redirect},
			"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"}, "token_endpoint_auth_method": "none"})
	}))
	defer docs.Close()
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, partnertest.CAPEM(docs), 0o600); err != nil {
		t.Fatal(err)
	}
	// The documents are fetched by the test server's own client: the service's client refuses
	// loopback, whatever SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS says (TestMetadataFetchesKeepTheirGuard).
	env := apptest.Start(t, apptest.Options{Dialect: dialect, Metadata: docs.Client()})
	_, _, asm := apptest.Do(t, "GET", env.URL+"/.well-known/oauth-authorization-server", "", nil)
	if asm["client_id_metadata_document_supported"] != true || asm["registration_endpoint"] != env.URL+"/oauth/register" {
		t.Fatalf("authorization server metadata: %v", asm)
	}

	clientID := docs.URL + "/oauth/client.json"
	domain := strings.TrimPrefix(docs.URL, "https://")
	c := &oauthClient{t: t, env: env, id: clientID, redirect: redirect}
	h := newHuman(t, env)
	h.signIn("cimd@example.com")
	noFollow(h)
	verifier, challenge := pkce("m")
	st, page := h.get(c.authorizeURL(challenge, nil))
	if st != 200 || !strings.Contains(page, "<strong>Example Host</strong>") || !strings.Contains(page, "published by <strong>"+domain+"</strong>") ||
		!strings.Contains(page, "the client&rsquo;s own claim") || !strings.Contains(page, "localhost") {
		t.Fatalf("consent page for a metadata document client: %d %s", st, page)
	}

	// Refused: another port of the same loopback redirect (a document lists its URIs exactly),
	// and a document whose client_id is not its URL.
	for _, tc := range []struct {
		extra url.Values
		want  string
	}{
		{url.Values{"redirect_uri": {"http://127.0.0.1:7778/callback"}}, "not one this client registered"},
		{url.Values{"client_id": {docs.URL + "/liar.json"}}, "is not its URL"},
		{url.Values{"client_id": {docs.URL + "/"}}, "no path"},
	} {
		resp, err := h.c.Get(env.URL + c.authorizeURL(challenge, tc.extra))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || !strings.Contains(string(b), tc.want) || resp.Header.Get("Location") != "" {
			t.Errorf("%v: %d %s, want the error shown to the human", tc.extra, resp.StatusCode, b)
		}
	}

	back := h.consent(c.authorizeURL(challenge, nil), url.Values{"decision": {"allow"}, "scopes": {"read"}})
	code := back.Query().Get("code")
	if code == "" || back.Host != "127.0.0.1:7777" {
		t.Fatalf("allow: %s", back)
	}
	st, tok := c.token(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "client_id": {clientID}, "redirect_uri": {redirect},
		"code_verifier": {verifier}, "resource": {env.URL + "/mcp"}})
	if st != 200 || tok["access_token"] == nil {
		t.Fatalf("exchange: %d %v", st, tok)
	}
	if out, e := apptest.CallTool(t, env.MCP(t, tok["access_token"].(string)), "account_get", nil); e != nil || out["email"] != "cimd@example.com" {
		t.Fatalf("account_get with the token: %v %v", out, e)
	}
	if n := fetches.Load(); n != 2 { // the document (cached for its max-age) and the liar
		t.Errorf("%d document fetches, want 2: the document is kept for its max-age", n)
	}
	if st, page := h.get("/developer/connections"); st != 200 || !strings.Contains(page, "Example Host") {
		t.Fatalf("connections: %d %s", st, page)
	}
}

// Issue 35 item 7: SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS opens partner endpoints on local
// addresses in development, never client metadata documents: anyone can name a document's URL
// on the authorize page, so its fetch keeps the SSRF guard and a loopback document is refused
// before any request reaches it.
func TestMetadataFetchesKeepTheirGuard(t *testing.T) {
	var fetches atomic.Int32
	docs := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"client_id": "https://" + r.Host + r.URL.Path, "client_name": "Inside", "redirect_uris": []string{"http://127.0.0.1:7777/callback"},
			"grant_types": []string{"authorization_code"}, "response_types": []string{"code"}, "token_endpoint_auth_method": "none"})
	}))
	defer docs.Close()
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, partnertest.CAPEM(docs), 0o600); err != nil {
		t.Fatal(err)
	}
	env := apptest.Start(t, apptest.Options{Config: func(c *apptest.Config) {
		c.AllowLocalEndpoints = true
		c.PartnerCAFile = caFile
	}})
	c := &oauthClient{t: t, env: env, id: docs.URL + "/oauth/client.json", redirect: "http://127.0.0.1:7777/callback"}
	h := newHuman(t, env)
	h.signIn("guarded@example.com")
	noFollow(h)
	_, challenge := pkce("g")
	resp, err := h.c.Get(env.URL + c.authorizeURL(challenge, nil))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || strings.Contains(string(b), "Inside") || resp.Header.Get("Location") != "" || fetches.Load() != 0 {
		t.Fatalf("a metadata document on loopback with SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS: %d, %d fetches, %s", resp.StatusCode, fetches.Load(), b)
	}
	t.Logf("refused: %s", firstLine(string(b), "metadata"))
}

// firstLine is the first line of s that mentions word (for the log).
func firstLine(s, word string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, word) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

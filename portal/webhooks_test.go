package portal_test

import (
	"crypto/ed25519"
	"encoding/json"
	"encoding/pem"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

var whsecRe = regexp.MustCompile(`<pre id="secret">(whsec_[^<]+)</pre>`)

// The Webhooks page: a bad URL is refused next to its field; an endpoint added there shows its
// secret once; a key issued and the wallets exported on the portal arrive at a TLS receiver as
// key.created and wallet.exported, each verifying with the secret shown (v1) and with the
// service's published key (v1a); the page lists each delivery with its attempts, and "Send
// again" replays it with the same webhook-id.
func TestWebhooksPage(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			var mu sync.Mutex
			type got struct {
				header http.Header
				body   []byte
			}
			var received []got
			rcv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				mu.Lock()
				received = append(received, got{r.Header.Clone(), body})
				mu.Unlock()
			}))
			t.Cleanup(rcv.Close)
			ca := filepath.Join(t.TempDir(), "ca.pem")
			if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rcv.Certificate().Raw}), 0o600); err != nil {
				t.Fatal(err)
			}
			env := apptest.Start(t, apptest.Options{Dialect: dialect, Config: func(cfg *app.Config) {
				cfg.AllowLocalEndpoints, cfg.PartnerCAFile = true, ca
			}})
			const email = "hooks@example.com"
			h := newHuman(t, env)
			h.signIn(email)
			if _, body := h.get("/developer/webhooks"); !strings.Contains(body, "No endpoints yet") || !strings.Contains(body, `aria-current="page">Webhooks`) {
				t.Fatalf("empty page:\n%s", body)
			}
			token := h.csrf()
			if st, body := h.post("/developer/webhooks", url.Values{"csrf": {token}, "url": {"ftp://example.com/x"}}, false); st != 422 || !strings.Contains(body, `id="url-error"`) || !strings.Contains(body, "https://") {
				t.Fatalf("a bad URL: %d %s", st, body)
			}
			st, body := h.post("/developer/webhooks", url.Values{"csrf": {token}, "url": {rcv.URL + "/events"}, "eventTypes": {"key.created", "wallet.exported"}}, false)
			m := whsecRe.FindStringSubmatch(body)
			if st != 200 || m == nil {
				t.Fatalf("add endpoint: %d %s", st, body)
			}
			secret, err := signing.ParseWebhookSecret(html.UnescapeString(m[1]))
			if err != nil {
				t.Fatal(err)
			}
			if _, again := h.get("/developer/webhooks"); strings.Contains(again, m[1]) {
				t.Fatal("the secret is shown again")
			}

			// The events: a key issued, the wallets exported.
			if st, body := h.post("/developer/api-keys", url.Values{"csrf": {token}, "name": {"hooked"}, "scopes": {"read"}}, false); st != 200 || !strings.Contains(body, "sb_test_") {
				t.Fatalf("issue key: %d %s", st, body)
			}
			h.post("/developer/settings/wallet-export", url.Values{"csrf": {token}, "action": {"send"}}, false)
			code := env.Inbox.Code(t, email, 2)
			env.Clock.Advance(time.Second)
			if st, body := h.post("/developer/settings/wallet-export", url.Values{"csrf": {token}, "action": {"reveal"}, "code": {code}}, false); st != 200 || !strings.Contains(body, "Shown only now") {
				t.Fatalf("export: %d %s", st, body)
			}
			if _, err := env.App.Webhooks.RunOnce(t.Context()); err != nil {
				t.Fatal(err)
			}

			resp, err := http.Get(env.URL + signing.PublicKeyPath)
			if err != nil {
				t.Fatal(err)
			}
			pemBytes, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			pub, err := signing.ParsePublicKeyPEM(pemBytes)
			if err != nil {
				t.Fatal(err)
			}
			byHMAC := &signing.WebhookVerifier{Secret: secret, Now: env.Clock.Now}
			byKey := &signing.WebhookVerifier{PublicKeys: []ed25519.PublicKey{pub}, Now: env.Clock.Now}
			mu.Lock()
			types := map[string]string{}
			for _, r := range received {
				if _, err := byHMAC.Verify(r.header, r.body); err != nil {
					t.Errorf("v1: %v", err)
				}
				if _, err := byKey.Verify(r.header, r.body); err != nil {
					t.Errorf("v1a: %v", err)
				}
				var b struct {
					Type string         `json:"type"`
					Data map[string]any `json:"data"`
				}
				json.Unmarshal(r.body, &b)
				types[b.Type] = r.header.Get(signing.WebhookIDHeader)
				if b.Type == "key.created" && b.Data["name"] != "hooked" {
					t.Errorf("key.created: %s", r.body)
				}
			}
			n := len(received)
			mu.Unlock()
			if n != 2 || types["key.created"] == "" || types["wallet.exported"] == "" {
				t.Fatalf("received %d: %v", n, types)
			}

			_, body = h.get("/developer/webhooks")
			if !strings.Contains(body, types["wallet.exported"]) || !strings.Contains(body, "HTTP 200") || !strings.Contains(body, "delivered") {
				t.Fatalf("deliveries on the page:\n%s", body)
			}
			replay := regexp.MustCompile(`action="(/developer/webhooks/deliveries/[^/"]+/replay)"`).FindStringSubmatch(body)
			if replay == nil {
				t.Fatalf("no Send again:\n%s", body)
			}
			if st, _ := h.post(replay[1], url.Values{"csrf": {token}}, false); st != http.StatusSeeOther && st != 200 {
				t.Fatalf("replay: %d", st)
			}
			if _, err := env.App.Webhooks.RunOnce(t.Context()); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(received) != 3 || (received[2].header.Get(signing.WebhookIDHeader) != types["key.created"] && received[2].header.Get(signing.WebhookIDHeader) != types["wallet.exported"]) {
				t.Fatalf("after the replay the receiver has %d deliveries", len(received))
			}
		})
	}
}

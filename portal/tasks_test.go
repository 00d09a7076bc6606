package portal_test

import (
	"crypto/ed25519"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools/partners/partnertest"
)

// withSlowPartner is withPartnerOn with a partner that verifies every call and holds one
// whose args say "hang" until it is cancelled (or the test ends); others it echoes at once.
func withSlowPartner(t *testing.T, dialect string) (*apptest.Env, *partnertest.Partner) {
	t.Helper()
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "signing-key.pem")
	key, _, err := signing.LoadOrCreatePrivateKey(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	v := signing.NewVerifierFromKey(key.Public().(ed25519.PublicKey))
	partner := partnertest.Start(t, signing.Middleware(v, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		env, _ := signing.EnvelopeFromContext(r.Context())
		if strings.Contains(string(env.Args), "hang") {
			select {
			case <-r.Context().Done():
			case <-done:
			}
			return
		}
		out, _ := json.Marshal(map[string]any{"success": true, "result": map[string]any{"echo": env.Args}})
		w.Header().Set("Content-Type", "application/json")
		w.Write(out)
	})))
	t.Cleanup(func() { close(done) })
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, partnertest.CAPEM(partner.Server), 0o600); err != nil {
		t.Fatal(err)
	}
	env := apptest.Start(t, apptest.Options{Dialect: dialect, Config: func(c *apptest.Config) {
		c.AllowLocalEndpoints, c.PartnerCAFile, c.SigningKeyFile, c.TaskAfter = true, caFile, keyFile, "1s"
	}})
	return env, partner
}

// The call log shows the caller's running tasks (started, the intent, working) with a cancel
// form: without its form token nothing is cancelled, another account cannot cancel it, and
// cancelling it ends the task cancelled and refunded, after which it is no longer listed.
func TestCallLogRunningTasks(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			env, partner := withSlowPartner(t, dialect)
			key := env.Onboard(t, "tasks-a@example.com")["apiKey"].(string)
			env.Onboard(t, "tasks-b@example.com")
			publishLive(t, env, key, map[string]any{"publicIdentifier": "@tasks-slow", "name": "Slow", "description": "a report that takes a while",
				"category": "QUERY", "toolEndpoint": partner.URL + "/rest", "feeRate": 0, "timeoutMs": 5000}, true)
			_, before := env.REST(t, "GET", "/v1/account", key, nil)

			h := newHuman(t, env)
			h.signIn("tasks-a@example.com")
			if _, body := h.get("/developer/calls"); strings.Contains(body, "Running tasks") {
				t.Fatalf("a running task listed before any:\n%s", body)
			}
			st, hdr, task := apptest.DoWith(t, "POST", env.URL+"/v1/invoke", key, map[string]any{"message": "@tasks-slow hang on"}, map[string]string{"Prefer": "respond-async"})
			id, _ := task["taskId"].(string)
			if st != 202 || id == "" || hdr.Get("Location") != "/v1/tasks/"+id {
				t.Fatalf("respond-async: %d %v", st, task)
			}
			_, body := h.get("/developer/calls")
			action := "/developer/tasks/" + id + "/cancel"
			if !strings.Contains(body, "Running tasks") || !strings.Contains(body, `<td data-label="Intent">@tasks-slow</td>`) ||
				!strings.Contains(body, "working (calling @tasks-slow)") || !strings.Contains(body, `action="`+action+`"`) ||
				!strings.Contains(body, `href="/developer/calls/`+task["requestId"].(string)+`"`) {
				t.Fatalf("the call log does not show the running task:\n%s", body)
			}
			working := func() {
				t.Helper()
				if st, got := env.REST(t, "GET", "/v1/tasks/"+id, key, nil); st != 200 || got["status"] != "working" {
					t.Fatalf("task: %d %v, want still working", st, got)
				}
			}
			// No form token, or a cross-site post: refused, nothing cancelled.
			if st, _ := h.post(action, url.Values{}, false); st == http.StatusSeeOther || st == 200 {
				t.Fatalf("a cancel without its form token: %d", st)
			}
			h.get("/developer/calls")
			if st, _ := h.post(action, url.Values{"csrf": {h.csrf()}}, true); st == http.StatusSeeOther || st == 200 {
				t.Fatalf("a cross-site cancel: %d", st)
			}
			working()
			if _, mid := env.REST(t, "GET", "/v1/account", key, nil); mid["creditUsd"] == before["creditUsd"] {
				t.Fatalf("credit %v while the task works: want its hold taken", mid["creditUsd"])
			}
			// Another account's human: not found.
			other := newHuman(t, env)
			other.signIn("tasks-b@example.com")
			other.get("/developer/calls")
			if st, _ := other.post(action, url.Values{"csrf": {other.csrf()}}, false); st != 404 {
				t.Fatalf("another account's cancel: %d, want 404", st)
			}
			working()

			h.get("/developer/calls")
			h.c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
			if st, _ := h.post(action, url.Values{"csrf": {h.csrf()}}, false); st != http.StatusSeeOther {
				t.Fatalf("cancel: %d", st)
			}
			h.c.CheckRedirect = nil
			var got map[string]any
			for range 200 {
				if _, got = env.REST(t, "GET", "/v1/tasks/"+id, key, nil); got["status"] != "working" {
					break
				}
				time.Sleep(25 * time.Millisecond)
			}
			if got["status"] != "cancelled" {
				t.Fatalf("task after the portal's cancel: %v", got)
			}
			if _, after := env.REST(t, "GET", "/v1/account", key, nil); after["creditUsd"] != before["creditUsd"] {
				t.Fatalf("credit %v after the cancel, %v before: want refunded", after["creditUsd"], before["creditUsd"])
			}
			_, body = h.get("/developer/calls?cancelled=1")
			if strings.Contains(body, "Running tasks") || !strings.Contains(body, "Cancel asked") {
				t.Fatalf("the call log after the cancel:\n%s", body)
			}
		})
	}
}

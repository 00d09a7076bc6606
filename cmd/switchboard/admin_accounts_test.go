package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools/keys"
)

// TestOperatorLetsTheFirstPersonIn is production without a mailer, as the issue found it: the
// log, /developer/sign-in and /llms.txt say e-mail onboarding is off and how to get in; the
// operator creates an account (wallets and all, through onboarding's own code) and issues it
// a key with the real binary, the secret alone on stdout; a served instance on the same
// database then takes the key. SQLite (the embedded default) and PostgreSQL.
func TestOperatorLetsTheFirstPersonIn(t *testing.T) {
	bin := buildBinary(t)
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			dsn := ""
			if dialect == "postgres" {
				dsn = storetest.DSN(t, dialect)
			}
			env := append(productionSecrets(t), "SWITCHBOARD_ENV=production", "SWITCHBOARD_DATA_DIR="+t.TempDir(), "SWITCHBOARD_DATABASE_URL="+dsn,
				"SWITCHBOARD_SMTP_URL=", "SWITCHBOARD_OIDC_PROVIDERS=", "SWITCHBOARD_API_KEY=", "SWITCHBOARD_REDIS_URL=")
			admin := func(args ...string) (string, string, error) {
				cmd := exec.Command(bin, append([]string{"admin"}, args...)...)
				cmd.Env = append(os.Environ(), env...)
				var stdout, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				err := cmd.Run()
				return stdout.String(), stderr.String(), err
			}

			// A key for nobody says how to make the account.
			_, stderr, err := admin("key", "issue", "--email", "ops@example.com", "--scopes", "read")
			if err == nil || !strings.Contains(stderr, "admin account create --email ops@example.com") {
				t.Fatalf("key issue without an account: %v\n%s", err, stderr)
			}
			stdout, stderr, err := admin("account", "create", "--email", "Ops@Example.com")
			if err != nil {
				t.Fatalf("account create: %v\n%s", err, stderr)
			}
			var created struct {
				AccountID string
				Email     string
				Created   bool
				Wallets   struct{ EVM, SVM string }
			}
			if err := json.Unmarshal([]byte(stdout), &created); err != nil || !created.Created || created.Email != "ops@example.com" ||
				!strings.HasPrefix(created.Wallets.EVM, "0x") || created.Wallets.SVM == "" {
				t.Fatalf("account create: %v %+v\n%s", err, created, stdout)
			}
			stdout, _, err = admin("account", "create", "--email", "ops@example.com")
			if err != nil || !strings.Contains(stdout, `"created": false`) || !strings.Contains(stdout, created.AccountID) {
				t.Fatalf("account create again (the same account, unchanged): %v\n%s", err, stdout)
			}
			for _, bad := range [][]string{
				{"--email", "ops@example.com"},                           // no scopes
				{"--email", "ops@example.com", "--scopes", "read,admin"}, // unknown scope
				{"--email", "ops@example.com", "--scopes", "read", "--spend-limit-usd", "-1"},
				{"--email", "ops@example.com", "--scopes", "read", "--rate-limit-per-minute", strconv.Itoa(keys.MaxRatePerMinute + 1)},
			} {
				if stdout, stderr, err := admin(append([]string{"key", "issue"}, bad...)...); err == nil || stdout != "" || !strings.Contains(stderr, "switchboard:") {
					t.Errorf("key issue %v: %v, stdout %q\n%s", bad, err, stdout, stderr)
				}
			}
			stdout, stderr, err = admin("key", "issue", "--email", "ops@example.com", "--scopes", "read,partner", "--name", "first",
				"--spend-limit-usd", "5", "--rate-limit-per-minute", "60")
			if err != nil {
				t.Fatalf("key issue: %v\n%s", err, stderr)
			}
			secret := strings.TrimSpace(stdout)
			if !strings.HasPrefix(secret, "sb_live_") || strings.Count(stdout, "\n") != 1 {
				t.Fatalf("key issue's stdout should be the secret alone: %q", stdout)
			}
			if strings.Contains(stderr, secret) || !strings.Contains(stderr, `"spendLimitUsd": 5`) || !strings.Contains(stderr, `"rateLimitPerMinute": 60`) ||
				!strings.Contains(stderr, `"first"`) || !strings.Contains(stderr, "shown this once") {
				t.Fatalf("key issue's stderr should describe the key, never show it:\n%s", stderr)
			}

			s := startServeIn(t, bin, freeAddr(t), "", append(env, "SWITCHBOARD_BASE_URL=https://switchboard.example.com"))
			if log := s.stderr.String(); !strings.Contains(log, "e-mail sign-up and sign-in are off") || !strings.Contains(log, "admin key issue") {
				t.Errorf("the log should say e-mail onboarding is off and how to let people in:\n%s", log)
			}
			st, acct := s.do("GET", "/v1/account", secret, nil)
			if st != 200 || acct["userId"] != created.AccountID || acct["email"] != "ops@example.com" {
				t.Fatalf("the issued key on a served instance: %d %v", st, acct)
			}
			if w, _ := json.Marshal(acct["wallets"]); !strings.Contains(string(w), created.Wallets.EVM) || !strings.Contains(string(w), created.Wallets.SVM) {
				t.Errorf("account_get's wallets %s, want the ones account create made (%+v)", w, created.Wallets)
			}
			// The quickstart's next step (issue 46 item 7): a production account starts at 0
			// credit; the operator's credit is what the key then spends.
			if c, _ := acct["credit"].(map[string]any); fmt.Sprint(c["availableUsd"]) != "0" {
				t.Errorf("a production account's credit before the operator's: %v", acct["credit"])
			}
			if out, stderr, err := admin("credit", "ops@example.com", "25"); err != nil || !strings.Contains(out, `"availableUsd": 25`) {
				t.Fatalf("admin credit by e-mail: %v %s\n%s", err, out, stderr)
			}
			if _, acct := s.do("GET", "/v1/account", secret, nil); fmt.Sprint(acct["credit"].(map[string]any)["availableUsd"]) != "25" {
				t.Errorf("the key's account after admin credit: %v", acct["credit"])
			}
			st, keys := s.do("GET", "/v1/keys", secret, nil)
			if list, _ := keys["keys"].([]any); st != 200 || len(list) != 1 || list[0].(map[string]any)["name"] != "first" {
				t.Fatalf("the issued key listed: %d %v", st, keys)
			}
			if st, out := s.do("GET", "/v1/discover?query=weather", secret, nil); st != 200 {
				t.Fatalf("a read with the issued key: %d %v", st, out)
			}
			if st, out := s.do("POST", "/v1/agents/signup", "", map[string]any{"email": "x@example.com"}); st != 404 {
				t.Fatalf("signup with e-mail onboarding off: %d %v", st, out)
			}
			for path, want := range map[string]string{"/developer/sign-in": "switchboard admin key issue", "/llms.txt": "switchboard admin key issue"} {
				resp, err := http.Get(s.url + path)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || !strings.Contains(string(body), want) || !strings.Contains(string(body), "off") {
					t.Errorf("GET %s: %d, want it to say e-mail onboarding is off and %q:\n%s", path, resp.StatusCode, want, body)
				}
			}
		})
	}
}

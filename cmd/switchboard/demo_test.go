package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// startFresh runs serve as the README's first line does (no settings but the address and
// a data directory of the test's own) and waits until it is healthy.
func startFresh(t *testing.T, bin string, env []string) *server {
	t.Helper()
	return startServeIn(t, bin, freeAddr(t), "", append([]string{"SWITCHBOARD_DATA_DIR=" + t.TempDir(), "SWITCHBOARD_DATABASE_URL=", "SWITCHBOARD_SMTP_URL=",
		"SWITCHBOARD_API_KEY=", "SWITCHBOARD_REDIS_URL=", "SWITCHBOARD_ENV=", "SWITCHBOARD_DEMO_PARTNER=", "SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS=",
		"SWITCHBOARD_PARTNER_CA_FILE=", "SWITCHBOARD_BASE_URL="}, env...))
}

// TestFreshInstallHasSomethingToCall is the README's first minute on the embedded default:
// a fresh serve, a key by e-mail code, discover finds @demo_echo, invoke answers with what
// the partner (the example partner, verifying with package signing) computed from the
// signed envelope, and the call is recorded and charged in test credit. With no local
// endpoints allowed: the demo travels in-process, not through a loopback address.
func TestFreshInstallHasSomethingToCall(t *testing.T) {
	bin := buildBinary(t)
	s := startFresh(t, bin, nil)
	key := s.onboard("first@example.com")
	st, found := s.do("GET", "/v1/discover?query=demo", key, nil)
	if st != 200 || !strings.Contains(fmt.Sprint(found), "@demo_echo") {
		t.Fatalf("discover demo on a fresh install: %d %v\n%s", st, found, s.stderr)
	}
	_, before := s.do("GET", "/v1/account", key, nil)
	st, out := s.do("POST", "/v1/invoke", key, map[string]any{"message": "@demo_echo hello", "args": map[string]any{"query": "hello"}})
	if st != 200 || out["success"] != true {
		t.Fatalf("invoke @demo_echo: %d %v\n%s", st, out, s.stderr)
	}
	result, _ := out["result"].(map[string]any)
	rid, _ := out["requestId"].(string)
	if result["answer"] != "You asked: hello" || result["requestId"] != rid || result["userId"] == "" {
		t.Fatalf("the demo partner's answer should echo the signed envelope's query and requestId: %v", out)
	}
	_, after := s.do("GET", "/v1/account", key, nil)
	if fmt.Sprint(before["credit"]) == fmt.Sprint(after["credit"]) {
		t.Errorf("the call charged nothing: credit before %v, after %v", before["credit"], after["credit"])
	}

	cmd := exec.Command(bin, "admin", "invocation", rid)
	cmd.Env = s.cmd.Env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("admin invocation: %v\n%s", err, stderr.String())
	}
	var rec struct {
		Invocation struct {
			Handle, State    string
			PlatformFeeMicro int64
		}
	}
	json.Unmarshal(stdout.Bytes(), &rec)
	if rec.Invocation.Handle != "@demo_echo" || rec.Invocation.State != "succeeded" || rec.Invocation.PlatformFeeMicro <= 0 ||
		!strings.Contains(stdout.String(), `"Kind": "charge"`) {
		t.Fatalf("the call's record should name the demo and its charge:\n%s", stdout.String())
	}
}

// The demo partner is never offered in production, even with SWITCHBOARD_DEMO_PARTNER=true.
func TestNoDemoPartnerInProduction(t *testing.T) {
	bin := buildBinary(t)
	env := append(productionSecrets(t), "SWITCHBOARD_ENV=production", "SWITCHBOARD_DEMO_PARTNER=true")
	s := startFresh(t, bin, append(env, "SWITCHBOARD_BASE_URL=https://switchboard.example.com"))
	admin := func(args ...string) string {
		cmd := exec.Command(bin, append([]string{"admin"}, args...)...)
		cmd.Env = s.cmd.Env
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("admin %v: %v", args, err)
		}
		return string(out)
	}
	admin("account", "create", "--email", "ops@example.com")
	key := strings.TrimSpace(admin("key", "issue", "--email", "ops@example.com", "--scopes", "read,partner"))
	st, found := s.do("GET", "/v1/discover?query=demo", key, nil)
	if st != 200 || strings.Contains(fmt.Sprint(found), "demo_echo") {
		t.Fatalf("discover in production: %d %v", st, found)
	}
	if st, out := s.do("POST", "/v1/invoke", key, map[string]any{"message": "@demo_echo hello", "args": map[string]any{"query": "hello"}}); st != 404 {
		t.Fatalf("invoke @demo_echo in production: %d %v", st, out)
	}
	if strings.Contains(s.stderr.String(), "demo partner offered") {
		t.Fatalf("production offered the demo partner:\n%s", s.stderr)
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
)

// syncBuffer collects a child's stderr safely.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestStdio runs the real binary as a desktop MCP host would: onboarding over stdio, then a
// second process acting with SWITCHBOARD_API_KEY. Logs must stay on stderr: anything else on
// stdout would break the protocol and fail the client.
func TestStdio(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "switchboard")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	inbox := apptest.NewInbox(t)
	dataDir := t.TempDir()
	run := func(apiKey string) (*mcp.ClientSession, *syncBuffer) {
		cmd := exec.Command(bin, "stdio")
		cmd.Env = append(os.Environ(), "SWITCHBOARD_DATA_DIR="+dataDir, "SWITCHBOARD_SMTP_URL="+inbox.URL(), "SWITCHBOARD_API_KEY="+apiKey, "SWITCHBOARD_DATABASE_URL=")
		stderr := new(syncBuffer)
		cmd.Stderr = stderr
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "desktop-host", Version: "1"}, nil).
			Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("connect over stdio: %v\nstderr: %s", err, stderr)
		}
		return cs, stderr
	}
	call := func(cs *mcp.ClientSession, name string, args any) map[string]any {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		if res.IsError {
			t.Fatalf("%s: %s", name, text)
		}
		var out map[string]any
		json.Unmarshal([]byte(text), &out)
		return out
	}

	cs, stderr := run("")
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(tools.Tools) < 6 {
		t.Fatalf("tools over stdio: %v %v", tools, err)
	}
	call(cs, "agent_signup", map[string]any{"email": "desk@example.com"})
	acct := call(cs, "agent_verify", map[string]any{"email": "desk@example.com", "code": inbox.Code(t, "desk@example.com", 1)})
	cs.Close()
	if !strings.Contains(stderr.String(), `"msg":"tool call"`) {
		t.Fatalf("expected JSON logs on stderr, got %q", stderr)
	}
	if strings.Contains(stderr.String(), acct["apiKey"].(string)) {
		t.Fatal("the API key was logged")
	}

	cs2, _ := run(acct["apiKey"].(string))
	defer cs2.Close()
	got := call(cs2, "account_get", nil)
	if got["userId"] != acct["userId"] || got["email"] != "desk@example.com" {
		t.Fatalf("account_get over stdio with SWITCHBOARD_API_KEY: %v", got)
	}
}

func TestServeHelpListsSettings(t *testing.T) {
	var stderr bytes.Buffer
	err := run(context.Background(), []string{"serve", "--help"}, new(bytes.Buffer), &stderr)
	if err == nil || !strings.Contains(stderr.String(), "SWITCHBOARD_DATABASE_URL") || !strings.Contains(stderr.String(), "-smtp-url") {
		t.Fatalf("serve --help: %v\n%s", err, stderr.String())
	}
}

// TestStdioAnswersEveryRequestBeforeExit pipes a batch of requests and closes stdin at once,
// as a host running a one-shot script does: every request gets its answer before the process
// exits. Without a key, a tool that needs one says how stdio takes a key.
func TestStdioAnswersEveryRequestBeforeExit(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "switchboard")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	inbox := apptest.NewInbox(t)
	var in bytes.Buffer
	in.WriteString(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"batch","version":"1"}}}` + "\n")
	in.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	const calls = 30
	for i := 1; i <= calls; i++ {
		var params string
		switch i % 3 {
		case 0:
			params = `{"name":"resolve_token","arguments":{"query":"usdc"}}`
		case 1:
			params = fmt.Sprintf(`{"name":"agent_signup","arguments":{"email":"batch%d@example.com"}}`, i)
		default:
			params = `{"name":"discover","arguments":{"query":"price"}}`
		}
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`+"\n", i, params)
	}
	cmd := exec.Command(bin, "stdio")
	cmd.Env = append(os.Environ(), "SWITCHBOARD_DATA_DIR="+t.TempDir(), "SWITCHBOARD_SMTP_URL="+inbox.URL(), "SWITCHBOARD_API_KEY=", "SWITCHBOARD_DATABASE_URL=")
	cmd.Stdin = &in
	stderr := new(syncBuffer)
	cmd.Stderr = stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("switchboard stdio: %v\nstderr: %s", err, stderr)
	}
	answered := map[int]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var resp struct {
			ID     *int `json:"id"`
			Result struct {
				IsError bool `json:"isError"`
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(line), &resp); err != nil || resp.ID == nil {
			t.Fatalf("stdout line is not a response: %q (%v)", line, err)
		}
		text := ""
		if len(resp.Result.Content) > 0 {
			text = resp.Result.Content[0].Text
		}
		answered[*resp.ID] = text
	}
	for id := 0; id <= calls; id++ {
		if _, ok := answered[id]; !ok {
			t.Errorf("request %d got no answer before exit (%d of %d answered)", id, len(answered), calls+1)
		}
	}
	if got := answered[3]; !strings.Contains(got, "UNAUTHENTICATED") || !strings.Contains(got, "SWITCHBOARD_API_KEY") || strings.Contains(got, "x-api-key") {
		t.Errorf("stdio UNAUTHENTICATED should name SWITCHBOARD_API_KEY, not HTTP headers: %s", got)
	}
}

// serve with SWITCHBOARD_METRICS_ADDR runs a second listener for /metrics and pprof, which the
// public address never serves, and a shutdown stops both.
func TestServeMetricsListener(t *testing.T) {
	addr, metricsAddr := freeAddr(t), freeAddr(t)
	for k, v := range map[string]string{"SWITCHBOARD_ADDR": addr, "SWITCHBOARD_METRICS_ADDR": metricsAddr, "SWITCHBOARD_BASE_URL": "",
		"SWITCHBOARD_DATA_DIR": t.TempDir(), "SWITCHBOARD_DATABASE_URL": "", "SWITCHBOARD_SMTP_URL": "", "SWITCHBOARD_REDIS_URL": "",
		"SWITCHBOARD_REPROBE_INTERVAL": "0"} {
		t.Setenv(k, v)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	stderr := new(syncBuffer)
	go func() { done <- run(ctx, []string{"serve"}, new(bytes.Buffer), stderr) }()
	get := func(url string) (int, string) {
		resp, err := http.Get(url)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	for i := 0; ; i++ {
		if status, _ := get("http://" + addr + "/healthz"); status == 200 {
			break
		}
		if i > 200 {
			t.Fatalf("serve did not come up:\n%s", stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, c := range []struct {
		url  string
		want int
		body string
	}{
		{"http://" + metricsAddr + "/metrics", 200, `switchboard_http_request_duration_seconds_count{route="/healthz",status="2xx"}`},
		{"http://" + metricsAddr + "/debug/pprof/", 200, "goroutine"},
		{"http://" + addr + "/metrics", 404, ""},
		{"http://" + addr + "/debug/pprof/", 404, ""},
	} {
		if status, body := get(c.url); status != c.want || !strings.Contains(body, c.body) {
			t.Errorf("GET %s: %d, want %d with %q", c.url, status, c.want, c.body)
		}
	}
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve after shutdown: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
	for _, url := range []string{"http://" + addr + "/healthz", "http://" + metricsAddr + "/metrics"} {
		if status, _ := get(url); status != 0 {
			t.Errorf("GET %s after shutdown: %d, want no listener", url, status)
		}
	}
}

// Issue 35 item 7: serve and stdio refuse to start in production with
// SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS, naming it (it was a logged warning).
func TestProductionDoesNotServeWithLocalEndpoints(t *testing.T) {
	t.Setenv("SWITCHBOARD_ENV", "production")
	t.Setenv("SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS", "true")
	t.Setenv("SWITCHBOARD_BASE_URL", "https://switchboard.example.com")
	t.Setenv("SWITCHBOARD_DATA_DIR", t.TempDir())
	t.Setenv("SWITCHBOARD_DATABASE_URL", "")
	for _, cmd := range []string{"serve", "stdio"} {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second) // a process that started is stopped
		err := run(ctx, []string{cmd, "-addr", "127.0.0.1:0"}, new(bytes.Buffer), new(bytes.Buffer))
		cancel()
		if err == nil || !strings.Contains(err.Error(), "SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS") {
			t.Fatalf("%s in production with local endpoints: %v", cmd, err)
		}
	}
}

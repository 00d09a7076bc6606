package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

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

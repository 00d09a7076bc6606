package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestStdioFindsServesDatabaseFromAnotherDirectory is the README as a new user follows it:
// `serve` in one folder, then a desktop host runs `switchboard stdio` from a folder of its own
// with the key serve's onboarding gave. Neither sets SWITCHBOARD_DATA_DIR: both use the
// per-user data directory, so stdio finds the account (it used to open an empty ./data of its
// own and answer "unknown API key").
func TestStdioFindsServesDatabaseFromAnotherDirectory(t *testing.T) {
	bin := buildBinary(t)
	xdg := t.TempDir()
	serveDir, hostDir := t.TempDir(), t.TempDir()
	env := []string{"SWITCHBOARD_DATA_DIR=", "XDG_DATA_HOME=" + xdg, "SWITCHBOARD_DATABASE_URL=", "SWITCHBOARD_SMTP_URL=",
		"SWITCHBOARD_API_KEY=", "SWITCHBOARD_ENV=test", "SWITCHBOARD_REDIS_URL="}

	s := startServeIn(t, bin, freeAddr(t), serveDir, env)
	key := s.onboard("desk@example.com")
	if _, err := os.Stat(filepath.Join(xdg, "switchboard", "test", "switchboard.db")); err != nil {
		t.Fatalf("serve's database is not in $XDG_DATA_HOME/switchboard/test (the test environment's folder): %v", err)
	}

	cmd := exec.Command(bin, "stdio")
	cmd.Dir = hostDir
	cmd.Env = append(append(os.Environ(), env...), "SWITCHBOARD_API_KEY="+key)
	stderr := new(syncBuffer)
	cmd.Stderr = stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "desktop-host", Version: "1"}, nil).
		Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect over stdio: %v\nstderr: %s", err, stderr)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "account_get", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	var acct map[string]any
	json.Unmarshal([]byte(text), &acct)
	if res.IsError || acct["email"] != "desk@example.com" {
		t.Fatalf("account_get over stdio from another directory: %s\nstderr: %s", text, stderr)
	}
	for _, dir := range []string{serveDir, hostDir} {
		if _, err := os.Stat(filepath.Join(dir, "data")); !os.IsNotExist(err) {
			t.Errorf("a ./data appeared in %s (%v): the data directory must not depend on where a command runs", dir, err)
		}
	}
}

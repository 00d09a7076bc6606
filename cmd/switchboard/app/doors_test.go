package app_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/tools"
)

// An operator who sets SWITCHBOARD_API_KEY on a serving process (for stdio) must not hand
// that key to every keyless HTTP caller: only the stdio server acts with it.
func TestHTTPNeverActsWithTheStdioKey(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	key := env.Onboard(t, "op@example.com")["apiKey"].(string)

	cfg := env.App.Config
	cfg.APIKey = key
	a, err := app.BuildOn(context.Background(), cfg, app.Deps{Now: env.Clock.Now, Log: env.App.Log}, env.App.Store)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.Handler)
	defer srv.Close()
	http := &apptest.Env{App: a, URL: srv.URL}
	if _, e := apptest.CallTool(t, http.MCP(t, ""), "account_get", nil); e == nil || e.Code != tools.CodeUnauthenticated || !strings.Contains(e.Message, "x-api-key") {
		t.Fatalf("keyless HTTP MCP call: %v, want UNAUTHENTICATED naming the header", e)
	}
	if status, body := http.REST(t, "GET", "/v1/account", "", nil); status != 401 {
		t.Fatalf("keyless REST call: %d %v", status, body)
	}

	// The stdio server, over an in-memory transport, acts with the key.
	ct, st := mcp.NewInMemoryTransports()
	ss, err := a.StdioServer().Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "desktop", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if out, e := apptest.CallTool(t, cs, "account_get", nil); e != nil || out["email"] != "op@example.com" {
		t.Fatalf("stdio with SWITCHBOARD_API_KEY: %v %v", out, e)
	}
}

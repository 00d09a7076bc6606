package app_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/ratelimit/redistest"
)

// REST and MCP traffic shows on /metrics with bounded labels (routes and tool names from fixed
// sets, never a caller's path or typo), beside the ledger totals, the database and Redis pools
// and the Go runtime; /metrics and pprof answer on the operator's handler only.
func TestMetrics(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			redis := redistest.Start(t)
			env := apptest.Start(t, apptest.Options{Dialect: dialect, Config: func(c *app.Config) { c.RedisURL = redis.URL }})
			key := env.Onboard(t, "metrics@example.com")["apiKey"].(string) // POST /v1/agents/signup, /v1/agents/verify
			if status, out := env.REST(t, "GET", "/v1/account", key, nil); status != 200 {
				t.Fatalf("account: %d %v", status, out)
			}
			if status, _ := env.REST(t, "GET", "/v1/no-such-route/1234", key, nil); status != 404 {
				t.Fatalf("unknown route: %d, want 404", status)
			}
			cs := env.MCP(t, key)
			if _, e := apptest.CallTool(t, cs, "account_get", nil); e != nil {
				t.Fatalf("account_get: %v", e)
			}
			if _, e := apptest.CallTool(t, cs, "api_key_revoke", map[string]any{"keyId": "00000000-0000-0000-0000-000000000000"}); e == nil || e.Code != tools.CodeNotFound {
				t.Fatalf("revoking an unknown key: %v, want NOT_FOUND", e)
			}
			if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "no_such_tool_x1"}); err == nil {
				t.Fatal("an unknown tool answered")
			}

			m := env.Scrape(t)
			for _, c := range []struct {
				name   string
				labels map[string]string
				want   float64 // exact; -1: any positive value
			}{
				{"switchboard_http_request_duration_seconds", map[string]string{"route": "/v1/agents", "status": "2xx"}, 2},
				{"switchboard_http_request_duration_seconds", map[string]string{"route": "/v1/account", "status": "2xx"}, 1},
				{"switchboard_http_request_duration_seconds", map[string]string{"route": "/v1/other", "status": "4xx"}, 1},
				{"switchboard_http_request_duration_seconds", map[string]string{"route": "/mcp", "status": "2xx"}, -1},
				{"switchboard_mcp_tool_call_duration_seconds", map[string]string{"tool": "account_get", "result": "ok"}, 1},
				{"switchboard_mcp_tool_call_duration_seconds", map[string]string{"tool": "api_key_revoke", "result": "error"}, 1},
				{"switchboard_mcp_tool_call_duration_seconds", map[string]string{"tool": "unknown", "result": "error"}, 1},
				{"switchboard_ledger_balance_micro_usd", map[string]string{"kind": "user_available"}, 10_000_000}, // the test environment's starting credit
				{"switchboard_ledger_balance_micro_usd", map[string]string{"kind": "user_reserved"}, 0},
				{"switchboard_ledger_balance_micro_usd", map[string]string{"kind": "platform_fees"}, 0},
				{"go_sql_open_connections", map[string]string{"db_name": "switchboard"}, -1},
				{"switchboard_redis_pool_connections", nil, -1},
				{"switchboard_redis_pool_hits_total", nil, -1}, // the rate limiter ran on every keyed call
				{"go_goroutines", nil, -1},
				{"process_resident_memory_bytes", nil, -1},
			} {
				got, ok := m.Value(c.name, c.labels)
				if !ok || (c.want >= 0 && got != c.want) || (c.want < 0 && got <= 0) {
					t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
				}
			}
			for _, family := range []string{"switchboard_http_request_duration_seconds", "switchboard_mcp_tool_call_duration_seconds"} {
				for _, label := range []string{"route", "tool"} {
					for _, v := range m.LabelValues(family, label) {
						if strings.Contains(v, "no-such") || strings.Contains(v, "1234") || strings.Contains(v, "no_such") {
							t.Errorf("%s has a label from a caller's input: %s=%q", family, label, v)
						}
					}
				}
			}

			// The operator's handler serves pprof; the public one serves neither it nor /metrics.
			ops := httptest.NewServer(env.App.Metrics)
			defer ops.Close()
			for _, c := range []struct {
				base, path string
				want       int
				body       string
			}{
				{ops.URL, "/debug/pprof/", 200, "goroutine"},
				{ops.URL, "/debug/pprof/heap?debug=1", 200, "heap profile"},
				{ops.URL, "/metrics", 200, "switchboard_http_request_duration_seconds"},
				{env.URL, "/debug/pprof/", 404, ""},
				{env.URL, "/debug/pprof/heap", 404, ""},
				{env.URL, "/metrics", 404, ""},
			} {
				resp, err := http.Get(c.base + c.path)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != c.want || !strings.Contains(string(body), c.body) {
					t.Errorf("GET %s%s: %d, want %d with %q", c.base, c.path, resp.StatusCode, c.want, c.body)
				}
			}
		})
	}
}

package metrics_test

import (
	"context"
	"io"
	"log/slog"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/metrics"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/dispatch"
	"github.com/switchboard-hq/switchboard/tools/ratelimit"
	"github.com/switchboard-hq/switchboard/tools/ratelimit/redistest"
	"github.com/switchboard-hq/switchboard/tools/service"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// scrape reads /metrics from h and parses it with Prometheus' own text parser: what the
// operator's scraper reads.
func scrape(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); expfmt.ResponseFormat(rec.Header()).FormatType() != expfmt.TypeTextPlain {
		t.Fatalf("/metrics Content-Type %q, want the Prometheus text format", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("/metrics is not the Prometheus text format: %v", err)
	}
	return families
}

// series finds the sample of family name whose labels are exactly labels.
func series(t *testing.T, families map[string]*dto.MetricFamily, name string, labels map[string]string) *dto.Metric {
	t.Helper()
	f := families[name]
	if f == nil {
		t.Fatalf("no family %s in /metrics", name)
	}
next:
	for _, m := range f.GetMetric() {
		if len(m.GetLabel()) != len(labels) {
			continue
		}
		for _, l := range m.GetLabel() {
			if labels[l.GetName()] != l.GetValue() {
				continue next
			}
		}
		return m
	}
	t.Fatalf("no series %s%v; the family holds %v", name, labels, f.GetMetric())
	return nil
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// What the doors and the dispatcher observe is served as Prometheus histograms and counters
// with the labels they were given (HTTP status as its class), beside the Go runtime and the
// process; a service built without a store or Redis serves neither's series.
func TestObservationsAreServedAsPrometheusText(t *testing.T) {
	m := metrics.New(nil, nil, quiet)
	m.ObserveHTTP("/v1/account", 200, 30*time.Millisecond)
	m.ObserveHTTP("/v1/account", 201, 10*time.Millisecond)
	m.ObserveHTTP("/v1/account", 404, 2*time.Millisecond)
	m.ObserveInvoke(dispatch.Observation{Handle: "@a", Outcome: "OK", Partner: 20 * time.Millisecond, Total: 25 * time.Millisecond})
	m.ObserveInvoke(dispatch.Observation{Handle: "@b", Outcome: "TIMEOUT", Partner: 3 * time.Second, Total: 3 * time.Second})
	// A partner time over the total (clocks read apart) counts as no overhead, never negative.
	m.ObserveInvoke(dispatch.Observation{Handle: "@c", Outcome: "OK", Partner: 10 * time.Millisecond, Total: 9 * time.Millisecond})

	f := scrape(t, m.Handler())
	ok := series(t, f, "switchboard_http_request_duration_seconds", map[string]string{"route": "/v1/account", "status": "2xx"}).GetHistogram()
	if ok.GetSampleCount() != 2 || !near(ok.GetSampleSum(), 0.040) {
		t.Fatalf("2xx on /v1/account: %d requests, %v s; want 2, 0.040 s", ok.GetSampleCount(), ok.GetSampleSum())
	}
	if n := series(t, f, "switchboard_http_request_duration_seconds", map[string]string{"route": "/v1/account", "status": "4xx"}).GetHistogram().GetSampleCount(); n != 1 {
		t.Fatalf("4xx on /v1/account: %d, want 1", n)
	}
	if n := series(t, f, "switchboard_invoke_outcomes_total", map[string]string{"outcome": "OK"}).GetCounter().GetValue(); n != 2 {
		t.Fatalf("OK outcomes: %v, want 2", n)
	}
	if n := series(t, f, "switchboard_invoke_outcomes_total", map[string]string{"outcome": "TIMEOUT"}).GetCounter().GetValue(); n != 1 {
		t.Fatalf("TIMEOUT outcomes: %v, want 1", n)
	}
	partner := series(t, f, "switchboard_invoke_partner_duration_seconds", nil).GetHistogram()
	if partner.GetSampleCount() != 3 || !near(partner.GetSampleSum(), 3.030) {
		t.Fatalf("partner time: %d calls, %v s; want 3, 3.030 s", partner.GetSampleCount(), partner.GetSampleSum())
	}
	overhead := series(t, f, "switchboard_invoke_overhead_duration_seconds", nil).GetHistogram()
	if overhead.GetSampleCount() != 3 || !near(overhead.GetSampleSum(), 0.005) {
		t.Fatalf("overhead: %d calls, %v s; want 3, 0.005 s (the clamped one adds 0)", overhead.GetSampleCount(), overhead.GetSampleSum())
	}
	// The overhead's buckets start at half a millisecond: the 5 ms one is above 0.004 s.
	for _, b := range overhead.GetBucket() {
		if near(b.GetUpperBound(), 0.004) && b.GetCumulativeCount() != 2 {
			t.Fatalf("overhead at or under 4 ms: %d calls, want 2 (the 0 and the 0 clamped)", b.GetCumulativeCount())
		}
	}
	for _, name := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "process_resident_memory_bytes"} {
		if f[name] == nil {
			t.Errorf("no %s: the runtime and process collectors are registered", name)
		}
	}
	for name := range f {
		for _, absent := range []string{"switchboard_ledger_balance_micro_usd", "go_sql_open_connections", "switchboard_redis_pool_connections"} {
			if name == absent {
				t.Errorf("%s is served with no store or Redis", name)
			}
		}
	}
}

// Each Metrics has its own registry: two services in one process (tests, replicas) neither
// collide on registration nor see each other's observations.
func TestEachServiceHasItsOwnRegistry(t *testing.T) {
	a, b := metrics.New(nil, nil, quiet), metrics.New(nil, nil, quiet)
	a.ObserveHTTP("/mcp", 200, time.Millisecond)
	if n := series(t, scrape(t, a.Handler()), "switchboard_http_request_duration_seconds", map[string]string{"route": "/mcp", "status": "2xx"}).GetHistogram().GetSampleCount(); n != 1 {
		t.Fatalf("a's /mcp requests: %d, want 1", n)
	}
	if f := scrape(t, b.Handler()); len(f["switchboard_http_request_duration_seconds"].GetMetric()) != 0 {
		t.Fatalf("b serves a's requests: %v", f["switchboard_http_request_duration_seconds"].GetMetric())
	}
}

// MCP tools/call is timed by tool and result over a real go-sdk session; a name the server
// does not know counts as "unknown" (a caller cannot mint series), and other methods
// (tools/list) are not counted.
func TestMCPMiddlewareTimesToolCallsWithBoundedNames(t *testing.T) {
	m := metrics.New(nil, nil, quiet)
	srv := mcp.NewServer(&mcp.Implementation{Name: "metrics-test", Version: "0"}, nil)
	answer := func(isError bool) mcp.ToolHandler {
		return func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: isError, Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		}
	}
	schema := map[string]any{"type": "object"}
	srv.AddTool(&mcp.Tool{Name: "works", InputSchema: schema}, answer(false))
	srv.AddTool(&mcp.Tool{Name: "fails", InputSchema: schema}, answer(true))
	srv.AddReceivingMiddleware(m.MCPMiddleware([]string{"works", "fails"}))
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "works"}); err != nil || res.IsError {
			t.Fatalf("works: %v %v", res, err)
		}
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fails"}); err != nil || !res.IsError {
		t.Fatalf("fails: %v %v", res, err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "typo_x1"}); err == nil {
		t.Fatal("an unknown tool answered")
	}

	f := scrape(t, m.Handler())
	for _, c := range []struct {
		tool, result string
		want         uint64
	}{{"works", "ok", 2}, {"fails", "error", 1}, {"unknown", "error", 1}} {
		if n := series(t, f, "switchboard_mcp_tool_call_duration_seconds", map[string]string{"tool": c.tool, "result": c.result}).GetHistogram().GetSampleCount(); n != c.want {
			t.Errorf("tool=%s result=%s: %d calls, want %d", c.tool, c.result, n, c.want)
		}
	}
	var tools []string
	var calls uint64
	for _, s := range f["switchboard_mcp_tool_call_duration_seconds"].GetMetric() {
		for _, l := range s.GetLabel() {
			if l.GetName() == "tool" {
				tools = append(tools, l.GetValue())
			}
		}
		calls += s.GetHistogram().GetSampleCount()
	}
	slices.Sort(tools)
	if !slices.Equal(tools, []string{"fails", "unknown", "works"}) || calls != 4 {
		t.Fatalf("tool labels %v over %d calls, want fails, unknown, works over 4 (tools/list not counted)", tools, calls)
	}
}

// With a store, /metrics carries the database pool's statistics and the ledger's totals by
// kind in micro-USD; the totals are read at most every LedgerEvery, so a scrape right after a
// grant still shows the totals read before it, and with the database gone they are left out
// rather than served stale.
func TestLedgerTotalsAndDatabasePool(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			st, err := store.Open(ctx, storetest.DSN(t, dialect), t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			bill := billing.NewService(billing.DefaultConfig(), service.Deps{Store: st, Log: quiet}, billing.Recording{})
			if err := accounts.New(st).Create(ctx, &accounts.Account{ID: "acct-1", Email: "m@example.com", CreatedAt: time.Now()}, nil, nil); err != nil {
				t.Fatal(err)
			}
			if err := bill.Grant(ctx, "acct-1", 2_500_000, "test"); err != nil {
				t.Fatal(err)
			}
			m := metrics.New(st, nil, quiet)
			kinds := func(f map[string]*dto.MetricFamily) map[string]int64 {
				out := map[string]int64{}
				for _, s := range f["switchboard_ledger_balance_micro_usd"].GetMetric() {
					out[s.GetLabel()[0].GetValue()] = int64(s.GetGauge().GetValue())
				}
				return out
			}
			f := scrape(t, m.Handler())
			want := map[string]int64{"user_available": 2_500_000, "user_reserved": 0, "platform_fees": 0, "platform_infra": 0, "platform_gas": 0}
			if got := kinds(f); !maps.Equal(got, want) {
				t.Fatalf("ledger totals %v, want %v", got, want)
			}
			if n := series(t, f, "go_sql_max_open_connections", map[string]string{"db_name": "switchboard"}).GetGauge().GetValue(); n < 1 && dialect == "postgres" {
				t.Fatalf("PostgreSQL pool max open connections: %v", n)
			}

			if err := bill.Grant(ctx, "acct-1", 1_000_000, "test"); err != nil {
				t.Fatal(err)
			}
			if got := kinds(scrape(t, m.Handler()))["user_available"]; got != 2_500_000 {
				t.Fatalf("a scrape within LedgerEvery read the ledger again: %d, want the cached 2500000", got)
			}

			// A fresh collector reads the new totals; with the database closed it serves none.
			fresh := metrics.New(st, nil, quiet)
			if got := kinds(scrape(t, fresh.Handler()))["user_available"]; got != 3_500_000 {
				t.Fatalf("after a second grant: %d, want 3500000", got)
			}
			gone := metrics.New(st, nil, quiet)
			st.Close()
			if f := scrape(t, gone.Handler()); len(f["switchboard_ledger_balance_micro_usd"].GetMetric()) != 0 {
				t.Fatalf("ledger totals served with the database closed: %v", f["switchboard_ledger_balance_micro_usd"].GetMetric())
			}
		})
	}
}

// With the shared rate limiter's Redis connection, its pool's statistics are served.
func TestRedisPoolStatistics(t *testing.T) {
	srv := redistest.Start(t)
	rdb, err := ratelimit.Open(context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	for range 3 {
		if err := rdb.Ping(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
	}
	f := scrape(t, metrics.New(nil, rdb, quiet).Handler())
	if n := series(t, f, "switchboard_redis_pool_connections", nil).GetGauge().GetValue(); n < 1 {
		t.Fatalf("Redis pool connections: %v, want at least the one the pings used", n)
	}
	if n := series(t, f, "switchboard_redis_pool_hits_total", nil).GetCounter().GetValue(); n < 1 {
		t.Fatalf("Redis pool hits: %v, want the pings after the first to reuse its connection", n)
	}
	for _, name := range []string{"switchboard_redis_pool_misses_total", "switchboard_redis_pool_timeouts_total", "switchboard_redis_pool_idle_connections"} {
		if f[name] == nil {
			t.Errorf("no %s", name)
		}
	}
}

// The operator's handler serves /metrics (GET only) and pprof, and nothing else.
func TestOperatorHandlerRoutes(t *testing.T) {
	h := metrics.New(nil, nil, quiet).Handler()
	for _, c := range []struct {
		method, path string
		want         int
	}{
		{"GET", "/metrics", 200},
		{"POST", "/metrics", 405},
		{"GET", "/debug/pprof/", 200},
		{"GET", "/debug/pprof/cmdline", 200},
		{"GET", "/debug/pprof/goroutine?debug=1", 200},
		{"GET", "/", 404},
		{"GET", "/v1/account", 404},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, nil))
		if rec.Code != c.want {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, rec.Code, c.want)
		}
	}
}

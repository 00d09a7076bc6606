// Package metrics is Switchboard's Prometheus instrumentation: a registry of its own per
// service (no global state, so several apps in one test process do not collide), the series
// the doors and the dispatcher feed, and the handler of the operator's separate listener
// (/metrics and /debug/pprof/), which must never be mounted on the public mux.
package metrics

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/reports"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/dispatch"
)

const namespace = "switchboard"

// Seconds buckets: partner calls and HTTP requests run up to a partner's timeout (tens of
// seconds); Switchboard's own overhead is expected in milliseconds.
var (
	requestBuckets  = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
	overheadBuckets = prometheus.ExponentialBuckets(.0005, 2, 14) // 0.5 ms .. 4 s
)

// LedgerEvery bounds how often the ledger totals are read: at most once per this interval,
// however often (and by however many scrapers) /metrics is scraped.
const LedgerEvery = 30 * time.Second

// Metrics holds the service's series.
type Metrics struct {
	reg      *prometheus.Registry
	http     *prometheus.HistogramVec
	tools    *prometheus.HistogramVec
	partner  prometheus.Histogram
	overhead prometheus.Histogram
	outcomes *prometheus.CounterVec
}

// New registers the series, the Go runtime and process collectors, with st the database pool
// statistics and the ledger totals, and with rdb (the shared rate limiter's connection) the
// Redis pool statistics. st and rdb may be nil.
func New(st *store.Store, rdb *redis.Client, log *slog.Logger) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		http: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "http_request_duration_seconds",
			Help:    "HTTP requests by route (a fixed set: /mcp, /v1/<resource>, portal, the documents, other) and status class; _count counts them.",
			Buckets: requestBuckets}, []string{"route", "status"}),
		tools: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "mcp_tool_call_duration_seconds",
			Help:    "MCP tools/call by tool and result (ok, error: an isError result or a protocol error); _count counts them.",
			Buckets: requestBuckets}, []string{"tool", "result"}),
		partner: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: namespace, Name: "invoke_partner_duration_seconds",
			Help: "Time invocations spent waiting for the partner, every try included.", Buckets: requestBuckets}),
		overhead: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: namespace, Name: "invoke_overhead_duration_seconds",
			Help: "Switchboard's own time in a dispatched invocation (reserving, checking, settling): total minus partner time.", Buckets: overheadBuckets}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "invoke_outcomes_total",
			Help: "Dispatched invocations by how the partner call ended (OK, PARTNER_FAILURE, TIMEOUT, NO_ANSWER, SERVER_ERROR, BAD_RESPONSE, REFUSED, BLOCKED, CANCELLED)."},
			[]string{"outcome"}),
	}
	m.reg.MustRegister(m.http, m.tools, m.partner, m.overhead, m.outcomes,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if st != nil {
		m.reg.MustRegister(collectors.NewDBStatsCollector(st.DB().DB, namespace), &ledger{st: reports.New(st), log: log,
			desc: prometheus.NewDesc(namespace+"_ledger_balance_micro_usd",
				"Money the ledger holds by kind, in micro-USD: users' available and reserved credit, the platform's fee, infrastructure and gas books. Read at most every "+LedgerEvery.String()+"; the same on every replica.",
				[]string{"kind"}, nil)})
	}
	if rdb != nil {
		m.watchRedis(rdb)
	}
	return m
}

// Handler serves /metrics and the pprof handlers, for the operator's listener only.
func (m *Metrics) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg, ErrorHandling: promhttp.ContinueOnError}))
	mux.HandleFunc("/debug/pprof/", pprof.Index) // serves the named profiles (heap, goroutine, ...) too
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// ObserveHTTP records one HTTP request; route must come from a fixed set (never a raw path).
func (m *Metrics) ObserveHTTP(route string, status int, elapsed time.Duration) {
	m.http.WithLabelValues(route, strconv.Itoa(status/100)+"xx").Observe(elapsed.Seconds())
}

// MCPMiddleware times tools/call by tool; names outside toolNames (a caller's typo) count as
// "unknown", so a client cannot mint series.
func (m *Metrics) MCPMiddleware(toolNames []string) mcp.Middleware {
	known := make(map[string]bool, len(toolNames))
	for _, n := range toolNames {
		known[n] = true
	}
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/call" {
				return next(ctx, method, req)
			}
			tool := "unknown"
			if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && known[p.Name] {
				tool = p.Name
			}
			start := time.Now()
			res, err := next(ctx, method, req)
			result := "ok"
			if r, ok := res.(*mcp.CallToolResult); err != nil || !ok || r.IsError {
				result = "error"
			}
			m.tools.WithLabelValues(tool, result).Observe(time.Since(start).Seconds())
			return res, err
		}
	}
}

// ObserveInvoke records a dispatched invocation (dispatch.Config.Observe). The handle is not a
// label: partners are unbounded.
func (m *Metrics) ObserveInvoke(o dispatch.Observation) {
	m.outcomes.WithLabelValues(o.Outcome).Inc()
	m.partner.Observe(o.Partner.Seconds())
	m.overhead.Observe(max(o.Total-o.Partner, 0).Seconds())
}

// watchRedis exports the shared rate limiter's connection pool.
func (m *Metrics) watchRedis(rdb *redis.Client) {
	stat := func(f func(*redis.PoolStats) uint32) func() float64 {
		return func() float64 { return float64(f(rdb.PoolStats())) }
	}
	opts := func(name, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: namespace, Subsystem: "redis_pool", Name: name, Help: help}
	}
	m.reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts(opts("hits_total", "Times a free connection was found in the pool.")), stat(func(s *redis.PoolStats) uint32 { return s.Hits })),
		prometheus.NewCounterFunc(prometheus.CounterOpts(opts("misses_total", "Times no free connection was in the pool.")), stat(func(s *redis.PoolStats) uint32 { return s.Misses })),
		prometheus.NewCounterFunc(prometheus.CounterOpts(opts("timeouts_total", "Times waiting for a connection timed out.")), stat(func(s *redis.PoolStats) uint32 { return s.Timeouts })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts(opts("connections", "Connections in the pool.")), stat(func(s *redis.PoolStats) uint32 { return s.TotalConns })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts(opts("idle_connections", "Idle connections in the pool.")), stat(func(s *redis.PoolStats) uint32 { return s.IdleConns })),
	)
}

// ledger reads the ledger totals at scrape time, caching them for LedgerEvery: the book sums
// grow with the ledger, and scrapers should not be able to load the database.
type ledger struct {
	st   reports.Reports
	log  *slog.Logger
	desc *prometheus.Desc

	mu   sync.Mutex
	at   time.Time
	last map[string]int64
}

func (l *ledger) Describe(ch chan<- *prometheus.Desc) { ch <- l.desc }

func (l *ledger) Collect(ch chan<- prometheus.Metric) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last == nil || time.Since(l.at) >= LedgerEvery {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		t, err := l.st.LedgerTotals(ctx, billing.BookPlatformFees, billing.BookPlatformInfra, billing.BookGas)
		if err != nil {
			// Absent rather than stale: a scrape must not report old money as current.
			l.log.Warn("metrics: read ledger totals", "err", err)
			l.last = nil
			return
		}
		l.last = map[string]int64{"user_available": t.AvailableMicro, "user_reserved": t.ReservedMicro}
		for book, micro := range t.Books {
			l.last[strings.ReplaceAll(book, ":", "_")] = micro // platform:fees -> platform_fees
		}
		l.at = time.Now()
	}
	for kind, micro := range l.last {
		ch <- prometheus.MustNewConstMetric(l.desc, prometheus.GaugeValue, float64(micro), kind)
	}
}

package dispatch_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/store"
)

// The shape of the broker's run against a partner with real latency (issue 36, item 4;
// DESIGN.md, "Performance design"): the partner sits behind a TLS proxy that holds each
// request 20 ms before forwarding it, for every side.
const (
	partnerDelay = 20 * time.Millisecond
	aloneSamples = 300 // sequential calls per side and round, interleaved: 1,200 × ~22 ms ≈ 27 s
	allocSamples = 100 // sequential calls per side and round counted for allocations
	loadCallers  = 256
	loadWarm     = 500 * time.Millisecond // per side and round, before the window counts
	loadFor      = 2 * time.Second        // the counted window, per side and round, at least...
	loadMinCalls = 1000                   // ...and until this many calls have finished in it...
	loadMax      = 10 * time.Second       // ...but no longer (a busy shared machine is slow)
)

// brokerBehindProxy measures the four sides behind the 20 ms proxy in 3 interleaved rounds:
//   - alone, one caller, the sides taking turns call by call: each side's p50, and what it
//     adds to the direct call's p50 (per round, side minus direct); then, side by side, the
//     allocations per call, the process's (client, proxy and partner included, the same for
//     every side: compare the sides);
//   - under 256 callers (each invoke caller its own account): calls per second and p99 over
//     a window of at least 2 s and 1,000 calls after a warm-up, the process's CPU per call
//     and, on PostgreSQL, the CPU of this database's backends per call (on SQLite the
//     database's work is in the process's figure), and the calls that failed;
//   - the goals' three ratios, invoke over the committing relay, as metrics: added p50
//     (≤ 1.2), calls/s (≥ 0.9), p99 under load (≤ 1.25); each the ratio of the two sides'
//     medians over the rounds;
//   - the process's resident memory idle and its peak under the invoke load, an upper bound
//     on Switchboard's (the process holds the callers, the proxy, the partner and the relays).
func brokerBehindProxy(b *testing.B, w *world, dialect string) {
	ctx := context.Background()
	partner := leanPartner(b, w)
	proxyTr := w.partner.Client().Transport.(*http.Transport).Clone()
	proxy := delayProxy(b, partner.URL, partnerDelay, proxyTr)
	w.publish(b, "@bench20", "/free", map[string]any{"toolEndpoint": proxy.URL + "/free", "timeoutMs": 10000})
	body := []byte(`{"message":"@bench20 hello"}`)
	keys := w.callers(b, loadCallers)

	// Every side's partner-facing transport keeps idle connections as Switchboard's does
	// (outbound: 512 per host); every caller's transport keeps one per caller.
	transports := []*http.Transport{proxyTr}
	partnerSide := func() *http.Transport {
		tr := w.partner.Client().Transport.(*http.Transport).Clone()
		tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 1024, 512
		transports = append(transports, tr)
		return tr
	}
	callerSide := func() *http.Client {
		tr := &http.Transport{MaxIdleConns: 2 * loadCallers, MaxIdleConnsPerHost: 2 * loadCallers}
		transports = append(transports, tr)
		return &http.Client{Transport: tr}
	}
	signer := signing.NewSigner(w.env.App.SigningKey)
	directTr := partnerSide()
	relay := relayWith(b, w, proxy.URL+"/free", partnerSide(), nil)
	committing := recordingRelay(b, w, proxy.URL+"/free", partnerSide())
	invokeClient, relayClient, committingClient := callerSide(), callerSide(), callerSide()
	sides := []struct {
		name string
		call func(i int) error
	}{
		{"direct", func(int) error { return directCall(signer, directTr, proxy.URL+"/free") }},
		{"invoke", func(i int) error { return post(invokeClient, w.env.URL+"/v1/invoke", keys[i], body) }},
		{"relay", func(int) error { return post(relayClient, relay.URL, "", body) }},
		{"committing", func(int) error { return post(committingClient, committing.URL, "", body) }},
	}
	const direct, invoke, commit = 0, 1, 3 // and 2, the bare relay

	settle := func() {
		if err := w.env.App.Settled(ctx); err != nil {
			b.Fatal(err)
		}
	}
	for k, s := range sides { // failures name their side
		sides[k].call = func(i int) error {
			if err := s.call(i); err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			return nil
		}
	}
	for i := range keys { // every account's first call opens its budget lease
		if err := sides[invoke].call(i); err != nil {
			b.Fatal(err)
		}
	}
	for _, s := range sides { // warm caches and connections
		load(b, loadCallers, 0, 300*time.Millisecond, 0, s.call, nil)
	}
	// Idle: the work done, the connections closed (Switchboard's own to the partner are
	// its outbound client's: they stay).
	settle()
	for _, tr := range transports {
		tr.CloseIdleConnections()
	}
	time.Sleep(time.Second)
	debug.FreeOSMemory()
	rssIdle := rssKB("VmRSS")
	for _, s := range sides {
		latencies(b, 20, func() error { return s.call(0) })
	}

	n := len(sides)
	p50, allocs, bytesPer := make([][]float64, n), make([][]float64, n), make([][]float64, n)
	perSec, p99, cpu, dbCPU, failed := make([][]float64, n), make([][]float64, n), make([][]float64, n), make([][]float64, n), make([][]float64, n)
	var rssLoad float64
	for r := range brokerRounds {
		b.Logf("round %d, load average %s", r+1, loadavg()) // the machine is shared
		// Alone: the sides take turns call by call, each round of turns starting with the
		// next side, so that the machine's drift and the work one side leaves behind (an
		// invoke's record is written after its answer) fall on every side alike.
		took := make([][]time.Duration, n)
		for j := range aloneSamples {
			for t := range n {
				k := (j + t) % n
				start := time.Now()
				if err := sides[k].call(0); err != nil {
					b.Fatal(err)
				}
				took[k] = append(took[k], time.Since(start))
			}
		}
		for k := range sides {
			slices.Sort(took[k])
			p50[k] = append(p50[k], us(took[k][aloneSamples/2]))
		}
		// Allocations, one side at a time.
		for k, s := range sides {
			before := memStats()
			latencies(b, allocSamples, func() error { return s.call(0) })
			settle() // an invoke's record is written after its answer: count it
			after := memStats()
			allocs[k] = append(allocs[k], float64(after.Mallocs-before.Mallocs)/allocSamples)
			bytesPer[k] = append(bytesPer[k], float64(after.TotalAlloc-before.TotalAlloc)/allocSamples)
		}
		// Under load.
		for k, s := range sides {
			var peak atomic.Int64
			watch := func(stop <-chan struct{}) {
				for {
					peak.Store(max(peak.Load(), int64(rssKB("VmRSS"))))
					select {
					case <-stop:
						return
					case <-time.After(50 * time.Millisecond):
					}
				}
			}
			if k != invoke {
				watch = nil
			}
			// CPU is read as the window opens and closes: the records an invoke writes
			// after its answer fall into the window for the calls before it.
			var used, dbUsed time.Duration
			var dbStart map[int]int64
			l := load(b, loadCallers, loadWarm, loadFor, loadMinCalls, s.call, func(opening bool) {
				if opening {
					used, dbStart = -processCPU(), backendCPU(ctx, w.env.App.Store)
					return
				}
				used, dbUsed = used+processCPU(), backendCPUSince(ctx, w.env.App.Store, dbStart)
			}, watch)
			settle()
			perSec[k] = append(perSec[k], l.perSec)
			p99[k] = append(p99[k], float64(l.p99)/float64(time.Millisecond))
			cpu[k] = append(cpu[k], us(used)/float64(l.calls+l.failed))
			dbCPU[k] = append(dbCPU[k], us(dbUsed)/float64(l.calls+l.failed))
			failed[k] = append(failed[k], float64(l.failed))
			if l.first != nil {
				msg := l.first.Error() // short: the benchmark's log is cut past a few kilobytes
				b.Logf("%s, round %d: %d calls failed under load, the first: %s", s.name, len(failed[k]), l.failed, msg[:min(len(msg), 120)])
			}
			if k == invoke {
				rssLoad = max(rssLoad, float64(peak.Load()))
			}
		}
	}

	added := func(k int) []float64 {
		out := make([]float64, brokerRounds)
		for r := range out {
			out[r] = p50[k][r] - p50[direct][r]
		}
		return out
	}
	// A ratio of medians, not a median of ratios: one round's added p50 near zero (noise on
	// a busy machine) would make its ratio meaningless.
	ratio := func(a, c []float64) float64 { return median(a) / median(c) }
	for k, s := range sides {
		b.Logf("%-10s alone p50 µs %5.0f (added %4.0f), allocs/call %5.0f, KB/call %5.1f; at %d callers calls/s %5.0f (failed %.0f), p99 ms %5.1f, CPU µs/call: process %4.0f, database backends %4.0f",
			s.name, p50[k], added(k), allocs[k], div(bytesPer[k], 1024), loadCallers, perSec[k], failed[k], p99[k], cpu[k], dbCPU[k])
	}
	b.Logf("%s: process RSS idle %.1f MB, peak under the invoke load %.1f MB (uptime: %s)", dialect, rssIdle/1024, rssLoad/1024, loadavg())
	metrics := map[string]float64{
		"added-p50÷committing": ratio(added(invoke), added(commit)),
		"calls/s÷committing":   ratio(perSec[invoke], perSec[commit]),
		"p99÷committing":       ratio(p99[invoke], p99[commit]),
		"rss-idle-MB":          rssIdle / 1024,
		"rss-load-MB":          rssLoad / 1024,
	}
	for k, s := range sides {
		metrics[s.name+"-p50-µs"] = median(p50[k])
		if k != direct {
			metrics[s.name+"-added-p50-µs"] = median(added(k))
		}
		metrics[s.name+"/s"] = median(perSec[k])
		metrics[s.name+"-p99-ms"] = median(p99[k])
		metrics[s.name+"-failed"] = median(failed[k])
		metrics[s.name+"-cpu-µs/call"] = median(cpu[k])
		if dialect == "postgres" && (k == invoke || k == commit) {
			metrics[s.name+"-db-cpu-µs/call"] = median(dbCPU[k])
		}
		metrics[s.name+"-allocs/call"] = median(allocs[k])
		metrics[s.name+"-B/call"] = median(bytesPer[k])
	}
	report(b, metrics)
}

// leanPartner is the world's /free partner without the records partnertest keeps of every
// request, so that the process's memory under load is the broker's and not a log of hits.
func leanPartner(b *testing.B, w *world) *httptest.Server {
	verifier := signing.NewVerifierFromKey(w.env.App.SigningKey.Public().(ed25519.PublicKey))
	s := httptest.NewUnstartedServer(signing.Middleware(verifier, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		io.WriteString(rw, `{"success":true,"result":{"answer":"free"}}`)
	})))
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.StartTLS() // httptest's certificate, which the world's partner CA file already trusts
	b.Cleanup(s.Close)
	return s
}

// delayProxy is a TLS reverse proxy in front of target that holds each request for delay
// before forwarding it: a partner that takes tens of milliseconds, as real ones do, one more
// real TCP and TLS hop for every side measured, and no waiting inside the code measured.
// It forwards through tr, which trusts the target's certificate.
func delayProxy(b *testing.B, target string, delay time.Duration, tr *http.Transport) *httptest.Server {
	u, err := url.Parse(target)
	if err != nil {
		b.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 4*loadCallers, 4*loadCallers
	rp.Transport = tr
	rp.ErrorLog = log.New(io.Discard, "", 0)
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		rp.ServeHTTP(rw, r)
	}))
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.StartTLS()
	b.Cleanup(s.Close)
	return s
}

// loaded is what one load window measured.
type loaded struct {
	calls  int64         // answered 200 inside the window
	failed int64         // answered otherwise inside the window
	perSec float64       // of calls
	p99    time.Duration // of the calls and the failures finished inside the window
	first  error         // the first failure
}

// load runs call from callers goroutines (call(i) in the i-th) until every caller has
// finished a call (its connections are open) and warm has passed, then for d more, longer if
// fewer than minCalls have finished by then (up to loadMax); it counts the calls finished
// in that window and their latencies. A call that fails (Switchboard answers 503 when a
// call's record has not landed within 5 s, as on a starved machine) is counted, not fatal. mark, if any, runs as the counted window opens
// and as it closes (true, then false); watch, if any, runs beside the window until it closes.
func load(b *testing.B, callers int, warm, d time.Duration, minCalls int64, call func(i int) error, mark func(opening bool), watch ...func(stop <-chan struct{})) loaded {
	var from, end, finished, failed atomic.Int64 // from and end: unix ns, 0 until set
	var stopped atomic.Bool
	var first, wg sync.WaitGroup
	var firstErr atomic.Pointer[error]
	took := make([][]time.Duration, callers)
	first.Add(callers)
	for i := range callers {
		wg.Go(func() {
			once := sync.OnceFunc(first.Done)
			defer once() // a caller that failed does not hold the window back
			for !stopped.Load() {
				start := time.Now()
				err := call(i)
				once()
				finish := time.Now()
				if err != nil {
					firstErr.CompareAndSwap(nil, &err)
				}
				if f := from.Load(); f != 0 && finish.UnixNano() >= f && (end.Load() == 0 || finish.UnixNano() < end.Load()) {
					took[i] = append(took[i], finish.Sub(start))
					if err != nil {
						failed.Add(1)
					} else {
						finished.Add(1)
					}
				}
			}
		})
	}
	time.Sleep(warm)
	first.Wait()
	if mark != nil {
		mark(true)
	}
	from.Store(time.Now().UnixNano())
	stop := make(chan struct{})
	var watching sync.WaitGroup
	for _, f := range watch {
		if f != nil {
			watching.Go(func() { f(stop) })
		}
	}
	time.Sleep(d)
	for deadline := time.Now().Add(loadMax - d); finished.Load() < minCalls && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	end.Store(time.Now().UnixNano())
	stopped.Store(true)
	if mark != nil {
		mark(false)
	}
	elapsed := time.Duration(end.Load() - from.Load())
	close(stop)
	watching.Wait()
	wg.Wait()
	var all []time.Duration
	for i := range callers {
		all = append(all, took[i]...)
	}
	slices.Sort(all)
	l := loaded{calls: finished.Load(), failed: failed.Load(), perSec: float64(finished.Load()) / elapsed.Seconds()}
	if e := firstErr.Load(); e != nil {
		l.first = *e
	}
	if len(all) > 0 {
		l.p99 = all[len(all)*99/100]
	}
	return l
}

func memStats() runtime.MemStats {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m
}

// processCPU is the CPU time (user and system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// backendCPU is the CPU ticks used so far by each PostgreSQL backend connected to the store's
// database, by process id, read from /proc (the server is on this machine); nil on SQLite.
// Only this database's backends count: the server is shared with other databases' tests.
func backendCPU(ctx context.Context, st *store.Store) map[int]int64 {
	if !st.Postgres() {
		return nil
	}
	var pids []int
	if err := st.DB().NewRaw("SELECT pid FROM pg_stat_activity WHERE datname = current_database()").Scan(ctx, &pids); err != nil {
		return nil
	}
	out := map[int]int64{}
	for _, pid := range pids {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: utime and stime are the 12th and 13th fields after comm.
		fields := bytes.Fields(raw[bytes.LastIndexByte(raw, ')')+1:])
		if len(fields) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(string(fields[11]), 10, 64)
		s, _ := strconv.ParseInt(string(fields[12]), 10, 64)
		out[pid] = u + s
	}
	return out
}

// backendCPUSince is the CPU the database's backends used since start (backendCPU).
func backendCPUSince(ctx context.Context, st *store.Store, start map[int]int64) time.Duration {
	var ticks int64
	for pid, t := range backendCPU(ctx, st) {
		ticks += t - start[pid]
	}
	return time.Duration(ticks) * (time.Second / 100) // USER_HZ is 100 on Linux
}

// rssKB reads a size line of /proc/self/status, in kB.
func rssKB(field string) float64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range bytes.SplitSeq(raw, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte(field+":")); ok {
			f := bytes.Fields(v)
			if len(f) > 0 {
				n, _ := strconv.ParseFloat(string(f[0]), 64)
				return n
			}
		}
	}
	return 0
}

func loadavg() string {
	raw, _ := os.ReadFile("/proc/loadavg")
	return string(bytes.TrimSpace(raw))
}

func div(xs []float64, by float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = x / by
	}
	return out
}

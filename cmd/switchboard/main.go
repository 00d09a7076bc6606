// Command switchboard runs the Switchboard service.
//
//	switchboard serve     HTTP: MCP at /mcp, REST at /v1, llms.txt, public key, OpenAPI
//	switchboard stdio     MCP over stdin/stdout for desktop hosts (key from SWITCHBOARD_API_KEY)
//	switchboard migrate   apply database migrations and exit
//	switchboard admin     operator commands (partner listings)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app"
	"github.com/switchboard-hq/switchboard/mcpserver"
	"github.com/switchboard-hq/switchboard/rest"
	"github.com/switchboard-hq/switchboard/store"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "switchboard:", err)
		}
		os.Exit(2)
	}
}

const usage = `usage: switchboard <command> [flags]

commands:
  serve     run the HTTP service (MCP at /mcp, REST at /v1)
  stdio     serve MCP over stdin/stdout with SWITCHBOARD_API_KEY (for desktop MCP hosts)
  migrate   apply database migrations and exit
  admin     operator commands: accounts and keys, production listings, credit ('switchboard admin help')
  tokens    'switchboard tokens refresh': pull the public token lists (CoinGecko, Jupiter verified) into the database
  partner   'switchboard partner check URL': run the verification battery against your endpoint before publishing
  verify-receipt -base-url URL | -key-file PEM < receipt.json
            check a signed receipt (an invoke answer, or {receipt, signature}); exits non-zero if it does not verify

Run 'switchboard <command> --help' for the settings; each is also a SWITCHBOARD_* variable.
`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return errors.New("no command")
		}
		return nil
	}
	cfg, err := app.FromEnv(os.Getenv)
	if err != nil {
		return err
	}
	cmd := args[0]
	if cmd == "admin" {
		return runAdmin(ctx, cfg, args[1:], os.Stdin, stdout, stderr)
	}
	if cmd == "tokens" {
		return runTokens(ctx, cfg, args[1:], stdout, stderr)
	}
	if cmd == "partner" {
		return runPartner(ctx, args[1:], stdout, stderr)
	}
	if cmd == "verify-receipt" {
		return runVerifyReceipt(ctx, args[1:], os.Stdin, stdout, stderr)
	}
	fs := flag.NewFlagSet("switchboard "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	switch cmd {
	case "serve", "stdio", "migrate":
		cfg.RegisterFlags(fs, true)
	default:
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("unknown command %q", cmd)
	}
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	// Logs go to stderr always: in stdio mode stdout carries the protocol.
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level(cfg.LogLevel)}))
	if note := cfg.DataDirNote(); note != "" {
		log.Warn(note, "data_dir", cfg.DataDir)
	}
	switch cmd {
	case "migrate":
		st, err := store.Open(ctx, cfg.DatabaseURL, cfg.DataDir)
		if err != nil {
			return err
		}
		defer st.Close()
		applied, err := st.Migrate(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "applied %d migration(s)%s\n", len(applied), list(applied))
		return nil
	case "stdio":
		if err := cfg.CheckLocalEndpoints(); err != nil {
			return err
		}
		if cfg.APIKey == "" {
			log.Warn("SWITCHBOARD_API_KEY is not set: only the onboarding tools will work")
		}
		if db, fresh := newDatabase(cfg); fresh {
			log.Warn("switchboard stdio: this data directory holds no database yet, so stdio starts an empty one: it has no accounts, and any SWITCHBOARD_API_KEY is unknown to it. "+
				"Point SWITCHBOARD_DATA_DIR at the directory `switchboard serve` logs as data_dir (or SWITCHBOARD_DATABASE_URL at serve's database), with the same SWITCHBOARD_ENV",
				"data_dir", cfg.DataDir, "database", db)
		}
		a, err := app.Build(ctx, cfg, app.Deps{Log: log})
		if err != nil {
			return err
		}
		defer a.Close()
		return mcpserver.ServeStdio(ctx, a.StdioServer(), os.Stdin, stdout)
	default:
		return serve(ctx, cfg, log)
	}
}

// newDatabase reports whether the SQLite database this configuration opens does not exist yet
// (PostgreSQL: never), and its path.
func newDatabase(cfg app.Config) (string, bool) {
	if strings.HasPrefix(cfg.DatabaseURL, "postgres://") || strings.HasPrefix(cfg.DatabaseURL, "postgresql://") ||
		strings.HasPrefix(cfg.DatabaseURL, "file:") || strings.Contains(cfg.DatabaseURL, "?") {
		return "", false
	}
	path := strings.TrimPrefix(cfg.DatabaseURL, "sqlite://")
	if path == "" {
		path = filepath.Join(cfg.DataDir, "switchboard.db")
	}
	_, err := os.Stat(path)
	return path, errors.Is(err, fs.ErrNotExist)
}

func serve(ctx context.Context, cfg app.Config, log *slog.Logger) error {
	if err := cfg.CheckServe(); err != nil {
		return err
	}
	sweepEvery, err := time.ParseDuration(cfg.SweepInterval)
	if err != nil || sweepEvery < 100*time.Millisecond {
		return fmt.Errorf("SWITCHBOARD_SWEEP_INTERVAL=%q: want a Go duration of at least 100ms, e.g. 30s", cfg.SweepInterval)
	}
	drainDelay, err := time.ParseDuration(cfg.DrainDelay)
	if err != nil || drainDelay < 0 {
		return fmt.Errorf("SWITCHBOARD_DRAIN_DELAY=%q: want a Go duration (0 for none), e.g. 3s", cfg.DrainDelay)
	}
	shutdownTimeout, err := time.ParseDuration(cfg.ShutdownTimeout)
	if err != nil || shutdownTimeout < time.Second {
		return fmt.Errorf("SWITCHBOARD_SHUTDOWN_TIMEOUT=%q: want a Go duration of at least 1s, e.g. 250s", cfg.ShutdownTimeout)
	}
	stopTracing, err := app.StartTracing(ctx, os.Getenv, log)
	if err != nil {
		return err
	}
	defer func() {
		flush, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := stopTracing(flush); err != nil {
			log.Warn("flush traces", "err", err)
		}
	}()
	a, err := app.Build(ctx, cfg, app.Deps{Log: log})
	if err != nil {
		return err
	}
	defer a.Close()
	// What building left behind (every tool's schema compiled, templates parsed, migrations
	// read) is garbage from here on: return it to the OS now rather than when the scavenger
	// gets to it, so an idle replica holds only what it uses.
	debug.FreeOSMemory()
	srv := httpServer(cfg.Addr, a.Handler())
	l, err := a.Listen(ctx, cfg.Addr)
	if err != nil {
		return err
	}
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(l) }()
	// The operator's listener (metrics, pprof) is its own server so the public one never serves it.
	var metricsSrv *http.Server
	if cfg.MetricsAddr != "" {
		if host, _, _ := net.SplitHostPort(cfg.MetricsAddr); host == "" || net.ParseIP(host).IsUnspecified() {
			log.Warn("SWITCHBOARD_METRICS_ADDR listens on every interface: /debug/pprof/ exposes the process's internals; bind it to a private address", "metrics_addr", cfg.MetricsAddr)
		}
		metricsSrv = httpServer(cfg.MetricsAddr, a.Metrics())
		go func() { errc <- fmt.Errorf("metrics listener: %w", metricsSrv.ListenAndServe()) }()
	}
	go a.RunSweeper(ctx, sweepEvery) // concludes dispatches, reservations and payments a crash abandoned
	go a.RunKeyRefresh(ctx)          // follows rotations
	if every, err := time.ParseDuration(cfg.ReprobeInterval); err != nil || every < 0 {
		return fmt.Errorf("SWITCHBOARD_REPROBE_INTERVAL=%q: want a Go duration (0 disables), e.g. 1h", cfg.ReprobeInterval)
	} else if every > 0 {
		go a.RunReprobe(ctx, every)
	}
	if a.PaysOut() {
		every, err := time.ParseDuration(cfg.FlatFee.PayoutInterval)
		if err != nil || every < 0 {
			return fmt.Errorf("SWITCHBOARD_PAYOUT_INTERVAL=%q: want a Go duration (0 disables), e.g. 24h", cfg.FlatFee.PayoutInterval)
		}
		if every > 0 {
			go a.RunPayouts(ctx, every)
		}
	}
	log.Info("switchboard serving", "addr", cfg.Addr, "data_dir", cfg.DataDir, "metrics_addr", cfg.MetricsAddr, "base_url", cfg.PublicBaseURL(), "env", cfg.Env, "postgres", a.Postgres())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	return drain(a, srv, metricsSrv, drainDelay, shutdownTimeout, log)
}

// drain is serve's SIGTERM path: readiness turns false at once; the listener stays open for
// the drain delay (answers say Connection: close) so a proxy's health check takes this
// replica out before it stops accepting; then calls in flight finish, up to their timeouts;
// then the tasks the replica runs, within the same timeout (the rest left to the sweeper);
// then the budget leases are returned and the batch writer commits what it holds. It returns
// nil, and serve exits 0, only when every answered call is recorded.
func drain(a *app.App, srv, metricsSrv *http.Server, delay, timeout time.Duration, log *slog.Logger) error {
	start := time.Now()
	a.Drain()
	log.Info("draining: /readyz answers 503", "drain_delay", delay.String(), "shutdown_timeout", timeout.String())
	time.Sleep(delay)
	shutdown, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	// Shutdown stops accepting and waits for every request in flight; the metrics listener
	// stays up meanwhile.
	var err error
	if serr := srv.Shutdown(shutdown); serr != nil {
		err = fmt.Errorf("calls still in flight after SWITCHBOARD_SHUTDOWN_TIMEOUT=%s: %w", timeout, serr)
	}
	// Then the tasks this replica runs (long calls answered with a task), within what is left
	// of the timeout. One still running then is left to the sweeper (any replica): its hold
	// and record are durable, and it is concluded, refunded, once its call's deadline passes.
	if left := a.WaitTasks(shutdown); left > 0 {
		log.Warn("draining: tasks still running at SWITCHBOARD_SHUTDOWN_TIMEOUT are left to the sweeper (refunded once their deadline passes)", "tasks", left)
	} else {
		log.Info("draining: this replica's tasks concluded")
	}
	flush, cancelFlush := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelFlush()
	if serr := a.Settled(flush); serr != nil {
		err = errors.Join(err, fmt.Errorf("flush the batch writer: %w", serr))
	}
	if metricsSrv != nil {
		err = errors.Join(err, metricsSrv.Shutdown(shutdown))
	}
	if err != nil {
		log.Error("drained with errors", "elapsed", time.Since(start).String(), "err", err)
		return err
	}
	log.Info("drained: calls finished, budget leases returned, batch writer flushed", "elapsed", time.Since(start).String())
	return nil
}

// httpServer is a server with the service's timeouts. The public handler bounds reading a
// body tighter, per request (SWITCHBOARD_BODY_READ_TIMEOUT).
func httpServer(addr string, h http.Handler) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      5 * time.Minute, // partner calls may take up to their timeoutMs; pprof profiles run for seconds
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    rest.MaxHeaderBytes,
	}
}

func level(s string) slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return slog.LevelInfo
	}
	return l
}

func list(xs []string) string {
	if len(xs) == 0 {
		return ""
	}
	return ": " + strings.Join(xs, ", ")
}

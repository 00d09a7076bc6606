// Command load measures Switchboard from outside (issue 47): `switchboard serve` as it ships,
// on a PostgreSQL database of the run's own, called over POST /v1/invoke by many callers from
// one address, beside a relay process that signs, forwards to the same partner and commits
// one row per call (the broker benchmark's committing relay), the partner behind a 20 ms
// hold. Everything runs on loopback; every process it starts ends with it.
//
//	go run ./scripts/load -db "$TEST_DATABASE_URL"
//
// The switches (-door, -idem, -keepalive, -target, -accounts, -log-level) change one thing
// each, to find where the difference from the in-process benchmark goes
// (docs/performance.md, "From outside (issue 47)").
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// options are a run's settings, the flags.
type options struct {
	db        string
	callers   int
	accounts  int
	rounds    int
	loadFor   time.Duration
	alone     int
	delay     time.Duration
	door      string // rest | mcp
	idem      bool
	keepAlive bool
	target    string // serve | inproc
	logLevel  string
	bin       string
	json      bool
	timeout   time.Duration
}

func main() {
	if len(os.Args) > 2 && os.Args[1] == "-role" {
		if err := runRole(os.Args[2], os.Args[3:]); err != nil {
			fmt.Fprintln(os.Stderr, "load:", os.Args[2]+":", err)
			os.Exit(1)
		}
		return
	}
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	res, err := run(ctx, o, os.Stderr)
	cancel()
	stop()
	if res != nil {
		if o.json {
			json.NewEncoder(os.Stdout).Encode(res)
		} else {
			res.print(os.Stdout)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.StringVar(&o.db, "db", os.Getenv("TEST_DATABASE_URL"), "PostgreSQL server (a loopback postgres:// URL); the run creates and drops a database of its own on it")
	fs.IntVar(&o.callers, "callers", 256, "concurrent callers under load")
	fs.IntVar(&o.accounts, "accounts", 16, "accounts the callers are spread over (caller i uses account i mod accounts)")
	fs.IntVar(&o.rounds, "rounds", 3, "interleaved rounds (the figures are their medians)")
	fs.DurationVar(&o.loadFor, "for", 15*time.Second, "each side's load window per round")
	fs.IntVar(&o.alone, "alone", 300, "one-caller calls per side and round (the p50s)")
	fs.DurationVar(&o.delay, "delay", 20*time.Millisecond, "how long the proxy holds each partner call")
	fs.StringVar(&o.door, "door", "rest", "how invoke is called: rest (POST /v1/invoke) or mcp (POST /mcp tools/call, stateless)")
	fs.BoolVar(&o.idem, "idem", false, "send a fresh Idempotency-Key (MCP: idempotencyKey) with every invoke")
	fs.BoolVar(&o.keepAlive, "keepalive", true, "callers keep their connections (false: a new connection for every call, on both sides)")
	fs.StringVar(&o.target, "target", "serve", "serve (the built binary, its own process) or inproc (the same app built in the harness's process)")
	fs.StringVar(&o.logLevel, "log-level", "", "SWITCHBOARD_LOG_LEVEL for the service (default: as it ships, info)")
	fs.StringVar(&o.bin, "bin", "", "a switchboard binary to run (default: go build ./cmd/switchboard as it ships)")
	fs.BoolVar(&o.json, "json", false, "print the result as JSON")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Minute, "the whole run's deadline")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case o.db == "":
		return o, fmt.Errorf("-db (or TEST_DATABASE_URL) names the PostgreSQL server")
	case o.door != "rest" && o.door != "mcp":
		return o, fmt.Errorf("-door %q: rest or mcp", o.door)
	case o.target != "serve" && o.target != "inproc":
		return o, fmt.Errorf("-target %q: serve or inproc", o.target)
	case o.callers < 1 || o.accounts < 1 || o.rounds < 1 || o.alone < 1 || o.loadFor <= 0:
		return o, fmt.Errorf("-callers, -accounts, -rounds, -alone and -for must be positive")
	}
	return o, nil
}

// execCommand is exec.CommandContext: a command the harness waits for (go build, go env).
func execCommand(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, name, args...)
}

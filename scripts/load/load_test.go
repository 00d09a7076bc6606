package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
)

// TestMain lets the test binary serve the harness's roles: the harness starts its partner
// and its relay by running its own executable with -role, which here is this binary.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "-role" {
		if err := runRole(os.Args[2], os.Args[3:]); err != nil {
			os.Stderr.WriteString("load: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestTheHarnessRunsEndToEnd runs the harness small (4 callers over 2 accounts, 2 s windows,
// one round), serve built as it ships, so that it cannot rot: both sides answered under load
// and alone, nothing failed, every answered call left exactly one row (Switchboard's
// invocations of the intent, the relay's bench_calls), the serving processes used CPU, and
// the run's database is gone afterwards.
func TestTheHarnessRunsEndToEnd(t *testing.T) {
	base := os.Getenv("TEST_DATABASE_URL")
	if base == "" {
		t.Skip("the harness runs on PostgreSQL: set TEST_DATABASE_URL (CI does)")
	}
	o, err := parseFlags([]string{"-db", base, "-callers", "4", "-accounts", "2", "-for", "2s", "-rounds", "1", "-alone", "10"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	var log strings.Builder
	res, err := run(ctx, o, &log)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	c := res.Counts
	t.Logf("invoke %d, relay %d answered; rows %d and %d; ratios %+v", c.InvokeOK, c.RelayOK, c.InvocationRows, c.RelayRows, res.Ratios)
	if c.InvokeFailed != 0 || c.RelayFailed != 0 {
		t.Errorf("calls failed: invoke %d, relay %d (%s / %s)", c.InvokeFailed, c.RelayFailed, res.Sides[invoke].First, res.Sides[relay].First)
	}
	if c.InvocationRows != c.InvokeOK || c.RelayRows != c.RelayOK {
		t.Errorf("rows do not match the calls answered: invocations %d for %d invokes, bench_calls %d for %d relayed calls",
			c.InvocationRows, c.InvokeOK, c.RelayRows, c.RelayOK)
	}
	for _, k := range []int{invoke, relay} {
		s := res.Sides[k]
		if len(s.PerSec) != 1 || s.PerSec[0] <= 0 || len(s.P50us) != 1 || s.P50us[0] <= 0 {
			t.Errorf("%s: no figures: calls/s %v, p50 %v", s.Name, s.PerSec, s.P50us)
		}
	}
	if res.Sides[invoke].CPU["switchboard"][0] <= 0 || res.Sides[relay].CPU["relay"][0] <= 0 {
		t.Errorf("no CPU measured for the serving processes: %v / %v", res.Sides[invoke].CPU, res.Sides[relay].CPU)
	}
	if res.Ratios.PerSec <= 0 || res.Ratios.P99 <= 0 {
		t.Errorf("ratios not computed: %+v", res.Ratios)
	}
	assertDropped(t, base, log.String())
}

// assertDropped checks that the database the run named in its log no longer exists.
func assertDropped(t *testing.T, base, log string) {
	t.Helper()
	_, rest, ok := strings.Cut(log, "load: database ")
	name, _, _ := strings.Cut(rest, ",")
	if !ok || !strings.HasPrefix(name, "sbload_") {
		t.Fatalf("the run did not name its database:\n%s", log)
	}
	ctx := context.Background()
	db, err := store.Open(ctx, base, "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.DB().NewRaw("SELECT count(*) FROM pg_database WHERE datname = ?", name).Scan(ctx, &n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("database %s is still there after the run", name)
	}
}

// The harness talks to loopback only: a -db elsewhere is refused before anything connects.
func TestTheHarnessRefusesANonLoopbackDatabase(t *testing.T) {
	for _, dsn := range []string{"postgres://postgres@10.0.0.5:5432/x", "postgres://postgres@db.example.com/x", "mysql://127.0.0.1/x"} {
		if _, err := createDatabase(context.Background(), dsn); err == nil {
			t.Errorf("%s was accepted", dsn)
		}
	}
	for _, host := range []string{"127.0.0.1", "::1", "localhost"} {
		if err := loopbackOnly(host); err != nil {
			t.Errorf("%s: %v", host, err)
		}
	}
}

// A process's CPU is read from /proc/<pid>/stat past its command, which may hold spaces and
// parentheses.
func TestTicksReadsUtimeAndStime(t *testing.T) {
	stat := []byte("4242 (sw (x) y) S 1 2 3 4 5 6 7 8 9 10 150 50 0 0 20 0")
	if got := ticks(stat); got != 2*time.Second {
		t.Errorf("ticks = %v, want 2s (150 + 50 ticks of 10 ms)", got)
	}
	if cpuOf(os.Getpid()) <= 0 {
		t.Error("this process's CPU read as nothing")
	}
}

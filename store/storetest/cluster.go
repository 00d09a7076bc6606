package storetest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"
)

// Cluster is a PostgreSQL server of the test's own (initdb in a temporary directory, a free
// loopback port), for tests that stop and start the database under a running service.
type Cluster struct {
	t       testing.TB
	bin     string
	dir     string
	port    int
	asUser  []string // runuser prefix when the test runs as root (initdb refuses root)
	running bool
}

// StartCluster initialises and starts a private PostgreSQL cluster, stopped when t ends. It
// fails the test (never skips) when the PostgreSQL server binaries are missing.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(bins) == 0 {
		t.Fatal("no PostgreSQL server binaries (/usr/lib/postgresql/*/bin): install the postgresql package")
	}
	sort.Strings(bins)
	c := &Cluster{t: t, bin: filepath.Dir(bins[len(bins)-1])}
	// Not t.TempDir: its parent is private to root, and the server runs as postgres.
	dir, err := os.MkdirTemp("", "switchboard-pg-")
	if err != nil {
		t.Fatal(err)
	}
	c.dir = dir
	t.Cleanup(func() { os.RemoveAll(dir) })
	if u, _ := user.Current(); u != nil && u.Uid == "0" {
		pg, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root needs the postgres user to run initdb: %v", err)
		}
		uid, _ := strconv.Atoi(pg.Uid)
		gid, _ := strconv.Atoi(pg.Gid)
		if err := os.Chown(c.dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		c.asUser = []string{"runuser", "-u", "postgres", "--"}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c.port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	c.run(filepath.Join(c.bin, "initdb"), "-D", c.data(), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
	c.Start()
	t.Cleanup(func() {
		if c.running {
			c.Stop()
		}
	})
	return c
}

func (c *Cluster) data() string { return filepath.Join(c.dir, "data") }

func (c *Cluster) run(name string, args ...string) {
	c.t.Helper()
	argv := append(append([]string{}, c.asUser...), append([]string{name}, args...)...)
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		c.t.Fatalf("%s: %v\n%s", name, err, out)
	}
}

// DSN is the connection string of the cluster's postgres database.
func (c *Cluster) DSN() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
}

// Start starts the server and waits until it accepts connections.
func (c *Cluster) Start() {
	c.t.Helper()
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off", c.port, c.dir)
	c.run(filepath.Join(c.bin, "pg_ctl"), "-D", c.data(), "-o", opts, "-l", filepath.Join(c.dir, "log"), "-w", "-t", "60", "start")
	c.running = true
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", c.port), time.Second)
		if err == nil {
			conn.Close()
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("cluster on port %d did not come up: %v", c.port, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop stops the server at once (fast shutdown: open connections are cut, as in an outage).
func (c *Cluster) Stop() {
	c.t.Helper()
	c.run(filepath.Join(c.bin, "pg_ctl"), "-D", c.data(), "-m", "fast", "-w", "stop")
	c.running = false
}

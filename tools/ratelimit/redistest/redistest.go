// Package redistest starts a private redis-server (Debian's package) for a test, on a free
// loopback port, in memory only, stopped when the test ends.
package redistest

import (
	"fmt"
	"net"
	"os/exec"
	"testing"
	"time"
)

// Server is a running redis-server.
type Server struct {
	URL  string
	port int
	cmd  *exec.Cmd
	t    testing.TB
}

// Start runs redis-server; the test fails when the binary is missing (CI installs it).
func Start(t testing.TB) *Server {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server is not installed (apt-get install redis-server): %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	s := &Server{URL: fmt.Sprintf("redis://127.0.0.1:%d/0", port), port: port, t: t}
	s.Restart()
	t.Cleanup(s.Stop)
	return s
}

// Stop kills the server (its data is gone: it keeps nothing on disk).
func (s *Server) Stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		s.cmd.Process.Kill()
		s.cmd.Wait()
		s.cmd = nil
	}
}

// Restart starts the server again on the same port.
func (s *Server) Restart() {
	s.t.Helper()
	s.cmd = exec.Command("redis-server", "--port", fmt.Sprint(s.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("start redis-server: %v", err)
	}
	for range 100 {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", s.port)); err == nil {
			c.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.t.Fatalf("redis-server did not listen on %d", s.port)
}

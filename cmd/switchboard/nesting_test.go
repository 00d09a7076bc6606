package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// nestingDepths are the depths the hostile bodies nest to: 500,000 levels of arrays is a 1 MB
// body, the most a request may carry.
var nestingDepths = []int{10_000, 100_000, 500_000}

// nestedBody is depth levels of shape around a value, cut to fit the 1 MiB body limit.
func nestedBody(open, close string, depth int) []byte {
	if max := (1 << 20) / (len(open) + len(close)); depth > max {
		depth = max
	}
	return []byte(strings.Repeat(open, depth) + "1" + strings.Repeat(close, depth))
}

// memoryGuard watches a process's resident memory and kills it once it grows past limit kB
// above what it held when the guard started: a regression then ends the server under test,
// not the machine (one deep body once took 22.7 GB). clear_refs resets the peak (VmHWM), so
// peak() is the most held since the last reset.
type memoryGuard struct {
	t      *testing.T
	pid    int
	base   int64
	limit  int64
	stop   chan struct{}
	done   chan struct{}
	killed bool
}

func guardMemory(t *testing.T, pid int, limitKB int64) *memoryGuard {
	g := &memoryGuard{t: t, pid: pid, base: procStatus(t, pid, "VmRSS"), limit: limitKB, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(g.done)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-g.stop:
				return
			case <-tick.C:
				if rss, ok := readKB(pid, "VmRSS"); ok && rss-g.base > g.limit {
					syscall.Kill(pid, syscall.SIGKILL)
					g.killed = true
					return
				}
			}
		}
	}()
	t.Cleanup(g.close)
	return g
}

func (g *memoryGuard) close() {
	select {
	case <-g.stop:
	default:
		close(g.stop)
	}
	<-g.done
}

// resetPeak starts a new peak at the current resident size.
func (g *memoryGuard) resetPeak() {
	g.t.Helper()
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", g.pid), []byte("5"), 0); err != nil {
		g.t.Fatalf("reset the peak RSS: %v", err)
	}
}

// peak is the peak resident size since the last reset, above the size when guarding began.
func (g *memoryGuard) peak() int64 {
	g.t.Helper()
	if g.killed {
		g.t.Fatalf("the server grew past %d MB above idle and was killed", g.limit>>10)
	}
	return procStatus(g.t, g.pid, "VmHWM") - g.base
}

func readKB(pid int, field string) (int64, bool) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			var n int64
			fmt.Sscanf(strings.TrimSpace(rest), "%d", &n)
			return n, true
		}
	}
	return 0, false
}

// TestNestingCostsBoundedMemory sends serve, built as it ships, 1 MiB-bounded bodies nested
// 10,000 to 500,000 deep, four at a time, at every public door that parses JSON (REST signup
// and verify, MCP, OAuth registration), and stdio the same as lines; then 1 MiB bodies of
// half a million small items. Every answer is a 4xx (or
// a JSON-RPC parse error) naming the limit within a second, and the process's peak RSS stays
// under 64 MB above idle. A guard kills the server past 1 GB above idle. Before the depth
// limit, one body nested 10,000 deep took REST to 147 MB and one nested 500,000 deep to 22.7 GB.
func TestNestingCostsBoundedMemory(t *testing.T) {
	const peakMax = 64 << 10                // kB above idle
	bin := os.Getenv("NESTING_TEST_BINARY") // to measure another build (docs/reliability.md's "before")
	if bin == "" {
		bin = buildBinary(t)
	}
	dir := t.TempDir()
	env := []string{"SWITCHBOARD_DATA_DIR=" + dir, "SWITCHBOARD_DATABASE_URL=", "SWITCHBOARD_SMTP_URL=", "SWITCHBOARD_API_KEY="}
	s := startServe(t, bin, freeAddr(t), env)
	time.Sleep(time.Second)
	guard := guardMemory(t, s.cmd.Process.Pid, 1<<20)

	client := &http.Client{Timeout: 5 * time.Second}
	// fourAtATime posts body to path four times at once and checks each answer is a 4xx within
	// a second saying says (and a JSON-RPC parse error on /mcp), then that the server's peak
	// RSS stayed under peakMax above idle.
	fourAtATime := func(what, path string, body []byte, says string) {
		guard.resetPeak()
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				req, _ := http.NewRequest("POST", s.url+path, bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				start := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					t.Errorf("%s: %v", what, err)
					return
				}
				answer, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if took := time.Since(start); took > time.Second {
					t.Errorf("%s: answered after %v; want under a second", what, took)
				}
				if resp.StatusCode < 400 || resp.StatusCode > 499 || !strings.Contains(string(answer), says) {
					t.Errorf("%s: HTTP %d %.200s; want a 4xx saying %q", what, resp.StatusCode, answer, says)
				}
				if path == "/mcp" && !strings.Contains(string(answer), `"code":-32700`) {
					t.Errorf("%s: %.200s; want a JSON-RPC parse error (-32700)", what, answer)
				}
			})
		}
		wg.Wait()
		peak := guard.peak()
		t.Logf("%s (%d bytes), 4 at a time: peak RSS %.1f MB above idle", what, len(body), float64(peak)/1024)
		if peak > peakMax {
			t.Errorf("%s: peak RSS %d kB above idle; want under %d", what, peak, peakMax)
		}
	}

	shapes := []struct{ name, open, close string }{{"arrays", "[", "]"}, {"objects", `{"a":`, "}"}}
	doors := []struct{ name, path string }{
		{"REST signup", "/v1/agents/signup"},
		{"REST verify", "/v1/agents/verify"},
		{"MCP", "/mcp"},
		{"OAuth registration", "/oauth/register"},
	}
	for _, door := range doors {
		for _, shape := range shapes {
			if door.path == "/oauth/register" && shape.name != "arrays" {
				continue // registrations are limited to 20 a minute per address
			}
			for _, depth := range nestingDepths {
				fourAtATime(fmt.Sprintf("%s, %s nested %d deep", door.name, shape.name, depth), door.path,
					nestedBody(shape.open, shape.close, depth), "nested deeper than 64 levels")
			}
		}
	}

	// Wide bodies of 1 MiB: decoded whole, 500,000 zeros held 50 MB; they are refused for
	// their items before anything decodes them.
	wide := map[string][]byte{
		"zeros":         []byte(`{"email":"a@example.com","x":[` + strings.Repeat("0,", 500_000) + `0]}`),
		"empty objects": []byte(`{"email":"a@example.com","x":[` + strings.Repeat("{},", 340_000) + `0]}`),
		"empty strings": []byte(`{"email":"a@example.com","x":[` + strings.Repeat(`"",`, 340_000) + `0]}`),
	}
	for _, door := range doors[:3] {
		for name, body := range wide {
			if door.path == "/mcp" {
				body = append(append([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"agent_signup","arguments":`), body...), "}}"...)
			}
			fourAtATime(fmt.Sprintf("%s, 1 MiB of %s", door.name, name), door.path, body, "more than 50000 items")
		}
	}

	t.Run("stdio", func(t *testing.T) {
		cmd := exec.Command(bin, "stdio")
		cmd.Env = append(os.Environ(), env...)
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		time.Sleep(time.Second)
		guard := guardMemory(t, cmd.Process.Pid, 1<<20)
		lines := bufio.NewReader(out)
		for _, depth := range nestingDepths {
			body := nestedBody("[", "]", depth)
			guard.resetPeak()
			for range 4 {
				if _, err := in.Write(append(body, '\n')); err != nil {
					t.Fatalf("write: %v", err)
				}
			}
			for range 4 {
				line, err := lines.ReadBytes('\n')
				if err != nil {
					t.Fatalf("read: %v", err)
				}
				var msg struct {
					Error struct {
						Code    int    `json:"code"`
						Message string `json:"message"`
					} `json:"error"`
				}
				if json.Unmarshal(line, &msg) != nil || msg.Error.Code != -32700 || !strings.Contains(msg.Error.Message, "nested deeper than 64 levels") {
					t.Fatalf("stdio, depth %d: %.200s; want a parse error naming the limit", depth, line)
				}
			}
			peak := guard.peak()
			t.Logf("stdio, arrays nested %d deep, 4 lines: peak RSS %.1f MB above idle", depth, float64(peak)/1024)
			if peak > peakMax {
				t.Errorf("stdio, depth %d: peak RSS %d kB above idle; want under %d", depth, peak, peakMax)
			}
		}
	})
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// child is a process the harness started: serve, the relay or the partner. Every child dies
// with the harness (Pdeathsig) and is killed by the harness's cleanup, whichever comes first.
type child struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has been waited for
	err  error
}

// procs are the children of one run, ended last started first.
type procs struct {
	mu   sync.Mutex
	list []*child
}

// start runs bin with args and env (added to the harness's), its stderr to logFile, and
// returns it once started; stdout is handed to ready, if set, which reads the child's
// announcement.
func (p *procs) start(name, bin string, args, env []string, logFile *os.File) (*child, io.Reader, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = logFile
	// A child never outlives the harness, even when the harness is killed or panics.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, done: make(chan struct{})}
	// The stdout pipe must be read to its end before Wait; the reader hands it over.
	pr, pw := io.Pipe()
	go func() {
		io.Copy(pw, out)
		pw.Close()
		c.err = cmd.Wait()
		close(c.done)
	}()
	p.mu.Lock()
	p.list = append(p.list, c)
	p.mu.Unlock()
	return c, pr, nil
}

// stop asks c to end (SIGTERM: serve drains, writing what it has answered) and kills it if it
// has not ended within grace.
func (c *child) stop(grace time.Duration) {
	select {
	case <-c.done:
		return
	default:
	}
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(grace):
		c.cmd.Process.Kill()
		<-c.done
	}
}

// killAll ends every child still running, last started first.
func (p *procs) killAll() {
	p.mu.Lock()
	list := p.list
	p.list = nil
	p.mu.Unlock()
	for i := len(list) - 1; i >= 0; i-- {
		list[i].cmd.Process.Kill()
		<-list[i].done
	}
}

// announcement reads the first line a role child writes on stdout ("READY {json}") into v,
// within timeout, and keeps reading the rest so the child never blocks on a full pipe.
func announcement(r io.Reader, v any, timeout time.Duration) error {
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(r)
		first := true
		for sc.Scan() {
			if first {
				line <- sc.Text()
				first = false
			}
		}
		if first {
			close(line)
		}
	}()
	select {
	case l, ok := <-line:
		rest, found := strings.CutPrefix(l, "READY ")
		if !ok || !found {
			return fmt.Errorf("the child did not announce itself (first line %q)", l)
		}
		return json.Unmarshal([]byte(rest), v)
	case <-time.After(timeout):
		return errors.New("the child did not announce itself in time")
	}
}

// announce is a role child's side of announcement.
func announce(v any) {
	raw, _ := json.Marshal(v)
	fmt.Printf("READY %s\n", raw)
}

// waitHealthy polls url until it answers 200, within timeout.
func waitHealthy(ctx context.Context, url string, c *child, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second}
	for time.Now().Before(deadline) {
		select {
		case <-c.done:
			return fmt.Errorf("%s exited before it was healthy: %v", c.name, c.err)
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if r, err := client.Get(url); err == nil {
			r.Body.Close()
			if r.StatusCode == 200 {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s did not answer %s within %s", c.name, url, timeout)
}

// cpuOf is the CPU time (user and system) process pid has used, from /proc/<pid>/stat.
func cpuOf(pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	return ticks(raw)
}

// ticks reads utime + stime of a /proc/<pid>/stat line: the 12th and 13th fields after the
// command's closing parenthesis (the command may hold spaces).
func ticks(stat []byte) time.Duration {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	f := bytes.Fields(stat[i+1:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(string(f[11]), 10, 64)
	s, _ := strconv.ParseInt(string(f[12]), 10, 64)
	return time.Duration(u+s) * (time.Second / 100) // USER_HZ is 100 on Linux
}

func loadavg() string {
	raw, _ := os.ReadFile("/proc/loadavg")
	return string(bytes.TrimSpace(raw))
}

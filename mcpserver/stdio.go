package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DrainTimeout bounds how long stdio waits, after the host closed stdin, for the answers to
// requests it had already sent (a partner call may take its whole timeoutMs).
const DrainTimeout = 3 * time.Minute

// maxCheckedLine is the longest line that is checked (CheckMessage) and whose requests are
// counted for draining: the go-sdk's own frame limit, past which it ends the session anyway.
const maxCheckedLine = mcp.DefaultMaxLineLength

// ServeStdio serves srv on in/out until ctx ends or the host closes in. Requests already read
// when in closes are answered before it returns, so a host that pipes a batch and closes stdin
// gets every answer: the end of input is held back from the go-sdk (which drops in-flight
// calls when its connection closes) until every request read has had its response written.
//
// Each line is one message (as the MCP stdio transport says: newline-delimited, no embedded
// newlines) and is checked like an HTTP body (CheckMessage); a refused line is answered with
// a JSON-RPC parse error and never reaches the go-sdk, and the session goes on.
func ServeStdio(ctx context.Context, srv *mcp.Server, in io.Reader, out io.Writer) error {
	d := &drain{in: bufio.NewReader(in), out: out}
	d.idle = sync.NewCond(&d.mu)
	stop := context.AfterFunc(ctx, d.wake)
	defer stop()
	err := srv.Run(ctx, &mcp.IOTransport{Reader: drainReader{d, ctx}, Writer: drainWriter{d}})
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// drain counts JSON-RPC requests read and responses written.
type drain struct {
	in      *bufio.Reader
	out     io.Writer
	line    []byte // the line being read
	pending []byte // the rest of the line being handed to the reader
	readErr error  // an error that came with the last bytes
	long    bool   // inside a line longer than maxCheckedLine: passed on unchecked

	wmu sync.Mutex // one message at a time on out

	mu       sync.Mutex
	idle     *sync.Cond
	inFlight int
	woken    bool
}

func (d *drain) wake() {
	d.mu.Lock()
	d.woken = true
	d.mu.Unlock()
	d.idle.Broadcast()
}

// waitIdle blocks until every request read has been answered, ctx ends, or DrainTimeout.
func (d *drain) waitIdle(ctx context.Context) {
	t := time.AfterFunc(DrainTimeout, d.wake)
	defer t.Stop()
	d.mu.Lock()
	defer d.mu.Unlock()
	for d.inFlight > 0 && !d.woken && ctx.Err() == nil {
		d.idle.Wait()
	}
}

func (d *drain) add(n int) {
	if n == 0 {
		return
	}
	d.mu.Lock()
	d.inFlight += n
	d.mu.Unlock()
	d.idle.Broadcast()
}

type drainReader struct {
	d   *drain
	ctx context.Context
}

func (r drainReader) Read(p []byte) (int, error) {
	d := r.d
	for len(d.pending) == 0 {
		if d.readErr != nil {
			err := d.readErr
			if errors.Is(err, io.EOF) {
				d.waitIdle(r.ctx)
			}
			return 0, err
		}
		line, err := d.readLine()
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			err, d.long = nil, true // pass a long line through unchecked; the go-sdk refuses it
		case d.long:
			d.long = false
		case err != nil && !errors.Is(err, io.EOF): // a broken read ends the session anyway
		default:
			if t := bytes.TrimSpace(line); len(t) > 0 {
				if e := CheckMessage(t); e != nil {
					d.write(append(ParseError(e), '\n'))
					line = nil
				}
			}
			d.add(countRequests(line))
		}
		d.pending = append(d.pending[:0], line...)
		d.readErr = err
	}
	n := copy(p, d.pending)
	d.pending = d.pending[n:]
	return n, nil
}

// readLine returns the next whole line, or with bufio.ErrBufferFull its first maxCheckedLine
// bytes (or, inside a long line, the next piece of it).
func (d *drain) readLine() ([]byte, error) {
	d.line = d.line[:0]
	for {
		piece, err := d.in.ReadSlice('\n')
		if d.long {
			return piece, err
		}
		d.line = append(d.line, piece...)
		if !errors.Is(err, bufio.ErrBufferFull) || len(d.line) >= maxCheckedLine {
			return d.line, err
		}
	}
}

func (d *drain) write(p []byte) (int, error) {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	return d.out.Write(p)
}

func (drainReader) Close() error { return nil }

type drainWriter struct{ d *drain }

func (w drainWriter) Write(p []byte) (int, error) {
	n, err := w.d.write(p)
	// The go-sdk writes one message (or batch) and its newline per call.
	w.d.add(-countResponses(p))
	return n, err
}

func (drainWriter) Close() error { return nil }

// A message is a request when it has a method and an id; a response has an id and no method.
type frame struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

func frames(line []byte) []frame {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil
	}
	if line[0] == '[' {
		var batch []frame
		json.Unmarshal(line, &batch)
		return batch
	}
	var f frame
	if json.Unmarshal(line, &f) != nil {
		return nil
	}
	return []frame{f}
}

func hasID(f frame) bool { return len(f.ID) > 0 && string(f.ID) != "null" }

func countRequests(line []byte) int {
	n := 0
	for _, f := range frames(line) {
		if f.Method != "" && hasID(f) {
			n++
		}
	}
	return n
}

func countResponses(data []byte) int {
	n := 0
	for _, line := range bytes.Split(data, []byte("\n")) {
		for _, f := range frames(line) {
			if f.Method == "" && hasID(f) {
				n++
			}
		}
	}
	return n
}

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

// maxCountedLine is the longest line whose request is counted for draining; the go-sdk refuses
// longer frames anyway.
const maxCountedLine = 4 << 20

// ServeStdio serves srv on in/out until ctx ends or the host closes in. Requests already read
// when in closes are answered before it returns, so a host that pipes a batch and closes stdin
// gets every answer: the end of input is held back from the go-sdk (which drops in-flight
// calls when its connection closes) until every request read has had its response written.
func ServeStdio(ctx context.Context, srv *mcp.Server, in io.Reader, out io.Writer) error {
	d := &drain{in: bufio.NewReaderSize(in, maxCountedLine), out: out}
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
	pending []byte // the rest of the line being handed to the reader
	readErr error  // an error that came with the last bytes
	long    bool   // inside a line longer than maxCountedLine

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
		line, err := d.in.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			err, d.long = nil, true // pass a long line through uncounted
		case d.long:
			d.long = false
		default:
			d.add(countRequests(line))
		}
		d.pending = append(d.pending[:0], line...)
		d.readErr = err
	}
	n := copy(p, d.pending)
	d.pending = d.pending[n:]
	return n, nil
}

func (drainReader) Close() error { return nil }

type drainWriter struct{ d *drain }

func (w drainWriter) Write(p []byte) (int, error) {
	n, err := w.d.out.Write(p)
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

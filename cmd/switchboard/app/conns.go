package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/switchboard-hq/switchboard/rest"
	"github.com/switchboard-hq/switchboard/tools/onboarding"
)

// Listen opens the public listener on addr, with at most SWITCHBOARD_MAX_CONNS_PER_CLIENT
// connections open at once from one client address (0: no cap), whose answers net/http
// writes before any handler are the error model (rest.ErrorModelListener).
func (a *App) Listen(ctx context.Context, addr string) (net.Listener, error) {
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if a.cfg.MaxConnsPerClient > 0 {
		l = LimitConnsPerClient(l, a.cfg.MaxConnsPerClient, a.log)
	}
	// What net/http refuses before any handler is answered in the error model too.
	return rest.ErrorModelListener(l), nil
}

// LimitConnsPerClient caps the connections open at once from one client address (an IPv4
// address, an IPv6 /64: onboarding.Source) at max. A connection past the cap is answered
// 429 with Retry-After and closed at once, so one client holding slow connections open
// cannot take every file descriptor and goroutine of the replica.
func LimitConnsPerClient(l net.Listener, max int, log *slog.Logger) net.Listener {
	return &perClient{Listener: l, max: max, open: map[string]int{}, log: log, refusing: make(chan struct{}, maxRefusing)}
}

// maxRefusing bounds the refused connections answered at once (each holds a goroutine and a
// descriptor for up to a second); past it a refused connection is closed without an answer,
// so a flood of connections costs the replica no more than the cap allows.
const maxRefusing = 64

type perClient struct {
	net.Listener
	max  int
	log  *slog.Logger
	mu   sync.Mutex
	open map[string]int
	// refusing holds a slot per refused connection being answered (maxRefusing).
	refusing chan struct{}
}

// tooManyBody is the answer to a connection past the cap: the connection carries no request
// yet, so it is written before any is read.
const tooManyBody = `{"error":{"code":"RATE_LIMITED","message":"too many connections open from this address; close some or reuse them, then retry"}}`

func (p *perClient) Accept() (net.Conn, error) {
	for {
		c, err := p.Listener.Accept()
		if err != nil {
			return nil, err
		}
		src := peer(c)
		p.mu.Lock()
		n := p.open[src]
		if n < p.max {
			p.open[src] = n + 1
		}
		p.mu.Unlock()
		if n < p.max {
			return &counted{Conn: c, release: func() { p.release(src) }}, nil
		}
		select {
		case p.refusing <- struct{}{}:
			p.log.Info("connection refused: too many open from this client", "client", src, "max", p.max)
			go func() { refuse(c); <-p.refusing }()
		default: // already answering maxRefusing: close at once, unanswered and unlogged
			c.Close()
		}
	}
}

func (p *perClient) release(src string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.open[src] <= 1 {
		delete(p.open, src)
		return
	}
	p.open[src]--
}

// refuse answers a connection past the cap and closes it, within a second whatever the
// client does. What the client sent is read and dropped first: closing with it unread would
// reset the connection, and the client could lose the answer.
func refuse(c net.Conn) {
	c.SetDeadline(time.Now().Add(time.Second))
	fmt.Fprintf(c, "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(tooManyBody), tooManyBody)
	if tc, ok := c.(*net.TCPConn); ok {
		tc.CloseWrite()
		io.Copy(io.Discard, io.LimitReader(c, 64<<10))
	}
	c.Close()
}

// peer is the client address a connection counts for.
func peer(c net.Conn) string {
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return c.RemoteAddr().String()
	}
	return onboarding.Source(host)
}

// counted gives its slot back once, when it is closed.
type counted struct {
	net.Conn
	once    sync.Once
	release func()
}

// CloseWrite half-closes the connection, so net/http's answer to a request it refused unread
// (431) reaches the client before the connection is dropped.
func (c *counted) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (c *counted) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// bodyDeadline bounds how long reading a request's body may take (SWITCHBOARD_BODY_READ_TIMEOUT),
// from when its handler starts; net/http lifts a read deadline once the body is read, so a
// call that then runs long (a partner call) is not cut by it.
func bodyDeadline(w http.ResponseWriter, r *http.Request, d time.Duration) {
	if d <= 0 || r.Body == nil || r.Body == http.NoBody {
		return
	}
	if err := http.NewResponseController(w).SetReadDeadline(time.Now().Add(d)); err != nil {
		return // a writer without deadlines (a test recorder): nothing to bound
	}
	r.Body = &deadlineBody{ReadCloser: r.Body, limit: d}
}

// deadlineBody says plainly why a body read timed out: the network error names this
// server's own address.
type deadlineBody struct {
	io.ReadCloser
	limit time.Duration
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
		err = fmt.Errorf("the body did not arrive within %s; send it faster, or in smaller requests", b.limit)
	}
	return n, err
}

package rest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"

	"github.com/switchboard-hq/switchboard/tools"
)

// MaxHeaderBytes bounds a request's line and headers (the query string with them), on every
// door: the server's http.Server.MaxHeaderBytes.
const MaxHeaderBytes = 64 << 10

// ErrorModelListener answers in the error model the requests net/http refuses before any
// handler runs: a request line it cannot parse (a path or query with a bad percent-escape,
// /v1/keys/%ZZ), headers over MaxHeaderBytes (431), a bad Host or header, an HTTP version or
// Transfer-Encoding it does not take. net/http writes those answers itself, as fixed plain
// text straight onto the connection, and offers no hook to change them; so each connection's
// writes are watched for exactly those fixed answers (a status line, net/http's two fixed
// headers, the status line again as the body: a handler's answer always carries a Date and
// this service's security headers, so it never has that form) and each is replaced by its
// error-model answer, with the same status. The connection closes after it, as before.
func ErrorModelListener(l net.Listener) net.Listener { return modelListener{l} }

type modelListener struct{ net.Listener }

func (l modelListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &modelConn{Conn: c}, nil
}

// modelConn is a connection whose pre-handler plain-text answers become the error model.
type modelConn struct{ net.Conn }

func (c *modelConn) Write(p []byte) (int, error) {
	answer, ok := preHandlerAnswer(p)
	if !ok {
		return c.Conn.Write(p)
	}
	if _, err := c.Conn.Write(answer); err != nil {
		return 0, err
	}
	return len(p), nil
}

// CloseWrite lets net/http half-close before it hangs up on a request it refused unread
// (431), so the client reads the answer rather than a reset.
func (c *modelConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// maxPreHandlerAnswer bounds net/http's pre-handler answers: a status line (with a short fixed
// phrase), the two fixed headers, the status line again.
const maxPreHandlerAnswer = 512

// netHTTPErrorHeaders are the headers of every answer net/http writes before any handler.
const netHTTPErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// preHandlerAnswer is the error-model answer replacing p when p is one of net/http's
// pre-handler answers, whole.
func preHandlerAnswer(p []byte) ([]byte, bool) {
	// Those answers are a few dozen bytes; a handler's answer is rarely that short, so most
	// writes are passed on without a scan.
	if len(p) > maxPreHandlerAnswer {
		return nil, false
	}
	rest, ok := bytes.CutPrefix(p, []byte("HTTP/1.1 "))
	if !ok {
		return nil, false
	}
	status, body, ok := bytes.Cut(rest, []byte(netHTTPErrorHeaders))
	if !ok || len(status) < 4 || status[3] != ' ' {
		return nil, false
	}
	code, err := strconv.Atoi(string(status[:3]))
	if err != nil {
		return nil, false
	}
	var e *tools.Error
	_, detail, _ := bytes.Cut(status, []byte(": "))
	switch {
	case code == http.StatusNotImplemented && string(body) == "Unsupported transfer encoding":
		e = tools.Errorf(tools.CodeBadInput, "this Transfer-Encoding is not supported; send the body with a Content-Length or chunked")
	case !bytes.Equal(body, status):
		return nil, false
	case code == http.StatusRequestHeaderFieldsTooLarge:
		e = tools.Errorf(tools.CodePayloadTooLarge, "the request line and headers are over the %d KiB limit; send long input as a JSON body (POST), not in the query string or headers", MaxHeaderBytes>>10)
	case code == http.StatusBadRequest && len(detail) == 0:
		e = tools.Errorf(tools.CodeBadInput, "the request could not be read: its path or query has a bad percent-escape (a %% must be followed by two hex digits; write %%25 for %% itself), or its request line is malformed; fix the URL and send it again")
	case code == http.StatusBadRequest || code == http.StatusHTTPVersionNotSupported:
		// detail is one of net/http's fixed phrases ("missing required Host header",
		// "malformed Host header", "invalid header name", "unsupported protocol version").
		e = tools.Errorf(tools.CodeBadInput, "the request could not be read: %s; send well-formed HTTP/1.1 (or HTTP/2) and try again", detail)
	default:
		return nil, false
	}
	raw, err := json.Marshal(tools.Body{Error: e})
	if err != nil {
		return nil, false
	}
	return fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nX-Content-Type-Options: nosniff\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n%s\n",
		code, http.StatusText(code), len(raw)+1, raw), true
}

package webhooks

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/switchboard-hq/switchboard/tools/partners/outbound"
)

// maxStatusLine bounds the receiver's status line kept in an attempt's error.
const maxStatusLine = 200

// statusError is an answer that is not 2xx.
type statusError struct{ status string }

func (e *statusError) Error() string {
	return fmt.Sprintf("the endpoint answered %s; only 2xx counts as delivered", e.status)
}

// timedOut reports whether an attempt failed because its timeout (or a network timeout) ran out.
func timedOut(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// summarize is what the account's owner reads of a failed attempt: a short sentence that says
// what went wrong, never the Go or TLS error text, which names addresses (the deployment's
// resolver, the dialled IP) and internals.
func summarize(err error, timeout time.Duration) string {
	var (
		status  *statusError
		dns     *net.DNSError
		blocked *outbound.BlockedError
		badURL  *outbound.URLError
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		invalid x509.CertificateInvalidError
		record  tls.RecordHeaderError
		alert   tls.AlertError
		dial    *net.OpError
	)
	switch {
	case errors.As(err, &status):
		return status.Error()
	case strings.Contains(err.Error(), "TLS handshake timeout"):
		return "TLS handshake timed out: the endpoint accepted the connection and did not answer"
	case timedOut(err) && errors.As(err, &dial) && dial.Op == "dial":
		return "timed out connecting: nothing answered the connection"
	case timedOut(err):
		return "timed out after " + seconds(timeout) + " without an answer"
	case errors.As(err, &dns), strings.Contains(err.Error(), ": no addresses"):
		return "the host does not resolve"
	case errors.As(err, &blocked):
		return fmt.Sprintf("refused: the host resolves to a %s address; webhook endpoints must resolve only to public addresses", blocked.Reason)
	case errors.As(err, &badURL):
		return "refused: " + badURL.Reason
	case errors.As(err, &unknown):
		return "TLS handshake failed: certificate not trusted (signed by an unknown authority, or self-signed)"
	case errors.As(err, &host):
		return "TLS handshake failed: the certificate is not valid for this host name"
	case errors.As(err, &invalid):
		if invalid.Reason == x509.Expired {
			return "TLS handshake failed: the certificate has expired (or is not yet valid)"
		}
		return "TLS handshake failed: the certificate is not valid"
	case errors.As(err, &record), strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return "TLS handshake failed: the endpoint does not speak TLS on this port"
	case errors.As(err, &alert):
		return "TLS handshake failed: the endpoint refused it (" + alert.Error() + ")"
	case strings.Contains(err.Error(), "tls: "):
		return "TLS handshake failed"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "the host is unreachable"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the connection was closed before an answer"
	case strings.Contains(err.Error(), "malformed HTTP"):
		return "the answer is not HTTP"
	}
	return "the request failed before an answer came back"
}

// seconds writes a timeout as the docs do ("15 s"; "500 ms" below a second).
func seconds(d time.Duration) string {
	if d < time.Second || d%time.Second != 0 {
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return fmt.Sprintf("%d s", int64(d/time.Second))
}

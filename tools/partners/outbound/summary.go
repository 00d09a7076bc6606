package outbound

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
)

// ResolveError says a host has no address. Its message names the host alone: the resolver's
// own error ("lookup x on 10.0.0.2:53: no such host") names the deployment's DNS server, so
// it is kept for Unwrap (and logs that ask for it), never shown.
type ResolveError struct {
	Host      string
	Temporary bool // the lookup failed or timed out, rather than the name having no address
	Err       error
}

func (e *ResolveError) Error() string {
	if e.Temporary {
		return fmt.Sprintf("%s could not be resolved just now (the DNS lookup failed); retry shortly", e.Host)
	}
	return e.Host + " does not resolve"
}

func (e *ResolveError) Unwrap() error { return e.Err }

// resolveError is the ResolveError of a failed lookup of host.
func resolveError(host string, err error) *ResolveError {
	var dns *net.DNSError
	temporary := errors.As(err, &dns) && !dns.IsNotFound && (dns.IsTimeout || dns.IsTemporary)
	return &ResolveError{Host: host, Temporary: temporary, Err: err}
}

// NetworkError is a failure on the way to or from an endpoint, shown by Summary: it never
// names this side's addresses (a read error's "10.0.0.7:43210->") or its resolver. Unwrap
// gives the cause, so IsTimeout and IsBlocked see through it.
type NetworkError struct{ Err error }

func (e *NetworkError) Error() string { return Summary(e.Err) }
func (e *NetworkError) Unwrap() error { return e.Err }

// safe wraps an error of the outbound transport that names addresses (a socket's, a
// resolver's) in NetworkError; any other (io.EOF, TLS, ErrBodyTooLarge) is returned as it
// is: it names nothing of this side, and readers compare some of them.
func safe(err error) error {
	var ne *NetworkError
	var op *net.OpError
	var dns *net.DNSError
	if err == nil || err == io.EOF || errors.As(err, &ne) || !(errors.As(err, &op) || errors.As(err, &dns)) {
		return err
	}
	return &NetworkError{Err: err}
}

// Summary is the one text a caller is shown of a network error of an outbound call, a URL
// check or a fetch: a name that does not resolve is "<host> does not resolve", the guard's
// refusal says which address and why, and a socket error names the endpoint's address (public,
// by the guard) and the cause, never this side's address or resolver.
func Summary(err error) string {
	var re *ResolveError
	var blocked *BlockedError
	var dns *net.DNSError
	var op *net.OpError
	var ue *url.Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &re):
		return re.Error()
	case errors.As(err, &blocked):
		return blocked.Error()
	case errors.As(err, &dns):
		return resolveError(dns.Name, dns).Error()
	case errors.As(err, &op):
		msg := op.Op
		if op.Addr != nil {
			msg += " " + op.Addr.String()
		}
		if op.Err != nil {
			msg += ": " + op.Err.Error()
		}
		return msg
	case errors.As(err, &ue):
		return Summary(ue.Err)
	}
	return err.Error()
}

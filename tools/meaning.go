package tools

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"syscall"
)

// What a lower layer's error means, said by the error itself, so the kernel translates it
// without importing that layer: the store's sentinels (store/dberr) answer these, and so does
// every driver error the store normalizes, which wraps one of them.
type (
	notFound    interface{ NotFound() bool }
	conflicting interface{ Conflict() bool }
	unavailable interface{ Unavailable() bool }
)

// means reports whether an error anywhere in err's tree is a T that says yes, as errors.Is
// walks it (errors.As stops at the first T, which may mean something else).
func means[T any](err error, yes func(T) bool) bool {
	for err != nil {
		if t, ok := err.(T); ok && yes(t) {
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if means(e, yes) {
					return true
				}
			}
			return false
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		default:
			return false
		}
	}
	return false
}

// connectionFailed reports a connection that failed (refused, reset, closed, cut short): the
// call can be retried. These are the standard library's, whatever was on the other end.
func connectionFailed(err error) bool {
	var opErr *net.OpError
	return errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) || errors.As(err, &opErr)
}

// Package fault says what an error from below means to whoever answers the caller: not found,
// a conflict, or a database that cannot answer now (retry). The store returns these sentinels
// (store/dberr maps driver errors onto them), and the kernel translates them, so neither the
// kernel nor the doors import the store or a database driver. It imports no driver: a driver's
// error is recognised by the methods it has.
package fault

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
)

var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("conflict")
	// ErrUnavailable is a database that cannot answer now (down, restarting, unreachable, out
	// of connections, or a transaction that lost a conflict after its retries): try again.
	ErrUnavailable = errors.New("database unavailable")
)

// Unavailable reports whether err means the database cannot answer now, for any driver: the
// connection was refused, reset or closed; the server is shutting down, starting up or out of
// connections; a transaction lost a conflict (after the store's retries); SQLite stayed locked
// past its busy timeout. Such a call can be retried; it is not a bug. It holds for an error the
// store did not normalize too, so an outage is never answered as INTERNAL.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrUnavailable) || errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) {
		return true
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return true
	}
	var pg postgresError
	if errors.As(err, &pg) {
		code := pg.Field('C')
		switch {
		case strings.HasPrefix(code, "08"), // connection exception
			code == "57P01", code == "57P02", code == "57P03", // shutting down, crashed, starting up
			code == "53300",                  // too many connections
			code == "40001", code == "40P01": // serialization failure, deadlock (after retries)
			return true
		}
		return false
	}
	var lite sqliteError
	if errors.As(err, &lite) {
		switch lite.Code() & 0xff {
		case sqliteBusy, sqliteLocked:
			return true
		}
	}
	return false
}

// postgresError is a PostgreSQL server error as pgdriver.Error has it: its fields by their
// protocol letter ('C' the SQLSTATE code).
type postgresError interface {
	error
	Field(k byte) string
	IntegrityViolation() bool
}

// sqliteError is modernc.org/sqlite's *Error: its extended result code.
type sqliteError interface {
	error
	Code() int
}

// SQLite's primary result codes for a database another connection holds (sqlite3.h).
const (
	sqliteBusy   = 5
	sqliteLocked = 6
)

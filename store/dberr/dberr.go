// Package dberr holds the store's sentinel errors and the test for a database that cannot
// answer now, apart from the store: the kernel translates them without importing the store.
package dberr

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/uptrace/bun/driver/pgdriver"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Sentinel errors every query returns in place of driver-specific ones, so callers above the
// store never look at a driver error (store.ErrNotFound and the others are these). Each says
// what it means by a method (NotFound, Conflict, Unavailable: true), so the kernel
// (tools.Translate) recognises them, and Normalize's wrapping of a driver error, without
// importing this package or any driver.
var (
	ErrNotFound error = &sentinel{"not found", notFound}
	ErrConflict error = &sentinel{"conflict", conflict}
	// ErrUnavailable is a database that cannot answer now (down, restarting, unreachable, out
	// of connections, or a transaction that lost a conflict after its retries): try again.
	ErrUnavailable error = &sentinel{"database unavailable", unavailable}
)

type meaning int

const (
	notFound meaning = iota
	conflict
	unavailable
)

type sentinel struct {
	msg string
	is  meaning
}

func (s *sentinel) Error() string { return s.msg }

// NotFound, Conflict and Unavailable say what the sentinel means, for errors.As.
func (s *sentinel) NotFound() bool    { return s.is == notFound }
func (s *sentinel) Conflict() bool    { return s.is == conflict }
func (s *sentinel) Unavailable() bool { return s.is == unavailable }

// IsUnavailable reports whether err means the database cannot answer now, for any driver:
// the connection was refused, reset or closed; the server is shutting down, starting up or
// out of connections; a transaction lost a conflict (after Tx's retries); SQLite stayed
// locked past its busy timeout. Such a call can be retried; it is not a bug.
func IsUnavailable(err error) bool {
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
	var pgErr pgdriver.Error
	if errors.As(err, &pgErr) {
		code := pgErr.Field('C')
		switch {
		case strings.HasPrefix(code, "08"), // connection exception
			code == "57P01", code == "57P02", code == "57P03", // shutting down, crashed, starting up
			code == "53300",                  // too many connections
			code == "40001", code == "40P01": // serialization failure, deadlock (after retries)
			return true
		}
		return false
	}
	var liteErr *sqlite.Error
	if errors.As(err, &liteErr) {
		switch liteErr.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return true
		}
	}
	return false
}

// Normalize maps driver errors onto the sentinels, keeping the original wrapped: a database
// that cannot answer is ErrUnavailable, no rows ErrNotFound, a unique violation ErrConflict.
func Normalize(err error) error {
	if err == nil || errors.Is(err, ErrNotFound) || errors.Is(err, ErrConflict) || errors.Is(err, ErrUnavailable) {
		return err
	}
	if IsUnavailable(err) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	var pgErr pgdriver.Error
	if errors.As(err, &pgErr) && pgErr.Field('C') == "23505" {
		return fmt.Errorf("%w: %w", ErrConflict, err)
	}
	var liteErr *sqlite.Error
	if errors.As(err, &liteErr) {
		switch liteErr.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return fmt.Errorf("%w: %w", ErrConflict, err)
		}
	}
	return err
}

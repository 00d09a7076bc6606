// Package dberr maps the drivers' errors onto the store's sentinel errors (package fault's),
// apart from the store.
package dberr

import (
	"database/sql"
	"errors"
	"fmt"

	"github.com/switchboard-hq/switchboard/fault"
	"github.com/uptrace/bun/driver/pgdriver"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Sentinel errors every query returns in place of driver-specific ones, so callers above the
// store never look at a driver error (store.ErrNotFound and the others are these). They are
// package fault's, which the kernel translates without importing the store or a driver.
var (
	ErrNotFound    = fault.ErrNotFound
	ErrConflict    = fault.ErrConflict
	ErrUnavailable = fault.ErrUnavailable
)

// IsUnavailable reports whether err means the database cannot answer now (fault.Unavailable).
func IsUnavailable(err error) bool { return fault.Unavailable(err) }

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

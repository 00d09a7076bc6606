package tools_test

import (
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"

	"github.com/switchboard-hq/switchboard/store/dberr"
	"github.com/switchboard-hq/switchboard/tools"
)

// The kernel translates the store's errors by what they say they mean, without importing the
// store: its sentinels, however deeply wrapped (one of several wrapped errors included), and
// the driver errors the store normalizes; a connection that failed is retryable whatever it
// was to.
func TestTranslateReadsWhatAnErrorMeans(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	for _, tc := range []struct {
		name string
		err  error
		want tools.Code
	}{
		{"not found", fmt.Errorf("get key: %w", dberr.ErrNotFound), tools.CodeNotFound},
		{"conflict", fmt.Errorf("insert: %w", fmt.Errorf("row: %w", dberr.ErrConflict)), tools.CodeConflict},
		{"unavailable", fmt.Errorf("commit: %w", dberr.ErrUnavailable), tools.CodeUnavailable},
		{"unavailable beside another", fmt.Errorf("%w: %w", errors.New("the driver's own"), dberr.ErrUnavailable), tools.CodeUnavailable},
		{"a refused connection, normalized", dberr.Normalize(refused), tools.CodeUnavailable},
		{"a refused connection, as it came", fmt.Errorf("ping: %w", refused), tools.CodeUnavailable},
		{"a reset connection", fmt.Errorf("read: %w", syscall.ECONNRESET), tools.CodeUnavailable},
		{"anything else", errors.New("boom"), tools.CodeInternal},
	} {
		e := tools.Translate(tc.err)
		if e == nil || e.Code != tc.want {
			t.Errorf("%s: %v, want %s", tc.name, e, tc.want)
		}
		if tc.want == tools.CodeUnavailable && e.RetryAfter == 0 {
			t.Errorf("%s: UNAVAILABLE without Retry-After", tc.name)
		}
	}
	if !errors.Is(fmt.Errorf("x: %w", dberr.ErrNotFound), dberr.ErrNotFound) || errors.Is(dberr.ErrNotFound, dberr.ErrConflict) {
		t.Error("the sentinels are no longer distinct values errors.Is tells apart")
	}
}

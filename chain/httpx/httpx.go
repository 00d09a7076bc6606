// Package httpx is the one way Switchboard talks to chain and market-data upstreams: a request with the
// caller's deadline, a bounded body, statuses turned into typed errors (with Retry-After), JSON
// decoded with exact numbers, and failure reasons safe to show (never the URL, which may carry
// an API key).
package httpx

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// StatusError is a non-2xx answer.
type StatusError struct {
	Status     int
	RetryAfter time.Duration // from a Retry-After header, 0 when absent
}

func (e *StatusError) Error() string {
	if e.Status == http.StatusTooManyRequests {
		return "rate limited (HTTP 429)"
	}
	return fmt.Sprintf("HTTP %d", e.Status)
}

// ErrTooLarge is a body over the limit.
var ErrTooLarge = errors.New("response too large")

// ErrTimeout is a call that ran out of time.
var ErrTimeout = errors.New("timed out")

// ErrConnect is a call that never got an answer (refused, DNS, TLS, reset).
var ErrConnect = errors.New("connection failed")

// Do sends req with ctx and returns the body, at most limit bytes, of a 2xx answer.
func Do(ctx context.Context, c *http.Client, req *http.Request, limit int64, now func() time.Time) ([]byte, error) {
	resp, err := c.Do(req.WithContext(ctx))
	if err != nil {
		return nil, clean(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, &StatusError{Status: resp.StatusCode, RetryAfter: ParseRetryAfter(resp.Header.Get("Retry-After"), now())}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, clean(ctx, err)
	}
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("%w (over %d bytes)", ErrTooLarge, limit)
	}
	return body, nil
}

// Get fetches url with the given headers.
func Get(ctx context.Context, c *http.Client, rawURL string, header map[string]string, limit int64, now func() time.Time) ([]byte, error) {
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return Do(ctx, c, req, limit, now)
}

// PostJSON posts body as JSON.
func PostJSON(ctx context.Context, c *http.Client, rawURL string, body []byte, limit int64, now func() time.Time) ([]byte, error) {
	req, err := http.NewRequest(http.MethodPost, rawURL, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	return Do(ctx, c, req, limit, now)
}

// clean drops the URL from transport errors and classifies them.
func clean(ctx context.Context, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() == context.DeadlineExceeded || errors.As(err, &ne) && ne.Timeout():
		return ErrTimeout
	case errors.Is(err, context.Canceled):
		return err
	default:
		return fmt.Errorf("%w: %s", ErrConnect, shortCause(err))
	}
}

func shortCause(err error) string {
	var op *net.OpError
	if errors.As(err, &op) {
		if op.Err != nil {
			return op.Op + ": " + op.Err.Error()
		}
		return op.Op
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return "DNS lookup failed"
	}
	s := err.Error()
	if len(s) > 120 {
		s = s[:120]
	}
	return s
}

// ParseRetryAfter reads a Retry-After value: delay seconds or an HTTP date. 0 when absent or
// unreadable.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil {
		if n < 0 {
			return 0
		}
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// Decode unmarshals one JSON value keeping numbers exact (json.Number), refusing trailing data.
func Decode(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("malformed JSON: %w", err)
	}
	if dec.More() {
		return errors.New("malformed JSON: data after the value")
	}
	return nil
}

// Reason is a short failure description safe to show callers.
func Reason(err error) string {
	var se *StatusError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &se):
		return se.Error()
	case errors.Is(err, ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	default:
		return err.Error()
	}
}

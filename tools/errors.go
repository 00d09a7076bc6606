package tools

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/switchboard-hq/switchboard/fault"
)

// Code is a machine-readable error code; every door (MCP, REST) shows the same ones.
type Code string

// The error codes of DESIGN.md; HTTPStatus is each one's HTTP status at every HTTP door.
const (
	CodeBadInput             Code = "BAD_INPUT"
	CodePayloadTooLarge      Code = "PAYLOAD_TOO_LARGE"
	CodeUnauthenticated      Code = "UNAUTHENTICATED"
	CodeForbidden            Code = "FORBIDDEN"
	CodeNotFound             Code = "NOT_FOUND"
	CodeConflict             Code = "CONFLICT"
	CodeConfirmationRequired Code = "CONFIRMATION_REQUIRED"
	CodeApprovalRequired     Code = "APPROVAL_REQUIRED"
	CodeApprovalPending      Code = "APPROVAL_PENDING"
	CodePolicyDenied         Code = "POLICY_DENIED"
	CodePaymentRequired      Code = "PAYMENT_REQUIRED"
	CodeSpendLimit           Code = "SPEND_LIMIT"
	CodeInsufficientCredits  Code = "INSUFFICIENT_CREDITS"
	CodeRateLimited          Code = "RATE_LIMITED"
	CodeUpstream             Code = "UPSTREAM"
	CodeUnavailable          Code = "UNAVAILABLE"
	CodeInternal             Code = "INTERNAL"
)

// HTTPStatus is the code's HTTP status (DESIGN.md's table): REST answers with it, and the
// portal's error page too.
func (c Code) HTTPStatus() int {
	switch c {
	case CodeBadInput:
		return http.StatusBadRequest
	case CodePayloadTooLarge:
		return http.StatusRequestEntityTooLarge
	case CodeUnauthenticated:
		return http.StatusUnauthorized
	case CodeForbidden, CodePolicyDenied:
		return http.StatusForbidden
	case CodeNotFound:
		return http.StatusNotFound
	case CodeConflict, CodeConfirmationRequired, CodeApprovalRequired, CodeApprovalPending:
		return http.StatusConflict
	case CodeSpendLimit, CodeInsufficientCredits, CodePaymentRequired:
		return http.StatusPaymentRequired
	case CodeRateLimited:
		return http.StatusTooManyRequests
	case CodeUpstream:
		return http.StatusBadGateway
	case CodeUnavailable:
		return http.StatusServiceUnavailable
	default:
		return http.StatusInternalServerError
	}
}

// UnavailableRetryAfter is how long callers are asked to wait when the database is down.
const UnavailableRetryAfter = 2 * time.Second

// Error is the one error model: a code, a message that says what to do next, optional
// details, for RATE_LIMITED how long to wait, and for an answer that asks someone first how
// the call goes on (Continue: doors read it, never the details; it is not on the wire).
type Error struct {
	Code       Code           `json:"code"`
	Message    string         `json:"message"`
	Details    map[string]any `json:"details,omitempty"`
	RetryAfter time.Duration  `json:"-"`
	Continue   *Continuation  `json:"-"`
	cause      error
}

func (e *Error) Error() string {
	if e.cause != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.cause)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.cause }

// Errorf builds an Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WithDetails returns e with details set.
func (e *Error) WithDetails(d map[string]any) *Error {
	e.Details = d
	return e
}

// Wrap keeps err as the cause (for logs; it is never shown to callers).
func (e *Error) Wrap(err error) *Error {
	e.cause = err
	return e
}

// Body is the wire shape of an error: {"error": {...}}.
type Body struct {
	Error *Error `json:"error"`
}

// Translate turns any error into the error model. It is called once, at the kernel's edge.
func Translate(err error) *Error {
	var e *Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &e):
		return e
	case errors.Is(err, fault.ErrNotFound):
		return (&Error{Code: CodeNotFound, Message: "not found"}).Wrap(err)
	case errors.Is(err, fault.ErrConflict):
		return (&Error{Code: CodeConflict, Message: "conflicts with an existing record"}).Wrap(err)
	case fault.Unavailable(err):
		e := &Error{Code: CodeUnavailable, Message: "temporarily unavailable (the database or a connection to it failed); retry in a moment", RetryAfter: UnavailableRetryAfter}
		return e.Wrap(err)
	case errors.Is(err, context.DeadlineExceeded):
		return (&Error{Code: CodeUnavailable, Message: "the request timed out; try again"}).Wrap(err)
	case errors.Is(err, context.Canceled):
		return (&Error{Code: CodeUnavailable, Message: "the request was cancelled"}).Wrap(err)
	default:
		return (&Error{Code: CodeInternal, Message: "internal error; try again, and report the request id if it persists"}).Wrap(err)
	}
}

// Package switchboard is the Go client of the Switchboard REST API (/v1): onboarding by
// e-mail code, API keys, the account, token lookups, balances, connected wallets,
// marketplace discovery, partner invocation (with the write-confirmation round trip) and
// the partner routes.
//
//	c := switchboard.New("https://switchboard.example", os.Getenv("SWITCHBOARD_API_KEY"))
//	acct, err := c.Account(ctx)
//
// Every method takes a context first and answers either its result or an error; an error
// the service answered is a *Error (Code, Message, Status, RequestID, RetryAfter, Details).
// GET calls and idempotent calls (as the service's MCP annotations mark them) are retried
// with backoff on 429 and 503, honouring Retry-After; other calls are never retried.
//
// The package imports only the standard library and nothing of the service.
package switchboard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Version is the client version, sent in the User-Agent header.
const Version = "0.1.0"

// Defaults of the retry and timeout options.
const (
	DefaultMaxRetries   = 2
	DefaultTimeout      = 60 * time.Second
	DefaultRetryBackoff = 250 * time.Millisecond
	DefaultMaxRetryWait = 30 * time.Second
)

// Client calls one Switchboard deployment. It is safe for concurrent use.
type Client struct {
	baseURL      string
	apiKey       string
	http         *http.Client
	maxRetries   int
	timeout      time.Duration
	backoff      time.Duration
	maxRetryWait time.Duration
	userAgent    string
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sets the *http.Client used for every request (default http.DefaultClient).
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// WithMaxRetries sets how many times a safe call is retried on 429 or 503 (default 2; 0
// turns retries off).
func WithMaxRetries(n int) Option { return func(c *Client) { c.maxRetries = max(n, 0) } }

// WithTimeout bounds each call, retries included (default 60 s; 0 means only the context
// bounds it). A shorter deadline on the call's context wins.
func WithTimeout(d time.Duration) Option { return func(c *Client) { c.timeout = d } }

// WithRetryBackoff sets the first wait between retries when the answer carries no
// Retry-After; it doubles on each retry, with jitter (default 250 ms).
func WithRetryBackoff(d time.Duration) Option { return func(c *Client) { c.backoff = d } }

// WithMaxRetryWait sets the longest Retry-After the client waits out by itself (default
// 30 s); a longer one is returned to the caller as the *Error, RetryAfter set.
func WithMaxRetryWait(d time.Duration) Option { return func(c *Client) { c.maxRetryWait = d } }

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// New returns a client for the service at baseURL (e.g. "https://switchboard.example")
// acting with apiKey. apiKey may be empty for Signup and Verify; use WithAPIKey on the
// client to switch keys.
func New(baseURL, apiKey string, opts ...Option) *Client {
	c := &Client{
		baseURL:      strings.TrimRight(baseURL, "/"),
		apiKey:       apiKey,
		http:         http.DefaultClient,
		maxRetries:   DefaultMaxRetries,
		timeout:      DefaultTimeout,
		backoff:      DefaultRetryBackoff,
		maxRetryWait: DefaultMaxRetryWait,
		userAgent:    "switchboard-go/" + Version,
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// WithAPIKey returns a copy of c that acts with key.
func (c *Client) WithAPIKey(key string) *Client {
	cc := *c
	cc.apiKey = key
	return &cc
}

// BaseURL is the service address the client calls.
func (c *Client) BaseURL() string { return c.baseURL }

// ErrorCode is a machine-readable error code of the service's error model.
type ErrorCode string

// The codes of the error model (docs/errors.md) with their HTTP status.
const (
	CodeBadInput             ErrorCode = "BAD_INPUT"             // 400
	CodePayloadTooLarge      ErrorCode = "PAYLOAD_TOO_LARGE"     // 413
	CodeUnauthenticated      ErrorCode = "UNAUTHENTICATED"       // 401
	CodeForbidden            ErrorCode = "FORBIDDEN"             // 403
	CodeNotFound             ErrorCode = "NOT_FOUND"             // 404
	CodeConflict             ErrorCode = "CONFLICT"              // 409
	CodeConfirmationRequired ErrorCode = "CONFIRMATION_REQUIRED" // 409
	CodeApprovalRequired     ErrorCode = "APPROVAL_REQUIRED"     // 409: the owner approves it in the portal; ask again with its requestId
	CodeApprovalPending      ErrorCode = "APPROVAL_PENDING"      // 409, with RetryAfter
	CodePolicyDenied         ErrorCode = "POLICY_DENIED"         // 403: details name the rule, window, spent and left
	CodePaymentRequired      ErrorCode = "PAYMENT_REQUIRED"      // 402
	CodeSpendLimit           ErrorCode = "SPEND_LIMIT"           // 402
	CodeInsufficientCredits  ErrorCode = "INSUFFICIENT_CREDITS"  // 402
	CodeRateLimited          ErrorCode = "RATE_LIMITED"          // 429
	CodeUpstream             ErrorCode = "UPSTREAM"              // 502
	CodeUnavailable          ErrorCode = "UNAVAILABLE"           // 503
	CodeInternal             ErrorCode = "INTERNAL"              // 500
)

// Error is an error the service answered: the error model's code, message (it says what to
// do next), hint and details when the body has them, the HTTP status, the request id
// (X-Request-Id, quote it when reporting a problem) and, for 429 and 503, how long to wait.
type Error struct {
	Code       ErrorCode
	Message    string
	Hint       string
	Details    map[string]any
	Status     int
	RequestID  string
	RetryAfter time.Duration
	Operation  string // the operationId called, e.g. "api_key_create"
}

func (e *Error) Error() string {
	s := fmt.Sprintf("switchboard: %s: %d %s: %s", e.Operation, e.Status, e.Code, e.Message)
	if e.RequestID != "" {
		s += " (request " + e.RequestID + ")"
	}
	return s
}

// IsCode reports whether err is (or wraps) an *Error with the given code.
func IsCode(err error, code ErrorCode) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// codeForStatus names the code of an error answer whose body is not the error model (a
// proxy in between, for example).
func codeForStatus(status int) ErrorCode {
	switch status {
	case 400:
		return CodeBadInput
	case 401:
		return CodeUnauthenticated
	case 402:
		return CodePaymentRequired
	case 403:
		return CodeForbidden
	case 404:
		return CodeNotFound
	case 409:
		return CodeConflict
	case 413:
		return CodePayloadTooLarge
	case 429:
		return CodeRateLimited
	case 502:
		return CodeUpstream
	case 503:
		return CodeUnavailable
	default:
		return CodeInternal
	}
}

// operation is one /v1 route. Idempotent follows the service's MCP annotation
// (idempotentHint) of the tool behind the route; only such calls are retried.
type operation struct {
	Method     string
	Path       string // with {param} placeholders
	Status     int    // documented success status
	Idempotent bool
}

// operations maps every operationId of /openapi.json to its route. The package's tests fail
// when the live document has an operation that is missing here, or differs.
var operations = map[string]operation{
	"agent_signup":                  {"POST", "/v1/agents/signup", 200, false},
	"agent_verify":                  {"POST", "/v1/agents/verify", 200, false},
	"api_key_create":                {"POST", "/v1/keys", 201, false},
	"api_key_list":                  {"GET", "/v1/keys", 200, true},
	"api_key_revoke":                {"DELETE", "/v1/keys/{key_id}", 200, true},
	"account_get":                   {"GET", "/v1/account", 200, true},
	"credit_topup":                  {"POST", "/v1/credit/topup", 200, true},
	"x402_fetch":                    {"POST", "/v1/x402/fetch", 200, false},
	"wallet_send":                   {"POST", "/v1/wallet/send", 200, false},
	"usage_list":                    {"GET", "/v1/usage", 200, true},
	"resolve_token":                 {"GET", "/v1/tokens/resolve", 200, true},
	"get_price":                     {"GET", "/v1/tokens/price", 200, true},
	"get_balances":                  {"GET", "/v1/balances", 200, true},
	"connected_wallet_add":          {"POST", "/v1/wallets/connected", 200, true},
	"connected_wallet_list":         {"GET", "/v1/wallets/connected", 200, true},
	"connected_wallet_remove":       {"DELETE", "/v1/wallets/connected/{address}", 200, true},
	"discover":                      {"GET", "/v1/discover", 200, true},
	"invoke_partner_message":        {"POST", "/v1/invoke", 200, false},
	"partner_publish_intent":        {"POST", "/v1/partner/intents", 201, false},
	"partner_publish_intent_bundle": {"POST", "/v1/partner/intents/bundle", 201, false},
	"partner_update_intent":         {"PATCH", "/v1/partner/intents/{id}", 200, true},
	"partner_test_endpoint":         {"POST", "/v1/partner/test-endpoint", 200, false},
	"partner_set_active":            {"POST", "/v1/partner/intents/{id}/active", 200, true},
	"partner_list_intents":          {"GET", "/v1/partner/intents", 200, true},
	"partner_earnings":              {"GET", "/v1/partner/earnings", 200, true},
	"partner_receipt":               {"GET", "/v1/partner/receipts/{request_id}", 200, true},
	"partner_archive_intent":        {"DELETE", "/v1/partner/intents/{id}", 200, true},
	"policy_get":                    {"GET", "/v1/policy", 200, true},
	"policy_set":                    {"PUT", "/v1/policy", 200, true},
	"approval_list":                 {"GET", "/v1/approvals", 200, true},
	"approval_get":                  {"GET", "/v1/approvals/{request_id}", 200, true},
	"webhook_endpoint_create":       {"POST", "/v1/webhooks/endpoints", 201, false},
	"webhook_endpoint_list":         {"GET", "/v1/webhooks/endpoints", 200, true},
	"webhook_endpoint_delete":       {"DELETE", "/v1/webhooks/endpoints/{endpoint_id}", 200, false},
	"webhook_delivery_list":         {"GET", "/v1/webhooks/deliveries", 200, true},
	"webhook_delivery_replay":       {"POST", "/v1/webhooks/deliveries/{delivery_id}/replay", 200, false},
	"task_get":                      {"GET", "/v1/tasks/{task_id}", 200, true},
	"task_cancel":                   {"DELETE", "/v1/tasks/{task_id}", 200, true},
}

// call sends one operation: path parameters substituted, query (GET, DELETE) or body
// (POST, PATCH), decoding a 2xx answer into out. Safe calls are retried on 429 and 503.
func (c *Client) call(ctx context.Context, opID string, pathParams map[string]string, query url.Values, body, out any) error {
	op, ok := operations[opID]
	if !ok {
		return fmt.Errorf("switchboard: unknown operation %q", opID)
	}
	path := op.Path
	for k, v := range pathParams {
		if v == "" {
			return fmt.Errorf("switchboard: %s: %s is required", opID, k)
		}
		path = strings.ReplaceAll(path, "{"+k+"}", url.PathEscape(v))
	}
	u := c.baseURL + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return fmt.Errorf("switchboard: %s: encode request: %w", opID, err)
		}
	}
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	safe := op.Method == http.MethodGet || op.Idempotent
	for attempt := 0; ; attempt++ {
		err := c.once(ctx, opID, op.Method, u, payload, out)
		var e *Error
		if err == nil || !safe || attempt >= c.maxRetries || !errors.As(err, &e) ||
			(e.Status != http.StatusTooManyRequests && e.Status != http.StatusServiceUnavailable) {
			return err
		}
		wait := e.RetryAfter
		if wait == 0 {
			wait = c.backoff << attempt
			wait += time.Duration(rand.Int64N(int64(wait)/2 + 1))
		}
		if wait > c.maxRetryWait {
			return err
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return err // no time left to wait it out: the caller decides
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("switchboard: %s: waiting to retry: %w (last answer: %w)", opID, ctx.Err(), err)
		case <-t.C:
		}
	}
}

func (c *Client) once(ctx context.Context, opID, method, u string, payload []byte, out any) error {
	var r io.Reader
	if payload != nil {
		r = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, r)
	if err != nil {
		return fmt.Errorf("switchboard: %s: %w", opID, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.apiKey != "" {
		req.Header.Set("x-api-key", c.apiKey)
	}
	if ctx.Value(preferAsyncKey{}) != nil { // InvokeAndWait
		req.Header.Set("Prefer", "respond-async")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("switchboard: %s: %w", opID, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return fmt.Errorf("switchboard: %s: read answer: %w", opID, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if out == nil {
			return nil
		}
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("switchboard: %s: decode answer (HTTP %d): %w", opID, resp.StatusCode, err)
		}
		return nil
	}
	return parseError(opID, resp, raw)
}

func parseError(opID string, resp *http.Response, raw []byte) *Error {
	e := &Error{Status: resp.StatusCode, RequestID: resp.Header.Get("X-Request-Id"), Operation: opID}
	var body struct {
		Error *struct {
			Code    string         `json:"code"`
			Message string         `json:"message"`
			Hint    string         `json:"hint"`
			Details map[string]any `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &body) == nil && body.Error != nil && body.Error.Code != "" {
		e.Code, e.Message, e.Hint, e.Details = ErrorCode(body.Error.Code), body.Error.Message, body.Error.Hint, body.Error.Details
	} else {
		e.Code = codeForStatus(resp.StatusCode)
		e.Message = strings.TrimSpace(string(raw[:min(len(raw), 512)]))
		if e.Message == "" {
			e.Message = http.StatusText(resp.StatusCode)
		}
	}
	if s := resp.Header.Get("Retry-After"); s != "" {
		if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && n >= 0 {
			e.RetryAfter = time.Duration(n) * time.Second
		} else if t, err := http.ParseTime(s); err == nil {
			e.RetryAfter = max(time.Until(t), 0)
		}
	}
	return e
}

// callT calls an operation and decodes its answer into a new T; nil on error.
func callT[T any](ctx context.Context, c *Client, opID string, pathParams map[string]string, query url.Values, body any) (*T, error) {
	var out T
	if err := c.call(ctx, opID, pathParams, query, body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

package signing

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Verification defaults from the spec.
const (
	// MaxClockSkew is how far an envelope's timestamp may be from the partner's clock.
	MaxClockSkew = 5 * time.Minute
	// KeyCacheTTL is how long a fetched public key is used before it is fetched again.
	KeyCacheTTL = time.Hour
	// PublicKeyPath is where the service publishes its public key.
	PublicKeyPath = "/.well-known/service-public-key"
	// KeySetPath is where it publishes every key a partner should accept (the key signing
	// now and the next one, published ahead of a rotation) and the previous one (receipts).
	KeySetPath = "/.well-known/service-keys"
)

const (
	// staleRetryInterval spaces refresh attempts while a stale key is in use.
	staleRetryInterval = time.Minute
	// missingRetryInterval spaces fetch attempts while no key is known at all, so a flood
	// of forged requests cannot turn into a flood of key fetches.
	missingRetryInterval = 5 * time.Second
	// maxKeyBody bounds the public-key response.
	maxKeyBody = 64 << 10
	// keyFetchTimeout bounds one key fetch.
	keyFetchTimeout = 10 * time.Second
)

// Error codes of failure envelopes written by this package.
const (
	CodeUnauthorized     = "UNAUTHORIZED"
	CodeBadInput         = "BAD_INPUT"
	CodeUnavailable      = "UNAVAILABLE"
	CodeMethodNotAllowed = "METHOD_NOT_ALLOWED"
	CodeTooLarge         = "PAYLOAD_TOO_LARGE"
	CodeMediaType        = "UNSUPPORTED_MEDIA_TYPE"
	CodeInternal         = "INTERNAL"
)

// Error is a verification failure carrying the HTTP status a partner should answer with
// (401, 400, 503, ...) and the code and message of the failure envelope.
type Error struct {
	Status  int    // HTTP status
	Code    string // failure envelope error.code
	Message string // failure envelope error.message
	Err     error  // underlying cause, if any
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("signing: %d %s: %s: %v", e.Status, e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("signing: %d %s: %s", e.Status, e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

func unauthorized(msg string) *Error {
	return &Error{Status: http.StatusUnauthorized, Code: CodeUnauthorized, Message: msg}
}

func badInput(msg string, err error) *Error {
	return &Error{Status: http.StatusBadRequest, Code: CodeBadInput, Message: msg, Err: err}
}

// Failure is the failure response envelope {"success":false,"error":{"code","message"}}.
type Failure struct {
	Success bool         `json:"success"`
	Error   FailureError `json:"error"`
}

// FailureError is the error object of a failure envelope.
type FailureError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// WriteFailure writes a failure envelope with the given status.
func WriteFailure(w http.ResponseWriter, status int, code, message string) {
	body, _ := json.Marshal(Failure{Error: FailureError{Code: code, Message: message}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// WriteError writes err as a failure envelope: an *Error with its status and code, any
// other error as 500 INTERNAL without details.
func WriteError(w http.ResponseWriter, err error) {
	var e *Error
	if errors.As(err, &e) {
		WriteFailure(w, e.Status, e.Code, e.Message)
		return
	}
	WriteFailure(w, http.StatusInternalServerError, CodeInternal, "internal error")
}

// KeySource supplies the service's public key.
type KeySource interface {
	PublicKey(ctx context.Context) (ed25519.PublicKey, error)
}

// KeySetSource is a KeySource that also knows the keys to accept beside the current one (the
// next key of a rotation): a Verifier caching the set keeps verifying when signing switches.
type KeySetSource interface {
	KeySource
	PublicKeys(ctx context.Context) ([]ed25519.PublicKey, error) // current first
}

// KeySourceFunc adapts a function to KeySource.
type KeySourceFunc func(ctx context.Context) (ed25519.PublicKey, error)

// PublicKey calls f.
func (f KeySourceFunc) PublicKey(ctx context.Context) (ed25519.PublicKey, error) { return f(ctx) }

// URLKeySource fetches a PEM SPKI public key over HTTP(S).
type URLKeySource struct {
	URL    string       // full URL of the key, e.g. https://api.example/.well-known/service-public-key
	Client *http.Client // nil means a client with a 10 s timeout
}

// NewURLKeySource returns a key source for the service at baseURL
// (baseURL + "/.well-known/service-public-key").
func NewURLKeySource(baseURL string) *URLKeySource {
	return &URLKeySource{
		URL:    strings.TrimRight(baseURL, "/") + PublicKeyPath,
		Client: &http.Client{Timeout: keyFetchTimeout},
	}
}

// PublicKey fetches and parses the key.
func (s *URLKeySource) PublicKey(ctx context.Context) (ed25519.PublicKey, error) {
	client := s.Client
	if client == nil {
		client = &http.Client{Timeout: keyFetchTimeout}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
	if err != nil {
		return nil, fmt.Errorf("fetch public key: %w", err)
	}
	req.Header.Set("Accept", "application/x-pem-file, text/plain, */*")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch public key: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch public key %s: HTTP %d", s.URL, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxKeyBody+1))
	if err != nil {
		return nil, fmt.Errorf("fetch public key: %w", err)
	}
	if len(body) > maxKeyBody {
		return nil, fmt.Errorf("fetch public key %s: response larger than %d bytes", s.URL, maxKeyBody)
	}
	pub, err := ParsePublicKeyPEM(body)
	if err != nil {
		return nil, fmt.Errorf("public key from %s: %w", s.URL, err)
	}
	return pub, nil
}

type staticKey ed25519.PublicKey

func (k staticKey) PublicKey(context.Context) (ed25519.PublicKey, error) {
	return ed25519.PublicKey(k), nil
}

// VerifierOption configures a Verifier.
type VerifierOption func(*Verifier)

// WithClock sets the clock used for the timestamp window and the key cache.
func WithClock(now func() time.Time) VerifierOption { return func(v *Verifier) { v.now = now } }

// WithLogger sets the logger for key-refresh warnings (default slog.Default()).
func WithLogger(l *slog.Logger) VerifierOption { return func(v *Verifier) { v.logger = l } }

// WithKeyCacheTTL overrides KeyCacheTTL.
func WithKeyCacheTTL(d time.Duration) VerifierOption { return func(v *Verifier) { v.ttl = d } }

// WithMaxClockSkew overrides MaxClockSkew.
func WithMaxClockSkew(d time.Duration) VerifierOption { return func(v *Verifier) { v.skew = d } }

// Verifier checks signed calls from the service (spec "Signature verification (partner
// side)" and "Authentication"). It caches the public key for an hour; when a refresh fails
// it keeps using the stale key and logs a warning; with no key at all it answers 503.
// A Verifier is safe for concurrent use.
type Verifier struct {
	src    KeySource
	now    func() time.Time
	logger *slog.Logger
	ttl    time.Duration
	skew   time.Duration

	mu          sync.Mutex
	key         ed25519.PublicKey
	expires     time.Time           // when key becomes stale
	extra       []ed25519.PublicKey // the set's other accepted keys (a rotation's next key)
	nextAttempt time.Time           // earliest next fetch after a failure
	lastErr     error               // last fetch error
	inflight    chan struct{}       // closed when the running fetch ends; nil when none
}

// NewVerifier returns a Verifier that takes the public key from src.
func NewVerifier(src KeySource, opts ...VerifierOption) *Verifier {
	v := &Verifier{src: src, now: time.Now, ttl: KeyCacheTTL, skew: MaxClockSkew}
	for _, o := range opts {
		o(v)
	}
	if v.logger == nil {
		v.logger = slog.Default()
	}
	return v
}

// NewVerifierFromURL returns a Verifier that fetches the key from the service at baseURL
// (e.g. "https://api.example.com"), at <baseURL>/.well-known/service-public-key.
func NewVerifierFromURL(baseURL string, opts ...VerifierOption) *Verifier {
	return NewVerifier(NewURLKeySource(baseURL), opts...)
}

// NewVerifierFromKey returns a Verifier with a fixed public key.
func NewVerifierFromKey(pub ed25519.PublicKey, opts ...VerifierOption) *Verifier {
	return NewVerifier(staticKey(pub), opts...)
}

// NewVerifierFromPEM returns a Verifier with a fixed public key given as a SPKI PEM block.
func NewVerifierFromPEM(pemBytes []byte, opts ...VerifierOption) (*Verifier, error) {
	pub, err := ParsePublicKeyPEM(pemBytes)
	if err != nil {
		return nil, err
	}
	return NewVerifierFromKey(pub, opts...), nil
}

// Refresh fetches the key now (for example at startup, to fail fast on a wrong URL).
func (v *Verifier) Refresh(ctx context.Context) error {
	_, err := v.fetch(ctx, true)
	return err
}

// PublicKey returns the key in use, fetching it when needed. It fails with a 503 *Error
// when no key is known and none can be fetched.
func (v *Verifier) PublicKey(ctx context.Context) (ed25519.PublicKey, error) {
	return v.fetch(ctx, false)
}

func (v *Verifier) fetch(ctx context.Context, force bool) (ed25519.PublicKey, error) {
	for {
		now := v.now()
		v.mu.Lock()
		key := v.key
		fresh := key != nil && now.Before(v.expires)
		if fresh && !force {
			v.mu.Unlock()
			return key, nil
		}
		if wait := v.inflight; wait != nil {
			v.mu.Unlock()
			if key != nil && !force {
				return key, nil // someone is refreshing; the stale key serves meanwhile
			}
			select {
			case <-wait:
				force = false
				continue
			case <-ctx.Done():
				return nil, v.unavailable(ctx.Err())
			}
		}
		if !force && now.Before(v.nextAttempt) {
			lastErr := v.lastErr
			v.mu.Unlock()
			if key != nil {
				return key, nil
			}
			return nil, v.unavailable(lastErr)
		}
		done := make(chan struct{})
		v.inflight = done
		v.mu.Unlock()

		// The fetch is shared with concurrent callers: do not let this caller's
		// cancellation abort it.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), keyFetchTimeout)
		var newKey ed25519.PublicKey
		var extra []ed25519.PublicKey
		var err error
		if set, ok := v.src.(KeySetSource); ok {
			var keys []ed25519.PublicKey
			if keys, err = set.PublicKeys(fctx); err == nil && len(keys) == 0 {
				err = errors.New("the key set is empty")
			}
			if err == nil {
				newKey, extra = keys[0], keys[1:]
			}
		} else {
			newKey, err = v.src.PublicKey(fctx)
		}
		cancel()
		if err == nil && len(newKey) != ed25519.PublicKeySize {
			err = fmt.Errorf("public key has %d bytes, want %d", len(newKey), ed25519.PublicKeySize)
		}

		v.mu.Lock()
		v.inflight = nil
		close(done)
		now = v.now()
		if err != nil {
			v.lastErr = err
			stale := v.key
			if stale != nil {
				v.nextAttempt = now.Add(staleRetryInterval)
			} else {
				v.nextAttempt = now.Add(missingRetryInterval)
			}
			v.mu.Unlock()
			if stale != nil {
				v.logger.Warn("signing: public key refresh failed; using the cached key",
					"error", err, "stale_since", v.expiresAt())
				return stale, nil
			}
			return nil, v.unavailable(err)
		}
		v.key, v.extra = newKey, extra
		v.expires = now.Add(v.ttl)
		v.lastErr = nil
		v.nextAttempt = time.Time{}
		v.mu.Unlock()
		return newKey, nil
	}
}

func (v *Verifier) expiresAt() time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.expires
}

func (v *Verifier) unavailable(err error) *Error {
	return &Error{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
		Message: "the service public key is not available yet; retry later", Err: err}
}

// decodeSignature checks and decodes a base64 signature (exactly 64 bytes).
func decodeSignature(s string) ([]byte, *Error) {
	if s == "" {
		return nil, unauthorized("missing service signature")
	}
	if len(s) != SignatureBase64Len {
		return nil, unauthorized("service signature is not 64 bytes of standard base64")
	}
	sig := make([]byte, SignatureSize+2)
	n, err := base64.StdEncoding.Strict().Decode(sig, []byte(s))
	if err != nil || n != SignatureSize {
		return nil, unauthorized("service signature is not 64 bytes of standard base64")
	}
	return sig[:SignatureSize], nil
}

// checkFreshness applies the timestamp window and the Idempotency-Key rule.
func (v *Verifier) checkFreshness(env *Envelope, h http.Header) error {
	now := v.now().UnixMilli()
	if d := now - env.Timestamp; d > v.skew.Milliseconds() || -d > v.skew.Milliseconds() {
		return unauthorized(fmt.Sprintf("timestamp is more than %s from the partner's clock (replayed request or clock skew)", v.skew))
	}
	for _, k := range h.Values(HeaderIdempotencyKey) {
		if k != env.RequestID {
			return unauthorized("Idempotency-Key header differs from requestId")
		}
	}
	return nil
}

// Verify checks a REST call: body is the request envelope, h the request headers. On
// success it returns the envelope with Args in canonical form (exactly the signed bytes).
// On failure the error is an *Error: 400 for malformed JSON or a wrong shape, 401 for a
// missing, malformed or invalid signature, a timestamp outside the window or an
// Idempotency-Key that differs from requestId, 503 when no public key is available.
//
// The signature is checked over the canonical JSON of the whole body minus
// serviceSignature, so fields the service may add later are covered too.
func (v *Verifier) Verify(ctx context.Context, body []byte, h http.Header) (*Envelope, error) {
	p := getParser(body)
	defer putParser(p)
	root, err := p.parse()
	if err != nil {
		return nil, badInput("request body is not a canonicalizable JSON envelope: "+strings.TrimPrefix(err.Error(), ErrNotCanonicalizable.Error()+": "), err)
	}
	if p.nodes[root].kind != kindObject {
		return nil, badInput("request body must be a JSON object (the request envelope)", nil)
	}
	members, _, err := p.sortedMembers(root)
	if err != nil {
		return nil, badInput("request envelope: "+strings.TrimPrefix(err.Error(), ErrNotCanonicalizable.Error()+": "), err)
	}

	field := map[string]int32{}
	for _, m := range members {
		switch k := string(p.key(m)); k {
		case "serviceSignature", "requestId", "intentDefinitionId", "userId", "args", "timestamp":
			field[k] = m
		}
	}
	sigNode, ok := field["serviceSignature"]
	if !ok {
		return nil, unauthorized("missing serviceSignature")
	}
	if p.nodes[sigNode].kind != kindString {
		return nil, unauthorized("serviceSignature must be a base64 string")
	}
	sig, e := decodeSignature(p.stringValue(sigNode))
	if e != nil {
		return nil, e
	}
	pub, err := v.PublicKey(ctx)
	if err != nil {
		return nil, err
	}

	payload, argsAt, err := p.appendSigned(make([]byte, 0, len(body)), members, sigNode)
	if err != nil {
		return nil, badInput("request envelope: "+err.Error(), err)
	}
	if !v.verifies(pub, payload, sig) {
		return nil, unauthorized("service signature does not verify")
	}
	env, e := p.envelope(field, sigNode, payload, argsAt)
	if e != nil {
		return nil, e
	}
	if err := v.checkFreshness(env, h); err != nil {
		return nil, err
	}
	return env, nil
}

// appendSigned appends the canonical JSON of the envelope object whose sorted members are
// members, minus serviceSignature (member sig): the bytes the service signed. argsAt is where
// the value of args lies in them, {-1, -1} without args.
func (p *parser) appendSigned(dst []byte, members []int32, sig int32) ([]byte, [2]int, error) {
	dst = append(dst, '{')
	argsAt := [2]int{-1, -1}
	first := true
	for _, m := range members {
		if m == sig {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = appendQuoted(dst, p.key(m))
		dst = append(dst, ':')
		start := len(dst)
		var err error
		if dst, err = p.write(dst, m); err != nil {
			return dst, argsAt, err
		}
		if string(p.key(m)) == "args" { // keys are unique: sortedMembers refuses duplicates
			argsAt = [2]int{start, len(dst)}
		}
	}
	return append(dst, '}'), argsAt, nil
}

// envelope reads the fields of a verified envelope: field maps the envelope's member names
// to their nodes, and payload[argsAt[0]:argsAt[1]] is args in canonical form.
func (p *parser) envelope(field map[string]int32, sig int32, payload []byte, argsAt [2]int) (*Envelope, *Error) {
	env := &Envelope{ServiceSignature: p.stringValue(sig)}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"requestId", &env.RequestID}, {"intentDefinitionId", &env.IntentDefinitionID}, {"userId", &env.UserID}} {
		n, ok := field[f.name]
		if !ok {
			return nil, badInput("request envelope: missing "+f.name, nil)
		}
		if p.nodes[n].kind != kindString {
			return nil, badInput("request envelope: "+f.name+" must be a string", nil)
		}
		*f.dst = p.stringValue(n)
	}
	if env.RequestID == "" {
		return nil, badInput("request envelope: requestId is empty", nil)
	}
	argsNode, ok := field["args"]
	if !ok {
		return nil, badInput("request envelope: missing args", nil)
	}
	if p.nodes[argsNode].kind != kindObject {
		return nil, badInput("request envelope: args must be an object", nil)
	}
	env.Args = json.RawMessage(append([]byte(nil), payload[argsAt[0]:argsAt[1]]...))
	tsNode, ok := field["timestamp"]
	if !ok {
		return nil, badInput("request envelope: missing timestamp", nil)
	}
	if p.nodes[tsNode].kind != kindNumber {
		return nil, badInput("request envelope: timestamp must be a number", nil)
	}
	ts, err := strconv.ParseFloat(string(p.data[p.nodes[tsNode].start:p.nodes[tsNode].end]), 64)
	if err != nil || ts > maxSafeInteger || ts < -maxSafeInteger {
		return nil, badInput("request envelope: timestamp is not a Unix time in milliseconds", err)
	}
	env.Timestamp = int64(ts)
	return env, nil
}

// VerifyHeaders checks an MCP_HTTP tool call: the signed fields come from the X-Service-*
// headers of the HTTP request (in a go-sdk tool handler: req.Extra.Header) and args are
// the tool call's raw arguments (req.Params.Arguments; empty means {}). It rebuilds the
// canonical {requestId, intentDefinitionId, userId, args, timestamp} and applies the same
// rules as Verify.
func (v *Verifier) VerifyHeaders(ctx context.Context, h http.Header, args json.RawMessage) (*Envelope, error) {
	sigs := h.Values(HeaderSignature)
	if len(sigs) > 1 {
		return nil, unauthorized("more than one " + HeaderSignature + " header")
	}
	sigText := h.Get(HeaderSignature)
	sig, e := decodeSignature(sigText)
	if e != nil {
		return nil, e
	}
	env := &Envelope{ServiceSignature: sigText}
	for _, f := range []struct {
		header string
		dst    *string
	}{{HeaderRequestID, &env.RequestID}, {HeaderIntentID, &env.IntentDefinitionID}, {HeaderUserID, &env.UserID}} {
		vals := h.Values(f.header)
		if len(vals) != 1 {
			return nil, badInput(fmt.Sprintf("expected exactly one %s header", f.header), nil)
		}
		*f.dst = vals[0]
	}
	if env.RequestID == "" {
		return nil, badInput(HeaderRequestID+" is empty", nil)
	}
	tsVals := h.Values(HeaderTimestamp)
	if len(tsVals) != 1 {
		return nil, badInput("expected exactly one "+HeaderTimestamp+" header", nil)
	}
	ts, err := strconv.ParseInt(tsVals[0], 10, 64)
	if err != nil {
		return nil, badInput(HeaderTimestamp+" must be Unix milliseconds", err)
	}
	env.Timestamp = ts
	if isNull(args) {
		args = nil // an MCP client may send "arguments": null for a call without arguments
	}
	payload, argsAt, err := appendPayload(make([]byte, 0, 160+len(args)), env.RequestID, env.IntentDefinitionID, env.UserID, args, ts, "")
	if err != nil {
		return nil, badInput("tool arguments: "+strings.TrimPrefix(err.Error(), "args: "+ErrNotCanonicalizable.Error()+": "), err)
	}
	env.Args = json.RawMessage(append([]byte(nil), payload[argsAt[0]:argsAt[1]]...))
	pub, err := v.PublicKey(ctx)
	if err != nil {
		return nil, err
	}
	if !v.verifies(pub, payload, sig) {
		return nil, unauthorized("service signature does not verify")
	}
	if err := v.checkFreshness(env, h); err != nil {
		return nil, err
	}
	return env, nil
}

func isNull(raw []byte) bool {
	return string(bytes.TrimSpace(raw)) == "null"
}

// verifies checks sig with the current key, then with the set's other accepted keys.
func (v *Verifier) verifies(pub ed25519.PublicKey, payload, sig []byte) bool {
	if ed25519.Verify(pub, payload, sig) {
		return true
	}
	v.mu.Lock()
	extra := v.extra
	v.mu.Unlock()
	for _, k := range extra {
		if len(k) == ed25519.PublicKeySize && ed25519.Verify(k, payload, sig) {
			return true
		}
	}
	return false
}

// KeySet is the document at KeySetPath.
type KeySet struct {
	Keys []KeySetEntry `json:"keys"`
}

// KeySetEntry is one published key.
type KeySetEntry struct {
	KeyID        string `json:"kid"`
	Status       string `json:"status"` // current (signs now), next (signs after the rotation), previous (signed before it: receipts only)
	PublicKeyPEM string `json:"publicKeyPem"`
}

// Key statuses in a key set.
const (
	KeyCurrent  = "current"
	KeyNext     = "next"
	KeyPrevious = "previous"
)

// PublicKeys fetches the key set (current first, then next), falling back to the single PEM key
// when the service publishes no set.
func (s *URLKeySource) PublicKeys(ctx context.Context) ([]ed25519.PublicKey, error) {
	set, err := s.KeySet(ctx)
	if errors.Is(err, errNoKeySet) {
		k, err := s.PublicKey(ctx)
		if err != nil {
			return nil, err
		}
		return []ed25519.PublicKey{k}, nil
	}
	if err != nil {
		return nil, err
	}
	var current, next []ed25519.PublicKey
	for _, e := range set.Keys {
		k, err := ParsePublicKeyPEM([]byte(e.PublicKeyPEM))
		if err != nil {
			return nil, fmt.Errorf("key set: %s: %w", e.KeyID, err)
		}
		switch e.Status {
		case KeyCurrent:
			current = append(current, k)
		case KeyNext:
			next = append(next, k)
		}
	}
	if len(current) == 0 {
		return nil, errors.New("the key set names no current key")
	}
	return append(current, next...), nil
}

var errNoKeySet = errors.New("no key set")

// KeySet fetches the published key set.
func (s *URLKeySource) KeySet(ctx context.Context) (*KeySet, error) {
	client := s.Client
	if client == nil {
		client = &http.Client{Timeout: keyFetchTimeout}
	}
	u := strings.TrimSuffix(s.URL, PublicKeyPath) + KeySetPath
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("fetch key set: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch key set: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil, errNoKeySet
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch key set %s: HTTP %d", u, resp.StatusCode)
	}
	var set KeySet
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&set); err != nil {
		return nil, fmt.Errorf("key set %s: %w", u, err)
	}
	return &set, nil
}

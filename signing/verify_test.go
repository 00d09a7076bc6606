package signing_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/signing"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// clock is a settable clock for tests.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: t0} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newKey(t testing.TB) ed25519.PrivateKey {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return priv
}

func sampleEnvelope() *signing.Envelope {
	return &signing.Envelope{
		RequestID:          "5b0c8f0e-2b7a-4f4e-9d1c-0a1b2c3d4e5f",
		IntentDefinitionID: "int_123",
		UserID:             "u_abc",
		Args:               json.RawMessage(`{"query":"eth price","n":[1,2.5,null]}`),
	}
}

// signedBody signs env at time at and returns the request body.
func signedBody(t testing.TB, priv ed25519.PrivateKey, env *signing.Envelope, at time.Time) []byte {
	t.Helper()
	s := signing.NewSigner(priv)
	s.Now = func() time.Time { return at }
	if err := s.Sign(env); err != nil {
		t.Fatal(err)
	}
	body, err := signing.MarshalEnvelope(env)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// signRaw signs an arbitrary JSON object (minus serviceSignature) and adds the signature.
func signRaw(t testing.TB, priv ed25519.PrivateKey, obj map[string]any) []byte {
	t.Helper()
	canon, err := signing.CanonicalizeValue(obj)
	if err != nil {
		t.Fatal(err)
	}
	obj["serviceSignature"] = base64.StdEncoding.EncodeToString(ed25519.Sign(priv, canon))
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mutateJSON(t testing.TB, body []byte, f func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		t.Fatal(err)
	}
	f(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func wantStatus(t *testing.T, err error, status int, code string) {
	t.Helper()
	if status == 0 {
		if err != nil {
			t.Fatalf("want success, got %v", err)
		}
		return
	}
	var e *signing.Error
	if !errors.As(err, &e) {
		t.Fatalf("want *signing.Error %d, got %v", status, err)
	}
	if e.Status != status || e.Code != code {
		t.Fatalf("got %d %s (%s), want %d %s", e.Status, e.Code, e.Message, status, code)
	}
}

func TestVerifyRules(t *testing.T) {
	priv := newKey(t)
	other := newKey(t)
	pub := priv.Public().(ed25519.PublicKey)
	clk := newClock()
	v := signing.NewVerifierFromKey(pub, signing.WithClock(clk.Now))
	good := signedBody(t, priv, sampleEnvelope(), t0)
	rid := sampleEnvelope().RequestID
	base := func() map[string]any {
		return map[string]any{"requestId": rid, "intentDefinitionId": "i", "userId": "u", "args": map[string]any{}, "timestamp": t0.UnixMilli()}
	}
	without := func(k string) map[string]any { m := base(); delete(m, k); return m }
	with := func(k string, val any) map[string]any { m := base(); m[k] = val; return m }
	sig63 := base64.StdEncoding.EncodeToString(make([]byte, 63))
	sig65 := base64.StdEncoding.EncodeToString(make([]byte, 65))

	tests := []struct {
		name   string
		body   []byte
		header http.Header
		status int
		code   string
	}{
		{"valid", good, nil, 0, ""},
		{"valid with matching Idempotency-Key", good, http.Header{"Idempotency-Key": {rid}}, 0, ""},
		{"valid with extra field covered by the signature", signRaw(t, priv, with("context", map[string]any{"x": 1})), nil, 0, ""},
		{"valid at exactly +5 minutes", signedBody(t, priv, sampleEnvelope(), t0.Add(5*time.Minute)), nil, 0, ""},
		{"valid at exactly -5 minutes", signedBody(t, priv, sampleEnvelope(), t0.Add(-5*time.Minute)), nil, 0, ""},

		{"unsigned", mutateJSON(t, good, func(m map[string]any) { delete(m, "serviceSignature") }), nil, 401, signing.CodeUnauthorized},
		{"empty signature", mutateJSON(t, good, func(m map[string]any) { m["serviceSignature"] = "" }), nil, 401, signing.CodeUnauthorized},
		{"signature not a string", mutateJSON(t, good, func(m map[string]any) { m["serviceSignature"] = 12 }), nil, 401, signing.CodeUnauthorized},
		{"signature 63 bytes", mutateJSON(t, good, func(m map[string]any) { m["serviceSignature"] = sig63 }), nil, 401, signing.CodeUnauthorized},
		{"signature 65 bytes", mutateJSON(t, good, func(m map[string]any) { m["serviceSignature"] = sig65 }), nil, 401, signing.CodeUnauthorized},
		{"signature not base64", mutateJSON(t, good, func(m map[string]any) { m["serviceSignature"] = strings.Repeat("!", 88) }), nil, 401, signing.CodeUnauthorized},
		{"signature unpadded", mutateJSON(t, good, func(m map[string]any) {
			m["serviceSignature"] = strings.TrimRight(m["serviceSignature"].(string), "=")
		}), nil, 401, signing.CodeUnauthorized},
		{"signature by another key", signedBody(t, other, sampleEnvelope(), t0), nil, 401, signing.CodeUnauthorized},
		{"zero signature", mutateJSON(t, good, func(m map[string]any) { m["serviceSignature"] = base64.StdEncoding.EncodeToString(make([]byte, 64)) }), nil, 401, signing.CodeUnauthorized},
		{"args tampered", mutateJSON(t, good, func(m map[string]any) { m["args"].(map[string]any)["query"] = "btc price" }), nil, 401, signing.CodeUnauthorized},
		{"userId tampered", mutateJSON(t, good, func(m map[string]any) { m["userId"] = "u_other" }), nil, 401, signing.CodeUnauthorized},
		{"timestamp tampered", mutateJSON(t, good, func(m map[string]any) { m["timestamp"] = t0.UnixMilli() + 1 }), nil, 401, signing.CodeUnauthorized},
		{"field added after signing", mutateJSON(t, good, func(m map[string]any) { m["extra"] = true }), nil, 401, signing.CodeUnauthorized},
		{"stale by 5 minutes and 1 ms", signedBody(t, priv, sampleEnvelope(), t0.Add(-5*time.Minute-time.Millisecond)), nil, 401, signing.CodeUnauthorized},
		{"future by 6 minutes", signedBody(t, priv, sampleEnvelope(), t0.Add(6*time.Minute)), nil, 401, signing.CodeUnauthorized},
		{"Idempotency-Key differs", good, http.Header{"Idempotency-Key": {"other"}}, 401, signing.CodeUnauthorized},
		{"Idempotency-Key empty", good, http.Header{"Idempotency-Key": {""}}, 401, signing.CodeUnauthorized},
		{"second Idempotency-Key differs", good, http.Header{"Idempotency-Key": {rid, "other"}}, 401, signing.CodeUnauthorized},

		{"not JSON", []byte(`not json`), nil, 400, signing.CodeBadInput},
		{"empty body", nil, nil, 400, signing.CodeBadInput},
		{"array body", []byte(`[1]`), nil, 400, signing.CodeBadInput},
		{"duplicate keys", []byte(`{"requestId":"a","requestId":"b"}`), nil, 400, signing.CodeBadInput},
		{"missing requestId", signRaw(t, priv, without("requestId")), nil, 400, signing.CodeBadInput},
		{"empty requestId", signRaw(t, priv, with("requestId", "")), nil, 400, signing.CodeBadInput},
		{"missing intentDefinitionId", signRaw(t, priv, without("intentDefinitionId")), nil, 400, signing.CodeBadInput},
		{"missing userId", signRaw(t, priv, without("userId")), nil, 400, signing.CodeBadInput},
		{"missing args", signRaw(t, priv, without("args")), nil, 400, signing.CodeBadInput},
		{"missing timestamp", signRaw(t, priv, without("timestamp")), nil, 400, signing.CodeBadInput},
		{"requestId a number", signRaw(t, priv, with("requestId", 7)), nil, 400, signing.CodeBadInput},
		{"intentDefinitionId null", signRaw(t, priv, with("intentDefinitionId", nil)), nil, 400, signing.CodeBadInput},
		{"userId an object", signRaw(t, priv, with("userId", map[string]any{})), nil, 400, signing.CodeBadInput},
		{"args an array", signRaw(t, priv, with("args", []any{1})), nil, 400, signing.CodeBadInput},
		{"args a string", signRaw(t, priv, with("args", "{}")), nil, 400, signing.CodeBadInput},
		{"timestamp a string", signRaw(t, priv, with("timestamp", strconv.FormatInt(t0.UnixMilli(), 10))), nil, 400, signing.CodeBadInput},
		{"unsigned and malformed", []byte(`{"requestId":1}`), nil, 401, signing.CodeUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.header
			if h == nil {
				h = http.Header{}
			}
			env, err := v.Verify(t.Context(), tt.body, h)
			wantStatus(t, err, tt.status, tt.code)
			if tt.status == 0 && env.RequestID != rid {
				t.Errorf("requestId %q", env.RequestID)
			}
		})
	}
}

func TestVerifyReturnsEnvelope(t *testing.T) {
	priv := newKey(t)
	v := signing.NewVerifierFromKey(priv.Public().(ed25519.PublicKey), signing.WithClock(func() time.Time { return t0 }))
	env := sampleEnvelope()
	env.Args = json.RawMessage(`{ "z" : 1.0, "a" : "<x>" }`)
	body := signedBody(t, priv, env, t0)
	got, err := v.Verify(t.Context(), body, http.Header{})
	if err != nil {
		t.Fatal(err)
	}
	want := signing.Envelope{RequestID: env.RequestID, IntentDefinitionID: "int_123", UserID: "u_abc",
		Args: json.RawMessage(`{"a":"<x>","z":1}`), Timestamp: t0.UnixMilli(), ServiceSignature: env.ServiceSignature}
	if got.RequestID != want.RequestID || got.IntentDefinitionID != want.IntentDefinitionID || got.UserID != want.UserID ||
		string(got.Args) != string(want.Args) || got.Timestamp != want.Timestamp || got.ServiceSignature != want.ServiceSignature {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	// The body is itself canonical JSON.
	if canon, _ := signing.Canonicalize(body); !bytes.Equal(canon, body) {
		t.Errorf("body is not canonical: %s", body)
	}
}

func headersFor(env *signing.Envelope) http.Header {
	h := http.Header{}
	signing.SetHeaders(h, env, signing.BindingMCPHTTP)
	return h
}

func TestVerifyHeadersRules(t *testing.T) {
	priv := newKey(t)
	other := newKey(t)
	v := signing.NewVerifierFromKey(priv.Public().(ed25519.PublicKey), signing.WithClock(func() time.Time { return t0 }))
	env := sampleEnvelope()
	signedBody(t, priv, env, t0)
	args := json.RawMessage(`{"n":[1,2.5,null],"query":"eth price"}`)
	argsSpaced := json.RawMessage(`{ "query": "eth price", "n": [1, 2.50, null] }`)
	edit := func(f func(h http.Header)) http.Header { h := headersFor(env); f(h); return h }
	otherEnv := sampleEnvelope()
	signedBody(t, other, otherEnv, t0)
	staleEnv := sampleEnvelope()
	signedBody(t, priv, staleEnv, t0.Add(-6*time.Minute))
	emptyArgsEnv := sampleEnvelope()
	emptyArgsEnv.Args = nil
	signedBody(t, priv, emptyArgsEnv, t0)

	tests := []struct {
		name   string
		h      http.Header
		args   json.RawMessage
		status int
		code   string
	}{
		{"valid", headersFor(env), args, 0, ""},
		{"valid with reformatted args", headersFor(env), argsSpaced, 0, ""},
		{"valid without Idempotency-Key", edit(func(h http.Header) { h.Del("Idempotency-Key") }), args, 0, ""},
		{"valid empty args as absent", headersFor(emptyArgsEnv), nil, 0, ""},
		{"valid empty args as null", headersFor(emptyArgsEnv), json.RawMessage("null"), 0, ""},
		{"valid empty args as {}", headersFor(emptyArgsEnv), json.RawMessage("{}"), 0, ""},
		{"no signature", edit(func(h http.Header) { h.Del(signing.HeaderSignature) }), args, 401, signing.CodeUnauthorized},
		{"no headers at all", http.Header{}, args, 401, signing.CodeUnauthorized},
		{"two signatures", edit(func(h http.Header) { h.Add(signing.HeaderSignature, h.Get(signing.HeaderSignature)) }), args, 401, signing.CodeUnauthorized},
		{"short signature", edit(func(h http.Header) { h.Set(signing.HeaderSignature, "AAAA") }), args, 401, signing.CodeUnauthorized},
		{"other key", headersFor(otherEnv), args, 401, signing.CodeUnauthorized},
		{"args tampered", headersFor(env), json.RawMessage(`{"n":[1,2.5,null],"query":"btc price"}`), 401, signing.CodeUnauthorized},
		{"args extra field", headersFor(env), json.RawMessage(`{"n":[1,2.5,null],"query":"eth price","x":1}`), 401, signing.CodeUnauthorized},
		{"user tampered", edit(func(h http.Header) { h.Set(signing.HeaderUserID, "u_x") }), args, 401, signing.CodeUnauthorized},
		{"intent tampered", edit(func(h http.Header) { h.Set(signing.HeaderIntentID, "int_x") }), args, 401, signing.CodeUnauthorized},
		{"request id tampered", edit(func(h http.Header) {
			h.Set(signing.HeaderRequestID, "x")
			h.Set("Idempotency-Key", "x")
		}), args, 401, signing.CodeUnauthorized},
		{"timestamp tampered", edit(func(h http.Header) { h.Set(signing.HeaderTimestamp, strconv.FormatInt(t0.UnixMilli()+1, 10)) }), args, 401, signing.CodeUnauthorized},
		{"stale", headersFor(staleEnv), args, 401, signing.CodeUnauthorized},
		{"Idempotency-Key differs", edit(func(h http.Header) { h.Set("Idempotency-Key", "x") }), args, 401, signing.CodeUnauthorized},
		{"missing request id", edit(func(h http.Header) { h.Del(signing.HeaderRequestID) }), args, 400, signing.CodeBadInput},
		{"missing intent id", edit(func(h http.Header) { h.Del(signing.HeaderIntentID) }), args, 400, signing.CodeBadInput},
		{"missing user id", edit(func(h http.Header) { h.Del(signing.HeaderUserID) }), args, 400, signing.CodeBadInput},
		{"missing timestamp", edit(func(h http.Header) { h.Del(signing.HeaderTimestamp) }), args, 400, signing.CodeBadInput},
		{"timestamp not a number", edit(func(h http.Header) { h.Set(signing.HeaderTimestamp, "soon") }), args, 400, signing.CodeBadInput},
		{"args an array", headersFor(env), json.RawMessage(`[1]`), 400, signing.CodeBadInput},
		{"args invalid JSON", headersFor(env), json.RawMessage(`{"a":`), 400, signing.CodeBadInput},
		{"args with a big integer", headersFor(env), json.RawMessage(`{"amount":12345678901234567890}`), 400, signing.CodeBadInput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := v.VerifyHeaders(t.Context(), tt.h, tt.args)
			wantStatus(t, err, tt.status, tt.code)
			if tt.status == 0 && got.RequestID != env.RequestID {
				t.Errorf("requestId %q", got.RequestID)
			}
		})
	}
}

// keySource is a scripted KeySource.
type keySource struct {
	mu    sync.Mutex
	key   ed25519.PublicKey
	err   error
	calls atomic.Int32
	delay time.Duration
}

func (s *keySource) PublicKey(ctx context.Context) (ed25519.PublicKey, error) {
	s.calls.Add(1)
	if s.delay > 0 {
		time.Sleep(s.delay)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.key, s.err
}

func (s *keySource) set(key ed25519.PublicKey, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.key, s.err = key, err
}

func TestVerifyNoKey503(t *testing.T) {
	priv := newKey(t)
	clk := newClock()
	src := &keySource{err: errors.New("connection refused")}
	v := signing.NewVerifier(src, signing.WithClock(clk.Now))
	body := signedBody(t, priv, sampleEnvelope(), t0)

	_, err := v.Verify(t.Context(), body, http.Header{})
	wantStatus(t, err, 503, signing.CodeUnavailable)
	if !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("cause lost: %v", err)
	}
	// An unsigned request is refused without needing the key.
	unsigned := mutateJSON(t, body, func(m map[string]any) { delete(m, "serviceSignature") })
	_, err = v.Verify(t.Context(), unsigned, http.Header{})
	wantStatus(t, err, 401, signing.CodeUnauthorized)
	// MCP path too.
	env := sampleEnvelope()
	signedBody(t, priv, env, t0)
	_, err = v.VerifyHeaders(t.Context(), headersFor(env), env.Args)
	wantStatus(t, err, 503, signing.CodeUnavailable)
	if n := src.calls.Load(); n != 1 {
		t.Errorf("%d fetches; repeated failures within a few seconds must not refetch", n)
	}
	// Later the key is reachable.
	src.set(priv.Public().(ed25519.PublicKey), nil)
	clk.Advance(6 * time.Second)
	body = signedBody(t, priv, sampleEnvelope(), clk.Now())
	if _, err := v.Verify(t.Context(), body, http.Header{}); err != nil {
		t.Fatal(err)
	}
	if n := src.calls.Load(); n != 2 {
		t.Errorf("%d fetches, want 2", n)
	}
}

func TestVerifyStaleKeyAfterFailedRefresh(t *testing.T) {
	priv := newKey(t)
	pub := priv.Public().(ed25519.PublicKey)
	clk := newClock()
	src := &keySource{key: pub}
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	v := signing.NewVerifier(src, signing.WithClock(clk.Now), signing.WithLogger(logger))
	verify := func() error {
		_, err := v.Verify(t.Context(), signedBody(t, priv, sampleEnvelope(), clk.Now()), http.Header{})
		return err
	}

	if err := verify(); err != nil {
		t.Fatal(err)
	}
	clk.Advance(59 * time.Minute)
	if err := verify(); err != nil {
		t.Fatal(err)
	}
	if n := src.calls.Load(); n != 1 {
		t.Fatalf("%d fetches within the hour, want 1", n)
	}

	// After an hour the refresh fails: the stale key keeps working, with a warning.
	src.set(nil, errors.New("upstream 502"))
	clk.Advance(2 * time.Minute)
	if err := verify(); err != nil {
		t.Fatalf("stale key not used: %v", err)
	}
	if n := src.calls.Load(); n != 2 {
		t.Fatalf("%d fetches, want 2", n)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "upstream 502") {
		t.Errorf("no warning logged: %q", logs.String())
	}
	// No fetch storm while the source is down.
	for range 10 {
		if err := verify(); err != nil {
			t.Fatal(err)
		}
	}
	if n := src.calls.Load(); n != 2 {
		t.Fatalf("%d fetches, want 2 (retries are spaced)", n)
	}
	// The source recovers with a rotated key: after the retry interval the new key is used.
	priv2 := newKey(t)
	src.set(priv2.Public().(ed25519.PublicKey), nil)
	clk.Advance(2 * time.Minute)
	_, err := v.Verify(t.Context(), signedBody(t, priv2, sampleEnvelope(), clk.Now()), http.Header{})
	if err != nil {
		t.Fatalf("rotated key not picked up: %v", err)
	}
	_, err = v.Verify(t.Context(), signedBody(t, priv, sampleEnvelope(), clk.Now()), http.Header{})
	wantStatus(t, err, 401, signing.CodeUnauthorized)
}

func TestVerifierSharesOneFetch(t *testing.T) {
	priv := newKey(t)
	src := &keySource{key: priv.Public().(ed25519.PublicKey), delay: 50 * time.Millisecond}
	v := signing.NewVerifier(src)
	body := signedBody(t, priv, sampleEnvelope(), time.Now())
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for range 32 {
		wg.Go(func() {
			if _, err := v.Verify(context.Background(), body, http.Header{}); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := src.calls.Load(); n != 1 {
		t.Errorf("%d fetches, want 1", n)
	}
}

func TestURLKeySource(t *testing.T) {
	priv := newKey(t)
	pemBytes, _ := signing.MarshalPublicKeyPEM(priv.Public().(ed25519.PublicKey))
	var mode atomic.Value
	mode.Store("ok")
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != signing.PublicKeyPath || r.Method != http.MethodGet {
			http.NotFound(w, r)
			return
		}
		switch mode.Load() {
		case "ok":
			w.Header().Set("Cache-Control", "public, max-age=3600")
			w.Write(pemBytes)
		case "500":
			http.Error(w, "boom", 500)
		case "huge":
			w.Write(bytes.Repeat([]byte("A"), 100<<10))
		case "garbage":
			w.Write([]byte("not a key"))
		}
	}))
	defer srv.Close()
	src := signing.NewURLKeySource(srv.URL + "/")
	src.Client = srv.Client()
	got, err := src.PublicKey(t.Context())
	if err != nil || !got.Equal(priv.Public()) {
		t.Fatalf("got %v, %v", got, err)
	}
	for _, m := range []string{"500", "huge", "garbage"} {
		mode.Store(m)
		if _, err := src.PublicKey(t.Context()); err == nil {
			t.Errorf("%s: accepted", m)
		}
	}

	// End to end through a Verifier.
	mode.Store("ok")
	v := signing.NewVerifier(src)
	if err := v.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(t.Context(), signedBody(t, priv, sampleEnvelope(), time.Now()), http.Header{}); err != nil {
		t.Fatal(err)
	}
	// NewVerifierFromURL with an unreachable service answers 503.
	dead := signing.NewVerifierFromURL("http://127.0.0.1:1")
	_, err = dead.Verify(t.Context(), signedBody(t, priv, sampleEnvelope(), time.Now()), http.Header{})
	wantStatus(t, err, 503, signing.CodeUnavailable)
}

func TestNewVerifierFromPEM(t *testing.T) {
	priv := newKey(t)
	pemBytes, _ := signing.MarshalPublicKeyPEM(priv.Public().(ed25519.PublicKey))
	v, err := signing.NewVerifierFromPEM(pemBytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(t.Context(), signedBody(t, priv, sampleEnvelope(), time.Now()), http.Header{}); err != nil {
		t.Fatal(err)
	}
	if _, err := signing.NewVerifierFromPEM([]byte("nope")); err == nil {
		t.Error("bad PEM accepted")
	}
}

func TestWriteError(t *testing.T) {
	for _, tt := range []struct {
		err    error
		status int
		body   string
	}{
		{&signing.Error{Status: 401, Code: "UNAUTHORIZED", Message: "bad <sig>"}, 401, `{"success":false,"error":{"code":"UNAUTHORIZED","message":"bad \u003csig\u003e"}}`},
		{errors.New("secret detail"), 500, `{"success":false,"error":{"code":"INTERNAL","message":"internal error"}}`},
	} {
		rec := httptest.NewRecorder()
		signing.WriteError(rec, tt.err)
		if rec.Code != tt.status || rec.Body.String() != tt.body || rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("got %d %s", rec.Code, rec.Body)
		}
	}
}

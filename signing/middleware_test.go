package signing_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/signing"
)

// restPartner starts Middleware(v, DedupeMiddleware(handler)) on a TLS server; the handler
// echoes the verified envelope and counts its runs.
func restPartner(t *testing.T, v *signing.Verifier) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var runs atomic.Int32
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		env, ok := signing.EnvelopeFromContext(r.Context())
		if !ok {
			t.Error("no envelope in context")
		}
		raw, _ := io.ReadAll(r.Body)
		if !json.Valid(raw) {
			t.Error("body not readable in handler")
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"success":true,"result":{"requestId":%q,"run":%d,"args":%s}}`, env.RequestID, runs.Load(), env.Args)
	})
	srv := httptest.NewTLSServer(signing.Middleware(v, signing.DedupeMiddleware(signing.NewResponseDedupe(), handler)))
	t.Cleanup(srv.Close) // ~0.5 s: net/http lingers after the 413 (rstAvoidanceDelay)
	return srv, &runs
}

func post(t *testing.T, client *http.Client, url string, body []byte, header http.Header) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func TestMiddlewareOverHTTP(t *testing.T) {
	priv := newKey(t)
	clk := newClock()
	v := signing.NewVerifierFromKey(priv.Public().(ed25519.PublicKey), signing.WithClock(clk.Now))
	srv, runs := restPartner(t, v)

	// Signed by Signer + RoundTripper: accepted.
	signer := signing.NewSigner(priv)
	signer.Now = clk.Now
	fields := signing.CallFields{RequestID: signing.NewRequestID(), IntentDefinitionID: "int_q", UserID: "u_1",
		Args: json.RawMessage(`{"query":"gm"}`)}
	client := &http.Client{Transport: signing.NewRESTRoundTripper(signer, fields, srv.Client().Transport)}
	status, body, _ := post(t, client, srv.URL, nil, nil)
	if status != 200 || !strings.Contains(body, `"run":1`) || !strings.Contains(body, fields.RequestID) {
		t.Fatalf("signed request: %d %s", status, body)
	}

	// A retry (same requestId, fresh signature 10 s later) is replayed, not re-run.
	clk.Advance(10 * time.Second)
	status, body2, hdr := post(t, client, srv.URL, nil, nil)
	if status != 200 || body2 != body || hdr.Get(signing.HeaderReplayed) != "true" || runs.Load() != 1 {
		t.Fatalf("retry: %d %s replayed=%q runs=%d", status, body2, hdr.Get(signing.HeaderReplayed), runs.Load())
	}

	plain := srv.Client()
	env := &signing.Envelope{RequestID: signing.NewRequestID(), IntentDefinitionID: "int_q", UserID: "u_1", Args: json.RawMessage(`{"query":"gm"}`)}
	good := signedBody(t, priv, env, clk.Now())
	jsonCT := http.Header{"Content-Type": {"application/json"}}

	for _, tt := range []struct {
		name   string
		method string
		body   []byte
		header http.Header
		status int
		code   string
	}{
		{"unsigned", "POST", mutateJSON(t, good, func(m map[string]any) { delete(m, "serviceSignature") }), jsonCT, 401, "UNAUTHORIZED"},
		{"forged", "POST", signedBody(t, newKey(t), &signing.Envelope{RequestID: "r", IntentDefinitionID: "i", UserID: "u"}, clk.Now()), jsonCT, 401, "UNAUTHORIZED"},
		{"tampered", "POST", mutateJSON(t, good, func(m map[string]any) { m["args"] = map[string]any{"query": "rug"} }), jsonCT, 401, "UNAUTHORIZED"},
		{"replayed after the window", "POST", signedBody(t, priv, &signing.Envelope{RequestID: "old", IntentDefinitionID: "i", UserID: "u"}, clk.Now().Add(-6*time.Minute)), jsonCT, 401, "UNAUTHORIZED"},
		{"mismatched Idempotency-Key", "POST", good, http.Header{"Idempotency-Key": {"another-request"}}, 401, "UNAUTHORIZED"},
		{"shape", "POST", signRaw(t, priv, map[string]any{"requestId": "r", "intentDefinitionId": "i", "userId": "u", "args": []any{}, "timestamp": clk.Now().UnixMilli()}), jsonCT, 400, "BAD_INPUT"},
		{"GET", "GET", nil, nil, 405, "METHOD_NOT_ALLOWED"},
		{"too large", "POST", bytes.Repeat([]byte(" "), signing.MaxBodyBytes+1), jsonCT, 413, "PAYLOAD_TOO_LARGE"},
		{"valid", "POST", good, http.Header{"Idempotency-Key": {env.RequestID}}, 200, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, srv.URL, bytes.NewReader(tt.body))
			for k, vs := range tt.header {
				req.Header[k] = vs
			}
			resp, err := plain.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, b)
			}
			if tt.code != "" {
				var f signing.Failure
				if err := json.Unmarshal(b, &f); err != nil || f.Success || f.Error.Code != tt.code || f.Error.Message == "" {
					t.Errorf("failure body %s", b)
				}
				if resp.Header.Get("Content-Type") != "application/json" {
					t.Errorf("content type %q", resp.Header.Get("Content-Type"))
				}
			}
			if tt.method == "GET" && resp.Header.Get("Allow") != "POST" {
				t.Errorf("Allow %q", resp.Header.Get("Allow"))
			}
		})
	}
	if runs.Load() != 2 {
		t.Errorf("handler ran %d times, want 2 (rejected requests must not reach it)", runs.Load())
	}

	// The same valid body sent again within the window is a replay of the first response.
	status, _, hdr = post(t, plain, srv.URL, good, nil)
	if status != 200 || hdr.Get(signing.HeaderReplayed) != "true" || runs.Load() != 2 {
		t.Errorf("replay within window: %d %q runs=%d", status, hdr.Get(signing.HeaderReplayed), runs.Load())
	}
}

func TestRESTRoundTripperSignsEveryAttempt(t *testing.T) {
	priv := newKey(t)
	clk := newClock()
	v := signing.NewVerifierFromKey(priv.Public().(ed25519.PublicKey), signing.WithClock(clk.Now))
	var got []*signing.Envelope
	var headers []http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		env, err := v.Verify(r.Context(), body, r.Header)
		if err != nil {
			signing.WriteError(w, err)
			return
		}
		got = append(got, env)
		headers = append(headers, r.Header.Clone())
		w.WriteHeader(http.StatusBadGateway) // ask for a retry
	}))
	defer srv.Close()

	signer := signing.NewSigner(priv)
	signer.Now = clk.Now
	fields := signing.CallFields{RequestID: signing.NewRequestID(), IntentDefinitionID: "int_1", UserID: "u_1", Args: json.RawMessage(`{"b":2,"a":1}`)}
	client := &http.Client{Transport: signing.NewRESTRoundTripper(signer, fields, nil)}
	for range 2 {
		// The caller's body is ignored: the transport sends the envelope.
		resp, err := client.Post(srv.URL, "text/plain", strings.NewReader("ignored"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		clk.Advance(1500 * time.Millisecond)
	}
	if len(got) != 2 {
		t.Fatalf("%d verified requests", len(got))
	}
	if got[0].RequestID != fields.RequestID || got[1].RequestID != fields.RequestID {
		t.Error("requestId changed between attempts")
	}
	if got[1].Timestamp-got[0].Timestamp != 1500 || got[0].ServiceSignature == got[1].ServiceSignature {
		t.Error("retry not re-signed with a fresh timestamp")
	}
	if string(got[0].Args) != `{"a":1,"b":2}` {
		t.Errorf("args %s", got[0].Args)
	}
	h := headers[0]
	for name, want := range map[string]string{
		"Content-Type": "application/json", "Idempotency-Key": fields.RequestID, signing.HeaderRequestID: fields.RequestID,
		signing.HeaderIntentID: "int_1", signing.HeaderSignature: got[0].ServiceSignature,
		signing.HeaderTimestamp: fmt.Sprint(got[0].Timestamp),
	} {
		if h.Get(name) != want {
			t.Errorf("%s = %q, want %q", name, h.Get(name), want)
		}
	}
	if h.Get(signing.HeaderUserID) != "" {
		t.Error("REST call carries X-Service-User-Id")
	}

	// Without fields the transport refuses.
	bare := &http.Client{Transport: &signing.RoundTripper{Signer: signer, Binding: signing.BindingREST}}
	if _, err := bare.Post(srv.URL, "application/json", nil); err == nil || !strings.Contains(err.Error(), "CallFields") {
		t.Errorf("no fields: %v", err)
	}
	// Fields from the context work for REST too.
	req, _ := http.NewRequestWithContext(signing.WithCall(t.Context(), fields), http.MethodPost, srv.URL, nil)
	resp, err := bare.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(got) != 3 {
		t.Errorf("context fields not used")
	}
	// Args that cannot be signed fail before sending.
	badFields := fields
	badFields.Args = json.RawMessage(`{"wei":12345678901234567890}`)
	bad := &http.Client{Transport: signing.NewRESTRoundTripper(signer, badFields, nil)}
	if _, err := bad.Post(srv.URL, "application/json", nil); err == nil || !strings.Contains(err.Error(), "string") {
		t.Errorf("big integer: %v", err)
	}
}

package outbound

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-hq/switchboard/signing"
)

// The battery is every way a REST partner endpoint's verification can be wrong, one request
// each: what `switchboard partner check` runs before publishing (with a throwaway key it
// serves itself) and what partner_test_endpoint reports (with the service key).

// Check verdicts: FAIL fails the battery; WARN is advice.
const (
	CheckPass = "PASS"
	CheckFail = "FAIL"
	CheckWarn = "WARN"
)

// Check is one line of the battery's report.
type Check struct {
	Name    string `json:"name"`
	Verdict string `json:"verdict" jsonschema:"enum=PASS,enum=FAIL,enum=WARN"`
	Status  int    `json:"status,omitempty" jsonschema_description:"the HTTP status the endpoint answered"`
	Want    string `json:"want" jsonschema_description:"what a correct partner answers"`
	Fix     string `json:"fix,omitempty" jsonschema_description:"what to change when it did not"`
}

// BatteryFailed reports whether any check failed.
func BatteryFailed(cs []Check) bool {
	for _, c := range cs {
		if c.Verdict == CheckFail {
			return true
		}
	}
	return false
}

// Battery runs the checks against a REST endpoint, signing with signer (the key the partner
// trusts) and f's intent, user and args.
func (c *Client) Battery(ctx context.Context, t Target, signer *signing.Signer, f signing.CallFields) []Check {
	if f.Args == nil {
		f.Args = json.RawMessage(`{}`)
	}
	b := &battery{c: c, t: t, signer: signer, f: f}
	// The round trip and its replay run in order; every other check runs beside them.
	checks := make([]Check, 9)
	var wg sync.WaitGroup
	side := func(i int, check func(context.Context) Check) { wg.Go(func() { checks[i] = check(ctx) }) }

	// 1. The real thing.
	var first []byte
	var firstHeader http.Header
	checks[0], first, firstHeader = b.roundTrip(ctx)

	// 2-5. Requests that must be refused with 401 or 403.
	side(1, b.unsigned)
	side(2, b.anotherKey)
	side(3, b.badSignature)
	side(4, b.staleTimestamp)
	side(5, b.idempotencyKeyMismatch)

	// 6. The first request again, byte for byte: deduped (the same answer) or refused.
	checks[6] = b.replay(ctx, first, firstHeader)

	// 7. Wrong content type: advice only (the signature still protects the body).
	side(7, b.wrongContentType)

	// 8. An oversized body, signed: refused before it is read whole.
	side(8, b.oversizedBody)
	wg.Wait()
	return checks
}

// battery is one run of the checks against one endpoint.
type battery struct {
	c      *Client
	t      Target
	signer *signing.Signer
	f      signing.CallFields
}

func refused(status int) bool { return status == 401 || status == 403 }

func refusedOK(status int, _ []byte) string {
	if refused(status) {
		return CheckPass
	}
	return CheckFail
}

// send posts body with header to the endpoint and reads at most 1 MiB of the answer.
func (b *battery) send(ctx context.Context, body []byte, header http.Header) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, b.t.timeout())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.t.Endpoint, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header = header
	resp, err := b.c.newHTTPClient(b.c.transport).Do(req)
	if err != nil {
		return 0, nil, unwrapURLError(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, data, nil
}

// signed builds a request signed by s with a fresh requestId; mutate, when not nil, alters
// the envelope after signing.
func (b *battery) signed(s *signing.Signer, mutate func(*signing.Envelope)) ([]byte, http.Header, error) {
	env := &signing.Envelope{RequestID: signing.NewRequestID(), IntentDefinitionID: b.f.IntentDefinitionID, UserID: b.f.UserID, Args: b.f.Args}
	if err := s.Sign(env); err != nil {
		return nil, nil, err
	}
	if mutate != nil {
		mutate(env)
	}
	body, err := signing.MarshalEnvelope(env)
	if err != nil {
		return nil, nil, err
	}
	h := http.Header{}
	signing.SetHeaders(h, env, signing.BindingREST)
	return body, h, nil
}

// run sends one check's request (err: it could not be built) and judges the answer with ok.
func (b *battery) run(ctx context.Context, name, want, fix string, ok func(int, []byte) string, body []byte, h http.Header, err error) Check {
	ch := Check{Name: name, Want: want}
	if err != nil {
		ch.Verdict, ch.Fix = CheckFail, fmt.Sprintf("no answer (%v): make the endpoint reachable and answer within its timeout", err)
		return ch
	}
	status, resp, err := b.send(ctx, body, h)
	ch.Status = status
	if err != nil {
		ch.Verdict, ch.Fix = CheckFail, fmt.Sprintf("no answer (%v): make the endpoint reachable and answer within its timeout", err)
		return ch
	}
	ch.Verdict = ok(status, resp)
	if ch.Verdict != CheckPass {
		ch.Fix = fix
	}
	return ch
}

// roundTrip is the real thing; it also returns the request it sent, for the replay.
func (b *battery) roundTrip(ctx context.Context) (Check, []byte, http.Header) {
	body, h, err := b.signed(b.signer, nil)
	ch := b.run(ctx, "signed round trip", "2xx with {success, result}",
		"verify the signature with the service key (fetched from /.well-known/service-public-key) and answer {\"success\": true, \"result\": ...}",
		func(status int, resp []byte) string {
			if env, perr := ParseResponse(resp); status >= 200 && status < 300 && perr == "" && env.Success {
				return CheckPass
			}
			return CheckFail
		}, body, h, err)
	return ch, body, h.Clone()
}

func (b *battery) unsigned(ctx context.Context) Check {
	body, h, err := b.signed(b.signer, nil)
	if err == nil {
		var m map[string]json.RawMessage
		json.Unmarshal(body, &m)
		delete(m, "serviceSignature")
		body, _ = json.Marshal(m)
		h.Del(signing.HeaderSignature)
	}
	return b.run(ctx, "unsigned request", "401 or 403", "refuse a request without X-Service-Signature / serviceSignature with 401", refusedOK, body, h, err)
}

func (b *battery) anotherKey(ctx context.Context) Check {
	_, fakeKey, _ := ed25519.GenerateKey(rand.Reader)
	body, h, err := b.signed(signing.NewSigner(fakeKey), nil)
	return b.run(ctx, "signature by another key", "401 or 403", "verify with Switchboard's public key only, never a key the request brings", refusedOK, body, h, err)
}

func (b *battery) badSignature(ctx context.Context) Check {
	garbage := make([]byte, ed25519.SignatureSize)
	rand.Read(garbage)
	body, h, err := b.signed(b.signer, func(e *signing.Envelope) { e.ServiceSignature = base64.StdEncoding.EncodeToString(garbage) })
	if h != nil {
		h.Set(signing.HeaderSignature, base64.StdEncoding.EncodeToString(garbage))
	}
	return b.run(ctx, "64-byte signature that does not verify", "401 or 403", "check that the Ed25519 signature verifies, not only its length", refusedOK, body, h, err)
}

func (b *battery) staleTimestamp(ctx context.Context) Check {
	stale := b.signer.At(func() time.Time { return time.Now().Add(-6 * time.Minute) })
	body, h, err := b.signed(stale, nil)
	return b.run(ctx, "timestamp 6 minutes old", "401 or 403", "refuse a timestamp more than 5 minutes from your clock (either way): it is a replay window", refusedOK, body, h, err)
}

func (b *battery) idempotencyKeyMismatch(ctx context.Context) Check {
	body, h, err := b.signed(b.signer, nil)
	if h != nil {
		h.Set("Idempotency-Key", signing.NewRequestID())
	}
	return b.run(ctx, "Idempotency-Key different from requestId", "401 or 403", "refuse a request whose Idempotency-Key header differs from the envelope's requestId", refusedOK, body, h, err)
}

// replay sends the round trip's request twice more: once to learn the answer a deduping
// partner repeats, once judged.
func (b *battery) replay(ctx context.Context, first []byte, firstHeader http.Header) Check {
	var firstAnswer []byte
	if status, resp, err := b.send(ctx, first, firstHeader.Clone()); err == nil && status >= 200 && status < 300 {
		firstAnswer = resp
	}
	return b.run(ctx, "the same request again (replayed requestId)", "the same answer (deduped on requestId), or 401/403",
		"dedupe on requestId: keep the answer about 60 seconds and return it for a repeat instead of acting twice",
		func(status int, resp []byte) string {
			switch {
			case refused(status), status >= 200 && status < 300 && bytes.Equal(bytes.TrimSpace(resp), bytes.TrimSpace(firstAnswer)):
				return CheckPass
			case status >= 200 && status < 300:
				return CheckWarn // a different answer: it may have acted twice
			}
			return CheckFail
		}, first, firstHeader.Clone(), nil)
}

func (b *battery) wrongContentType(ctx context.Context) Check {
	body, h, err := b.signed(b.signer, nil)
	if h != nil {
		h.Set("Content-Type", "text/plain")
	}
	return b.run(ctx, "Content-Type text/plain", "400 or 415", "accept application/json only (Switchboard always sends it)",
		func(status int, _ []byte) string {
			if status == 400 || status == 415 || refused(status) {
				return CheckPass
			}
			return CheckWarn
		}, body, h, err)
}

func (b *battery) oversizedBody(ctx context.Context) Check {
	bigArgs, _ := json.Marshal(map[string]string{"query": strings.Repeat("a", 2<<20)})
	env := &signing.Envelope{RequestID: signing.NewRequestID(), IntentDefinitionID: b.f.IntentDefinitionID, UserID: b.f.UserID, Args: bigArgs}
	err := b.signer.Sign(env)
	body, _ := signing.MarshalEnvelope(env)
	h := http.Header{}
	signing.SetHeaders(h, env, signing.BindingREST)
	return b.run(ctx, "2 MiB body", "413 (or 400)", "bound the request body (1 MiB is plenty) and answer 413 past it",
		func(status int, _ []byte) string {
			if status == 413 || status == 400 || refused(status) {
				return CheckPass
			}
			return CheckFail
		}, body, h, err)
}

// ServiceBattery runs the battery signing with the service key (partner_test_endpoint).
func (c *Client) ServiceBattery(ctx context.Context, t Target, f signing.CallFields) []Check {
	return c.Battery(ctx, t, c.signer, f)
}

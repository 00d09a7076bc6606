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
	refused := func(status int) bool { return status == 401 || status == 403 }
	send := func(body []byte, header http.Header) (int, []byte, error) {
		ctx, cancel := context.WithTimeout(ctx, t.timeout())
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.Endpoint, bytes.NewReader(body))
		if err != nil {
			return 0, nil, err
		}
		req.Header = header
		resp, err := c.newHTTPClient(c.transport).Do(req)
		if err != nil {
			return 0, nil, unwrapURLError(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return resp.StatusCode, b, nil
	}
	signed := func(s *signing.Signer, mutate func(*signing.Envelope)) ([]byte, http.Header, error) {
		env := &signing.Envelope{RequestID: signing.NewRequestID(), IntentDefinitionID: f.IntentDefinitionID, UserID: f.UserID, Args: f.Args}
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
	run := func(name, want, fix string, ok func(int, []byte) string, body []byte, h http.Header, err error) Check {
		ch := Check{Name: name, Want: want}
		if err != nil {
			ch.Verdict, ch.Fix = CheckFail, fmt.Sprintf("no answer (%v): make the endpoint reachable and answer within its timeout", err)
			return ch
		}
		status, resp, err := send(body, h)
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
	refusedOK := func(status int, _ []byte) string {
		if refused(status) {
			return CheckPass
		}
		return CheckFail
	}
	// The round trip and its replay run in order; every other check runs beside them.
	checks := make([]Check, 9)
	var wg sync.WaitGroup
	side := func(i int, f func() Check) { wg.Go(func() { checks[i] = f() }) }

	// 1. The real thing.
	body, h, err := signed(signer, nil)
	checks[0] = (run("signed round trip", "2xx with {success, result}",
		"verify the signature with the service key (fetched from /.well-known/service-public-key) and answer {\"success\": true, \"result\": ...}",
		func(status int, resp []byte) string {
			if env, perr := ParseResponse(resp); status >= 200 && status < 300 && perr == "" && env.Success {
				return CheckPass
			}
			return CheckFail
		}, body, h, err))
	first := body
	firstHeader := h.Clone()

	// 2-5. Requests that must be refused with 401 or 403.
	side(1, func() Check {
		body, h, err := signed(signer, nil)
		if err == nil {
			var m map[string]json.RawMessage
			json.Unmarshal(body, &m)
			delete(m, "serviceSignature")
			body, _ = json.Marshal(m)
			h.Del(signing.HeaderSignature)
		}
		return run("unsigned request", "401 or 403", "refuse a request without X-Service-Signature / serviceSignature with 401", refusedOK, body, h, err)
	})
	side(2, func() Check {
		_, fakeKey, _ := ed25519.GenerateKey(rand.Reader)
		body, h, err := signed(signing.NewSigner(fakeKey), nil)
		return run("signature by another key", "401 or 403", "verify with Switchboard's public key only, never a key the request brings", refusedOK, body, h, err)
	})
	side(3, func() Check {
		garbage := make([]byte, ed25519.SignatureSize)
		rand.Read(garbage)
		body, h, err := signed(signer, func(e *signing.Envelope) { e.ServiceSignature = base64.StdEncoding.EncodeToString(garbage) })
		if h != nil {
			h.Set(signing.HeaderSignature, base64.StdEncoding.EncodeToString(garbage))
		}
		return run("64-byte signature that does not verify", "401 or 403", "check that the Ed25519 signature verifies, not only its length", refusedOK, body, h, err)
	})
	side(4, func() Check {
		stale := signer.At(func() time.Time { return time.Now().Add(-6 * time.Minute) })
		body, h, err := signed(stale, nil)
		return run("timestamp 6 minutes old", "401 or 403", "refuse a timestamp more than 5 minutes from your clock (either way): it is a replay window", refusedOK, body, h, err)
	})
	side(5, func() Check {
		body, h, err := signed(signer, nil)
		if h != nil {
			h.Set("Idempotency-Key", signing.NewRequestID())
		}
		return run("Idempotency-Key different from requestId", "401 or 403", "refuse a request whose Idempotency-Key header differs from the envelope's requestId", refusedOK, body, h, err)
	})

	// 6. The first request again, byte for byte: deduped (the same answer) or refused.
	var firstAnswer []byte
	if status, resp, err := send(first, firstHeader.Clone()); err == nil && status >= 200 && status < 300 {
		firstAnswer = resp
	}
	checks[6] = (run("the same request again (replayed requestId)", "the same answer (deduped on requestId), or 401/403",
		"dedupe on requestId: keep the answer about 60 seconds and return it for a repeat instead of acting twice",
		func(status int, resp []byte) string {
			switch {
			case refused(status), status >= 200 && status < 300 && bytes.Equal(bytes.TrimSpace(resp), bytes.TrimSpace(firstAnswer)):
				return CheckPass
			case status >= 200 && status < 300:
				return CheckWarn // a different answer: it may have acted twice
			}
			return CheckFail
		}, first, firstHeader.Clone(), nil))

	// 7. Wrong content type: advice only (the signature still protects the body).
	side(7, func() Check {
		body, h, err := signed(signer, nil)
		if h != nil {
			h.Set("Content-Type", "text/plain")
		}
		return run("Content-Type text/plain", "400 or 415", "accept application/json only (Switchboard always sends it)",
			func(status int, _ []byte) string {
				if status == 400 || status == 415 || refused(status) {
					return CheckPass
				}
				return CheckWarn
			}, body, h, err)
	})

	// 8. An oversized body, signed: refused before it is read whole.
	side(8, func() Check {
		bigArgs, _ := json.Marshal(map[string]string{"query": strings.Repeat("a", 2<<20)})
		env := &signing.Envelope{RequestID: signing.NewRequestID(), IntentDefinitionID: f.IntentDefinitionID, UserID: f.UserID, Args: bigArgs}
		err := signer.Sign(env)
		body, _ := signing.MarshalEnvelope(env)
		h := http.Header{}
		signing.SetHeaders(h, env, signing.BindingREST)
		return run("2 MiB body", "413 (or 400)", "bound the request body (1 MiB is plenty) and answer 413 past it",
			func(status int, _ []byte) string {
				if status == 413 || status == 400 || refused(status) {
					return CheckPass
				}
				return CheckFail
			}, body, h, err)
	})
	wg.Wait()
	return checks
}

// ServiceBattery runs the battery signing with the service key (partner_test_endpoint).
func (c *Client) ServiceBattery(ctx context.Context, t Target, f signing.CallFields) []Check {
	return c.Battery(ctx, t, c.signer, f)
}

package outbound

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/switchboard-hq/switchboard/signing"
)

// Probe request names.
const (
	ProbeUnsigned = "unsigned"
	ProbeForged   = "forged_signature"
)

// Step verdicts: how the endpoint answered one probe request.
const (
	StepRejected     = "REJECTED"     // 401 or 403: what a correct partner answers
	StepAccepted     = "ACCEPTED"     // 2xx: the endpoint served a request it should have refused
	StepWrongStatus  = "WRONG_STATUS" // any other status: not a clear refusal
	StepInconclusive = "INCONCLUSIVE" // timeout or network error: try again
	StepBlocked      = "BLOCKED"      // the SSRF guard refused the address
)

// Probe verdicts.
const (
	ProbePass         = "PASS"         // both requests answered 401 or 403
	ProbeFail         = "FAIL"         // the endpoint accepted, or did not clearly refuse, a request
	ProbeInconclusive = "INCONCLUSIVE" // a request timed out or failed on the network
)

// ProbeStep is how the endpoint answered one probe request.
type ProbeStep struct {
	Request   string `json:"request" jsonschema:"enum=unsigned,enum=forged_signature" jsonschema_description:"unsigned: no signature at all; forged_signature: a well-formed signature by a key that is not Switchboard's"`
	Verdict   string `json:"verdict" jsonschema:"enum=REJECTED,enum=ACCEPTED,enum=WRONG_STATUS,enum=INCONCLUSIVE,enum=BLOCKED"`
	Status    int    `json:"status,omitempty" jsonschema_description:"HTTP status of the answer, when one came"`
	LatencyMs int64  `json:"latencyMs"`
	Detail    string `json:"detail"`
}

// ProbeReport is the negative-auth probe's outcome: PASS only when both the unsigned and
// the forged request were answered 401 or 403.
type ProbeReport struct {
	Verdict string      `json:"verdict" jsonschema:"enum=PASS,enum=FAIL,enum=INCONCLUSIVE" jsonschema_description:"PASS: both refused with 401/403; FAIL: a request was accepted or not clearly refused; INCONCLUSIVE: timeout or network error, retry"`
	Reason  string      `json:"reason"`
	Steps   []ProbeStep `json:"steps"`
}

// Passed reports whether the probe passed.
func (r *ProbeReport) Passed() bool { return r.Verdict == ProbePass }

// Probe runs the negative-auth probe against t: one unsigned request and one with a
// well-formed signature made by a throwaway key, both with f's intent, user and args
// (fresh request ids), concurrently. It never returns an error: every outcome is a
// report.
func (c *Client) Probe(ctx context.Context, t Target, f signing.CallFields) *ProbeReport {
	_, fake, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	forger := signing.NewSigner(fake)
	if c.signer != nil {
		forger.Now = c.signer.Now
	}
	if len(bytes.TrimSpace(f.Args)) == 0 {
		f.Args = json.RawMessage("{}")
	}
	steps := make([]ProbeStep, 2)
	var wg sync.WaitGroup
	wg.Go(func() {
		g := f
		g.RequestID = signing.NewRequestID()
		steps[0] = c.probeStep(ctx, t, ProbeUnsigned, nil, g)
	})
	wg.Go(func() {
		g := f
		g.RequestID = signing.NewRequestID()
		steps[1] = c.probeStep(ctx, t, ProbeForged, forger, g)
	})
	wg.Wait()
	return summarize(steps)
}

func summarize(steps []ProbeStep) *ProbeReport {
	rep := &ProbeReport{Steps: steps}
	find := func(v string) *ProbeStep {
		for i := range steps {
			if steps[i].Verdict == v {
				return &steps[i]
			}
		}
		return nil
	}
	what := map[string]string{ProbeUnsigned: "an unsigned request", ProbeForged: "a request with a forged signature"}
	switch {
	case find(StepAccepted) != nil:
		s := find(StepAccepted)
		rep.Verdict = ProbeFail
		rep.Reason = fmt.Sprintf("the endpoint accepted %s (HTTP %d): anyone could call it. Verify X-Service-Signature on every request (signing.Middleware, or signing.MCPMiddleware for MCP_HTTP) and answer 401 when it is missing or wrong", what[s.Request], s.Status)
	case find(StepBlocked) != nil:
		rep.Verdict = ProbeFail
		rep.Reason = find(StepBlocked).Detail
	case find(StepWrongStatus) != nil:
		s := find(StepWrongStatus)
		rep.Verdict = ProbeFail
		rep.Reason = fmt.Sprintf("the endpoint answered %s with HTTP %d; it must answer 401 or 403. %s", what[s.Request], s.Status, s.Detail)
	case find(StepInconclusive) != nil:
		rep.Verdict = ProbeInconclusive
		rep.Reason = "inconclusive, retry: " + find(StepInconclusive).Detail
	default:
		rep.Verdict = ProbePass
		rep.Reason = "the endpoint refused both the unsigned and the forged request with 401/403"
	}
	return rep
}

// probeStep sends one probe request; forger nil means unsigned.
func (c *Client) probeStep(ctx context.Context, t Target, name string, forger *signing.Signer, f signing.CallFields) ProbeStep {
	ctx, cancel := context.WithTimeout(ctx, t.timeout())
	defer cancel()
	step := ProbeStep{Request: name}
	start := c.now()
	var status int
	var err error
	if t.mcp() {
		rec := &recorder{base: c.transport}
		var rt http.RoundTripper = rec
		var fields *signing.CallFields
		if forger != nil {
			rt = signing.NewMCPRoundTripper(forger, rec)
			fields = &f
		}
		var res *Result
		res, err = c.callMCP(ctx, t, rt, rec, fields)
		if err == nil {
			status = res.Status
		}
	} else {
		status, err = c.probeREST(ctx, t, forger, f)
	}
	step.LatencyMs = c.now().Sub(start).Milliseconds()
	switch {
	case err != nil && IsBlocked(err):
		step.Verdict, step.Detail = StepBlocked, err.Error()
	case err != nil && IsTimeout(err):
		step.Verdict, step.Detail = StepInconclusive, fmt.Sprintf("no answer within %s", t.timeout())
	case err != nil:
		step.Verdict, step.Detail = StepInconclusive, "network error: "+err.Error()
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		step.Status, step.Verdict, step.Detail = status, StepRejected, "refused, as it should"
	case status >= 200 && status < 300:
		step.Status, step.Verdict, step.Detail = status, StepAccepted, "served a request that is not signed by Switchboard"
	default:
		step.Status, step.Verdict = status, StepWrongStatus
		switch {
		case status >= 300 && status < 400:
			step.Detail = "redirects are not followed; publish the final URL"
		case status == http.StatusServiceUnavailable:
			step.Detail = "503 means the partner's verifier had no public key: check it can fetch /.well-known/service-public-key"
		default:
			step.Detail = "check the signature before anything else (shape, upstream calls) and answer 401 or 403"
		}
	}
	return step
}

// probeREST POSTs the envelope unsigned (forger nil) or signed by forger, and returns the
// HTTP status. The body is read (up to the cap) and dropped.
func (c *Client) probeREST(ctx context.Context, t Target, forger *signing.Signer, f signing.CallFields) (int, error) {
	var hc *http.Client
	var req *http.Request
	var err error
	if forger != nil {
		hc = c.newHTTPClient(signing.NewRESTRoundTripper(forger, f, c.transport))
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, t.Endpoint, http.NoBody)
	} else {
		hc = c.http
		env := &signing.Envelope{RequestID: f.RequestID, IntentDefinitionID: f.IntentDefinitionID, UserID: f.UserID,
			Args: f.Args, Timestamp: c.now().UnixMilli()}
		var body []byte
		if body, err = json.Marshal(env); err != nil {
			return 0, fmt.Errorf("probe envelope: %w", err)
		}
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, t.Endpoint, bytes.NewReader(body))
		if err == nil {
			req.Header.Set(signing.HeaderContentType, "application/json")
			req.Header.Set(signing.HeaderIdempotencyKey, env.RequestID)
			req.Header.Set(signing.HeaderRequestID, env.RequestID)
			req.Header.Set(signing.HeaderIntentID, env.IntentDefinitionID)
			req.Header.Set(signing.HeaderTimestamp, strconv.FormatInt(env.Timestamp, 10))
		}
	}
	if err != nil {
		return 0, &URLError{"not a valid URL: " + err.Error()}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, unwrapURLError(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

package outbound

// Outcome is what one signed call came to, by the spec's billing table: only a 2xx answer with
// success true is a success. Dispatch maps outcomes to charges and errors; the test-endpoint
// report shows them to the partner. One classification for both.
type Outcome string

// The outcomes of a call.
const (
	OutcomeOK            Outcome = "OK"              // 2xx, success true
	OutcomePartnerAnswer Outcome = "PARTNER_FAILURE" // success false with code and message, not 5xx, 401 or 403: the partner's considered "no"
	OutcomeRefused       Outcome = "REFUSED"         // 401 or 403: the partner refused Switchboard's signature
	OutcomeServerError   Outcome = "SERVER_ERROR"    // 5xx with a failure envelope
	OutcomeBadResponse   Outcome = "BAD_RESPONSE"    // no response envelope, or success true under a non-2xx status
	OutcomeTimeout       Outcome = "TIMEOUT"         // no answer before the deadline
	OutcomeBlocked       Outcome = "BLOCKED"         // the SSRF guard refused the address
	OutcomeNoAnswer      Outcome = "NO_ANSWER"       // the network failed
)

// Classify returns the outcome of a call that returned res and err.
func Classify(res *Result, err error) Outcome {
	switch {
	case err != nil && IsBlocked(err):
		return OutcomeBlocked
	case err != nil && IsTimeout(err):
		return OutcomeTimeout
	case err != nil:
		return OutcomeNoAnswer
	case res.Status == 401 || res.Status == 403:
		return OutcomeRefused
	case res.Envelope == nil:
		return OutcomeBadResponse
	case res.Envelope.Success && res.OK():
		return OutcomeOK
	case res.Envelope.Success:
		return OutcomeBadResponse
	case res.Status >= 500:
		return OutcomeServerError
	default:
		return OutcomePartnerAnswer
	}
}

package tools

import "time"

// ContinueKind is what a call that stopped to ask someone waits for.
type ContinueKind string

const (
	// ContinueConfirm: the caller's user approves or declines a quote (CONFIRMATION_REQUIRED);
	// the call goes on with a Decision on it.
	ContinueConfirm ContinueKind = "confirm"
	// ContinueApprove: the account's owner decides in the portal (APPROVAL_REQUIRED,
	// APPROVAL_PENDING); the caller may only check again, with a Decision that never declines.
	ContinueApprove ContinueKind = "approve"
)

// Continuation is how a call that answered an error goes on: what a door shows a human and
// which request the answer names. It travels on Error.Continue, beside the wire's details, so
// a door asks from these fields alone, whatever the details are named.
type Continuation struct {
	Kind      ContinueKind `json:"kind"`
	RequestID string       `json:"requestId"`
	ExpiresAt time.Time    `json:"expiresAt"`
	// Summary is what the human is shown, a line each ("" for a blank line): what the call
	// does and what it costs. How to answer is the door's to say.
	Summary []string `json:"summary"`
}

// Decision is the caller's answer to a continuation, given by the door beside the
// arguments (never written into them): go on with request RequestID, or, for a quote,
// Decline it. Checking an approval again is a Decision that does not decline.
type Decision struct {
	RequestID string
	Decline   bool
}

// WithContinue returns e with its continuation set.
func (e *Error) WithContinue(c *Continuation) *Error {
	e.Continue = c
	return e
}

// decide puts the request's decision on the caller, for a tool that declares TakesDecision;
// any other tool is refused one, since it would run as if nobody had answered.
func decide(t *Tool, c *Caller, d *Decision) error {
	switch {
	case d == nil:
		return nil
	case !t.TakesDecision:
		return Errorf(CodeBadInput, "%s asks nobody to decide anything, so it takes no decision: call it again without the answer to another call's question", t.Name)
	case d.RequestID == "":
		return Errorf(CodeBadInput, "a decision must name the request it answers (its requestId)")
	}
	c.Decision = d
	return nil
}

package policies

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/spending"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/service"
	"github.com/switchboard-hq/switchboard/tools/webhooks"
)

// An approval's life, in one home: a call billing's judge sends to a human
// (billing.ErrApprovalRequired) is asked for (Ask: the approval row and approval.requested
// beside the call's record, written by its ticket, then the owner's notice), answered by the
// owner (Decide), read by the call asked for again (Standing), and closed when it will not go
// out (Close: declined, expired, or approved but asked for again too late), and answered to
// the agent as it stands (Ask's APPROVAL_REQUIRED, Await's APPROVAL_PENDING or closing), for
// every tool whose movements the owner approves. The tools read and write no approval
// themselves.

// ApprovalWindow is how long an owner has to decide a call sent for approval.
const ApprovalWindow = time.Hour

// Lag is how long after it was asked for an approved call may still go out (spending.Lag: the
// spend windows look that much further back for the calls they count).
const Lag = spending.Lag

// Where an approval stands for its call (Standing.State). A pending approval past its expiry
// is expired; an approved one asked for again after Lag is lapsed.
const (
	Pending  = spending.ApprovalPending
	Approved = spending.ApprovalApproved
	Declined = spending.ApprovalDeclined
	Expired  = spending.ApprovalExpired
	Lapsed   = "lapsed"
)

// Notify e-mails an account's owner.
type Notify func(ctx context.Context, accountID, subject, text string) error

// Approvals is an approval's life (see above).
type Approvals struct {
	store    *store.Store
	spending spending.Queries
	notify   Notify // nil: the portal's inbox and the approval.requested event tell the owner
	now      func() time.Time
	log      *slog.Logger
}

// NewApprovals builds an approval's life on d's store; notify (nil: none) e-mails the owner
// that a call waits. The call's record is written by its ticket (Ask, Close).
func NewApprovals(d service.Deps, notify Notify) *Approvals {
	d = d.WithDefaults()
	return &Approvals{store: d.Store, spending: spending.New(d.Store), notify: notify, now: d.Now, log: d.Log}
}

// Ask is a call billing's judge sent to the account's owner.
type Ask struct {
	// Record is the call's record, not written yet: Ask writes it (its ticket does) in state
	// awaiting_approval.
	Record *store.Invocation
	// Rule is the rule that asked (billing.ErrApprovalRequired's).
	Rule string
	// WorstMicro is the most the call can cost; Charge itemizes it as the approval shows it
	// (decimal USD strings by part).
	WorstMicro int64
	Charge     map[string]any
	// Details are shown beside the approval's own in its APPROVAL_REQUIRED answer (a
	// proposal's transactions).
	Details map[string]any
	Asking
}

// Asking is how the answers of an approval's life name what waits, for the tool that asks.
type Asking struct {
	// What is what waits: "this call", "this send", "this payment".
	What string
	// Nothing is what did not happen meanwhile: "nothing was sent, held or charged".
	Nothing string
	// Again is what the agent calls once the owner decided, before "and confirmRequestId
	// <id>": "call wallet_send again with the same chain, token, to and amount".
	Again string
	// Continues: the tool takes its door's decision (tools.Tool.TakesDecision), so the
	// answers carry the approval's continuation for the door to ask its user about.
	Continues bool
}

// retryPending is how long an agent is asked to wait before asking again about a pending
// approval.
const retryPending = 30 * time.Second

// Ask records a.Record awaiting approval through its ticket t, with the approval, its
// approval.requested event and also's rows (a flat fee's quoted payment) in the record's one
// transaction, then e-mails the owner, and returns the agent's answer: APPROVAL_REQUIRED,
// with the approval's details (and continuation). A deployment without approvals (l nil)
// refuses the call (POLICY_DENIED) with nothing written.
func (l *Approvals) Ask(ctx context.Context, t *billing.Ticket, a Ask, also ...func(ctx context.Context, q *store.Q) error) error {
	if l == nil {
		return tools.Errorf(tools.CodePolicyDenied, "the account's spend policy sends %s to its owner first (%s), and approvals are not available here; %s", a.What, a.Rule, a.Nothing).
			WithDetails(map[string]any{"rule": a.Rule})
	}
	inv := a.Record
	row := &spending.Approval{RequestID: inv.RequestID, AccountID: inv.AccountID, KeyID: inv.KeyID, Handle: inv.Handle, Category: inv.Category,
		Rule: a.Rule, WorstMicro: a.WorstMicro, State: spending.ApprovalPending, CreatedAt: inv.CreatedAt, ExpiresAt: inv.CreatedAt.Add(ApprovalWindow)}
	raw, err := json.Marshal(a.Charge)
	if err != nil {
		return err
	}
	row.Charge = string(raw)
	itemized := map[string]string{}
	for k, v := range a.Charge {
		itemized[k] = fmt.Sprint(v)
	}
	also = append(also, func(ctx context.Context, q *store.Q) error {
		if err := spending.InsertApproval(ctx, q, row); err != nil {
			return err
		}
		return webhooks.EmitApprovalRequested(ctx, q, row.AccountID, row.CreatedAt, webhooks.ApprovalRequestedData{RequestID: row.RequestID, KeyID: row.KeyID,
			Handle: row.Handle, Category: row.Category, Rule: row.Rule, Charge: itemized, MaxChargeUsd: tools.USD(a.WorstMicro).String(), ExpiresAt: row.ExpiresAt})
	})
	inv.State = store.InvAwaitingApproval
	if err := t.Ask(ctx, inv, "sent to the account's owner for approval ("+a.Rule+")", also...); err != nil {
		return err
	}
	l.tellOwner(ctx, row)
	details := map[string]any{"requestId": inv.RequestID, "rule": a.Rule, "charge": a.Charge, "expiresAt": row.ExpiresAt, "handle": inv.Handle}
	maps.Copy(details, a.Details)
	e := tools.Errorf(tools.CodeApprovalRequired,
		"the account's spend policy sends %s to its owner first (%s): %s. The owner decides in the portal (Approvals), within %d minutes; "+
			"then %s and confirmRequestId %q (until it is decided that answers APPROVAL_PENDING)",
		a.What, a.Rule, a.Nothing, int(ApprovalWindow.Minutes()), a.Again, inv.RequestID).WithDetails(details)
	if a.Continues {
		e.Continue = awaitingOwner(inv, a.Rule, row.ExpiresAt, a.WorstMicro)
	}
	return e
}

// awaitingOwner is the continuation of a call its owner decides: the caller may only check
// again. worst is the most it can cost (negative: not shown).
func awaitingOwner(inv *store.Invocation, rule string, expiresAt time.Time, worst int64) *tools.Continuation {
	lines := []string{fmt.Sprintf("The account's spend policy sends this call of %s to its owner for approval (%s). Nothing was sent or charged.", inv.Handle, rule)}
	if worst >= 0 {
		lines = append(lines, fmt.Sprintf("It may cost up to %s USD.", tools.USD(worst)))
	}
	return &tools.Continuation{Kind: tools.ContinueApprove, RequestID: inv.RequestID, ExpiresAt: expiresAt, Summary: lines}
}

// tellOwner e-mails the account's owner that a call waits for their decision.
func (l *Approvals) tellOwner(ctx context.Context, a *spending.Approval) {
	if l.notify == nil {
		return
	}
	text := "A call of " + a.Handle + " (" + a.Category + ") that may cost up to " + tools.USD(a.WorstMicro).String() + " USD waits for your approval (" + a.Rule + ").\n\n" +
		"Approve or decline it in the portal, under Approvals, before " + a.ExpiresAt.UTC().Format(time.RFC1123) + ". Nothing is sent or charged until you approve it.\n\n" +
		"Request: " + a.RequestID + "\n"
	if err := l.notify(context.WithoutCancel(ctx), a.AccountID, "Approve a call of "+a.Handle+"?", text); err != nil {
		l.log.WarnContext(ctx, "tell the owner of an approval", "request_id", a.RequestID, "err", err)
	}
}

// Decide records the owner's decision (by: who decided, e.g. "portal") on a pending approval,
// with its approval.decided event, in one transaction. decided is false, with nothing
// changed, when it was decided already or has expired. Nothing is sent or charged by it.
func (l *Approvals) Decide(ctx context.Context, accountID, requestID string, approve bool, by string) (decided bool, err error) {
	now := l.now().UTC()
	state := spending.ApprovalDeclined
	if approve {
		state = spending.ApprovalApproved
	}
	err = l.store.InTx(ctx, func(ctx context.Context, q *store.Q) (err error) {
		decided, err = spending.DecideApproval(ctx, q, accountID, requestID, state, by, now)
		if err != nil || !decided {
			return err
		}
		a, err := spending.ApprovalIn(ctx, q, accountID, requestID)
		if err != nil {
			return err
		}
		return webhooks.EmitApprovalDecided(ctx, q, accountID, now, webhooks.ApprovalDecidedData{RequestID: requestID, Handle: a.Handle, Decision: state, DecidedAt: now})
	})
	return decided, err
}

// Standing is where a call's approval stands when the call is asked for again.
type Standing struct {
	State     string // Pending, Approved, Declined, Expired or Lapsed
	Rule      string
	ExpiresAt time.Time
	Charge    json.RawMessage // the itemized charge, as asked
	worst     int64           // the most the call can cost
}

// Standing reads where the approval of inv (a call awaiting approval) stands now
// (store.ErrNotFound: it has none).
func (l *Approvals) Standing(ctx context.Context, inv *store.Invocation) (Standing, error) {
	a, err := l.spending.Approval(ctx, inv.AccountID, inv.RequestID)
	if err != nil {
		return Standing{}, err
	}
	now := l.now()
	st := Standing{State: a.StateAt(now), Rule: a.Rule, ExpiresAt: a.ExpiresAt, Charge: json.RawMessage(a.Charge), worst: a.WorstMicro}
	if st.State == Approved && now.Sub(inv.CreatedAt) > Lag {
		// Approved, but asked for again too late: the spend windows count a call from when it
		// goes out, and look back only so far for it.
		st.State = Lapsed
	}
	return st, nil
}

// Await answers inv, a call asked for again while it waits for its owner's approval, through
// its ticket t: nil when the owner approved it in time, so it may go out now; otherwise the
// answer: APPROVAL_PENDING (asked to retry after 30 s), or, for a call the approval does not
// let out (declined, expired, lapsed), the CONFLICT its closing recorded. A call another
// call moved first is a CONFLICT wrapping billing.ErrMoved: its record answers.
func (l *Approvals) Await(ctx context.Context, t *billing.Ticket, inv *store.Invocation, a Asking) error {
	if l == nil {
		return tools.Errorf(tools.CodeConflict, "request %s waits for an approval this deployment cannot read", inv.RequestID)
	}
	st, err := l.Standing(ctx, inv)
	if err != nil {
		return err
	}
	switch st.State {
	case Approved:
		return nil
	case Pending:
		details := map[string]any{"requestId": inv.RequestID, "rule": st.Rule, "expiresAt": st.ExpiresAt, "handle": inv.Handle}
		if json.Valid(st.Charge) { // as Ask wrote it; anything else would break the answer's JSON
			details["charge"] = st.Charge
		}
		e := tools.Errorf(tools.CodeApprovalPending, "%s (request %s): the account's owner has not decided yet in the portal (until %s); call again with the same confirmRequestId after %d seconds",
			a.What, inv.RequestID, st.ExpiresAt.UTC().Format(time.RFC3339), int(retryPending.Seconds())).WithDetails(details)
		e.RetryAfter = retryPending
		if a.Continues {
			e.Continue = awaitingOwner(inv, st.Rule, st.ExpiresAt, st.worst)
		}
		return e
	}
	closed, answer, err := l.Close(ctx, t, inv, st.State)
	switch {
	case err != nil:
		return err
	case !closed:
		return tools.Errorf(tools.CodeConflict, "request %s was moved by another call meanwhile; call again with the same confirmRequestId to read its outcome", inv.RequestID).
			WithDetails(map[string]any{"requestId": inv.RequestID}).Wrap(billing.ErrMoved)
	}
	return answer
}

// Close ends inv, a call its approval does not let out (how: Declined, Expired or Lapsed),
// through its ticket t: nothing was sent or held; its record is closed with answer (the CONFLICT returned), replayed
// to anyone who asks again, and an expiry is told as approval.decided beside it (a decision
// the owner made was told when it was made). closed is false, with nothing written, when
// another call moved the record first: its record answers.
func (l *Approvals) Close(ctx context.Context, t *billing.Ticket, inv *store.Invocation, how string) (closed bool, answer *tools.Error, err error) {
	what := map[string]string{Declined: "the account's owner declined it", Expired: "the account's owner did not approve it in time",
		Lapsed: fmt.Sprintf("it was approved, but not called again within %d hours of being asked for", int(Lag.Hours()))}[how]
	e := tools.Errorf(tools.CodeConflict, "request %s (%s) is closed: %s. Nothing was sent, held or charged. Ask the user before asking again",
		inv.RequestID, inv.Handle, what).
		WithDetails(map[string]any{"requestId": inv.RequestID, "approval": how})
	raw, _ := json.Marshal(tools.Body{Error: e})
	stored, now := string(raw), l.now().UTC()
	var also []func(ctx context.Context, q *store.Q) error
	if how == Expired {
		also = append(also, func(ctx context.Context, q *store.Q) error {
			return webhooks.EmitApprovalDecided(ctx, q, inv.AccountID, now, webhooks.ApprovalDecidedData{RequestID: inv.RequestID, Handle: inv.Handle,
				Decision: Expired, DecidedAt: now})
		})
	}
	closed, err = t.Close(ctx, inv, store.Outcome{State: store.InvDeclined, Answer: &stored, FinishedAt: &now,
		OutcomeCode: string(e.Code), OutcomeMessage: "approval " + how}, "approval "+how+"; nothing was sent", also...)
	if err != nil || !closed {
		return closed, nil, err
	}
	return true, e, nil
}

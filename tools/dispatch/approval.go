package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/policies"
)

// ApprovalWindow is how long an owner has to decide a call sent for approval (policies').
const ApprovalWindow = policies.ApprovalWindow

// approvalRetry is how long an agent is asked to wait before asking again about a pending
// approval.
const approvalRetry = 30 * time.Second

// admit applies the owner's spend policies to a new call (decided by billing.Admit) before
// anything is quoted or sent: a refusal is returned; a call a policy sends to a human is
// asked for (policies.Approvals.Ask: recorded awaiting approval, with record's rows, e.g. a
// flat fee's quoted payment) and answered APPROVAL_REQUIRED. It returns nil for a call that
// may go on.
func (s *Service) admit(ctx context.Context, cl *call, inv *store.Invocation, worst int64, charge map[string]any,
	record ...func(ctx context.Context, q *store.Q) error) error {
	err := cl.bill.Admit(ctx, worst)
	var ask *billing.ErrApprovalRequired
	if !errors.As(err, &ask) {
		return err
	}
	if !cl.flat { // a flat fee's args are its message (sameInput)
		inv.MessageHash = messageHash(cl.said)
	}
	expiresAt, err := s.approvals.Ask(ctx, cl.bill, policies.Ask{Record: inv, Rule: ask.Rule, WorstMicro: worst, Charge: charge}, record...)
	if err != nil {
		return err
	}
	return tools.Errorf(tools.CodeApprovalRequired,
		"the account's spend policy sends this call to its owner first (%s): nothing was sent, held or charged. The owner approves or declines it in the portal (Approvals), within %d minutes; "+
			"then call invoke_partner_message again with the same message and confirmRequestId %q (until it is decided that answers APPROVAL_PENDING)",
		ask.Rule, int(ApprovalWindow.Minutes()), inv.RequestID).
		WithDetails(map[string]any{"requestId": inv.RequestID, "rule": ask.Rule, "charge": charge, "expiresAt": expiresAt, "handle": inv.Handle}).
		WithContinue(awaitingOwner(inv, ask.Rule, expiresAt, charge["maxChargeUsd"]))
}

// awaitingOwner is the continuation of a call its owner decides: the caller may only check
// again. maxChargeUsd is the charge's most, a decimal string (anything else: not shown).
func awaitingOwner(inv *store.Invocation, rule string, expiresAt time.Time, maxChargeUsd any) *tools.Continuation {
	lines := []string{fmt.Sprintf("The account's spend policy sends this call of %s to its owner for approval (%s). Nothing was sent or charged.", inv.Handle, rule)}
	if m, _ := maxChargeUsd.(string); m != "" {
		lines = append(lines, fmt.Sprintf("It may cost up to %s USD.", m))
	}
	return &tools.Continuation{Kind: tools.ContinueApprove, RequestID: inv.RequestID, ExpiresAt: expiresAt, Summary: lines}
}

// chargeOf is a call's charge as an approval shows it, itemized, in USD.
func chargeOf(q billing.Quote) map[string]any {
	return map[string]any{"infrastructureUsd": tools.USD(q.ReserveMicro).String(), "partnerFeeUsd": tools.USD(q.MaxPartnerFeeMicro).String(),
		"platformFeeUsd": tools.USD(q.PlatformFeeMicro).String(), "gasEstimateUsd": tools.USD(q.GasEstimateMicro).String(),
		"totalUsd": tools.USD(q.ExpectedMicro()).String(), "maxChargeUsd": tools.USD(q.WorstMicro()).String()}
}

// approved answers a call waiting for approval, asked again with its requestId, by where its
// approval stands (policies.Approvals.Standing): pending is APPROVAL_PENDING (with
// Retry-After); declined, expired or lapsed closes it, nothing sent or held; approved
// dispatches it, once.
func (s *Service) approved(ctx context.Context, cl *call, inv *store.Invocation, in InvokeInput) (InvokeOutput, error) {
	a, err := s.approvals.Standing(ctx, inv)
	if err != nil {
		return InvokeOutput{}, err
	}
	switch a.State {
	case policies.Pending:
		e := tools.Errorf(tools.CodeApprovalPending, "request %s waits for the account's owner to approve it in the portal (until %s); call again with the same confirmRequestId after %d seconds",
			inv.RequestID, a.ExpiresAt.UTC().Format(time.RFC3339), int(approvalRetry.Seconds())).
			WithDetails(map[string]any{"requestId": inv.RequestID, "rule": a.Rule, "expiresAt": a.ExpiresAt, "handle": inv.Handle, "charge": a.Charge})
		var charge map[string]any
		_ = json.Unmarshal(a.Charge, &charge) // as Ask wrote it; unreadable, the summary leaves the charge out
		e.Continue = awaitingOwner(inv, a.Rule, a.ExpiresAt, charge["maxChargeUsd"])
		e.RetryAfter = approvalRetry
		return InvokeOutput{}, e
	case policies.Expired, policies.Declined, policies.Lapsed:
		return InvokeOutput{}, s.closeUnapproved(ctx, cl, inv, a.State)
	}
	if cl.intent.Revision != inv.IntentRevision {
		return InvokeOutput{}, tools.Errorf(tools.CodeConflict, "%s changed since the call was approved; call without confirmRequestId for a new one", cl.intent.PublicIdentifier)
	}
	if cl.flat {
		if in.Payment == nil && !in.PayWithWallet {
			return InvokeOutput{}, s.quoteAgain(ctx, cl.intent, inv)
		}
		return s.payAndDispatch(ctx, cl, inv, in)
	}
	cl.args, cl.quote = []byte(inv.Args), billing.QuoteOf(inv.Price)
	out, err := s.dispatch(ctx, cl, inv, store.InvAwaitingApproval)
	return s.proposed(ctx, cl, out, err)
}

// closeUnapproved ends a call its approval does not let out (policies.Approvals.Close), or,
// when another call moved it first, answers by that call's record.
func (s *Service) closeUnapproved(ctx context.Context, cl *call, inv *store.Invocation, how string) error {
	closed, answer, err := s.approvals.Close(ctx, cl.bill, inv, how)
	if err != nil {
		return err
	}
	if !closed { // moved by another call first: its record answers
		done, err := s.invocations.Get(ctx, inv.AccountID, inv.RequestID)
		if err != nil {
			return err
		}
		_, err = replay(done)
		return err
	}
	return answer
}

package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/spending"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/webhooks"
)

// ApprovalWindow is how long an owner has to decide a call sent for approval.
const ApprovalWindow = time.Hour

// approvalRetry is how long an agent is asked to wait before asking again about a pending
// approval.
const approvalRetry = 30 * time.Second

// admit applies the owner's spend policies to a new call (decided by billing.Admit) before
// anything is quoted or sent: a refusal is returned; a call a policy sends to a human is
// recorded awaiting approval (with record's rows, e.g. a flat fee's quoted payment) and
// answered APPROVAL_REQUIRED. It returns nil for a call that may go on.
func (s *Service) admit(ctx context.Context, cl *call, inv *store.Invocation, worst int64, charge map[string]any,
	record ...func(ctx context.Context, q *store.Q) error) error {
	err := cl.bill.Admit(ctx, worst)
	var ask *billing.ErrApprovalRequired
	if !errors.As(err, &ask) {
		return err
	}
	a := &spending.Approval{RequestID: inv.RequestID, AccountID: inv.AccountID, KeyID: inv.KeyID, Handle: inv.Handle, Category: inv.Category,
		Rule: ask.Rule, WorstMicro: worst, State: spending.ApprovalPending, CreatedAt: inv.CreatedAt, ExpiresAt: inv.CreatedAt.Add(ApprovalWindow)}
	raw, err := json.Marshal(charge)
	if err != nil {
		return err
	}
	a.Charge = string(raw)
	inv.State = store.InvAwaitingApproval
	if !cl.flat { // a flat fee's args are its message (sameInput)
		inv.MessageHash = messageHash(cl.said)
	}
	itemized := map[string]string{}
	for k, v := range charge {
		itemized[k] = fmt.Sprint(v)
	}
	record = append(record, func(ctx context.Context, q *store.Q) error {
		if err := spending.InsertApproval(ctx, q, a); err != nil {
			return err
		}
		return webhooks.EmitApprovalRequested(ctx, q, a.AccountID, a.CreatedAt, webhooks.ApprovalRequestedData{RequestID: a.RequestID, KeyID: a.KeyID,
			Handle: a.Handle, Category: a.Category, Rule: a.Rule, Charge: itemized, MaxChargeUsd: tools.USD(worst).String(), ExpiresAt: a.ExpiresAt})
	})
	if err := cl.bill.Ask(ctx, inv, "sent to the account's owner for approval ("+ask.Rule+")", record...); err != nil {
		return err
	}
	s.tellOwner(ctx, a)
	return tools.Errorf(tools.CodeApprovalRequired,
		"the account's spend policy sends this call to its owner first (%s): nothing was sent, held or charged. The owner approves or declines it in the portal (Approvals), within %d minutes; "+
			"then call invoke_partner_message again with the same message and confirmRequestId %q (until it is decided that answers APPROVAL_PENDING)",
		ask.Rule, int(ApprovalWindow.Minutes()), inv.RequestID).
		WithDetails(map[string]any{"requestId": inv.RequestID, "rule": ask.Rule, "charge": charge, "expiresAt": a.ExpiresAt, "handle": inv.Handle})
}

// tellOwner e-mails the account's owner that a call waits for their decision.
func (s *Service) tellOwner(ctx context.Context, a *spending.Approval) {
	if s.cfg.Notify == nil {
		return
	}
	text := "A call of " + a.Handle + " (" + a.Category + ") that may cost up to " + tools.USD(a.WorstMicro).String() + " USD waits for your approval (" + a.Rule + ").\n\n" +
		"Approve or decline it in the portal, under Approvals, before " + a.ExpiresAt.UTC().Format(time.RFC1123) + ". Nothing is sent or charged until you approve it.\n\n" +
		"Request: " + a.RequestID + "\n"
	if err := s.cfg.Notify(context.WithoutCancel(ctx), a.AccountID, "Approve a call of "+a.Handle+"?", text); err != nil {
		s.log.WarnContext(ctx, "tell the owner of an approval", "request_id", a.RequestID, "err", err)
	}
}

// chargeOf is a call's charge as an approval shows it, itemized, in USD.
func chargeOf(q billing.Quote) map[string]any {
	return map[string]any{"infrastructureUsd": tools.USD(q.ReserveMicro).String(), "partnerFeeUsd": tools.USD(q.MaxPartnerFeeMicro).String(),
		"platformFeeUsd": tools.USD(q.PlatformFeeMicro).String(), "gasEstimateUsd": tools.USD(q.GasEstimateMicro).String(),
		"totalUsd": tools.USD(q.ExpectedMicro()).String(), "maxChargeUsd": tools.USD(q.WorstMicro()).String()}
}

// approved answers a call waiting for approval, asked again with its requestId: pending is
// APPROVAL_PENDING (with Retry-After); declined or expired closes it, nothing sent or held;
// approved dispatches it, once.
func (s *Service) approved(ctx context.Context, cl *call, inv *store.Invocation, in InvokeInput) (InvokeOutput, error) {
	a, err := s.spending.Approval(ctx, inv.AccountID, inv.RequestID)
	if err != nil {
		return InvokeOutput{}, err
	}
	switch a.StateAt(s.now()) {
	case spending.ApprovalPending:
		e := tools.Errorf(tools.CodeApprovalPending, "request %s waits for the account's owner to approve it in the portal (until %s); call again with the same confirmRequestId after %d seconds",
			inv.RequestID, a.ExpiresAt.UTC().Format(time.RFC3339), int(approvalRetry.Seconds())).
			WithDetails(map[string]any{"requestId": inv.RequestID, "rule": a.Rule, "expiresAt": a.ExpiresAt, "handle": inv.Handle, "charge": json.RawMessage(a.Charge)})
		e.RetryAfter = approvalRetry
		return InvokeOutput{}, e
	case spending.ApprovalExpired:
		return InvokeOutput{}, s.closeUnapproved(ctx, inv, "expired")
	case spending.ApprovalDeclined:
		return InvokeOutput{}, s.closeUnapproved(ctx, inv, "declined")
	}
	if s.now().Sub(inv.CreatedAt) > spending.Lag {
		// Approved, but asked for again too late: the spend windows count a call from when it
		// goes out, and look back only so far for it.
		return InvokeOutput{}, s.closeUnapproved(ctx, inv, "lapsed")
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
	return s.dispatch(ctx, cl, inv, store.InvAwaitingApproval)
}

// closeUnapproved ends a call its owner declined or let expire, or one approved but asked for
// again too late (lapsed): nothing was sent or held, and the answer is replayed to anyone who
// asks again.
func (s *Service) closeUnapproved(ctx context.Context, inv *store.Invocation, how string) error {
	what := map[string]string{"declined": "the account's owner declined it", "expired": "the account's owner did not approve it in time",
		"lapsed": fmt.Sprintf("it was approved, but not called again within %d hours of being asked for", int(spending.Lag.Hours()))}[how]
	e := tools.Errorf(tools.CodeConflict, "request %s (%s) is closed: %s. Nothing was sent, held or charged. Ask the user before asking again",
		inv.RequestID, inv.Handle, what).
		WithDetails(map[string]any{"requestId": inv.RequestID, "approval": how})
	raw, _ := json.Marshal(tools.Body{Error: e})
	answer, now := string(raw), s.now().UTC()
	var also []func(ctx context.Context, q *store.Q) error
	if how == spending.ApprovalExpired { // a decision the owner made was told when it was made
		also = append(also, func(ctx context.Context, q *store.Q) error {
			return webhooks.EmitApprovalDecided(ctx, q, inv.AccountID, now, webhooks.ApprovalDecidedData{RequestID: inv.RequestID, Handle: inv.Handle,
				Decision: spending.ApprovalExpired, DecidedAt: now})
		})
	}
	closed, err := s.billing.Close(ctx, inv, store.Outcome{State: store.InvDeclined, Answer: &answer, FinishedAt: &now,
		OutcomeCode: string(e.Code), OutcomeMessage: "approval " + how}, "approval "+how+"; nothing was sent", also...)
	if err != nil {
		return err
	}
	if !closed { // moved by another call first: its record answers
		done, err := s.store.Invocation(ctx, inv.AccountID, inv.RequestID)
		if err != nil {
			return err
		}
		_, err = replay(done)
		return err
	}
	return e
}

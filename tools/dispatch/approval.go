package dispatch

import (
	"context"
	"errors"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/policies"
)

// ApprovalWindow is how long an owner has to decide a call sent for approval (policies').
const ApprovalWindow = policies.ApprovalWindow

// asking is how an approval names a partner call to its agent.
var asking = policies.Asking{What: "this call", Nothing: "nothing was sent, held or charged",
	Again: "call invoke_partner_message again with the same message", Continues: true}

// admit applies the owner's spend policies to a new call (decided by billing.Admit) before
// anything is quoted or sent: a refusal is returned; a call a policy sends to a human is
// asked for (policies.Approvals.Ask: recorded awaiting approval, with record's rows, e.g. a
// flat fee's quoted payment, and answered APPROVAL_REQUIRED). It returns nil for a call that
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
	return s.approvals.Ask(ctx, cl.bill, policies.Ask{Record: inv, Rule: ask.Rule, WorstMicro: worst, Charge: charge, Asking: asking}, record...)
}

// chargeOf is a call's charge as an approval shows it, itemized, in USD.
func chargeOf(q billing.Quote) map[string]any {
	return map[string]any{"infrastructureUsd": tools.USD(q.ReserveMicro).String(), "partnerFeeUsd": tools.USD(q.MaxPartnerFeeMicro).String(),
		"platformFeeUsd": tools.USD(q.PlatformFeeMicro).String(), "gasEstimateUsd": tools.USD(q.GasEstimateMicro).String(),
		"totalUsd": tools.USD(q.ExpectedMicro()).String(), "maxChargeUsd": tools.USD(q.WorstMicro()).String()}
}

// approved answers a call waiting for approval, asked again with its requestId, by where its
// approval stands (policies.Approvals.Await): pending is APPROVAL_PENDING; declined, expired
// or lapsed closes it, nothing sent or held; one another call moved first answers by its
// record; approved dispatches it, once.
func (s *Service) approved(ctx context.Context, cl *call, inv *store.Invocation, in InvokeInput) (InvokeOutput, error) {
	if err := s.approvals.Await(ctx, cl.bill, inv, asking); errors.Is(err, billing.ErrMoved) {
		done, err := s.invocations.Get(ctx, inv.AccountID, inv.RequestID)
		if err != nil {
			return InvokeOutput{}, err
		}
		return replay(done)
	} else if err != nil {
		return InvokeOutput{}, err
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

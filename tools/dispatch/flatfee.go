package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/switchboard-hq/switchboard/store"
	partnerstore "github.com/switchboard-hq/switchboard/store/partners"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/payments"
)

// The flat-fee path: the first call answers PAYMENT_REQUIRED with a quote (recorded with the
// invocation, in state awaiting_payment, by prepare.go's ask); the call that brings the signed
// authorization has it checked and escrowed on chain, then dispatches {query}; the call's
// ticket settles the escrow when the partner succeeds and refunds it on any failure of the
// billing table's 3c. No credit is charged: the flat fee carries the partner's price and the
// platform's share.

// quoteAgain answers PAYMENT_REQUIRED again with the quote recorded for a call (an approved
// flat fee not paid yet).
func (s *Service) quoteAgain(ctx context.Context, intent *partnerstore.Intent, inv *store.Invocation) error {
	p, err := s.cfg.Payments.Payment(ctx, inv.RequestID)
	if err != nil {
		return err
	}
	var args struct{ Query string }
	_ = json.Unmarshal([]byte(inv.Args), &args)
	return s.paymentRequired(intent, s.cfg.Payments.QuoteOf(p), args.Query)
}

// paymentRequired is a flat-fee call's PAYMENT_REQUIRED answer: its quote q, for the message
// the call was asked with (its handle, then rest), and x402's requirements for it.
func (s *Service) paymentRequired(intent *partnerstore.Intent, q payments.Quote, rest string) error {
	message := intent.PublicIdentifier + " " + rest
	desc := fmt.Sprintf("%s through Switchboard: %s", intent.PublicIdentifier, intent.Description)
	reason := fmt.Sprintf("%s is paid by a flat fee of %s USD before it is called: pay the exact requirement and send the same request again", intent.PublicIdentifier, q.AmountUsd)
	return tools.Errorf(tools.CodePaymentRequired,
		"%s is paid by a flat fee of %s USD in the stablecoin on %s before it is called: nothing was sent. Either pay it with an x402 client (the PAYMENT-REQUIRED header, or details.x402 over MCP), "+
			"or sign the EIP-3009 authorization in quote.typedData (in details) and call invoke_partner_message again with the same message, confirmRequestId %q and payment {signature, authorization}. It is held in escrow, paid to the partner only if the call succeeds, refunded otherwise",
		intent.PublicIdentifier, q.AmountUsd, q.Network, q.RequestID).
		WithDetails(map[string]any{"requestId": q.RequestID, "handle": intent.PublicIdentifier, "quote": q,
			payments.RequiredKey: s.cfg.Payments.Required(q, message, desc, reason)})
}

// payAndDispatch collects the payment of a quoted flat-fee call and dispatches it; its ticket
// concludes the payment by the outcome (billing.Escrow), and the answer shows the payment as
// that left it.
func (s *Service) payAndDispatch(ctx context.Context, cl *call, inv *store.Invocation, in InvokeInput) (InvokeOutput, error) {
	intent := cl.intent
	if s.cfg.Payments == nil {
		return InvokeOutput{}, tools.Errorf(tools.CodePaymentRequired, "flat-fee payments are not configured on this deployment; %s cannot be called", intent.PublicIdentifier)
	}
	if intent.Revision != inv.IntentRevision {
		return InvokeOutput{}, tools.Errorf(tools.CodeConflict, "%s changed since the quote; call without confirmRequestId for a new quote", intent.PublicIdentifier)
	}
	// The paid retry is the same request: confirm checked it says the quoted message
	// (sameInput), which is all a payment bound to this quote pays for.
	pay := in.Payment
	if pay == nil && in.PayWithWallet {
		var err error
		if pay, err = s.cfg.Payments.WalletPayment(ctx, inv.RequestID, inv.AccountID); err != nil {
			return InvokeOutput{}, err
		}
	}
	p, err := s.cfg.Payments.Payment(ctx, inv.RequestID)
	if err != nil {
		return InvokeOutput{}, err
	}
	// The owner's policies are checked again, exactly, as the payment is marked as being made.
	if _, err := s.cfg.Payments.Collect(ctx, inv.RequestID, pay, cl.bill.AdmitPayment(p.AmountAtomic)); err != nil {
		return InvokeOutput{}, cl.bill.PaymentRefused(ctx, p.AmountAtomic, err)
	}
	cl.args = []byte(inv.Args)
	out, err := s.dispatch(ctx, cl, inv, inv.State) // awaiting payment, or approved
	return s.withPayment(inv.RequestID, out, err)
}

// withPayment adds the current state of flat-fee call requestID's payment to its answer (an
// outcome: a result or the error model's answer; nothing for any other error).
func (s *Service) withPayment(requestID string, out InvokeOutput, err error) (InvokeOutput, error) {
	var te *tools.Error
	if s.cfg.Payments == nil || err != nil && !errors.As(err, &te) {
		return out, err
	}
	p, perr := s.cfg.Payments.Payment(context.Background(), requestID)
	if perr != nil {
		return out, err
	}
	if te != nil {
		te.Details = mergeDetails(te.Details, map[string]any{"payment": payments.ReceiptOf(p)})
		return out, te
	}
	out.Payment = payments.ReceiptOf(p)
	return out, err
}

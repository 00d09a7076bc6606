package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/payments"
)

// The flat-fee path: the first call answers PAYMENT_REQUIRED with a quote (recorded with the
// invocation, in state awaiting_payment); the call that brings the signed authorization has it
// checked and escrowed on chain, then dispatches {query}; the partner's answer settles the
// escrow (success) or refunds it (any failure of the billing table's 3c). No credit is
// charged: the flat fee carries the partner's price and the platform's share.

// quoteFlat records a flat-fee call's quote and answers PAYMENT_REQUIRED with it (or, when
// the owner's policy sends it to a human first, APPROVAL_REQUIRED).
func (s *Service) quoteFlat(ctx context.Context, c *tools.Caller, intent *store.PartnerIntent, rest, payer string) error {
	requestID := signing.NewRequestID()
	args, _ := json.Marshal(map[string]string{"query": rest})
	canon, err := signing.Canonicalize(args)
	if err != nil {
		return tools.Errorf(tools.CodeBadInput, "the message cannot be signed: %v", err)
	}
	p, q, err := s.cfg.Payments.Quoted(ctx, requestID, c.Principal.AccountID, payer, intent)
	if err != nil {
		return err
	}
	cl := planFor(intent)
	cl.args = canon
	inv := s.newInvocation(c, cl, requestID)
	insert := func(ctx context.Context, q *store.Q) error { return q.InsertPayment(ctx, p) }
	charge := map[string]any{"flatFeeUsd": q.AmountUsd.String(), "totalUsd": q.AmountUsd.String(), "maxChargeUsd": q.AmountUsd.String(), "network": q.Network}
	if err := s.admit(ctx, c, cl, inv, p.AmountAtomic, charge, insert); err != nil {
		return err
	}
	inv.State = store.InvAwaitingPayment
	if err := s.store.CreateInvocation(ctx, inv, "flat fee quoted; waiting for the caller's authorization", insert); err != nil {
		return err
	}
	return s.required(intent, requestID, rest, q)
}

// paymentRequired answers PAYMENT_REQUIRED again with the quote recorded for a call.
func (s *Service) paymentRequired(ctx context.Context, intent *store.PartnerIntent, inv *store.Invocation) error {
	p, err := s.store.Payment(ctx, inv.RequestID)
	if err != nil {
		return err
	}
	var args struct{ Query string }
	_ = json.Unmarshal([]byte(inv.Args), &args)
	return s.required(intent, inv.RequestID, args.Query, s.cfg.Payments.QuoteOf(p))
}

// required is a flat-fee quote's PAYMENT_REQUIRED answer.
func (s *Service) required(intent *store.PartnerIntent, requestID, rest string, q payments.Quote) error {
	message := intent.PublicIdentifier + " " + rest
	desc := fmt.Sprintf("%s through Switchboard: %s", intent.PublicIdentifier, intent.Description)
	reason := fmt.Sprintf("%s is paid by a flat fee of %s USD before it is called: pay the exact requirement and send the same request again", intent.PublicIdentifier, q.AmountUsd)
	return tools.Errorf(tools.CodePaymentRequired,
		"%s is paid by a flat fee of %s USD in the stablecoin on %s before it is called: nothing was sent. Either pay it with an x402 client (the PAYMENT-REQUIRED header, or details.x402 over MCP), "+
			"or sign the EIP-3009 authorization in quote.typedData (in details) and call invoke_partner_message again with the same message, confirmRequestId %q and payment {signature, authorization}. It is held in escrow, paid to the partner only if the call succeeds, refunded otherwise",
		intent.PublicIdentifier, q.AmountUsd, q.Network, requestID).
		WithDetails(map[string]any{"requestId": requestID, "handle": intent.PublicIdentifier, "quote": q,
			payments.RequiredKey: s.cfg.Payments.Required(q, message, desc, reason)})
}

// payAndDispatch collects the payment of a quoted flat-fee call, dispatches it, and concludes
// the payment by the outcome.
func (s *Service) payAndDispatch(ctx context.Context, c *tools.Caller, intent *store.PartnerIntent, inv *store.Invocation, in InvokeInput) (InvokeOutput, error) {
	if s.cfg.Payments == nil {
		return InvokeOutput{}, tools.Errorf(tools.CodePaymentRequired, "flat-fee payments are not configured on this deployment; %s cannot be called", intent.PublicIdentifier)
	}
	if intent.Revision != inv.IntentRevision {
		return InvokeOutput{}, tools.Errorf(tools.CodeConflict, "%s changed since the quote; call without confirmRequestId for a new quote", intent.PublicIdentifier)
	}
	// The paid retry is the same request: a payment bound to this quote (by x402's echoed
	// requestId or by confirmRequestId) pays for the quoted message only.
	if _, rest, err := FindHandle(in.Message); err == nil {
		args, _ := json.Marshal(map[string]string{"query": rest})
		if canon, err := signing.Canonicalize(args); err == nil && string(canon) != inv.Args {
			return InvokeOutput{}, tools.Errorf(tools.CodeConflict, "the message differs from the one quoted in %s; send the quoted message again, or call without payment for a new quote", inv.RequestID).
				WithDetails(map[string]any{"invalidReason": "invalid_payment_requirements"})
		}
	}
	pay := in.Payment
	if pay == nil && in.PayWithWallet {
		var err error
		if pay, err = s.cfg.Payments.WalletPayment(ctx, inv.RequestID, c.Principal.AccountID); err != nil {
			return InvokeOutput{}, err
		}
	}
	cl := planFor(intent)
	cl.args = []byte(inv.Args)
	p, err := s.store.Payment(ctx, inv.RequestID)
	if err != nil {
		return InvokeOutput{}, err
	}
	// The owner's policies are checked again, exactly, as the payment is marked as being made.
	if _, err := s.cfg.Payments.Collect(ctx, inv.RequestID, pay, s.billing.AdmitPayment(c.Principal, cl.spend(p.AmountAtomic))); err != nil {
		return InvokeOutput{}, err
	}
	out, err := s.dispatch(ctx, c, cl, inv, inv.State)
	var te *tools.Error
	if err != nil && !errors.As(err, &te) {
		return out, err // not an outcome (the database): the sweeper concludes the payment
	}
	p, cerr := s.cfg.Payments.Conclude(context.WithoutCancel(ctx), inv.RequestID, err == nil && out.Success)
	if cerr != nil {
		s.log.WarnContext(ctx, "flat-fee payment not concluded yet; the sweeper will", "request_id", inv.RequestID, "err", cerr)
	}
	if p != nil {
		r := payments.ReceiptOf(p)
		if te != nil {
			te.Details = mergeDetails(te.Details, map[string]any{"payment": r})
			return out, te
		}
		out.Payment = r
	}
	return out, err
}

// withPayment adds the current state of a flat-fee call's payment to a replayed answer.
func (s *Service) withPayment(out InvokeOutput, err error) (InvokeOutput, error) {
	if s.cfg.Payments == nil {
		return out, err
	}
	rid := out.RequestID
	var te *tools.Error
	if errors.As(err, &te) {
		rid, _ = te.Details["requestId"].(string)
	}
	if rid == "" {
		return out, err
	}
	p, perr := s.store.Payment(context.Background(), rid)
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

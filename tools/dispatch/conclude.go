package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/store"
	partnerstore "github.com/switchboard-hq/switchboard/store/partners"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/partners/outbound"
)

// conclude concludes a dispatch's ticket from the partner's answer: a success is settled and
// relayed, anything else refunded and mapped to the error model. Only one process concludes
// a call (billing.ErrAlreadyFinished for the others).
func (s *Service) conclude(ctx context.Context, inv *store.Invocation, cl *call, answer *outbound.Result, callErr error, attempts []store.Attempt) (InvokeOutput, error) {
	intent := cl.intent
	refunded := cl.quote.Refunded()
	if relayable(answer, callErr) {
		// The partner answered, and its answer is "no" (it needs more information, the input is
		// wrong): that is a result for the caller, not an outage. No partner fee; refunded.
		out := InvokeOutput{Handle: intent.PublicIdentifier, RequestID: inv.RequestID, Success: false, Result: Anything("null"),
			PartnerError: &PartnerError{Code: answer.Envelope.Error.Code, Message: answer.Envelope.Error.Message},
			Charge:       refunded, Attempts: len(attempts)}
		out.Receipt = s.receipt(inv, cl, out, nil)
		o := s.outcome(store.InvFailed, answer, refunded, out)
		detail := fmt.Sprintf("the partner answered success false (%s): relayed, refunded", answer.Envelope.Error.Code)
		if err := cl.bill.Conclude(ctx, s.ending(cl, inv, o, attempts, nil, detail)); err != nil {
			return InvokeOutput{}, err
		}
		return out, nil
	}
	if e := classify(intent, answer, callErr); e != nil {
		e.Details = mergeDetails(e.Details, map[string]any{"handle": intent.PublicIdentifier, "requestId": inv.RequestID,
			"success": false, "charge": refunded, "attempts": len(attempts)})
		return InvokeOutput{}, s.fail(ctx, inv, cl, store.InvFailed, answer, attempts, e, e.Message)
	}
	settlement, charge := cl.quote.Settle(answer.Envelope.ProviderCostMicro, answer.Envelope.GasCostMicro, cl.money.PayoutBook)
	out := InvokeOutput{Handle: intent.PublicIdentifier, RequestID: inv.RequestID, Success: true,
		Result: Anything(answer.Envelope.Result), Charge: charge, Attempts: len(attempts)}
	if cl.schemas.hasOutput {
		valid := cl.matchesOutput(answer.Envelope.Result)
		out.OutputSchemaValid = &valid
	}
	record := func(st *billing.Settlement, detail string) error {
		out.Receipt = s.receipt(inv, cl, out, answer.Envelope.Result)
		o := s.outcome(store.InvSucceeded, answer, out.Charge, out)
		o.OutputSchemaValid = out.OutputSchemaValid
		return cl.bill.Conclude(ctx, s.ending(cl, inv, o, attempts, st, detail))
	}
	err := record(&settlement, fmt.Sprintf("charged %d micro-USD: infrastructure %d, partner fee %d, platform fee %d, gas %d",
		charge.TotalMicro, charge.ReservedMicro, charge.PartnerFeeMicro, charge.PlatformFeeMicro, charge.GasMicro))
	if errors.Is(err, billing.ErrReservationClosed) {
		// Its reservation was refunded by an older sweeper: relay the answer, charge nothing.
		out.Charge = cl.quote.Refunded()
		err = record(nil, "partner succeeded after its reservation was refunded: nothing charged")
	}
	if err != nil {
		return InvokeOutput{}, err
	}
	return out, nil
}

// fail concludes a failed or cancelled call, refunding its hold, and returns e (or the
// recording error, which the caller must then see: the money did not move).
func (s *Service) fail(ctx context.Context, inv *store.Invocation, cl *call, state string, answer *outbound.Result, attempts []store.Attempt, e *tools.Error, detail string) error {
	o := s.outcome(state, answer, cl.quote.Refunded(), tools.Body{Error: e})
	if o.OutcomeCode == "" {
		o.OutcomeCode, o.OutcomeMessage = string(e.Code), e.Message
	}
	if err := cl.bill.Conclude(ctx, s.ending(cl, inv, o, attempts, nil, detail)); err != nil {
		return err
	}
	return e
}

// ending is how cl's call ended, with who hears of it beside the caller: the intent's owner,
// told the caller's pseudonym for the partner (as the call's envelope was), never who it is.
func (s *Service) ending(cl *call, inv *store.Invocation, o store.Outcome, attempts []store.Attempt, st *billing.Settlement, detail string) billing.Ending {
	return billing.Ending{Outcome: o, Attempts: attempts, Settlement: st, Detail: detail, Paid: cl.flat,
		Partner: billing.Partner{AccountID: cl.intent.OwnerID, UserID: cl.userID}}
}

// outcome is a call's outcome in state, with what the partner answered, what it was charged
// and the answer its caller got (replayed to anyone who asks again).
func (s *Service) outcome(state string, answer *outbound.Result, ch billing.Charge, answered any) store.Outcome {
	now := s.now().UTC()
	raw, _ := json.Marshal(answered)
	stored := string(raw)
	o := store.Outcome{State: state, FinishedAt: &now, Answer: &stored,
		PartnerFeeMicro: ch.PartnerFeeMicro, PlatformFeeMicro: ch.PlatformFeeMicro, GasMicro: ch.GasMicro, RefundedMicro: ch.RefundedMicro}
	if answer != nil {
		status, ms := answer.Status, int(answer.Latency.Milliseconds())
		o.HTTPStatus, o.LatencyMs = &status, &ms
		if answer.Envelope != nil && answer.Envelope.Error != nil {
			o.OutcomeCode, o.OutcomeMessage = answer.Envelope.Error.Code, answer.Envelope.Error.Message
		}
	}
	return o
}

// matchesOutput reports whether a partner's result matches the intent's outputSchema.
func (cl *call) matchesOutput(result []byte) bool {
	sc := cl.schemas.output
	if sc == nil {
		return false
	}
	if len(result) == 0 {
		result = []byte("null")
	}
	v, err := tools.DecodeJSON(result)
	return err == nil && sc.Validate(v) == nil
}

// relayable reports a partner's considered failure answer (the spec's "partner needs more
// information"): relayed as a result, not an error.
func relayable(res *outbound.Result, err error) bool {
	return outbound.Classify(res, err) == outbound.OutcomePartnerAnswer
}

// classify maps a partner's answer to the error model, nil meaning success (or a relayed
// partner answer).
func classify(intent *partnerstore.Intent, res *outbound.Result, err error) *tools.Error {
	h := intent.PublicIdentifier
	switch outbound.Classify(res, err) {
	case outbound.OutcomeTimeout:
		return tools.Errorf(tools.CodeUnavailable, "%s did not answer within %d ms; nothing was charged. Try again later", h, intent.TimeoutMs)
	case outbound.OutcomeBlocked:
		return tools.Errorf(tools.CodeUpstream, "%s's endpoint cannot be called safely (%v); nothing was charged", h, err)
	case outbound.OutcomeNoAnswer:
		return tools.Errorf(tools.CodeUnavailable, "%s could not be reached (%v); nothing was charged. Try again later", h, err)
	case outbound.OutcomeRefused:
		return tools.Errorf(tools.CodeUpstream, "%s refused Switchboard's signature (HTTP %d); nothing was charged. The partner must fix its verification", h, res.Status).
			WithDetails(partnerDetails(res))
	case outbound.OutcomeBadResponse:
		code := tools.CodeUpstream
		if res.Status >= 500 {
			code = tools.CodeUnavailable
		}
		if res.Envelope == nil {
			return tools.Errorf(code, "%s answered HTTP %d with no valid response envelope (%s); nothing was charged", h, res.Status, res.ParseError).
				WithDetails(partnerDetails(res))
		}
		return tools.Errorf(code, "%s answered HTTP %d with success true, which is not a success; nothing was charged", h, res.Status).
			WithDetails(partnerDetails(res))
	case outbound.OutcomeServerError:
		pe := res.Envelope.Error
		return tools.Errorf(tools.CodeUnavailable, "%s: %s (%s); nothing was charged", h, pe.Message, pe.Code).WithDetails(partnerDetails(res))
	}
	return nil
}

func partnerDetails(res *outbound.Result) map[string]any {
	d := map[string]any{"httpStatus": res.Status}
	if res.Envelope != nil && res.Envelope.Error != nil {
		d["partnerError"] = res.Envelope.Error
	}
	return d
}

func mergeDetails(a, b map[string]any) map[string]any {
	if a == nil {
		a = map[string]any{}
	}
	for k, v := range b {
		a[k] = v
	}
	return a
}

// receipt signs what the caller (cl.userID to the partner) is answered: the charges, the hash
// of the relayed result, and the task the call ran as.
func (s *Service) receipt(inv *store.Invocation, cl *call, out InvokeOutput, result json.RawMessage) *signing.SignedReceipt {
	if s.cfg.Signer == nil {
		return nil
	}
	now := s.now().UTC()
	c := out.Charge
	sr, err := s.cfg.Signer.SignReceipt(signing.Receipt{
		RequestID: inv.RequestID, Handle: inv.Handle, IntentID: inv.IntentID,
		UserID: cl.userID, Success: out.Success, TaskID: cl.taskID,
		Charges: signing.ReceiptCharges{ReservedMicro: c.ReservedMicro, PartnerFeeMicro: c.PartnerFeeMicro, PlatformFeeMicro: c.PlatformFeeMicro,
			GasMicro: c.GasMicro, RefundedMicro: c.RefundedMicro, TotalMicro: c.TotalMicro},
		CreatedAt: inv.CreatedAt.UTC().Format(time.RFC3339), FinishedAt: now.Format(time.RFC3339), ResultSHA256: signing.ResultHash(result),
	})
	if err != nil {
		s.log.Error("sign receipt", "request_id", inv.RequestID, "err", err)
		return nil
	}
	return &sr
}

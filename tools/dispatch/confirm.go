package dispatch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/store"
	partnerstore "github.com/switchboard-hq/switchboard/store/partners"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/partners"
)

// continued is the way of a call that answers an earlier quote or approval (its requestId in
// confirmRequestId, or a decline).
type continued struct{ s *Service }

func (w continued) take(ctx context.Context, _ *tools.Caller, cl *call, in InvokeInput) (InvokeOutput, error) {
	return w.s.confirm(ctx, cl, in)
}

// confirm answers a quote, read once: declined (decline.go), paid (a flat fee's, flatfee.go),
// or confirmed, when a quoted write is dispatched once; later confirmations get the stored
// outcome.
func (s *Service) confirm(ctx context.Context, cl *call, in InvokeInput) (InvokeOutput, error) {
	intent := cl.intent
	inv, err := s.quoted(ctx, cl.bill.Caller(), intent, in.ConfirmRequestID)
	if err == nil && inv.Kind == store.KindProposed { // the transactions its partner proposed (propose.go)
		return s.confirmProposals(ctx, cl, inv, in)
	}
	if in.Decline {
		return InvokeOutput{}, s.decline(ctx, cl, in.ConfirmRequestID, inv, err)
	}
	if errors.Is(err, store.ErrNotFound) {
		return InvokeOutput{}, tools.Errorf(tools.CodeNotFound, "no quote %s for %s in this account; call without confirmRequestId for a new quote", in.ConfirmRequestID, intent.PublicIdentifier)
	}
	if err != nil {
		return InvokeOutput{}, err
	}
	if err := sameInput(cl, inv, in.Args); err != nil {
		return InvokeOutput{}, err
	}
	switch {
	case store.StateOf(inv.State).Final:
		out, err := replay(inv)
		out, err = s.withPayment(inv.RequestID, out, err)
		return s.proposed(ctx, cl, out, err)
	case inv.State == store.InvAwaitingPayment:
		return s.payAndDispatch(ctx, cl, inv, in)
	case inv.State == store.InvAwaitingApproval:
		return s.approved(ctx, cl, inv, in)
	case inv.State == store.InvDispatching:
		return InvokeOutput{}, tools.Errorf(tools.CodeConflict, "request %s is being dispatched now; call again in a moment for its outcome (a dispatch that never finishes is concluded by the sweeper within a minute of its deadline)", inv.RequestID).
			WithDetails(map[string]any{"requestId": inv.RequestID})
	}
	if s.now().UTC().Sub(inv.CreatedAt) > ConfirmWindow {
		return InvokeOutput{}, tools.Errorf(tools.CodeConflict, "the quote %s expired (%d minutes); call without confirmRequestId for a new one", inv.RequestID, int(ConfirmWindow.Minutes()))
	}
	if intent.Revision != inv.IntentRevision {
		return InvokeOutput{}, tools.Errorf(tools.CodeConflict, "%s changed since the quote; call without confirmRequestId for a new quote and confirm that one", intent.PublicIdentifier)
	}
	cl.args, cl.quote = []byte(inv.Args), billing.QuoteOf(inv.Price)
	out, err := s.dispatch(ctx, cl, inv, store.InvAwaitingConfirmation)
	return s.proposed(ctx, cl, out, err)
}

// sameInput refuses a call with confirmRequestId that does not say what its request was asked
// with (quoted, or sent to the owner for approval): another message, or args other than the
// recorded ones as canonical JSON (keys in any order; omitted args are the recorded ones). It
// is the Idempotency-Key rule's "same key, another input": CONFLICT, nothing sent or charged,
// whatever state the request is in (a finished one's outcome is not another input's answer).
// A flat fee's args are its message ({query}); a call recorded without its message's hash (a
// read that waited for no one, or one a previous release recorded) is checked by its args.
func sameInput(cl *call, inv *store.Invocation, given partners.ArgsDoc) error {
	details := map[string]any{"requestId": inv.RequestID, "handle": inv.Handle, "args": json.RawMessage(inv.Args)}
	if cl.flat { // the payment pays for the quoted message only
		if canon, err := queryArgs(cl.said); err != nil || string(canon) != inv.Args {
			details["invalidReason"] = "invalid_payment_requirements"
			return tools.Errorf(tools.CodeConflict, "the message differs from the one quoted in %s: nothing was sent, paid or charged. "+
				"Send the quoted message again to pay for it, or call without confirmRequestId and payment for a new quote", inv.RequestID).WithDetails(details)
		}
		return nil
	}
	if inv.MessageHash != nil && *inv.MessageHash != *messageHash(cl.said) {
		return tools.Errorf(tools.CodeConflict, "the message differs from the one request %s was asked with: nothing was sent or charged. "+
			"To confirm that request, call again with the same message and args (args may be omitted); for this message, call without confirmRequestId for a new quote",
			inv.RequestID).WithDetails(details)
	}
	if len(given) > 0 {
		if canon, err := signing.Canonicalize(given); err != nil || !bytes.Equal(canon, []byte(inv.Args)) {
			return tools.Errorf(tools.CodeConflict, "the args differ from the ones request %s was asked with (in details): nothing was sent or charged. "+
				"To confirm that request, call again with the same message and those args (or none); for these args, call without confirmRequestId for a new quote",
				inv.RequestID).WithDetails(details)
		}
	}
	return nil
}

// messageHash is what a call waiting for its caller or owner keeps of its message (rest, the
// message without its handle and with its spaces collapsed, as FindHandle gives it): the hex
// SHA-256, enough to tell the same message from another.
func messageHash(rest string) *string {
	sum := sha256.Sum256([]byte(rest))
	h := hex.EncodeToString(sum[:])
	return &h
}

// quoted reads the record of a call of intent quoted to p's account (store.ErrNotFound when
// there is none), up to date with what this replica still has to commit for it. A key acts
// only on the calls of its own subtree (itself and the keys minted under it, as it sees keys):
// another key's quote, approval or outcome is not found; the portal's human acts on any.
func (s *Service) quoted(ctx context.Context, p *tools.Principal, intent *partnerstore.Intent, requestID string) (*store.Invocation, error) {
	if requestID == "" {
		return nil, store.ErrNotFound
	}
	if err := s.billing.Current(ctx, p.AccountID, requestID); err != nil {
		return nil, err
	}
	inv, err := s.invocations.Get(ctx, p.AccountID, requestID)
	if err != nil {
		return nil, err
	}
	if inv.IntentID != intent.ID {
		return nil, store.ErrNotFound
	}
	if p.Method != tools.AuthSession && inv.KeyID != p.KeyID {
		under, err := s.accounts.KeyUnder(ctx, p.AccountID, inv.KeyID, p.KeyID)
		if err != nil {
			return nil, err
		}
		if !under {
			return nil, store.ErrNotFound
		}
	}
	return inv, nil
}

// replay returns the stored outcome of a finished invocation: the error it answered, or the
// result (a success, or a partner's relayed failure).
func replay(inv *store.Invocation) (InvokeOutput, error) {
	if inv.Answer == nil {
		return InvokeOutput{}, tools.Errorf(tools.CodeInternal, "request %s finished without a stored answer", inv.RequestID)
	}
	var body tools.Body
	if json.Unmarshal([]byte(*inv.Answer), &body) == nil && body.Error != nil {
		return InvokeOutput{}, body.Error
	}
	var out InvokeOutput
	if err := json.Unmarshal([]byte(*inv.Answer), &out); err != nil {
		return InvokeOutput{}, fmt.Errorf("stored answer of %s: %w", inv.RequestID, err)
	}
	if out.Charge.InfrastructureMicro == 0 { // stored before the field had its portal name
		out.Charge.InfrastructureMicro = out.Charge.ReservedMicro
	}
	return out, nil
}

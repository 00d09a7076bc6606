package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/billing"
)

// confirm answers a quote, read once: declined (decline.go), paid (a flat fee's, flatfee.go),
// or confirmed, when a quoted write is dispatched once; later confirmations get the stored
// outcome.
func (s *Service) confirm(ctx context.Context, cl *call, in InvokeInput) (InvokeOutput, error) {
	intent := cl.intent
	inv, err := s.quoted(ctx, cl.bill.Caller(), intent, in.ConfirmRequestID)
	if in.Decline {
		return InvokeOutput{}, s.decline(ctx, intent, in.ConfirmRequestID, inv, err)
	}
	if errors.Is(err, store.ErrNotFound) {
		return InvokeOutput{}, tools.Errorf(tools.CodeNotFound, "no quote %s for %s in this account; call without confirmRequestId for a new quote", in.ConfirmRequestID, intent.PublicIdentifier)
	}
	if err != nil {
		return InvokeOutput{}, err
	}
	switch {
	case store.StateOf(inv.State).Final:
		out, err := replay(inv)
		return s.withPayment(inv.RequestID, out, err)
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
	if len(in.Args) > 0 {
		canon, err := signing.Canonicalize(in.Args)
		if err != nil || !bytes.Equal(canon, []byte(inv.Args)) {
			return InvokeOutput{}, tools.Errorf(tools.CodeConflict, "the args differ from the quoted ones; confirm with the same args (or none), or ask for a new quote")
		}
	}
	cl.args, cl.quote = []byte(inv.Args), billing.QuoteOf(inv.Price)
	return s.dispatch(ctx, cl, inv, store.InvAwaitingConfirmation)
}

// quoted reads the record of a call of intent quoted to p's account (store.ErrNotFound when
// there is none), up to date with what this replica still has to commit for it. A key acts
// only on the calls of its own subtree (itself and the keys minted under it, as it sees keys):
// another key's quote, approval or outcome is not found; the portal's human acts on any.
func (s *Service) quoted(ctx context.Context, p *tools.Principal, intent *store.PartnerIntent, requestID string) (*store.Invocation, error) {
	if requestID == "" {
		return nil, store.ErrNotFound
	}
	if err := s.billing.Current(ctx, p.AccountID, requestID); err != nil {
		return nil, err
	}
	inv, err := s.store.Invocation(ctx, p.AccountID, requestID)
	if err != nil {
		return nil, err
	}
	if inv.IntentID != intent.ID {
		return nil, store.ErrNotFound
	}
	if p.Method != tools.AuthSession && inv.KeyID != p.KeyID {
		under, err := s.store.KeyUnder(ctx, p.AccountID, inv.KeyID, p.KeyID)
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

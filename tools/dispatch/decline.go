package dispatch

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/tools"
)

// decline closes a quoted write the user refused (awaiting_confirmation -> declined), with
// the answer every later confirmation of it replays, through cl's ticket. inv and err are the
// quote as read for requestID (confirm.go's quoted). A quote holds no reservation (only the confirmation
// reserves), so nothing is refunded: nothing was held. The answer is the returned error.
func (s *Service) decline(ctx context.Context, cl *call, requestID string, inv *store.Invocation, err error) error {
	if requestID == "" {
		return tools.Errorf(tools.CodeBadInput, "decline needs confirmRequestId: the requestId of the CONFIRMATION_REQUIRED answer the user declined")
	}
	intent := cl.intent
	if errors.Is(err, store.ErrNotFound) {
		return tools.Errorf(tools.CodeNotFound, "no quote %s for %s in this account", requestID, intent.PublicIdentifier)
	}
	if err != nil {
		return err
	}
	declined := tools.Errorf(tools.CodeConflict, "the user declined %s (request %s): nothing was sent, reserved or charged. Ask for a new quote (call without confirmRequestId) only if the user asks for it again",
		intent.PublicIdentifier, requestID).WithDetails(map[string]any{"requestId": requestID, "declined": true})
	if inv.State == store.InvDeclined {
		_, err := replay(inv) // declined already
		return err
	}
	if inv.State != store.InvAwaitingConfirmation {
		return tools.Errorf(tools.CodeConflict, "request %s is %s, not a quote awaiting confirmation: a decline changes nothing (confirm it again to read its outcome)", requestID, inv.State).
			WithDetails(map[string]any{"requestId": requestID})
	}
	raw, _ := json.Marshal(tools.Body{Error: declined})
	answer, now := string(raw), s.now().UTC()
	closed, err := cl.bill.Close(ctx, inv, store.Outcome{State: store.InvDeclined, Answer: &answer, FinishedAt: &now,
		OutcomeCode: string(declined.Code), OutcomeMessage: "declined by the user"}, "declined by the user; nothing was sent")
	if err != nil {
		return err
	}
	if !closed { // confirmed by another call in the meantime
		return tools.Errorf(tools.CodeConflict, "request %s was confirmed before the decline arrived; confirm it again to read its outcome", requestID).
			WithDetails(map[string]any{"requestId": requestID})
	}
	return declined
}

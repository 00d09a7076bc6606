package billing

import (
	"context"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/tracing"
	"github.com/switchboard-hq/switchboard/tools/webhooks"
)

// What every recorder writes of a call's ending, in one place: its record carrying the
// outcome and the webhook events beside it (Ticket.end, callEvents), and, for a call whose
// start is written, the outcome's transaction (outcomeIn): the hold's close is one decision
// (closing, billing.go), written with the rest of the ending by one store call.

// Partner is who hears of a call's ending beside its caller (call.* webhooks): the account
// that owns the intent, and the caller's pseudonym for that partner (the envelope's userId).
// The zero Partner tells the caller alone.
type Partner struct {
	AccountID string `json:",omitempty"`
	UserID    string `json:",omitempty"`
}

// callEvent is the one decision of which event a call's ending is:
//
//	call.succeeded  the partner succeeded and the call was settled (charged what it reported,
//	                within the quote; nothing when its hold had been refunded first)
//	call.refunded   it did not succeed, and what the caller paid went back by other means
//	                than its own conclusion: a flat fee paid on chain (refunded by the
//	                payment's conclusion), or a hold the sweeper concluded (swept)
//	call.failed     it did not succeed (failed, cancelled): its hold returned, nothing charged
func callEvent(state string, paid, swept bool) string {
	switch {
	case state == store.InvSucceeded:
		return webhooks.CallSucceeded
	case paid || swept:
		return webhooks.CallRefunded
	}
	return webhooks.CallFailed
}

// callEvents are the events of inv's ending (inv carries its outcome): one for the caller's
// account and, when the intent's owner is another party to tell, one for the partner's. They
// are built once per conclusion, so a transaction run again writes the same rows. listens
// (nil: every account) leaves out the event of an account no endpoint would deliver it to.
func callEvents(inv *store.Invocation, e Ending, swept bool, listens func(accountID string) bool) ([]*store.WebhookEvent, error) {
	if listens == nil {
		listens = func(string) bool { return true }
	}
	typ := callEvent(inv.State, e.Paid, swept)
	var charged int64
	if st := e.Settlement; st != nil {
		charged = inv.ReserveMicro + st.PartnerFeeMicro + st.PlatformFeeMicro + st.GasMicro
	}
	d := webhooks.CallData{RequestID: inv.RequestID, IntentID: inv.IntentID, Handle: inv.Handle, State: inv.State,
		ChargedMicro: charged, ChargedUsd: tools.USD(charged).String(), PartnerFeeMicro: inv.PartnerFeeMicro,
		RefundedMicro: inv.RefundedMicro, RefundedUsd: tools.USD(inv.RefundedMicro).String(),
		PaidOnChain: e.Paid, Attempts: inv.Attempts, FinishedAt: inv.FinishedAt.UTC()}
	if inv.State != store.InvSucceeded {
		d.ErrorCode, d.Message = inv.OutcomeCode, inv.OutcomeMessage
	}
	var evs []*store.WebhookEvent
	if listens(inv.AccountID) {
		mine := d
		mine.KeyID = inv.KeyID
		ev, err := webhooks.New(typ, inv.AccountID, *inv.FinishedAt, mine)
		if err != nil {
			return nil, err
		}
		evs = append(evs, ev)
	}
	// A partner calling its own intent hears once.
	if p := e.Partner; p.AccountID != "" && p.AccountID != inv.AccountID && listens(p.AccountID) {
		theirs := d
		theirs.UserID = p.UserID
		ev, err := webhooks.New(typ, p.AccountID, *inv.FinishedAt, theirs)
		if err != nil {
			return nil, err
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

// end is what every recorder writes of t's ending e: the call's record carrying its outcome,
// and the webhook events written with it, in the same transaction or merged write.
func (t *Ticket) end(ctx context.Context, e Ending) (store.Invocation, []*store.WebhookEvent, error) {
	inv := t.record
	inv.Outcome = e.Outcome
	inv.Attempts = len(e.Attempts)
	if st := e.Settlement; st != nil && st.PartnerFeeMicro > 0 {
		inv.PayoutBook = st.PartnerBook
	}
	events, err := callEvents(&inv, e, t.hold == nil, t.svc.listens(ctx))
	return inv, events, err
}

// outcomeIn is a conclusion's transaction for a call whose start is written: claim the
// record (and lock its hold), decide the hold's close (closing), and write the close, the
// attempts, the outcome and its webhook events in one go (store.Q.WriteEnding).
func (s *Service) outcomeIn(inv *store.Invocation, attempts []store.Attempt, st *Settlement, detail string, events []*store.WebhookEvent) func(ctx context.Context, q *store.Q) error {
	return func(ctx context.Context, q *store.Q) (err error) {
		held := st != nil || inv.DispatchedAt != nil
		if held {
			name := "billing.refund"
			if st != nil {
				name = "billing.settle"
			}
			c, span := tracing.Child(ctx, name)
			ctx = c
			defer func() { tracing.End(span, err) }()
		}
		// Claim first: the row lock makes a concurrent finisher wait, then find it finished.
		r, ok, err := q.ClaimEnding(ctx, inv.RequestID, inv.State, *inv.FinishedAt, held)
		if err != nil {
			return err
		}
		if !ok {
			return ErrAlreadyFinished
		}
		var hold *store.Closing
		if r != nil {
			if hold, err = closing(r, Conclusion{Settlement: st, Reason: detail}, *inv.FinishedAt); err != nil {
				return err
			}
			if hold == nil && st != nil {
				return ErrReservationClosed
			}
		}
		return q.WriteEnding(ctx, store.Ending{Invocation: inv, Hold: hold, Attempts: attempts, Events: events, Detail: detail})
	}
}

// listens is the filter of the accounts a call's events are written for (nil: every account).
func (s *Service) listens(ctx context.Context) func(accountID string) bool {
	if s.cfg.Listens == nil {
		return nil
	}
	return func(accountID string) bool { return s.cfg.Listens(ctx, accountID) }
}

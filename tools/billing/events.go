package billing

import (
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/webhooks"
)

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

package send

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/sends"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/webhooks"
)

// A partner's proposed transactions are one movement (an invocation row of kind proposed,
// opened by invoke_partner_message's confirmation in tools/dispatch) and one send per
// transaction, named ProposedID(movement, i). The movement ends when every send it signed has
// ended: whoever sees that last (the confirming call, or the follower) concludes it, once.

// ProposedSet is what the follower reads of a proposals movement's args: how many
// transactions it signs (dispatch writes the rest of the args).
type ProposedSet struct {
	Count int `json:"count"`
	// Unpriced: what they move had no price when judged (the event carries no USD value).
	Unpriced bool `json:"unpricedValue,omitempty"`
}

// ProposedID is the send request id of the movement's i-th proposed transaction.
func ProposedID(movement string, i int) string { return fmt.Sprintf("%s.%d", movement, i) }

// movementOfSend is the movement a proposed send belongs to ("" for a wallet's own send).
func movementOfSend(rec *sends.Send) string {
	if rec.Kind != sends.KindProposed {
		return ""
	}
	i := strings.LastIndexByte(rec.RequestID, '.')
	if i < 0 {
		return ""
	}
	return rec.RequestID[:i]
}

// Sender is the wallet's sender: its chains, what it signs and records.
func (w *Wallet) Sender() *Sender { return w.sender }

// Recorded is the send recorded for requestID (store.ErrNotFound: none was signed).
func (s *Sender) Recorded(ctx context.Context, requestID string) (*sends.Send, error) {
	return s.sends.Get(ctx, requestID)
}

// ConcludeProposed concludes the proposals movement inv when every transaction it signs has
// ended (settled when each is confirmed), or, abandoned, when its process left it dispatching
// without signing them all: the movement ends failed with what was sent. It reports whether
// the movement is concluded (by this call or another).
func (w *Wallet) ConcludeProposed(ctx context.Context, inv *store.Invocation, abandoned bool) (bool, error) {
	var set ProposedSet
	if err := json.Unmarshal([]byte(inv.Args), &set); err != nil || set.Count < 1 {
		return false, fmt.Errorf("proposals %s's args: no count of transactions", inv.RequestID)
	}
	var signed []*sends.Send
	for i := range set.Count {
		rec, err := w.sender.sends.Get(ctx, ProposedID(inv.RequestID, i))
		if errors.Is(err, store.ErrNotFound) {
			if !abandoned {
				return false, nil // still to be signed by the confirming call
			}
			break
		}
		if err != nil {
			return false, err
		}
		if rec.Open() {
			return false, nil
		}
		signed = append(signed, rec)
	}
	m := billing.Moved{Settled: len(signed) == set.Count, Detail: fmt.Sprintf("%d of %d proposed transaction(s) confirmed", confirmedOf(signed), set.Count)}
	ev := webhooks.WalletSendData{RequestID: inv.RequestID, KeyID: inv.KeyID, Token: Native, Status: "failed", Reason: m.Detail}
	if inv.Network != nil {
		ev.Network = *inv.Network
	}
	for _, rec := range signed {
		m.Settled = m.Settled && rec.Status == sends.Confirmed
		if m.TxHash == "" {
			m.TxHash, ev.Chain, ev.From, ev.To, ev.Amount = rec.TxHash, rec.Chain, rec.From, rec.To, rec.Amount
			ev.TxHash, ev.ExplorerURL = rec.TxHash, w.sender.Explorer(rec.Chain, rec.TxHash)
		}
	}
	if m.Settled {
		ev.Status, ev.Reason = sends.Confirmed, ""
	} else {
		m.Code = string(tools.CodeUpstream)
		if len(signed) < set.Count {
			m.Detail += fmt.Sprintf("; %d never signed (the process stopped first)", set.Count-len(signed))
		}
	}
	if !set.Unpriced {
		ev.ValueUsd = tools.USD(inv.ValueMicro).String()
	}
	m.Event = ev
	t, err := w.bill.ReopenMove(inv)
	if err != nil {
		return false, err
	}
	if err := t.ConcludeMove(context.WithoutCancel(ctx), m); err != nil && !errors.Is(err, billing.ErrAlreadyFinished) {
		return false, fmt.Errorf("record proposals %s: %w", inv.RequestID, err)
	}
	return true, nil
}

func confirmedOf(recs []*sends.Send) int {
	n := 0
	for _, r := range recs {
		if r.Status == sends.Confirmed {
			n++
		}
	}
	return n
}

// followProposed concludes the movement of a proposed send that ended, once all of its sends
// have; it reports whether it concluded one.
func (w *Wallet) followProposed(ctx context.Context, rec *sends.Send) bool {
	id := movementOfSend(rec)
	if id == "" {
		return false
	}
	inv, err := w.invocations.ByID(ctx, id)
	if err != nil || inv.Kind != store.KindProposed || inv.State != store.InvDispatching {
		return false
	}
	done, err := w.ConcludeProposed(ctx, inv, false)
	if err != nil {
		w.log.Warn("conclude proposals", "request_id", id, "error", err)
	}
	return done
}

// abandonedProposals concludes the proposals movements a process left dispatching long ago:
// ended on chain, or some never signed.
func (w *Wallet) abandonedProposals(ctx context.Context) int {
	left, err := w.invocations.Dispatching(ctx, store.KindProposed, w.now().Add(-Abandoned), 100)
	if err != nil {
		if ctx.Err() == nil {
			w.log.Warn("list abandoned proposals", "error", err)
		}
		return 0
	}
	n := 0
	for _, inv := range left {
		done, err := w.ConcludeProposed(ctx, inv, true)
		if err != nil {
			w.log.Warn("conclude abandoned proposals", "request_id", inv.RequestID, "error", err)
		}
		if done {
			n++
		}
	}
	return n
}

package send

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/switchboard-hq/switchboard/chain/evm"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/sends"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/tokens"
	"github.com/switchboard-hq/switchboard/tools/wallets"
	"github.com/switchboard-hq/switchboard/tools/webhooks"
)

// confirm goes on with the send a's confirmRequestId names: declined, replayed (ended),
// sent again as recorded (dispatching: never a second transaction), or opened and sent.
func (w *Wallet) confirm(ctx context.Context, c *tools.Caller, a ask) (WalletSendOutput, error) {
	p, id := c.Principal, a.in.ConfirmRequestID
	inv, err := w.invocations.Get(ctx, p.AccountID, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && inv.Kind != store.KindSend {
		return WalletSendOutput{}, tools.Errorf(tools.CodeNotFound, "no wallet send %s in this account; call wallet_send without confirmRequestId for a quote", id)
	}
	if err != nil {
		return WalletSendOutput{}, err
	}
	var args sendArgs
	if err := json.Unmarshal([]byte(inv.Args), &args); err != nil {
		return WalletSendOutput{}, fmt.Errorf("send %s's args: %w", id, err)
	}
	asked := a.in
	asked.ConfirmRequestID, asked.Decline = "", false
	if args.Asked != asked || args.Token != a.tokenID || args.Units != a.units.String() {
		return WalletSendOutput{}, tools.Errorf(tools.CodeConflict, "send %s was quoted for %s %s on %s to %s, not this one; confirm it with the same chain, token, to and amount, or call without confirmRequestId for a new quote",
			id, args.Asked.Amount, args.Asked.Token, args.Asked.Chain, args.Asked.To).WithDetails(map[string]any{"requestId": id, "quoted": args.Asked})
	}
	t := w.bill.Movement(p, w.movement(a, inv.ValueMicro, args.Unpriced))
	if a.in.Decline {
		return WalletSendOutput{}, w.decline(ctx, t, inv)
	}
	switch {
	case store.StateOf(inv.State).Final:
		return replay(inv)
	case inv.State == store.InvDispatching:
		return w.resend(ctx, inv, a, args)
	case inv.State == store.InvAwaitingConfirmation:
		if w.now().After(inv.CreatedAt.Add(QuoteWindow)) {
			return WalletSendOutput{}, w.expire(ctx, t, inv)
		}
	case inv.State == store.InvAwaitingApproval:
		if err := w.approvals.Await(ctx, t, inv, sendAsking); err != nil {
			return WalletSendOutput{}, err
		}
	default:
		return WalletSendOutput{}, tools.Errorf(tools.CodeConflict, "send %s is %s; call wallet_send without confirmRequestId for a new quote", id, inv.State)
	}
	return w.dispatch(ctx, t, inv, a, args)
}

// decline closes a quote the user refused.
func (w *Wallet) decline(ctx context.Context, t *billing.Ticket, inv *store.Invocation) error {
	if inv.State == store.InvDeclined {
		_, err := replay(inv)
		return err
	}
	if inv.State != store.InvAwaitingConfirmation {
		return tools.Errorf(tools.CodeConflict, "send %s is %s, not a quote awaiting confirmation: a decline changes nothing", inv.RequestID, inv.State).
			WithDetails(map[string]any{"requestId": inv.RequestID})
	}
	declined := tools.Errorf(tools.CodeConflict, "the user declined send %s: nothing was signed or sent. Ask for a new quote only if the user asks for it again", inv.RequestID).
		WithDetails(map[string]any{"requestId": inv.RequestID, "declined": true})
	return w.close(ctx, t, inv, declined, "declined by the user; nothing was signed")
}

// expire closes a quote confirmed too late.
func (w *Wallet) expire(ctx context.Context, t *billing.Ticket, inv *store.Invocation) error {
	e := tools.Errorf(tools.CodeConflict, "send %s's quote expired at %s; nothing was signed. Call wallet_send without confirmRequestId for a new quote",
		inv.RequestID, inv.CreatedAt.Add(QuoteWindow).UTC().Format(time.RFC3339)).WithDetails(map[string]any{"requestId": inv.RequestID, "expired": true})
	return w.close(ctx, t, inv, e, "the quote expired; nothing was signed")
}

func (w *Wallet) close(ctx context.Context, t *billing.Ticket, inv *store.Invocation, answer *tools.Error, detail string) error {
	raw, _ := json.Marshal(tools.Body{Error: answer})
	stored, now := string(raw), w.now().UTC()
	closed, err := t.Close(ctx, inv, store.Outcome{State: store.InvDeclined, Answer: &stored, FinishedAt: &now, OutcomeCode: string(answer.Code), OutcomeMessage: detail}, detail)
	if err != nil {
		return err
	}
	if !closed {
		return tools.Errorf(tools.CodeConflict, "send %s was confirmed by another call first; confirm it again to read its outcome", inv.RequestID).
			WithDetails(map[string]any{"requestId": inv.RequestID})
	}
	return answer
}

// replay answers an ended send as it was answered.
func replay(inv *store.Invocation) (WalletSendOutput, error) {
	if inv.Answer == nil {
		return WalletSendOutput{}, tools.Errorf(tools.CodeInternal, "send %s ended without a stored answer", inv.RequestID)
	}
	var body tools.Body
	if json.Unmarshal([]byte(*inv.Answer), &body) == nil && body.Error != nil {
		return WalletSendOutput{}, body.Error
	}
	var out WalletSendOutput
	if err := json.Unmarshal([]byte(*inv.Answer), &out); err != nil {
		return WalletSendOutput{}, fmt.Errorf("stored answer of %s: %w", inv.RequestID, err)
	}
	return out, nil
}

// dispatch opens the quoted send on its ticket (judged again where the caps are exact) and
// sends it. Signing off refuses it first, with nothing recorded.
func (w *Wallet) dispatch(ctx context.Context, t *billing.Ticket, inv *store.Invocation, a ask, args sendArgs) (WalletSendOutput, error) {
	acct, err := w.accounts.ByID(ctx, inv.AccountID)
	if err != nil {
		return WalletSendOutput{}, err
	}
	if !acct.SigningEnabled {
		return WalletSendOutput{}, signingOff(nil)
	}
	from := inv.State
	if err := t.OpenMove(ctx, inv, from); errors.Is(err, billing.ErrMoved) {
		// Another confirmation opened it first: the same send, as it stands.
		now, rerr := w.invocations.Get(ctx, inv.AccountID, inv.RequestID)
		switch {
		case rerr != nil:
			return WalletSendOutput{}, rerr
		case store.StateOf(now.State).Final:
			return replay(now)
		case now.State == store.InvDispatching:
			return w.resend(ctx, now, a, args)
		}
		return WalletSendOutput{}, tools.Errorf(tools.CodeConflict, "send %s is %s; call wallet_send without confirmRequestId for a new quote", inv.RequestID, now.State)
	} else if err != nil {
		if args.Unpriced {
			return WalletSendOutput{}, unpricedRefusal(err, a, "no price")
		}
		return WalletSendOutput{}, err
	}
	w.sender.cfg.Failpoint(FailJudged)
	return w.resend(ctx, inv, a, args)
}

func signingOff(err error) *tools.Error {
	e := tools.Errorf(tools.CodeForbidden, "signing with the embedded wallet is off for this account (the account's signingEnabled setting); a human turns it on in the portal's settings. Nothing was signed or sent")
	if err != nil {
		e = e.Wrap(err)
	}
	return e
}

// unsigned records inv's send as never signed unless it is recorded (created false: that
// send).
func (w *Wallet) unsigned(ctx context.Context, inv *store.Invocation) (*sends.Send, bool, error) {
	var args sendArgs
	if err := json.Unmarshal([]byte(inv.Args), &args); err != nil {
		return nil, false, fmt.Errorf("send %s's args: %w", inv.RequestID, err)
	}
	ch, err := tokens.ParseChain(args.Asked.Chain)
	if err != nil {
		return nil, false, fmt.Errorf("send %s's chain: %w", inv.RequestID, err)
	}
	units, ok := new(big.Int).SetString(args.Units, 10)
	if !ok {
		return nil, false, fmt.Errorf("send %s's amount %q", inv.RequestID, args.Units)
	}
	r := Request{RequestID: inv.RequestID, AccountID: inv.AccountID, Chain: ch.Name, To: args.Asked.To, Token: args.Token, Amount: units}
	return w.sender.sends.Unsigned(ctx, r.record(args.From, w.now()), "never signed: its process stopped after judging it")
}

// resend hands the opened send to the Sender (a recorded one is never signed again) and
// answers it as it stands; an ended send concludes the ticket.
func (w *Wallet) resend(ctx context.Context, inv *store.Invocation, a ask, args sendArgs) (WalletSendOutput, error) {
	r := a.request(inv.RequestID, inv.AccountID)
	if args.Gas > 0 {
		tip, _ := new(big.Int).SetString(args.Tip, 10)
		feeCap, _ := new(big.Int).SetString(args.FeeCap, 10)
		if from, err := evm.ParseAddress(args.From); err == nil && tip != nil && feeCap != nil {
			if tr, err := r.evmTransfer(from); err == nil {
				to, value, data, err := tr.Call()
				if err == nil {
					r.Quoted = &evm.Tx{ChainID: w.sender.cfg.EVM[r.Chain].Client.ChainID(), GasTipCap: tip, GasFeeCap: feeCap, Gas: args.Gas, To: to, Value: value, Data: data}
				}
			}
		}
	}
	rec, err := w.sender.Send(ctx, r)
	switch {
	case errors.Is(err, ErrNotBroadcast) && rec != nil:
		// Recorded: the follower (or a retry of this confirmation) sends the same bytes.
		return w.answer(inv, args, rec, "submitted"), nil
	case err != nil:
		if got, gone := w.sender.sends.Get(ctx, inv.RequestID); gone == nil {
			if !got.Open() && r.same(got) { // recorded never signed by the follower meanwhile
				return w.ended(ctx, inv, got)
			}
			return WalletSendOutput{}, err // recorded: the follower takes it on
		}
		cause := tools.Translate(err)
		if errors.Is(err, wallets.ErrSigningOff) {
			cause = signingOff(err)
		} else if cause.Code == tools.CodeInternal {
			cause = tools.Errorf(tools.CodeUpstream, "the send on %s could not be signed or recorded (%v); nothing was sent", r.Chain, err).Wrap(err)
		}
		raw, _ := json.Marshal(tools.Body{Error: cause})
		if cerr := w.conclude(ctx, inv, nil, billing.Moved{Code: string(cause.Code), Detail: "not sent: " + err.Error(), Answer: raw}); cerr != nil {
			return WalletSendOutput{}, cerr
		}
		return WalletSendOutput{}, cause
	}
	if rec.Open() {
		return w.answer(inv, args, rec, "submitted"), nil
	}
	return w.ended(ctx, inv, rec)
}

// ended concludes inv's ticket by its send's end, once (a second conclusion finds it
// concluded), and answers as the record then says.
func (w *Wallet) ended(ctx context.Context, inv *store.Invocation, rec *sends.Send) (WalletSendOutput, error) {
	var args sendArgs
	if err := json.Unmarshal([]byte(inv.Args), &args); err != nil {
		return WalletSendOutput{}, fmt.Errorf("send %s's args: %w", inv.RequestID, err)
	}
	m := billing.Moved{TxHash: rec.TxHash}
	if rec.Status == sends.Confirmed {
		out := w.answer(inv, args, rec, "confirmed")
		m.Settled, m.Detail = true, "confirmed in block "+fmt.Sprint(rec.BlockNumber)
		m.Answer, _ = json.Marshal(out)
		if err := w.conclude(ctx, inv, rec, m); err != nil {
			return WalletSendOutput{}, err
		}
		return out, nil
	}
	e := tools.Errorf(tools.CodeUpstream, "send %s on %s did not go through (%s: %s); nothing was moved but the network fee, if it was mined. Call wallet_send without confirmRequestId for a new send",
		inv.RequestID, rec.Chain, rec.Status, rec.Reason).WithDetails(map[string]any{"requestId": inv.RequestID, "status": rec.Status, "txHash": rec.TxHash})
	m.Code, m.Detail = string(e.Code), rec.Status+": "+rec.Reason
	m.Answer, _ = json.Marshal(tools.Body{Error: e})
	if err := w.conclude(ctx, inv, rec, m); err != nil {
		return WalletSendOutput{}, err
	}
	return WalletSendOutput{}, e
}

// conclude concludes inv's movement with m and its webhook event; concluded already by
// another process is no error (the record holds its end).
func (w *Wallet) conclude(ctx context.Context, inv *store.Invocation, rec *sends.Send, m billing.Moved) error {
	var args sendArgs
	_ = json.Unmarshal([]byte(inv.Args), &args)
	ev := webhooks.WalletSendData{RequestID: inv.RequestID, KeyID: inv.KeyID, Chain: args.Asked.Chain, Token: args.Shown, From: args.From, To: args.Asked.To,
		Amount: args.Asked.Amount, TxHash: m.TxHash, Status: "failed", Reason: m.Detail}
	if inv.Network != nil {
		ev.Network = *inv.Network
	}
	if rec != nil {
		ev.Chain, ev.Status = rec.Chain, rec.Status
		ev.ExplorerURL = w.sender.Explorer(rec.Chain, rec.TxHash)
	}
	if !args.Unpriced {
		ev.ValueUsd = tools.USD(inv.ValueMicro).String()
	}
	m.Event = ev
	t, err := w.bill.ReopenMove(inv)
	if err != nil {
		return err
	}
	if err := t.ConcludeMove(context.WithoutCancel(ctx), m); err != nil && !errors.Is(err, billing.ErrAlreadyFinished) {
		return fmt.Errorf("record send %s: %w", inv.RequestID, err)
	}
	return nil
}

// answer is the send's answer as rec stands.
func (w *Wallet) answer(inv *store.Invocation, args sendArgs, rec *sends.Send, status string) WalletSendOutput {
	var v *tools.USD
	if !args.Unpriced {
		v = valueOf(inv.ValueMicro, false)
	}
	return WalletSendOutput{RequestID: inv.RequestID, Status: status, Chain: rec.Chain, Token: args.Shown, To: args.Asked.To, Amount: args.Asked.Amount,
		ValueUsd: v, TxHash: rec.TxHash, ExplorerURL: w.sender.Explorer(rec.Chain, rec.TxHash)}
}

// Run follows the open sends every interval until ctx ends, and concludes the ticket of each
// that ended (its record, its wallet.sent or wallet.failed event), once whichever replica
// sees it.
func (w *Wallet) Run(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		w.Follow(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Follow takes the open sends one step (Sender.FollowEnded) and concludes the movements of
// those that ended, and of those a process left dispatching when it died (Abandoned); it
// answers how many it concluded.
func (w *Wallet) Follow(ctx context.Context) int {
	ended, err := w.sender.FollowEnded(ctx)
	if err != nil && ctx.Err() == nil {
		w.log.Warn("follow sends", "error", err)
	}
	n := w.abandoned(ctx) + w.abandonedProposals(ctx)
	for _, rec := range ended {
		if rec.Kind == sends.KindProposed {
			if w.followProposed(ctx, rec) {
				n++
			}
			continue
		}
		inv, err := w.invocations.ByID(ctx, rec.RequestID)
		if err != nil || inv.Kind != store.KindSend || inv.State != store.InvDispatching {
			continue // a send of no wallet_send, or concluded already
		}
		if _, err := w.ended(ctx, inv, rec); err != nil {
			var te *tools.Error
			if !errors.As(err, &te) || te.Code != tools.CodeUpstream { // a failed send's answer is an error
				w.log.Warn("conclude send", "request_id", rec.RequestID, "error", err)
				continue
			}
		}
		n++
	}
	return n
}

// Abandoned is how long a send may stay dispatching without a recorded transaction before the
// follower concludes it: its process died after judging it and before signing it (signing and
// recording are one transaction, so nothing was signed).
const Abandoned = 5 * time.Minute

// abandoned concludes the sends a process left dispatching: ended on chain (the process died
// before concluding), or never signed (it died before signing: failed, nothing sent). An open
// send is the follower's.
func (w *Wallet) abandoned(ctx context.Context) int {
	left, err := w.invocations.Dispatching(ctx, store.KindSend, w.now().Add(-Abandoned), 100)
	if err != nil {
		if ctx.Err() == nil {
			w.log.Warn("list abandoned sends", "error", err)
		}
		return 0
	}
	n := 0
	for _, inv := range left {
		rec, err := w.sender.sends.Get(ctx, inv.RequestID)
		if errors.Is(err, store.ErrNotFound) {
			// Recorded never signed first, in the insert a late confirmation's signing would
			// make: whichever commits first decides, so no send is both signed and told unsent.
			var created bool
			if rec, created, err = w.unsigned(ctx, inv); err == nil && created {
				err = store.ErrNotFound
			}
		}
		switch {
		case errors.Is(err, store.ErrNotFound):
			e := tools.Errorf(tools.CodeUpstream, "send %s was judged but never signed (its process stopped first); nothing was sent. Call wallet_send without confirmRequestId for a new send",
				inv.RequestID).WithDetails(map[string]any{"requestId": inv.RequestID})
			raw, _ := json.Marshal(tools.Body{Error: e})
			err = w.conclude(ctx, inv, nil, billing.Moved{Code: string(e.Code), Detail: "never signed: its process stopped after judging it", Answer: raw})
		case err != nil:
		case rec.Open():
			continue
		default:
			_, err = w.ended(ctx, inv, rec)
			var te *tools.Error
			if errors.As(err, &te) && te.Code == tools.CodeUpstream {
				err = nil // a failed send's answer
			}
		}
		if err != nil {
			w.log.Warn("conclude abandoned send", "request_id", inv.RequestID, "error", err)
			continue
		}
		n++
	}
	return n
}

package billing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/spending"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/webhooks"
)

// A movement is money leaving the account's embedded wallet on chain that is not a partner
// call: an x402 payment (x402_fetch), a wallet send, a transaction a partner proposed. It is
// the same ticket as a call (one invocation row of its kind, the same policy judge, the same
// approvals and webhooks), asked in the same order:
//
//	Movement   the ticket, with the movement's kind, USD value and facts (network, recipient,
//	           host, contract)
//	Admit      the owner's policies before anything is signed (refused: POLICY_DENIED naming
//	           the rule; *ErrApprovalRequired: Ask, through policies.Approvals, as calls do)
//	OpenMove   judged again under the account's credit lock, where the caps are exact, and
//	           recorded dispatching (counted as spent from then on) before it is signed
//	ConcludeMove  settled with its transaction hash, or failed: its record's outcome and its
//	           webhook event in one transaction
//
// It moves no credit, so it books no ledger transaction: the money is the wallet's, and the
// record and the windows count it.

// Movement is an on-chain movement as its ticket is opened with it.
type Movement struct {
	Kind       string // store.KindX402, store.KindSend, store.KindProposed
	ValueMicro int64  // its USD value when judged
	Network    string // CAIP-2 chain id, e.g. eip155:8453
	Category   string // CategoryX402, or SEND for a wallet send
	// Label is what the record, the usage log and an approval show in place of a handle
	// (the x402 resource's host, the recipient).
	Label string
	// Where the money goes, as the policies' lists name it.
	Recipient, Host, Contract string
	// Unpriced: its USD value is unknown (a token without a price); ValueMicro is 0, and a
	// policy with caps, a per-call maximum or an aboveUsd approval refuses it.
	Unpriced bool
	// IntentID, when set, is the intent the movement belongs to (a partner's proposed
	// transactions: its record is found by the intent's calls, and firstCallToPartner asks
	// about the partner); else its kind and label stand for one.
	IntentID string
}

// intentID is what stands for an intent in a movement's record: its kind and label, so the
// approval rule firstCallToPartner asks about the first payment to each host (or recipient).
func (m Movement) intentID() string {
	if m.IntentID != "" {
		return m.IntentID
	}
	return m.Kind + ":" + m.Label
}

// movementEvents are the webhook events of each kind's conclusion (paid, failed); a kind
// without them emits none.
var movementEvents = map[string][2]string{store.KindX402: {webhooks.X402Paid, webhooks.X402Failed},
	store.KindSend: {webhooks.WalletSent, webhooks.WalletFailed}, store.KindProposed: {webhooks.WalletSent, webhooks.WalletFailed}}

// Movement is the ticket of p's movement m.
func (s *Service) Movement(p *tools.Principal, m Movement) *Ticket {
	sp := Spend{Handle: m.Label, IntentID: m.intentID(), Category: m.Category, WorstMicro: m.ValueMicro, Recipient: m.Recipient, Host: m.Host, Contract: m.Contract, Unpriced: m.Unpriced}
	return &Ticket{svc: s, p: p, spend: sp, move: &m}
}

// ReopenMove is the ticket of a movement opened (dispatching) by an earlier call or process,
// to conclude it (ConcludeMove) once its end is known: a wallet send the follower took to its
// receipt, or an x402 payment the sweeper found settled or expired. Its judging is behind it.
func (s *Service) ReopenMove(inv *store.Invocation) (*Ticket, error) {
	if inv.Kind == store.KindCall || inv.Kind == "" {
		return nil, errors.New("billing: ReopenMove of a record that is not a movement")
	}
	m := Movement{Kind: inv.Kind, ValueMicro: inv.ValueMicro, Category: inv.Category, Label: inv.Handle, IntentID: inv.IntentID}
	if inv.Network != nil {
		m.Network = *inv.Network
	}
	return &Ticket{svc: s, record: *inv, move: &m}, nil
}

// Record is the movement's record, new, in state (awaiting_approval for Ask, or "" for
// OpenMove, which dispatches it), with args as what was asked.
func (t *Ticket) Record(requestID string, args any, now time.Time) (*store.Invocation, error) {
	m := t.move
	if m == nil {
		return nil, errors.New("billing: Record of a ticket that is not a movement")
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("movement args: %w", err)
	}
	network := m.Network
	return &store.Invocation{RequestID: requestID, AccountID: t.p.AccountID, KeyID: t.p.KeyID, IntentID: m.intentID(), Handle: m.Label, Category: m.Category,
		Args: string(raw), Kind: m.Kind, Network: &network, ValueMicro: m.ValueMicro, CreatedAt: now.UTC()}, nil
}

// OpenMove judges the movement again where its spending is exact (the account's credit row
// locked, so movements and calls judged one after another see each other) and records inv
// dispatching, in one transaction: inserted when from is "", else moved from state from (an
// approved movement, whose args are written again: inv.Args holds what will be signed, so a
// sweeper can judge it by the chain). Nothing may be signed before it returns nil. A refusal is POLICY_DENIED
// (told to the owner as policy.denied) with nothing written; ErrMoved: another call moved the
// record first.
func (t *Ticket) OpenMove(ctx context.Context, inv *store.Invocation, from string) error {
	s, p := t.svc, t.p
	now := s.now().UTC()
	governed := s.governed(p.AccountID)
	err := s.store.InTx(ctx, func(ctx context.Context, q *store.Q) error {
		if governed {
			if _, err := q.LockCredit(ctx, p.AccountID, now); err != nil {
				return err
			}
			v, err := spending.ViewIn(ctx, q, p.AccountID, chainOf(p), "", windowsOf(now))
			if err != nil {
				return err
			}
			if err := Judge(p, v, t.spend, false); err != nil {
				return err
			}
		}
		row := *inv
		row.State, row.DispatchedAt = store.InvDispatching, &now
		if from == "" {
			if err := q.InsertInvocation(ctx, &row); err != nil {
				return err
			}
		} else if ok, err := q.MoveInvocation(ctx, row.RequestID, from, store.InvDispatching, now); err != nil {
			return err
		} else if !ok {
			return ErrMoved
		} else if err := q.WriteArgs(ctx, &row); err != nil { // what it signs, recorded before it is signed
			return err
		}
		return q.AddEvent(ctx, row.RequestID, store.InvDispatching, "judged by the policies; signing", now)
	})
	if err != nil {
		return s.denied(ctx, p, t.spend, err)
	}
	inv.State, inv.DispatchedAt = store.InvDispatching, &now
	t.record = *inv
	return nil
}

// Moved is how a movement ended.
type Moved struct {
	// Settled: the money moved, in transaction TxHash ("" when the other side did not say).
	// Unknown: it may have moved (a signed authorization sent, no answer): counted as spent.
	Settled, Unknown bool
	TxHash           string
	// Status is the other side's HTTP status, when it answered (an x402 seller).
	Status int
	// Code and Detail say why it failed (Settled false), or what settled it.
	Code, Detail string
	// Answer is the JSON answer its caller got, replayed to a retry of its requestId.
	Answer []byte
	// Event is the webhook event's data (webhooks.X402Data for an x402 payment).
	Event any
}

// ConcludeMove records how the opened movement ended, once: its outcome and transaction hash,
// and its webhook event (x402.paid, x402.failed), in one transaction. ErrAlreadyFinished:
// another process concluded it first, and nothing was written.
func (t *Ticket) ConcludeMove(ctx context.Context, m Moved) error {
	s := t.svc
	now := s.now().UTC()
	inv := t.record
	inv.Outcome = store.Outcome{State: store.InvFailed, Attempts: 1, OutcomeCode: m.Code, OutcomeMessage: m.Detail, FinishedAt: &now}
	switch {
	case m.Settled:
		inv.Outcome.State, inv.Outcome.OutcomeCode = store.InvSucceeded, "OK"
	case m.Unknown:
		inv.Outcome.State = store.InvOutcomeUnknown
	}
	if m.Status != 0 {
		inv.Outcome.HTTPStatus = &m.Status
	}
	if m.TxHash != "" {
		inv.TxHash = &m.TxHash
	}
	if len(m.Answer) > 0 {
		a := string(m.Answer)
		inv.Answer = &a
	}
	events := movementEvents[inv.Kind]
	return s.store.InTx(ctx, func(ctx context.Context, q *store.Q) error {
		ok, err := q.MoveInvocation(ctx, inv.RequestID, store.InvDispatching, inv.Outcome.State, now)
		if err != nil {
			return err
		}
		if !ok {
			return ErrAlreadyFinished
		}
		if err := q.WriteMovement(ctx, &inv); err != nil {
			return err
		}
		detail := m.Detail
		if m.Settled && m.TxHash != "" {
			detail = "settled in " + m.TxHash
		}
		if err := q.AddEvent(ctx, inv.RequestID, inv.Outcome.State, detail, now); err != nil {
			return err
		}
		typ := events[1]
		if m.Settled {
			typ = events[0]
		}
		if typ == "" || m.Event == nil {
			return nil
		}
		return webhooks.Emit(ctx, q, typ, inv.AccountID, now, m.Event)
	})
}

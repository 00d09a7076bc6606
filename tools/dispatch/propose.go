package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/switchboard-hq/switchboard/chain/evm"
	"github.com/switchboard-hq/switchboard/chain/solana/transfer"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	partnerstore "github.com/switchboard-hq/switchboard/store/partners"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/partners"
	"github.com/switchboard-hq/switchboard/tools/policies"
	"github.com/switchboard-hq/switchboard/tools/send"
)

// The invoke path of partner-proposed transactions (issue 49 item 2). A MUTATES_USER_FUNDS
// intent's call is quoted, confirmed and concluded as any write (its partner paid its fee);
// when its answer proposes transactions, they become a movement of their own, a ticket in the
// money room: simulated and decoded from the account's wallets (proposal.go), priced, judged
// by the owner's policies, recorded awaiting confirmation and shown in a second
// CONFIRMATION_REQUIRED. Confirmed (invoke_partner_message with the proposals' requestId),
// they are simulated again (a proposal that no longer runs, or moves more than was shown, is
// never signed), judged again where the caps are exact (OpenMove), signed at the gas and fees
// shown and broadcast once each (send.Sender.SendProposed); the movement ends when every
// transaction has, concluded by this call or the wallet's follower.

// proposalArgs is a proposals movement's record: what the partner proposed, what the
// confirmation showed, and from which wallets.
type proposalArgs struct {
	send.ProposedSet
	Call     string         `json:"call"` // the partner call that proposed them
	Proposed []ProposedTx   `json:"proposed"`
	Shown    []ProposalView `json:"shown"`
	Fees     []shownFees    `json:"fees"`
	EVMFrom  string         `json:"evmFrom,omitempty"`
	SolFrom  string         `json:"solFrom,omitempty"`
	Priced   Priced         `json:"priced"`
}

// shownFees is the gas and fees (wei) an EVM proposal was shown at, and is signed at.
type shownFees struct {
	ChainID int64  `json:"chainId,omitempty"`
	Gas     uint64 `json:"gas,omitempty"`
	Tip     string `json:"tip,omitempty"`
	FeeCap  string `json:"feeCap,omitempty"`
}

// SentTransaction is one proposed transaction as it stands once confirmed.
type SentTransaction struct {
	RequestID   string `json:"requestId" jsonschema_description:"the send's record: the proposals' requestId and the transaction's index"`
	Chain       string `json:"chain"`
	Status      string `json:"status" jsonschema:"enum=submitted,enum=confirmed,enum=failed,enum=dropped,enum=unsigned" jsonschema_description:"submitted: signed, recorded and broadcast; confirmed: on chain; failed or dropped: it did not go through (reason); unsigned: never signed"`
	TxHash      string `json:"txHash,omitempty" jsonschema_description:"the transaction hash (EVM) or signature (Solana)"`
	ExplorerURL string `json:"explorerUrl,omitempty"`
	FeeNative   string `json:"feeNative,omitempty" jsonschema_description:"what it paid the network once mined, wei or lamports, from the wallet: gas passes through at its actual cost"`
	Reason      string `json:"reason,omitempty"`
}

// proposalsNS names the proposals movements: one per partner call, its id derived from the
// call's, so a replayed confirmation of the call finds the same movement.
var proposalsNS = uuid.MustParse("5d3c7a0e-4b8f-4c61-9a57-2f1e0c9b7d41")

func proposalsID(callID string) string {
	return uuid.NewSHA1(proposalsNS, []byte(callID)).String()
}

// signingScope refuses a key that may not have the wallet sign what a partner proposes: the
// scope of the intent's category (swap, bridge, send), or send for a category that has none
// (EXECUTE, ...), as wallet_send needs; "partner" alone never moves the wallet's funds.
func signingScope(cl *call) *tools.Error {
	need := cl.rule.Scope
	if need == "" {
		need = tools.ScopeSend
	}
	if cl.bill.Caller().HasScope(need) {
		return nil
	}
	return tools.Errorf(tools.CodeForbidden, "%s proposes transactions for the embedded wallet, and signing them needs scope %q as well as \"partner\": nothing was signed. Use a key that has it", cl.intent.PublicIdentifier, need)
}

func mutates(intent *partnerstore.Intent) bool {
	return slices.Contains(intent.Capabilities, partners.CapMutatesUserFunds)
}

// proposed goes on from a MUTATES_USER_FUNDS call's answer (or its replay): when the partner
// proposed transactions, the answer is their confirmation (or the movement as it stands);
// otherwise the call's answer itself.
func (s *Service) proposed(ctx context.Context, cl *call, out InvokeOutput, err error) (InvokeOutput, error) {
	if err != nil || !out.Success || !mutates(cl.intent) {
		return out, err
	}
	txs, perr := proposals(out.Result)
	if txs == nil && perr == nil {
		return out, nil
	}
	callDetails := map[string]any{"call": out}
	if e := signingScope(cl); e != nil {
		return InvokeOutput{}, e.WithDetails(callDetails)
	}
	if perr != nil {
		return InvokeOutput{}, tools.Errorf(tools.CodeUpstream, "%s answered, and was paid, but its proposed transactions cannot be read (%v): nothing was signed. Tell the partner, or try another", cl.intent.PublicIdentifier, perr).
			WithDetails(callDetails)
	}
	if s.cfg.Wallet == nil {
		return InvokeOutput{}, tools.Errorf(tools.CodeUnavailable, "%s proposes transactions, and this deployment signs none (no chain node is configured for sending): nothing was signed", cl.intent.PublicIdentifier).
			WithDetails(callDetails)
	}
	id := proposalsID(out.RequestID)
	inv, err := s.invocations.Get(ctx, cl.bill.Caller().AccountID, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return InvokeOutput{}, s.propose(ctx, cl, out, txs, id)
	case err != nil:
		return InvokeOutput{}, err
	}
	var args proposalArgs
	if err := json.Unmarshal([]byte(inv.Args), &args); err != nil {
		return InvokeOutput{}, fmt.Errorf("proposals %s's args: %w", id, err)
	}
	switch inv.State {
	case store.InvAwaitingConfirmation: // the same confirmation again
		return InvokeOutput{}, s.showProposals(cl, inv, args, out)
	case store.InvAwaitingApproval:
		return InvokeOutput{}, tools.Errorf(tools.CodeApprovalPending, "%s's proposed transactions (request %s) wait for the account's owner; call again with confirmRequestId %q once they decided",
			cl.intent.PublicIdentifier, id, id).WithDetails(map[string]any{"requestId": id, "handle": inv.Handle})
	}
	return s.proposalAnswer(ctx, inv, args)
}

// propose simulates, decodes, prices and judges the call's proposed transactions, records
// them awaiting confirmation (or the owner's approval), and answers the confirmation.
func (s *Service) propose(ctx context.Context, cl *call, out InvokeOutput, txs []ProposedTx, id string) error {
	p := cl.bill.Caller()
	args := proposalArgs{Call: out.RequestID, Proposed: txs}
	args.Count = len(txs)
	var err error
	if args.EVMFrom, args.SolFrom, err = s.walletAddresses(ctx, p.AccountID); err != nil {
		return err
	}
	evmFrom, _ := evm.ParseAddress(args.EVMFrom)
	views, err := viewProposals(ctx, s.cfg.Wallet.Sender(), p.AccountID, id, evmFrom, args.SolFrom, txs)
	if err != nil {
		return simulationRefusal(cl.intent.PublicIdentifier, err).WithDetails(map[string]any{"call": out})
	}
	if args.Priced, err = priceProposals(ctx, s.tokens, evmFrom, args.SolFrom, views); err != nil {
		return err
	}
	args.Shown, args.Unpriced = views, len(args.Priced.Unpriced) > 0
	for _, v := range views {
		args.Fees = append(args.Fees, feesOf(v.Proposal.Simulated))
	}
	t := s.billing.Movement(p, s.proposalMovement(cl.intent, views[0], args))
	judged := s.judgeProposals(ctx, cl, t, views, args)
	var need *billing.ErrApprovalRequired
	if judged != nil && !errors.As(judged, &need) {
		return withProposals(judged, views)
	}
	inv, err := t.Record(id, args, s.now())
	if err != nil {
		return err
	}
	inv.MessageHash = messageHash(cl.said)
	inv.IntentRevision = cl.intent.Revision
	if need != nil {
		return s.askOwnerProposals(ctx, t, inv, args, need.Rule)
	}
	inv.State = store.InvAwaitingConfirmation
	if err := t.Ask(ctx, inv, fmt.Sprintf("proposed by %s (call %s); waiting for the caller's confirmation", cl.intent.PublicIdentifier, out.RequestID)); err != nil {
		return err
	}
	return s.showProposals(cl, inv, args, out)
}

// judgeProposals judges the proposals by the owner's policies: the first transaction's facts
// with what they all move, then each other's contract and recipient (judgeOthers).
func (s *Service) judgeProposals(ctx context.Context, cl *call, t *billing.Ticket, views []ProposalView, args proposalArgs) error {
	if err := t.Admit(ctx, args.Priced.ValueMicro); err != nil {
		return err
	}
	return s.judgeOthers(ctx, cl, views, args)
}

// judgeOthers judges the contract and recipient of each transaction after the first (their
// value counted with the first's); an approval rule they meet is the first's to ask.
func (s *Service) judgeOthers(ctx context.Context, cl *call, views []ProposalView, args proposalArgs) error {
	for _, v := range views[1:] {
		m := s.proposalMovement(cl.intent, v, args)
		m.ValueMicro, m.Unpriced = 0, false
		if err := s.billing.Movement(cl.bill.Caller(), m).Admit(ctx, 0); err != nil && !isApproval(err) {
			return err
		}
	}
	return nil
}

func (s *Service) proposalMovement(intent *partnerstore.Intent, v ProposalView, args proposalArgs) billing.Movement {
	m := movementOf(v, store.KindProposed, intent.Category, args.Priced.ValueMicro)
	m.Label, m.IntentID, m.Unpriced = intent.PublicIdentifier, intent.ID, args.Unpriced
	m.Network = s.cfg.Wallet.Sender().Network(v.Chain)
	return m
}

// withProposals adds the decoded proposals to a refusal, so the caller sees what was refused
// (an unlimited approval named as such).
func withProposals(err error, views []ProposalView) error {
	var te *tools.Error
	if errors.As(err, &te) {
		d := map[string]any{"transactions": views}
		for k, v := range te.Details {
			d[k] = v
		}
		te.Details = d
		te.Message += " (the proposed transactions, decoded, are in details); nothing was signed"
	}
	return err
}

func simulationRefusal(handle string, err error) *tools.Error {
	if errors.Is(err, evm.ErrSimulationFailed) || errors.Is(err, transfer.ErrSimulationFailed) || errors.Is(err, transfer.ErrProposal) || errors.Is(err, send.ErrUnknownChain) {
		return tools.Errorf(tools.CodeUpstream, "a transaction %s proposed cannot be signed: %v. Nothing was signed; the partner's answer is in details", handle, err).Wrap(err)
	}
	return tools.Errorf(tools.CodeUnavailable, "the transactions %s proposed cannot be simulated now (%v): nothing was signed. Try the call again later", handle, err).Wrap(err)
}

func feesOf(tx *evm.Tx) shownFees {
	if tx == nil {
		return shownFees{}
	}
	return shownFees{ChainID: tx.ChainID, Gas: tx.Gas, Tip: tx.GasTipCap.String(), FeeCap: tx.GasFeeCap.String()}
}

// walletAddresses are the account's embedded wallets' addresses (no key opened).
func (s *Service) walletAddresses(ctx context.Context, accountID string) (evmAddr, solAddr string, err error) {
	ws, err := s.accounts.Wallets(ctx, accountID)
	if err != nil {
		return "", "", err
	}
	for _, w := range ws {
		switch w.Family {
		case accounts.FamilyEVM:
			evmAddr = w.Address
		case accounts.FamilySVM:
			solAddr = w.Address
		}
	}
	return evmAddr, solAddr, nil
}

// showProposals is the proposals' confirmation, with the call that proposed them.
func (s *Service) showProposals(cl *call, inv *store.Invocation, args proposalArgs, out InvokeOutput) error {
	e := proposalConfirmation(cl.intent.PublicIdentifier, inv.Category, inv.RequestID, args.Shown, args.Priced, inv.CreatedAt.Add(ConfirmWindow))
	e.Details["call"] = out
	return e
}

// askOwnerProposals records the proposals awaiting their owner's approval, the decoded
// effects in what the approval shows, and answers APPROVAL_REQUIRED.
func (s *Service) askOwnerProposals(ctx context.Context, t *billing.Ticket, inv *store.Invocation, args proposalArgs, rule string) error {
	charge := map[string]any{"sendUsd": tools.USD(args.Priced.ValueMicro).String(), "gasEstimateUsd": tools.USD(args.Priced.GasMicro).String(),
		"totalUsd": tools.USD(args.Priced.ValueMicro).String(), "maxChargeUsd": tools.USD(args.Priced.ValueMicro).String(),
		"effects": effectsText(args.Shown)}
	return s.approvals.Ask(ctx, t, policies.Ask{Record: inv, Rule: rule, WorstMicro: args.Priced.ValueMicro, Charge: charge,
		Details: map[string]any{"transactions": args.Shown}, Asking: proposalsAsking(inv.Handle)})
}

// proposalsAsking is how an approval names a partner's proposed transactions to the agent.
func proposalsAsking(handle string) policies.Asking {
	return policies.Asking{What: handle + "'s proposed transactions", Nothing: "nothing was signed",
		Again: "call invoke_partner_message again with the same message", Continues: true}
}

// effectsText is the decoded effects as the approval page lists them, one per line.
func effectsText(views []ProposalView) string {
	var text string
	for i, v := range views {
		for _, e := range v.Effects {
			text += fmt.Sprintf("%d. on %s: %s\n", i+1, v.Chain, effectLine(e))
		}
	}
	return text
}

// confirmProposals answers a confirmation (or decline) of a proposals movement.
func (s *Service) confirmProposals(ctx context.Context, cl *call, inv *store.Invocation, in InvokeInput) (InvokeOutput, error) {
	if inv.MessageHash != nil && *inv.MessageHash != *messageHash(cl.said) {
		return InvokeOutput{}, tools.Errorf(tools.CodeConflict, "the message differs from the call whose proposed transactions are %s: nothing was signed. Confirm them with the same message", inv.RequestID).
			WithDetails(map[string]any{"requestId": inv.RequestID, "handle": inv.Handle})
	}
	if in.Decline {
		return InvokeOutput{}, s.decline(ctx, cl, inv.RequestID, inv, nil)
	}
	if e := signingScope(cl); e != nil {
		return InvokeOutput{}, e
	}
	var args proposalArgs
	if err := json.Unmarshal([]byte(inv.Args), &args); err != nil {
		return InvokeOutput{}, fmt.Errorf("proposals %s's args: %w", inv.RequestID, err)
	}
	if s.cfg.Wallet == nil {
		return InvokeOutput{}, tools.Errorf(tools.CodeUnavailable, "this deployment signs no proposed transactions (no chain node is configured for sending): nothing was signed")
	}
	t := s.billing.Movement(cl.bill.Caller(), s.proposalMovement(cl.intent, args.Shown[0], args))
	switch {
	case store.StateOf(inv.State).Final, inv.State == store.InvDispatching:
		return s.proposalAnswer(ctx, inv, args)
	case inv.State == store.InvAwaitingApproval:
		if err := s.approvals.Await(ctx, t, inv, proposalsAsking(inv.Handle)); err != nil {
			return InvokeOutput{}, err
		}
	case inv.State != store.InvAwaitingConfirmation:
		return InvokeOutput{}, tools.Errorf(tools.CodeConflict, "request %s is %s", inv.RequestID, inv.State)
	case s.now().UTC().Sub(inv.CreatedAt) > ConfirmWindow:
		return InvokeOutput{}, s.closeProposals(ctx, t, inv, tools.Errorf(tools.CodeConflict,
			"the proposed transactions %s expired (%d minutes) unsigned; call %s again for new ones", inv.RequestID, int(ConfirmWindow.Minutes()), inv.Handle), "expired unsigned")
	}
	return s.signProposals(ctx, cl, t, inv, args)
}

// signProposals simulates the proposals again (what no longer runs, or moves more than was
// shown, is never signed), opens their movement (judged again where the caps are exact,
// recorded dispatching) and signs and sends each once. Signing off refuses first, with
// nothing written.
func (s *Service) signProposals(ctx context.Context, cl *call, t *billing.Ticket, inv *store.Invocation, args proposalArgs) (InvokeOutput, error) {
	acct, err := s.accounts.ByID(ctx, inv.AccountID)
	if err != nil {
		return InvokeOutput{}, err
	}
	if !acct.SigningEnabled {
		return InvokeOutput{}, tools.Errorf(tools.CodeForbidden, "signing with the embedded wallet is off for this account (the account's signingEnabled setting); a human turns it on in the portal's settings, then confirm again. Nothing was signed")
	}
	evmFrom, _ := evm.ParseAddress(args.EVMFrom)
	now, err := viewProposals(ctx, s.cfg.Wallet.Sender(), inv.AccountID, inv.RequestID, evmFrom, args.SolFrom, args.Proposed)
	if err != nil {
		e := simulationRefusal(inv.Handle, err)
		return InvokeOutput{}, s.closeProposals(ctx, t, inv, e, "no longer runs: "+err.Error())
	}
	if exceeds(args.Shown, now) {
		e := tools.Errorf(tools.CodeConflict, "the transactions %s proposed would now move more than the confirmation showed: nothing was signed. Call %s again for new ones", inv.Handle, inv.Handle).
			WithDetails(map[string]any{"requestId": inv.RequestID, "shown": args.Shown, "now": now})
		return InvokeOutput{}, s.closeProposals(ctx, t, inv, e, "moves more than shown; never signed")
	}
	if err := s.judgeOthers(ctx, cl, now, args); err != nil {
		return InvokeOutput{}, withProposals(err, now)
	}
	if err := t.OpenMove(ctx, inv, inv.State); errors.Is(err, billing.ErrMoved) {
		moved, rerr := s.invocations.Get(ctx, inv.AccountID, inv.RequestID)
		if rerr != nil {
			return InvokeOutput{}, rerr
		}
		return s.proposalAnswer(ctx, moved, args)
	} else if err != nil {
		return InvokeOutput{}, withProposals(err, now)
	}
	for i, v := range now {
		p := v.Proposal
		p.Simulated = shownTx(p.Simulated, args.Fees[i])
		if _, err := s.cfg.Wallet.Sender().SendProposed(ctx, p); err != nil && !errors.Is(err, send.ErrNotBroadcast) {
			if _, rerr := s.cfg.Wallet.Sender().Recorded(ctx, p.RequestID); rerr == nil {
				// Signed and recorded: the follower sends those bytes and concludes the
				// movement; this call says where it stands, never that it failed.
				break
			}
			return InvokeOutput{}, s.proposalsFailed(ctx, inv, i, err)
		}
	}
	if _, err := s.cfg.Wallet.ConcludeProposed(ctx, inv, false); err != nil {
		s.log.Warn("conclude proposals", "request_id", inv.RequestID, "error", err)
	}
	return s.proposalAnswer(ctx, inv, args)
}

// isApproval: a judge that would ask the owner (a later transaction's first call to its
// partner, say) does not stop proposals the owner already let through.
func isApproval(err error) bool {
	var need *billing.ErrApprovalRequired
	return errors.As(err, &need)
}

// shownTx is the simulated transaction at the gas and fees the confirmation showed.
func shownTx(tx *evm.Tx, f shownFees) *evm.Tx {
	if tx == nil || f.Gas == 0 {
		return tx
	}
	out := *tx
	tip, ok1 := new(big.Int).SetString(f.Tip, 10)
	feeCap, ok2 := new(big.Int).SetString(f.FeeCap, 10)
	if ok1 && ok2 {
		out.Gas, out.GasTipCap, out.GasFeeCap = f.Gas, tip, feeCap
	}
	return &out
}

// proposalsFailed concludes the opened movement when transaction i could not be signed or
// recorded (those before it were sent, and are followed to their end).
func (s *Service) proposalsFailed(ctx context.Context, inv *store.Invocation, i int, err error) error {
	e := tools.Errorf(tools.CodeUpstream, "transaction %d of %s's proposals could not be signed or sent (%v); it and those after it were not signed (the answer of a confirmation with %q says what was sent)",
		i, inv.Handle, err, inv.RequestID).WithDetails(map[string]any{"requestId": inv.RequestID}).Wrap(err)
	raw, _ := json.Marshal(tools.Body{Error: e})
	t, rerr := s.billing.ReopenMove(inv)
	if rerr != nil {
		return rerr
	}
	if cerr := t.ConcludeMove(context.WithoutCancel(ctx), billing.Moved{Code: string(e.Code), Detail: fmt.Sprintf("transaction %d not signed: %v", i, err), Answer: raw}); cerr != nil && !errors.Is(cerr, billing.ErrAlreadyFinished) {
		return cerr
	}
	return e
}

// closeProposals ends proposals that were never signed, with answer e (replayed).
func (s *Service) closeProposals(ctx context.Context, t *billing.Ticket, inv *store.Invocation, e *tools.Error, detail string) error {
	raw, _ := json.Marshal(tools.Body{Error: e})
	stored, now := string(raw), s.now().UTC()
	closed, err := t.Close(ctx, inv, store.Outcome{State: store.InvDeclined, Answer: &stored, FinishedAt: &now, OutcomeCode: string(e.Code), OutcomeMessage: detail}, detail)
	if err != nil {
		return err
	}
	if !closed {
		return tools.Errorf(tools.CodeConflict, "the proposed transactions %s were confirmed by another call first; confirm again to read their outcome", inv.RequestID)
	}
	return e
}

// proposalAnswer is the proposals as they stand: each transaction by its send record (the
// truth on chain), or the error they ended with.
func (s *Service) proposalAnswer(ctx context.Context, inv *store.Invocation, args proposalArgs) (InvokeOutput, error) {
	if inv.Answer != nil {
		var body tools.Body
		if json.Unmarshal([]byte(*inv.Answer), &body) == nil && body.Error != nil {
			return InvokeOutput{}, body.Error
		}
	}
	out := InvokeOutput{Handle: inv.Handle, RequestID: inv.RequestID, Success: inv.State != store.InvFailed, Attempts: 1}
	sender := s.cfg.Wallet.Sender()
	unsigned := 0
	for i := range args.Count {
		id := send.ProposedID(inv.RequestID, i)
		tx := SentTransaction{RequestID: id, Chain: args.Proposed[i].Chain, Status: "unsigned"}
		rec, err := sender.Recorded(ctx, id)
		switch {
		case errors.Is(err, store.ErrNotFound):
			unsigned++
		case err != nil:
			return InvokeOutput{}, err
		default:
			tx.Status, tx.TxHash, tx.FeeNative, tx.Reason = rec.Status, rec.TxHash, rec.Fee, rec.Reason
			if rec.Open() {
				tx.Status = "submitted"
			}
			tx.ExplorerURL = sender.Explorer(rec.Chain, rec.TxHash)
		}
		out.Transactions = append(out.Transactions, tx)
	}
	if unsigned > 0 && inv.State == store.InvDispatching {
		// Its confirmation stopped before signing them all: nothing more is signed, and the
		// follower ends it (failed) once it is abandoned; till then no answer says success.
		e := tools.Errorf(tools.CodeConflict, "the transactions %s were confirmed, but %d of them were not signed (the confirming call stopped first); none will be: their outcome is concluded within %d minutes. Call again with the same confirmRequestId for it",
			inv.RequestID, unsigned, int(send.Abandoned.Minutes())).WithDetails(map[string]any{"requestId": inv.RequestID, "transactions": out.Transactions})
		e.RetryAfter = 30 * time.Second
		return InvokeOutput{}, e
	}
	return out, nil
}

package dispatch

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/switchboard-hq/switchboard/chain/evm"
	"github.com/switchboard-hq/switchboard/chain/solana/transfer"
	"github.com/switchboard-hq/switchboard/store/sends"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/send"
	"github.com/switchboard-hq/switchboard/tools/tokens"
)

// Partner-proposed transactions (issue 49 item 2), the invoke path's part: a
// MUTATES_USER_FUNDS intent's partner answers result.transactions; each is read strictly
// (proposals), simulated from the account's wallet and decoded into what the second
// confirmation shows (viewProposals), judged as a movement ticket whose facts are its contract
// and recipient (movementOf), and at the confirmation re-simulated: a decoded effect beyond
// what was shown is never signed (exceeds). Not wired into invoke yet: see docs/decisions.md.

// ErrBadProposal is a partner's result.transactions that is not the documented shape.
var ErrBadProposal = errors.New("the partner's proposed transactions are malformed")

// MaxProposed is how many transactions one answer may propose.
const MaxProposed = 4

// maxCalldata bounds an EVM proposal's calldata (bytes); maxSolanaTx is a Solana packet.
const (
	maxCalldata = 64 << 10
	maxSolanaTx = 1232
)

// ProposedTx is one transaction of a partner's result.transactions: EVM {chain, to, data,
// value} (data 0x hex, value wei as a decimal integer string) or Solana {chain: "solana",
// transaction} (base64).
type ProposedTx struct {
	Chain       string `json:"chain"`
	To          string `json:"to,omitempty"`
	Data        string `json:"data,omitempty"`
	Value       string `json:"value,omitempty"`
	Transaction string `json:"transaction,omitempty"`
}

// proposals reads result.transactions strictly: nil when the result proposes nothing (not an
// object, or no transactions key); ErrBadProposal for any other shape, an unknown field
// included (a partner cannot set from, nonce or gas).
func proposals(result []byte) ([]ProposedTx, error) {
	var top map[string]json.RawMessage
	if json.Unmarshal(result, &top) != nil {
		return nil, nil
	}
	raw, ok := top["transactions"]
	if !ok {
		return nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || len(items) == 0 || len(items) > MaxProposed {
		return nil, fmt.Errorf("%w: transactions must be an array of 1 to %d transactions", ErrBadProposal, MaxProposed)
	}
	out := make([]ProposedTx, len(items))
	for i, item := range items {
		dec := json.NewDecoder(bytes.NewReader(item))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&out[i]); err != nil {
			return nil, fmt.Errorf("%w: transactions[%d]: %w", ErrBadProposal, i, err)
		}
		if err := out[i].check(); err != nil {
			return nil, fmt.Errorf("%w: transactions[%d]: %w", ErrBadProposal, i, err)
		}
	}
	return out, nil
}

func (t *ProposedTx) check() error {
	if t.Chain == send.SolanaChain {
		if t.To != "" || t.Data != "" || t.Value != "" {
			return errors.New(`a Solana transaction is {chain: "solana", transaction}`)
		}
		raw, err := base64.StdEncoding.DecodeString(t.Transaction)
		if err != nil || len(raw) == 0 || len(raw) > maxSolanaTx {
			return fmt.Errorf("transaction must be a base64 serialized transaction of at most %d bytes", maxSolanaTx)
		}
		return nil
	}
	if t.Chain == "" || t.Transaction != "" {
		return errors.New("an EVM transaction is {chain, to, data, value}")
	}
	if _, err := evm.ParseAddress(t.To); err != nil {
		return fmt.Errorf("to: %w", err)
	}
	if t.Data == "" {
		t.Data = "0x"
	}
	if _, err := t.calldata(); err != nil {
		return err
	}
	if t.Value == "" {
		t.Value = "0"
	}
	_, err := t.wei()
	return err
}

func (t ProposedTx) calldata() ([]byte, error) {
	if !strings.HasPrefix(t.Data, "0x") {
		return nil, errors.New("data must be 0x hex")
	}
	b, err := hex.DecodeString(t.Data[2:])
	if err != nil || len(b) > maxCalldata {
		return nil, fmt.Errorf("data must be 0x hex of at most %d bytes", maxCalldata)
	}
	return b, nil
}

func (t ProposedTx) wei() (*big.Int, error) {
	n, ok := new(big.Int).SetString(t.Value, 10)
	if !ok || n.Sign() < 0 || n.BitLen() > 256 || strings.TrimLeft(t.Value, "0123456789") != "" {
		return nil, errors.New("value must be wei as a decimal integer string")
	}
	return n, nil
}

// Proposer is what the invoke path needs of the wallet's sender (tools/send.Sender).
type Proposer interface {
	SimulateProposal(ctx context.Context, from [20]byte, p send.Proposal) (*evm.Simulation, error)
	SimulateSolanaProposal(ctx context.Context, from string, p send.Proposal) (*transfer.Proposed, *transfer.Simulation, error)
	SendProposed(ctx context.Context, p send.Proposal) (*sends.Send, error)
}

// EffectView is one thing a proposed transaction does, as the confirmation shows it.
type EffectView struct {
	Kind      string `json:"kind" jsonschema:"enum=native,enum=transfer,enum=transferFrom,enum=approve,enum=call" jsonschema_description:"native: the coin sent; transfer, transferFrom: tokens moved; approve: an allowance granted; call: anything else"`
	Contract  string `json:"contract,omitempty" jsonschema_description:"EVM: the contract called (to); Solana: the program"`
	Recipient string `json:"recipient,omitempty" jsonschema_description:"who receives (approve: the spender or delegate)"`
	Owner     string `json:"owner,omitempty" jsonschema_description:"transferFrom: whose tokens move"`
	Token     string `json:"token,omitempty" jsonschema_description:"the ERC-20 contract or SPL mint"`
	Amount    string `json:"amount,omitempty" jsonschema_description:"token units, an integer"`
	Unlimited bool   `json:"unlimited,omitempty" jsonschema_description:"an approval of 2^255 or more (EVM) or u64's maximum (Solana)"`
	Native    string `json:"native,omitempty" jsonschema_description:"the native coin sent, wei or lamports, an integer"`
	Selector  string `json:"selector,omitempty" jsonschema_description:"call: the calldata's selector"`
}

// ProposalView is one proposed transaction simulated and decoded.
type ProposalView struct {
	Chain   string       `json:"chain"`
	Effects []EffectView `json:"effects"`
	// FeeNative is the fee estimate in wei (gas x the quoted price) or lamports; GasUnits EVM's.
	FeeNative string `json:"feeNative"`
	GasUnits  uint64 `json:"gasUnits,omitempty"`
	// Proposal is what is signed on confirmation.
	Proposal send.Proposal `json:"-"`
}

// viewProposals simulates and decodes each proposed transaction from the account's wallets
// (evmFrom, solFrom): any failing simulation fails them all, before anything is shown or
// signed.
func viewProposals(ctx context.Context, pr Proposer, accountID, requestID string, evmFrom [20]byte, solFrom string, txs []ProposedTx) ([]ProposalView, error) {
	out := make([]ProposalView, 0, len(txs))
	for i, t := range txs {
		p := send.Proposal{RequestID: fmt.Sprintf("%s.%d", requestID, i), AccountID: accountID, Chain: t.Chain}
		if t.Chain == send.SolanaChain {
			p.Transaction = t.Transaction
			prop, _, err := pr.SimulateSolanaProposal(ctx, solFrom, p)
			if err != nil {
				return nil, fmt.Errorf("transactions[%d]: %w", i, err)
			}
			out = append(out, ProposalView{Chain: t.Chain, Effects: solanaEffects(prop), FeeNative: fmt.Sprint(prop.FeeLamports), Proposal: p})
			continue
		}
		p.To = t.To
		p.Data, _ = t.calldata()
		p.Value, _ = t.wei()
		sim, err := pr.SimulateProposal(ctx, evmFrom, p)
		if err != nil {
			return nil, fmt.Errorf("transactions[%d]: %w", i, err)
		}
		p.Simulated = sim.Tx
		fee := new(big.Int).Mul(new(big.Int).SetUint64(sim.Tx.Gas), sim.Fees.Quoted)
		out = append(out, ProposalView{Chain: t.Chain, Effects: []EffectView{evmEffect(sim.Effect)}, FeeNative: fee.String(), GasUnits: sim.Tx.Gas, Proposal: p})
	}
	return out, nil
}

func hexAddr(a [20]byte) string { return "0x" + hex.EncodeToString(a[:]) }

func intText(n *big.Int) string {
	if n == nil {
		return ""
	}
	return n.String()
}

func evmEffect(e evm.Effect) EffectView {
	v := EffectView{Kind: e.Kind, Contract: hexAddr(e.Contract), Selector: e.Selector, Unlimited: e.Unlimited}
	if e.Value != nil && e.Value.Sign() > 0 {
		v.Native = e.Value.String()
	}
	switch e.Kind {
	case evm.EffectNative:
		v.Recipient, v.Contract = hexAddr(e.Recipient), ""
	case evm.EffectTransfer, evm.EffectTransferFrom, evm.EffectApprove:
		v.Recipient, v.Token, v.Amount = hexAddr(e.Recipient), hexAddr(e.Contract), intText(e.Amount)
		if e.Owner != nil {
			v.Owner = hexAddr(*e.Owner)
		}
	}
	return v
}

func solanaEffects(p *transfer.Proposed) []EffectView {
	out := make([]EffectView, 0, len(p.Effects))
	for _, e := range p.Effects {
		v := EffectView{Kind: e.Kind, Contract: e.Program, Unlimited: e.Unlimited}
		switch e.Kind {
		case transfer.EffectNative:
			v.Recipient, v.Native, v.Owner = e.To, intText(e.Amount), e.From
		case transfer.EffectTransfer, transfer.EffectApprove:
			v.Recipient, v.Token, v.Amount, v.Owner = e.To, e.Mint, intText(e.Amount), e.Authority
		}
		out = append(out, v)
	}
	return out
}

// movementOf is a proposal's facts as the owner's policies name them: the contract it calls
// (EVM to; on Solana the first program that is not the compute budget's) and the first
// recipient of what it moves.
func movementOf(v ProposalView, kind, category string, valueMicro int64) billing.Movement {
	m := billing.Movement{Kind: kind, Category: category, ValueMicro: valueMicro}
	for _, e := range v.Effects {
		if m.Contract == "" && e.Contract != "" && e.Contract != computeBudget {
			m.Contract = e.Contract
		}
		if m.Recipient == "" && e.Recipient != "" && e.Kind != evm.EffectCall {
			m.Recipient = e.Recipient
		}
	}
	m.Label = m.Contract
	if m.Label == "" {
		m.Label = m.Recipient
	}
	return m
}

const computeBudget = "ComputeBudget111111111111111111111111111111"

// exceeds reports whether the proposals as simulated now move more than those shown: another
// count or kind, another recipient or token, or any amount, native value or approval above
// what was shown. Such a proposal is never signed.
func exceeds(shown, now []ProposalView) bool {
	if len(shown) != len(now) {
		return true
	}
	for i := range now {
		a, b := shown[i].Effects, now[i].Effects
		if len(a) != len(b) || shown[i].Chain != now[i].Chain {
			return true
		}
		for j := range b {
			x, y := a[j], b[j]
			if x.Kind != y.Kind || x.Recipient != y.Recipient || x.Token != y.Token || x.Contract != y.Contract ||
				(y.Unlimited && !x.Unlimited) || more(y.Amount, x.Amount) || more(y.Native, x.Native) {
				return true
			}
		}
	}
	return false
}

// more reports an integer text now above shown ("" is 0).
func more(now, shown string) bool {
	n, _ := new(big.Int).SetString("0"+now, 10)
	s, _ := new(big.Int).SetString("0"+shown, 10)
	return n.Cmp(s) > 0
}

// Valuer prices on-chain amounts (tools/tokens.Service.ValueOf).
type Valuer interface {
	ValueOf(ctx context.Context, chain, address string, units *big.Int) (tokens.Valued, error)
}

// Priced is what proposals take from the wallet in USD: ValueMicro what they move or let be
// taken (transfers, native value, approvals at their amount), GasMicro their fees; Unpriced
// names what could not be priced (an unlimited approval, a token with no current price),
// which a policy with caps refuses.
type Priced struct {
	ValueMicro, GasMicro int64
	Unpriced             []string
}

// priceProposals prices what the wallet (evmFrom, solFrom) gives in views: what it sends or
// approves from itself, never what moves between others (a transferFrom of another owner's
// tokens), and each transaction's fee in the chain's coin.
func priceProposals(ctx context.Context, val Valuer, evmFrom [20]byte, solFrom string, views []ProposalView) (Priced, error) {
	var p Priced
	add := func(into *int64, chain, token, units, what string) error {
		n, ok := new(big.Int).SetString("0"+units, 10)
		if !ok || n.Sign() == 0 {
			return nil
		}
		v, err := val.ValueOf(ctx, chain, token, n)
		if err != nil {
			return err
		}
		if v.Micro == nil {
			p.Unpriced = append(p.Unpriced, what+": "+v.Reason)
			return nil
		}
		*into += *v.Micro
		return nil
	}
	for i, v := range views {
		wallet := solFrom
		if v.Chain != send.SolanaChain {
			wallet = hexAddr(evmFrom)
		}
		for j, e := range v.Effects {
			what := fmt.Sprintf("transactions[%d] effect %d (%s)", i, j, e.Kind)
			if e.Native != "" && (e.Owner == "" || e.Owner == wallet) {
				if err := add(&p.ValueMicro, v.Chain, "", e.Native, what); err != nil {
					return Priced{}, err
				}
			}
			if e.Amount == "" || (e.Owner != "" && e.Owner != wallet) {
				continue
			}
			if e.Unlimited {
				p.Unpriced = append(p.Unpriced, what+": an unlimited approval of "+e.Token+" to "+e.Recipient+" has no bounded value")
				continue
			}
			if err := add(&p.ValueMicro, v.Chain, e.Token, e.Amount, what); err != nil {
				return Priced{}, err
			}
		}
		if err := add(&p.GasMicro, v.Chain, "", v.FeeNative, fmt.Sprintf("transactions[%d] fee", i)); err != nil {
			return Priced{}, err
		}
	}
	return p, nil
}

// proposalConfirmation is the second CONFIRMATION_REQUIRED of a call whose partner proposed
// transactions: nothing is signed yet; details carry each transaction's decoded effects, their
// USD value and fees, and what could not be priced; the continuation's summary says it in
// lines a human reads. requestID is the proposals' movement, confirmed with confirmRequestId.
func proposalConfirmation(handle, category, requestID string, views []ProposalView, p Priced, expires time.Time) *tools.Error {
	details := map[string]any{
		"requestId": requestID, "handle": handle, "category": category, "transactions": views,
		"valueUsd": tools.USD(p.ValueMicro), "gasUsd": tools.USD(p.GasMicro), "unpriced": p.Unpriced, "expiresAt": expires,
	}
	return tools.Errorf(tools.CodeConfirmationRequired,
		"%s proposes %d transaction(s) from your embedded wallet, worth %s USD plus about %s USD of fees: nothing is signed yet. "+
			"Show the user each transaction's effects (in details); if they approve, call invoke_partner_message again with the same message and confirmRequestId %q within %d minutes",
		handle, len(views), tools.USD(p.ValueMicro), tools.USD(p.GasMicro), requestID, int(ConfirmWindow.Minutes())).WithDetails(details).
		WithContinue(&tools.Continuation{Kind: tools.ContinueConfirm, RequestID: requestID, ExpiresAt: expires, Summary: proposalSummary(handle, views, p)})
}

// proposalSummary is the proposals as their user reads them before approving: one line per
// effect, then the value and fees.
func proposalSummary(handle string, views []ProposalView, p Priced) []string {
	lines := []string{fmt.Sprintf("%s wants your wallet to sign %d transaction(s):", handle, len(views))}
	for i, v := range views {
		lines = append(lines, fmt.Sprintf("%d. on %s:", i+1, v.Chain))
		for _, e := range v.Effects {
			lines = append(lines, "   - "+effectLine(e))
		}
	}
	lines = append(lines, "", fmt.Sprintf("Worth %s USD, fees about %s USD.", tools.USD(p.ValueMicro), tools.USD(p.GasMicro)))
	for _, u := range p.Unpriced {
		lines = append(lines, "Not priced: "+u)
	}
	return lines
}

func effectLine(e EffectView) string {
	var s string
	switch e.Kind {
	case evm.EffectNative:
		s = fmt.Sprintf("send %s (smallest units of the coin) to %s", e.Native, e.Recipient)
	case evm.EffectTransfer:
		s = fmt.Sprintf("send %s units of token %s to %s", e.Amount, e.Token, e.Recipient)
	case evm.EffectTransferFrom:
		s = fmt.Sprintf("move %s units of token %s from %s to %s", e.Amount, e.Token, e.Owner, e.Recipient)
	case evm.EffectApprove:
		amount := e.Amount + " units"
		if e.Unlimited {
			amount = "UNLIMITED amounts"
		}
		s = fmt.Sprintf("let %s spend %s of token %s", e.Recipient, amount, e.Token)
	default:
		s = "call " + e.Contract
		if e.Selector != "" {
			s += " (function " + e.Selector + ")"
		}
	}
	if e.Native != "" && e.Kind != evm.EffectNative {
		s += fmt.Sprintf(", sending %s of the coin with it", e.Native)
	}
	return s
}

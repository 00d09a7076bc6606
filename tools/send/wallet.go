package send

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/switchboard-hq/switchboard/chain/evm"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/invocations"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/policies"
	"github.com/switchboard-hq/switchboard/tools/service"
	"github.com/switchboard-hq/switchboard/tools/tokens"
	"github.com/switchboard-hq/switchboard/tools/wallets"
)

// wallet_send moves the native coin or a token from the account's embedded wallet, asked in
// the order of every movement (billing's ticket): the token resolved (spam refused), the
// recipient and the exact amount checked, the fee priced and the USD value judged by the
// owner's policies (Admit), then a CONFIRMATION_REQUIRED quote recorded on the ticket. The
// confirmed call checks the quote, opens the movement (judged again under the credit lock,
// recorded dispatching), and the Sender signs, records and broadcasts the transaction once;
// the ticket is concluded when the send ends, here or by the follower (Run).

// QuoteWindow is how long a send's quote may be confirmed.
const QuoteWindow = 10 * time.Minute

// Wallet serves wallet_send.
type Wallet struct {
	sender      *Sender
	tokens      *tokens.Service
	bill        *billing.Service
	approvals   *policies.Approvals
	store       *store.Store
	accounts    accounts.Accounts
	invocations invocations.Invocations
	now         func() time.Time
	log         *slog.Logger
}

// NewWallet builds wallet_send's service on sender (its chains), the token lookups, the
// money seam and the owner's approvals (nil: a send a policy sends to a human is refused).
func NewWallet(sender *Sender, tok *tokens.Service, bill *billing.Service, approvals *policies.Approvals, d service.Deps) *Wallet {
	d = d.WithDefaults()
	return &Wallet{sender: sender, tokens: tok, bill: bill, approvals: approvals, store: d.Store, accounts: accounts.New(d.Store), invocations: invocations.New(d.Store), now: d.Now, log: d.Log}
}

// WalletSendInput is wallet_send's input.
type WalletSendInput struct {
	Chain            string `json:"chain" jsonschema:"maxLength=32" jsonschema_description:"a balances chain: ethereum, arbitrum, base, polygon, optimism, avalanche, bsc or solana (those this deployment has a node for)"`
	Token            string `json:"token" jsonschema:"maxLength=100" jsonschema_description:"a ticker (USDC, ETH, SOL), or the token's contract address (EVM) or mint (Solana); resolved as resolve_token does, and a token flagged as spam is refused"`
	To               string `json:"to" jsonschema:"maxLength=64" jsonschema_description:"the recipient: a 0x address on EVM chains, a base58 address on Solana"`
	Amount           string `json:"amount" jsonschema:"maxLength=80" jsonschema_description:"how much to send, as an exact decimal string in the token's units (\"5\" USDC, \"0.01\" ETH), with at most the token's decimals"`
	ConfirmRequestID string `json:"confirmRequestId,omitempty" jsonschema:"format=uuid" jsonschema_description:"the requestId of the CONFIRMATION_REQUIRED answer (or of an APPROVAL_REQUIRED one the owner approved), sent with the same chain, token, to and amount once the user approved it: the send is signed and broadcast"`
	Decline          bool   `json:"decline,omitempty" jsonschema_description:"with confirmRequestId: the user declined the quote; it is closed and nothing is signed"`
}

// WalletSendOutput is wallet_send's answer.
type WalletSendOutput struct {
	RequestID   string     `json:"requestId" jsonschema_description:"the send's record (usage shows it); a retry of the confirmation with it never sends twice"`
	Status      string     `json:"status" jsonschema:"enum=submitted,enum=confirmed" jsonschema_description:"submitted: signed, recorded and broadcast, not yet confirmed (the send's record and the wallet.sent or wallet.failed webhook tell its end); confirmed: on chain"`
	Chain       string     `json:"chain"`
	Token       string     `json:"token" jsonschema_description:"what moved: the token's contract address or mint, or the native coin's ticker (ETH, SOL, ...)"`
	To          string     `json:"to"`
	Amount      string     `json:"amount" jsonschema_description:"the amount sent, in the token's units, as a decimal string"`
	ValueUsd    *tools.USD `json:"valueUsd" jsonschema_description:"its USD value when it was judged; null when the token has no price"`
	TxHash      string     `json:"txHash" jsonschema_description:"the transaction hash (EVM) or signature (Solana)"`
	ExplorerURL string     `json:"explorerUrl,omitempty" jsonschema_description:"the transaction on the chain's block explorer"`
}

// Tools returns wallet_send.
func (w *Wallet) Tools() []*tools.Tool {
	return []*tools.Tool{tools.New(tools.Def{
		Name:  "wallet_send",
		Title: "Send from the embedded wallet",
		Description: "Send the native coin or a token from the account's embedded wallet to an address, on a balances chain (EVM) or Solana. " +
			"The first call answers CONFIRMATION_REQUIRED with the USD value, the fee estimate (gasUsd) and an expiry: show it to the user; if they approve, call again with the same " +
			"chain, token, to and amount and confirmRequestId (decline: true if they refuse). The owner's spend policies apply (caps, per-call maximum, recipients allow/deny, approvals). " +
			"Signing must be on for the account (a human turns it on in the portal). The answer has the transaction hash and status submitted or confirmed.",
		Access:      tools.RequireScope(tools.ScopeSend),
		Annotations: tools.Annotations{ReadOnly: tools.Bool(false), Destructive: tools.Bool(true), OpenWorld: tools.Bool(true)},

		TakesIdempotencyKey: true, // a retry with the caller's key quotes (or sends) once
		TakesDecision:       true, // the quote asks the user (Error.Continue)
	}, w.send)}
}

// ask is one send as checked: the token resolved, the amount in token units.
type ask struct {
	in      WalletSendInput
	chain   tokens.Chain
	token   tokens.Sendable
	tokenID string // Native, or the address/mint the Sender takes
	shown   string // the answer's token: the address/mint, or the native ticker
	units   *big.Int
	amount  decimal.Decimal
}

// sendArgs is what a send's record keeps of it: the input as given (a confirmation must
// repeat it) and what was priced.
type sendArgs struct {
	Asked    WalletSendInput `json:"asked"`
	Token    string          `json:"token"` // Native or the address/mint
	Shown    string          `json:"shown"`
	Ticker   string          `json:"ticker"`
	Units    string          `json:"units"`
	From     string          `json:"from"`
	Gas      uint64          `json:"gas,omitempty"` // EVM: the quoted transaction's gas and fees (wei)
	Tip      string          `json:"tip,omitempty"`
	FeeCap   string          `json:"feeCap,omitempty"`
	GasMicro int64           `json:"gasMicro"`
	Unpriced bool            `json:"unpriced,omitempty"`
}

func (w *Wallet) send(ctx context.Context, c *tools.Caller, in WalletSendInput) (WalletSendOutput, error) {
	if d := c.Decision; d != nil { // the door's answer to the quote: the same as sending it in the args
		in.ConfirmRequestID, in.Decline = d.RequestID, d.Decline
	}
	a, err := w.check(ctx, in)
	if err != nil {
		return WalletSendOutput{}, err
	}
	if in.ConfirmRequestID != "" {
		return w.confirm(ctx, c, a)
	}
	if in.Decline {
		return WalletSendOutput{}, tools.Errorf(tools.CodeBadInput, "decline needs confirmRequestId: the requestId of the CONFIRMATION_REQUIRED answer the user declined")
	}
	return WalletSendOutput{}, w.quote(ctx, c, a)
}

// check refuses a send that cannot be made, saying what to fix: a chain without a node, a
// recipient of the wrong form, a token not found or spam, an amount that is not exact.
func (w *Wallet) check(ctx context.Context, in WalletSendInput) (ask, error) {
	a := ask{in: in}
	ch, err := tokens.ParseChain(in.Chain)
	if err != nil {
		return a, tools.Errorf(tools.CodeBadInput, "chain: %v", err)
	}
	a.chain = ch
	if !w.sender.Sends(ch.Name) {
		return a, tools.Errorf(tools.CodeUnavailable, "sending on %s is not configured on this deployment (it needs the chain's RPC node, SWITCHBOARD_RPC_*); ask its operator", ch.Name)
	}
	to := strings.TrimSpace(in.To)
	if ch.Family == tokens.FamilyEVM && !wallets.ValidEVMAddress(to) || ch.Family == tokens.FamilySVM && !wallets.ValidSolanaAddress(to) {
		return a, tools.Errorf(tools.CodeBadInput, "to: %q is not %s address; nothing was signed or sent", in.To, map[string]string{tokens.FamilyEVM: "an EVM (0x...)", tokens.FamilySVM: "a Solana (base58)"}[ch.Family])
	}
	a.in.To = to
	if a.token, err = w.tokens.Sendable(ctx, in.Token, ch.Name); err != nil {
		return a, err
	}
	a.tokenID, a.shown = a.token.Address, a.token.Address
	if a.token.Native {
		a.tokenID, a.shown = Native, a.token.Ticker
	}
	amt, err := decimal.NewFromString(strings.TrimSpace(in.Amount))
	if err != nil || !amt.IsPositive() {
		return a, tools.Errorf(tools.CodeBadInput, "amount: %q is not a positive decimal number; give it as a string such as \"5\" or \"0.25\"", in.Amount)
	}
	units := amt.Shift(int32(a.token.Decimals))
	if !units.IsInteger() {
		return a, tools.Errorf(tools.CodeBadInput, "amount: %s has more decimals than %s's %d; nothing was signed or sent", amt, a.token.Ticker, a.token.Decimals)
	}
	if units.GreaterThan(decimal.New(1, 70)) {
		return a, tools.Errorf(tools.CodeBadInput, "amount: %s is more than any wallet holds", amt)
	}
	a.amount, a.units = amt, units.BigInt()
	return a, nil
}

// from is the account's wallet address of the chain's family (no key is opened).
func (w *Wallet) from(ctx context.Context, accountID, family string) (string, error) {
	ws, err := w.accounts.Wallets(ctx, accountID)
	if err != nil {
		return "", err
	}
	fam := accounts.FamilyEVM
	if family == tokens.FamilySVM {
		fam = accounts.FamilySVM
	}
	for _, wl := range ws {
		if wl.Family == fam {
			return wl.Address, nil
		}
	}
	return "", tools.Errorf(tools.CodeNotFound, "the account has no %s embedded wallet", family)
}

func (a ask) request(requestID, accountID string) Request {
	return Request{RequestID: requestID, AccountID: accountID, Chain: a.chain.Name, To: a.in.To, Token: a.tokenID, Amount: a.units}
}

// price is the fee the send costs its sender, in the native coin's units, and the args it is
// recorded with.
func (w *Wallet) price(ctx context.Context, a ask, from string) (sendArgs, error) {
	args := sendArgs{Asked: a.in, Token: a.tokenID, Shown: a.shown, Ticker: a.token.Ticker, Units: a.units.String(), From: from}
	args.Asked.ConfirmRequestID, args.Asked.Decline = "", false
	var fee *big.Int
	if a.chain.Family == tokens.FamilySVM {
		plan, err := w.sender.QuoteSolana(ctx, from, a.request("", ""))
		if err != nil {
			return args, tools.Errorf(tools.CodeUnavailable, "the send on solana cannot be priced (%v); nothing was signed or sent. Try again later", err).Wrap(err)
		}
		fee = new(big.Int).SetUint64(plan.FeeLamports + plan.RentLamports)
	} else {
		addr, err := evm.ParseAddress(from)
		if err != nil {
			return args, fmt.Errorf("wallet address: %w", err)
		}
		tx, fees, err := w.sender.Quote(ctx, addr, a.request("", ""))
		if err != nil {
			return args, tools.Errorf(tools.CodeBadInput, "the send on %s cannot be priced: the node refuses it (%v); check the wallet holds the amount and gas. Nothing was signed or sent", a.chain.Name, err).Wrap(err)
		}
		args.Gas, args.Tip, args.FeeCap = tx.Gas, tx.GasTipCap.String(), tx.GasFeeCap.String()
		fee = new(big.Int).Mul(new(big.Int).SetUint64(tx.Gas), fees.Quoted)
	}
	gas, err := w.tokens.NativeMicro(ctx, a.chain.Name, fee)
	if err != nil {
		return args, err
	}
	args.GasMicro = gas
	return args, nil
}

// movement is the send as its ticket sees it.
func (w *Wallet) movement(a ask, valueMicro int64, unpriced bool) billing.Movement {
	return billing.Movement{Kind: store.KindSend, ValueMicro: valueMicro, Network: w.sender.Network(a.chain.Name), Category: billing.CategorySend,
		Label: billing.Address(a.in.To), Recipient: a.in.To, Unpriced: unpriced}
}

// quote prices the send, judges it, records it on its ticket and asks: CONFIRMATION_REQUIRED
// (the caller's user decides), or APPROVAL_REQUIRED (a policy sends it to the owner).
func (w *Wallet) quote(ctx context.Context, c *tools.Caller, a ask) error {
	p := c.Principal
	from, err := w.from(ctx, p.AccountID, a.chain.Family)
	if err != nil {
		return err
	}
	// The owner's policies first, by the send's value: a refusal costs the chain nothing.
	value, reason := w.tokens.ValueMicro(ctx, a.token, a.amount)
	unpriced := reason != ""
	t := w.bill.Movement(p, w.movement(a, value, unpriced))
	judged := t.Admit(ctx, value)
	var need *billing.ErrApprovalRequired
	if judged != nil && !errors.As(judged, &need) {
		if unpriced {
			return unpricedRefusal(judged, a, reason)
		}
		return judged
	}
	args, err := w.price(ctx, a, from)
	if err != nil {
		return err
	}
	args.Unpriced = unpriced
	id := c.NewCallID()
	if _, err := uuid.Parse(id); err != nil {
		id = uuid.NewString()
	}
	inv, err := t.Record(id, args, w.now())
	if err != nil {
		return err
	}
	if need != nil {
		return w.askOwner(ctx, t, inv, a, args, value, need.Rule)
	}
	inv.State = store.InvAwaitingConfirmation
	if err := t.Ask(ctx, inv, "quoted; waiting for the caller's confirmation"); err != nil {
		return err
	}
	return confirmation(a, inv.RequestID, args, valueOf(value, args.Unpriced), inv.CreatedAt.Add(QuoteWindow))
}

// unpricedRefusal says why a token without a price was refused by a policy with USD bounds.
func unpricedRefusal(err error, a ask, reason string) error {
	var te *tools.Error
	if errors.As(err, &te) && te.Code == tools.CodePolicyDenied && te.Details["rule"] == "unpriced" {
		te.Message = fmt.Sprintf("%s on %s has no price now (%s), so the send's USD value cannot be judged against the account's spend policy (caps, perCallMaxUsd or approval.aboveUsd); nothing was signed or sent. %s",
			a.token.Ticker, a.chain.Name, reason, "Its owner may send it from a key whose policy has no USD bounds")
	}
	return err
}

func valueOf(micro int64, unpriced bool) *tools.USD {
	if unpriced {
		return nil
	}
	v := tools.USD(micro)
	return &v
}

func usdString(v *tools.USD) any {
	if v == nil {
		return nil
	}
	return *v
}

// confirmation is the send's CONFIRMATION_REQUIRED answer, with its continuation.
func confirmation(a ask, requestID string, args sendArgs, value *tools.USD, expires time.Time) *tools.Error {
	worth := "no price is known for it"
	if value != nil {
		worth = "worth about " + value.String() + " USD"
	}
	gas := tools.USD(args.GasMicro)
	details := map[string]any{"requestId": requestID, "chain": a.chain.Name, "token": a.shown, "ticker": a.token.Ticker, "to": a.in.To, "amount": a.amount.String(),
		"valueUsd": usdString(value), "gasUsd": gas, "expiresAt": expires}
	summary := []string{fmt.Sprintf("Send %s %s on %s (%s)", a.amount, a.token.Ticker, a.chain.Name, worth), "to " + a.in.To,
		fmt.Sprintf("Network fee: about %s USD, paid from the wallet in %s.", gas, a.chain.Native), "A confirmed send cannot be undone."}
	return tools.Errorf(tools.CodeConfirmationRequired,
		"sending %s %s on %s to %s (%s; fee about %s USD): nothing was signed. Show the user the recipient, amount and fee; if they approve, call wallet_send again with the same chain, token, to and amount and confirmRequestId %q within %d minutes (decline: true if they refuse)",
		a.amount, a.token.Ticker, a.chain.Name, a.in.To, worth, gas, requestID, int(QuoteWindow.Minutes())).WithDetails(details).
		WithContinue(&tools.Continuation{Kind: tools.ContinueConfirm, RequestID: requestID, ExpiresAt: expires, Summary: summary})
}

// sendAsking is how an approval names a send to the agent.
var sendAsking = policies.Asking{What: "this send", Nothing: "nothing was signed",
	Again: "call wallet_send again with the same chain, token, to and amount"}

// askOwner records the send awaiting its owner's approval and answers APPROVAL_REQUIRED.
func (w *Wallet) askOwner(ctx context.Context, t *billing.Ticket, inv *store.Invocation, a ask, args sendArgs, value int64, rule string) error {
	charge := map[string]any{"sendUsd": tools.USD(value).String(), "gasUsd": tools.USD(args.GasMicro).String(), "maxChargeUsd": tools.USD(value).String(),
		"send": fmt.Sprintf("%s %s on %s to %s", a.amount, a.token.Ticker, a.chain.Name, a.in.To)}
	return w.approvals.Ask(ctx, t, policies.Ask{Record: inv, Rule: rule, WorstMicro: value, Charge: charge, Asking: sendAsking})
}

package payments

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/google/uuid"
	"github.com/switchboard-hq/switchboard/contracts"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/topups"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/service"
	"github.com/switchboard-hq/switchboard/tools/wallets"
)

// Buying credit (credit_topup): x402 with Switchboard as the payee. The first call answers
// PAYMENT_REQUIRED with an exact requirement payable to the treasury; the call that brings
// a TransferWithAuthorization of that amount to the treasury has it checked, claimed for the
// quote by its (from, nonce), submitted to the token, and once it has the configured
// confirmations credited in one ledger transaction, chain:treasury -> the user's available
// credit. The claim is unique per (chain, from, nonce) and the credit moves the row out of
// submitted, so whatever is retried or replayed credits once.

// TopupConfig bounds top-ups, in micro-USD.
type TopupConfig struct {
	MinMicro int64 // the least one top-up buys
	MaxMicro int64 // the most one top-up buys
	CapMicro int64 // the most an account's available + reserved credit may be after a top-up
	// Failpoint, when set, is told "topup" when a transfer is confirmed, before it is credited
	// (the crash tests kill the process there).
	Failpoint func(step string)
}

// DefaultTopupConfig is 1 USD to 1,000 USD per top-up, up to a 10,000 USD balance.
func DefaultTopupConfig() TopupConfig {
	return TopupConfig{MinMicro: 1_000_000, MaxMicro: 1_000 * 1_000_000, CapMicro: 10_000 * 1_000_000}
}

// Topups serves credit_topup on pay's network (nil: buying credit is not configured).
type Topups struct {
	cfg   TopupConfig
	pay   *Service
	store *store.Store
	rows  topups.Topups
	now   func() time.Time
}

// NewTopups builds credit_topup's service.
func NewTopups(cfg TopupConfig, d service.Deps, pay *Service) *Topups {
	d = d.WithDefaults()
	t := &Topups{cfg: cfg, pay: pay, store: d.Store, now: d.Now}
	if d.Store != nil {
		t.rows = topups.New(d.Store)
	}
	if pay != nil {
		pay.topups = t
	}
	return t
}

// TopupInput is credit_topup's input.
type TopupInput struct {
	AmountUsd        tools.USD `json:"amountUsd" jsonschema_description:"how much credit to buy, in USD; paid as the same amount of the stablecoin"`
	PayWithWallet    bool      `json:"payWithWallet,omitempty" jsonschema_description:"pay from the account's embedded EVM wallet (the account's signing must be on, and the key needs the wallet scope) instead of sending payment"`
	Payment          *Payment  `json:"payment,omitempty" jsonschema_description:"the signed EIP-3009 TransferWithAuthorization of the PAYMENT-REQUIRED requirement (x402 exact-scheme payload: signature + authorization); x402 clients send it as the PAYMENT-SIGNATURE header or _meta[\"x402/payment\"]"`
	ConfirmRequestID string    `json:"confirmRequestId,omitempty" jsonschema:"format=uuid" jsonschema_description:"the requestId of the PAYMENT_REQUIRED answer being paid (x402 clients echo it in accepted.extra.requestId)"`
}

// TopupOutput is what a top-up credited.
type TopupOutput struct {
	CreditedUsd tools.USD `json:"creditedUsd" jsonschema_description:"the credit this top-up bought"`
	CreditUsd   tools.USD `json:"creditUsd" jsonschema_description:"the account's available credit now"`
	Network     string    `json:"network" jsonschema_description:"CAIP-2 chain id the transfer was made on"`
	TxHash      string    `json:"txHash" jsonschema_description:"the transfer's transaction"`
	RequestID   string    `json:"requestId"`
	payer       string
}

// X402Payment is the settled transfer, for x402's PAYMENT-RESPONSE.
func (o TopupOutput) X402Payment() *Receipt {
	return &Receipt{State: "settled", Network: o.Network, Payer: o.payer, Amount: fmt.Sprint(o.CreditedUsd.Micro()),
		Platform: fmt.Sprint(o.CreditedUsd.Micro()), Partner: "0", PayTx: o.TxHash, SettleTx: o.TxHash}
}

// Tools returns credit_topup.
func (t *Topups) Tools() []*tools.Tool {
	return []*tools.Tool{tools.New(tools.Def{
		Name:  "credit_topup",
		Title: "Buy credit",
		Description: "Buy credit with the stablecoin, over x402. Call with amountUsd: the answer is PAYMENT_REQUIRED with an x402 exact requirement " +
			"payable to Switchboard's treasury (the PAYMENT-REQUIRED header over REST; structuredContent over MCP). Pay it with any x402 client " +
			"(the same request again with PAYMENT-SIGNATURE, or _meta[\"x402/payment\"]), or send payment {signature, authorization} with confirmRequestId, " +
			"or payWithWallet: true to pay from the embedded wallet. The credit lands once the transfer is confirmed, once per authorization; " +
			"the answer has creditedUsd, the new creditUsd and the transaction hash.",
		Access:      tools.AnyKey,
		Annotations: tools.Annotations{ReadOnly: tools.Bool(false), Destructive: tools.Bool(false), Idempotent: true, OpenWorld: tools.Bool(true)},
		// Money in is the owner's decision, and its definition (the x402 payment's schema) is
		// large: listed when a host asks for the owner toolset, callable by any key always.
		Toolset: tools.ToolsetOwner,

		TakesIdempotencyKey: true,
		TakesPayment:        true, // x402: PAYMENT-SIGNATURE, or _meta["x402/payment"]
	}, t.topup)}
}

func (t *Topups) topup(ctx context.Context, c *tools.Caller, in TopupInput) (TopupOutput, error) {
	if err := t.admit(c, in); err != nil {
		return TopupOutput{}, err
	}
	acct := c.Principal.AccountID
	row, err := t.named(ctx, acct, in)
	if err != nil {
		return TopupOutput{}, err
	}
	if row != nil && row.State == topups.Credited {
		return t.answer(ctx, row) // a retry: credited once, answered again
	}
	if in.Payment == nil && !in.PayWithWallet {
		return t.ask(ctx, c, in, row)
	}
	if row == nil {
		// A payment naming no quote (x402 version 1's X-PAYMENT echoes none): quoted now, for
		// the amount asked, and paid at once if it pays exactly that.
		if err := t.bounds(ctx, acct, in.AmountUsd.Micro()); err != nil {
			return TopupOutput{}, err
		}
		if row, err = t.quote(ctx, acct, c.Principal.KeyID, in.AmountUsd.Micro(), c.RequestID); err != nil {
			return TopupOutput{}, err
		}
	}
	pay := in.Payment
	if in.PayWithWallet {
		if pay, err = t.walletPayment(ctx, row); err != nil {
			return TopupOutput{}, err
		}
	}
	return t.collect(ctx, row, pay, c.Principal.KeyID)
}

// admit refuses what no top-up can be: one not configured here, both ways of paying at once,
// the embedded wallet without the wallet scope.
func (t *Topups) admit(c *tools.Caller, in TopupInput) error {
	switch {
	case t.pay == nil:
		return tools.Errorf(tools.CodeUnavailable, "buying credit is not configured on this deployment (it needs the payment network, SWITCHBOARD_FLATFEE_*); ask its operator, or for credit")
	case in.PayWithWallet && in.Payment != nil:
		return tools.Errorf(tools.CodeBadInput, "send either payment or payWithWallet, not both")
	case in.PayWithWallet && !c.Principal.HasScope(tools.ScopeWallet):
		return tools.Errorf(tools.CodeForbidden, "payWithWallet needs a key with the wallet scope; mint one with it, or pay with your own wallet")
	}
	return nil
}

// named is the top-up confirmRequestId names (nil when none is named), refused when it is
// not the account's or is for another amount.
func (t *Topups) named(ctx context.Context, acct string, in TopupInput) (*topups.CreditTopup, error) {
	if in.ConfirmRequestID == "" {
		return nil, nil
	}
	r, err := t.rows.Get(ctx, in.ConfirmRequestID)
	if errors.Is(err, store.ErrNotFound) || err == nil && r.AccountID != acct {
		return nil, tools.Errorf(tools.CodeNotFound, "no top-up %s in this account; call credit_topup without confirmRequestId for a new requirement", in.ConfirmRequestID)
	}
	if err != nil {
		return nil, err
	}
	if in.AmountUsd.Micro() != r.AmountAtomic {
		return nil, tools.Errorf(tools.CodeConflict, "top-up %s is for %s USD, not %s; send its amountUsd, or call without confirmRequestId for a new requirement", r.RequestID, tools.USD(r.AmountAtomic), in.AmountUsd)
	}
	return r, nil
}

// ask answers a call without payment: a submitted top-up is followed; otherwise the
// requirement to pay, of row while it can still be paid, else of a new quote.
func (t *Topups) ask(ctx context.Context, c *tools.Caller, in TopupInput, row *topups.CreditTopup) (TopupOutput, error) {
	if row != nil && row.State == topups.Submitted {
		return t.follow(ctx, row)
	}
	acct := c.Principal.AccountID
	if err := t.bounds(ctx, acct, in.AmountUsd.Micro()); err != nil {
		return TopupOutput{}, err
	}
	if row == nil || row.State != topups.Quoted || t.now().Unix() > row.ValidBefore {
		var err error
		if row, err = t.quote(ctx, acct, c.Principal.KeyID, in.AmountUsd.Micro(), c.RequestID); err != nil {
			return TopupOutput{}, err
		}
	}
	return TopupOutput{}, t.required(ctx, row)
}

// bounds refuses a top-up of micro for accountID outside the configured bounds, saying what
// to buy instead.
func (t *Topups) bounds(ctx context.Context, accountID string, micro int64) error {
	switch {
	case micro < t.cfg.MinMicro:
		return tools.Errorf(tools.CodeBadInput, "amountUsd %s is under the minimum top-up of %s USD; buy at least %s USD", tools.USD(micro), tools.USD(t.cfg.MinMicro), tools.USD(t.cfg.MinMicro))
	case micro > t.cfg.MaxMicro:
		return tools.Errorf(tools.CodeBadInput, "amountUsd %s is over the maximum top-up of %s USD; buy at most %s USD at a time", tools.USD(micro), tools.USD(t.cfg.MaxMicro), tools.USD(t.cfg.MaxMicro))
	}
	ca, err := t.store.Credit(ctx, accountID)
	if err != nil {
		return err
	}
	if have := ca.AvailableMicro + ca.ReservedMicro; have > t.cfg.CapMicro-micro {
		room := max(t.cfg.CapMicro-have, 0)
		return tools.Errorf(tools.CodeBadInput, "buying %s USD would bring this account's credit (%s USD) over the cap of %s USD; buy at most %s USD, or spend some credit first", tools.USD(micro), tools.USD(have), tools.USD(t.cfg.CapMicro), tools.USD(room))
	}
	return nil
}

// quote records a new top-up of micro asked by keyID, payable until the quote's TTL passes on
// chain.
func (t *Topups) quote(ctx context.Context, accountID, keyID string, micro int64, requestID string) (*topups.CreditTopup, error) {
	s := t.pay
	chainNow, err := s.chain.Now(ctx)
	if err != nil {
		return nil, tools.Errorf(tools.CodeUnavailable, "the payment network (%s) cannot be reached to quote (%v); try again later", s.Network(), err)
	}
	if _, err := uuid.Parse(requestID); err != nil {
		requestID = uuid.NewString()
	}
	now := t.now().UTC()
	row := &topups.CreditTopup{RequestID: requestID, AccountID: accountID, KeyID: keyID, ChainID: s.cfg.ChainID, Token: s.cfg.Token.Hex(), PayTo: s.cfg.Treasury.Hex(),
		AmountAtomic: micro, ValidBefore: chainNow.Add(s.cfg.QuoteTTL).Unix(), State: topups.Quoted, CreatedAt: now, UpdatedAt: now}
	if err := t.rows.Insert(ctx, row); errors.Is(err, store.ErrConflict) {
		row.RequestID = uuid.NewString() // the call's id names another top-up already
		err = t.rows.Insert(ctx, row)
		if err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	return row, nil
}

// required is the PAYMENT_REQUIRED answer of a quoted top-up.
func (t *Topups) required(ctx context.Context, row *topups.CreditTopup) error {
	s := t.pay
	var nonce [32]byte
	_, _ = rand.Read(nonce[:])
	validAfter := row.CreatedAt.Unix() - 60
	td := contracts.TypedData(contracts.TransferWithAuthorization, row.ChainID, common.HexToAddress(row.Token), common.Address{}, common.HexToAddress(row.PayTo),
		big.NewInt(row.AmountAtomic), validAfter, row.ValidBefore, nonce)
	td.Message["from"] = "<your address>"
	q := Quote{RequestID: row.RequestID, ChainID: row.ChainID, Network: s.Network(), Token: row.Token, PayTo: row.PayTo,
		Amount: fmt.Sprint(row.AmountAtomic), AmountUsd: tools.USD(row.AmountAtomic),
		Split:      Split{Partner: "0", Platform: fmt.Sprint(row.AmountAtomic), Gas: "0"},
		ValidAfter: validAfter, ValidBefore: row.ValidBefore, Nonce: hexutil.Encode(nonce[:]), TypedData: typedDataOf(td),
		ExpiresAt: time.Unix(row.ValidBefore, 0).UTC()}
	amount := tools.USD(row.AmountAtomic)
	desc := fmt.Sprintf("%s USD of Switchboard credit", amount)
	reason := fmt.Sprintf("credit is bought by paying %s USD in the stablecoin on %s to the treasury: pay the exact requirement and send the same request again", amount, s.Network())
	req := s.Required(q, "", desc, reason)
	req.Resource = &PaidResource{HTTPPath: "/v1/credit/topup", Tool: "credit_topup", Body: map[string]any{"amountUsd": amount},
		BodySchema: map[string]any{"type": "object", "required": []string{"amountUsd"},
			"properties": map[string]any{"amountUsd": map[string]any{"type": "number", "description": "how much credit to buy, in USD"}}}}
	return tools.Errorf(tools.CodePaymentRequired,
		"buying %s USD of credit is paid with %s USD of the stablecoin on %s to the treasury (%s): nothing was credited yet. Pay it with an x402 client (the PAYMENT-REQUIRED header, or details.x402 over MCP), "+
			"or sign a TransferWithAuthorization like quote.typedData (with your address and a fresh random nonce) and call credit_topup again with the same amountUsd, confirmRequestId %q and payment {signature, authorization}, "+
			"or payWithWallet: true. The credit lands once the transfer is confirmed; the quote can be paid until %s",
		amount, amount, s.Network(), row.PayTo, row.RequestID, q.ExpiresAt.Format(time.RFC3339)).
		WithDetails(map[string]any{"requestId": row.RequestID, "quote": q, RequiredKey: req})
}

// checkTopup verifies a payment against a top-up off chain: a TransferWithAuthorization to the
// treasury of the quoted amount, signed by from; the echoed requirement the quote's. The window
// is not judged: a transfer that paid the treasury is credited even after its quote expired.
func (t *Topups) checkTopup(row *topups.CreditTopup, pay *Payment) (contracts.Authorization, error) {
	bad := func(reason, format string, a ...any) error {
		return refuse(tools.CodeBadInput, reason, "payment: "+format+"; pay the PAYMENT-REQUIRED requirement as offered (a TransferWithAuthorization to the treasury), and send it again", a...)
	}
	if pay.PrimaryType != "" && pay.PrimaryType != contracts.TransferWithAuthorization {
		return contracts.Authorization{}, bad("invalid_payload", "primaryType %q: a top-up is paid with TransferWithAuthorization", pay.PrimaryType)
	}
	// No requestId check: a proof echoed for another top-up is refused by its claim (CONFLICT,
	// naming the top-up it bought), which says more than a mismatch would.
	req := requirement{what: "top-up", chainID: row.ChainID, token: row.Token, payTo: row.PayTo, payToName: "the treasury", amount: row.AmountAtomic}
	return verifyAuthorization(req, contracts.TransferWithAuthorization, pay, nil, bad)
}

// collect takes a payment for a top-up, by keyID: checked, claimed by its (from, nonce),
// submitted, and credited once confirmed. An authorization claimed by this top-up already is
// followed (a retry, a replay) and credits at most once; one claimed by another top-up is
// refused; one submitted to the token by someone else (the payer, a front-runner), even after
// the quote expired, is credited when it paid the treasury this amount.
func (t *Topups) collect(ctx context.Context, row *topups.CreditTopup, pay *Payment, keyID string) (TopupOutput, error) {
	s := t.pay
	auth, err := t.checkTopup(row, pay)
	if err != nil {
		return TopupOutput{}, err
	}
	row, done, err := t.claimedBy(ctx, row, auth)
	if err != nil || done != nil {
		return deref(done), err
	}
	used, err := s.chain.AuthorizationUsed(ctx, s.cfg.Token, auth.From, auth.Nonce)
	if err != nil {
		return TopupOutput{}, s.unreachable(err)
	}
	if used {
		return t.adoptTopup(ctx, row, auth)
	}
	if row.State != topups.Submitted { // a claimed authorization is submitted again: the token takes a nonce once
		row.KeyID = keyID
		if err := t.take(ctx, row, auth); err != nil {
			return TopupOutput{}, err
		}
	}
	return t.submit(ctx, row, auth)
}

func deref(o *TopupOutput) TopupOutput {
	if o == nil {
		return TopupOutput{}
	}
	return *o
}

// claimedBy is the top-up auth pays: row, or the top-up that claimed auth already (done when
// that one is credited: its answer). An authorization another top-up claimed, or a second
// authorization for a top-up being paid, is refused.
func (t *Topups) claimedBy(ctx context.Context, row *topups.CreditTopup, auth contracts.Authorization) (*topups.CreditTopup, *TopupOutput, error) {
	from, nonceHex := auth.From.Hex(), hexutil.Encode(auth.Nonce[:])
	claimed, err := t.rows.ByAuthorization(ctx, row.ChainID, from, nonceHex)
	switch {
	case err == nil && claimed.RequestID != row.RequestID:
		return nil, nil, refuse(tools.CodeConflict, reasonNonceUsed, "this authorization (from %s, nonce %s) bought credit already (top-up %s); nothing was credited again. Sign a new one with a fresh nonce to buy more", from, nonceHex, claimed.RequestID)
	case err == nil && claimed.State == topups.Credited:
		out, err := t.answer(ctx, claimed)
		return nil, &out, err
	case err == nil:
		return claimed, nil, nil
	case !errors.Is(err, store.ErrNotFound):
		return nil, nil, err
	case row.State == topups.Submitted:
		// Another authorization is on its way for this top-up: this one is not taken (it would
		// move money the claim does not account for).
		return nil, nil, refuse(tools.CodeConflict, "invalid_payment_requirements", "top-up %s is being paid by another authorization (from %s); call again with that payment, or without confirmRequestId to buy more", row.RequestID, row.PayerAddress)
	case row.State == topups.Credited:
		return nil, nil, refuse(tools.CodeConflict, "invalid_payment_requirements", "top-up %s was paid already by another authorization; call without confirmRequestId to buy more", row.RequestID)
	}
	return row, nil, nil
}

// take judges a fresh authorization for row on chain (its window against the chain's time,
// the payer's balance, the bounds again) and claims it.
func (t *Topups) take(ctx context.Context, row *topups.CreditTopup, auth contracts.Authorization) error {
	s := t.pay
	chainNow, err := s.chain.Now(ctx)
	if err != nil {
		return s.unreachable(err)
	}
	bad := func(reason, format string, a ...any) error {
		return refuse(tools.CodeBadInput, reason, "payment: "+format+"; sign it again", a...)
	}
	switch after, before := auth.ValidAfter.Int64(), auth.ValidBefore.Int64(); {
	case chainNow.Unix() > row.ValidBefore:
		return refuse(tools.CodeConflict, "invalid_exact_evm_payload_authorization_valid_before", "top-up %s expired at %d (the chain's time is %d); call without confirmRequestId for a new requirement", row.RequestID, row.ValidBefore, chainNow.Unix())
	case after >= chainNow.Unix():
		return bad("invalid_exact_evm_payload_authorization_valid_after", "it is not valid yet (validAfter %d, the chain's time %d)", after, chainNow.Unix())
	case before < chainNow.Unix()+30:
		return bad("invalid_exact_evm_payload_authorization_valid_before", "it expires at %d, too soon to be submitted (the chain's time is %d)", before, chainNow.Unix())
	}
	bal, err := s.chain.BalanceOf(ctx, s.cfg.Token, auth.From)
	if err != nil {
		return s.unreachable(err)
	}
	if bal.Cmp(auth.Value) < 0 {
		return tools.Errorf(tools.CodePaymentRequired, "%s holds %s of the stablecoin and the top-up is %d (atomic units); fund it and call again with the same payment", auth.From.Hex(), bal, row.AmountAtomic).
			WithDetails(map[string]any{"balance": bal.String(), "amount": fmt.Sprint(row.AmountAtomic), "invalidReason": "insufficient_funds"})
	}
	if err := t.bounds(ctx, row.AccountID, row.AmountAtomic); err != nil {
		return err
	}
	return t.claim(ctx, row, auth, "")
}

// submit sends row's claimed authorization to the token, recording its transaction before it
// is sent, and credits it once confirmed. A revert is adopted when the nonce was used by the
// right transfer meanwhile, else the top-up failed; an unknown outcome leaves the claim for a
// retry or the sweeper.
func (t *Topups) submit(ctx context.Context, row *topups.CreditTopup, auth contracts.Authorization) (TopupOutput, error) {
	s := t.pay
	rc, err := s.chain.TransactRecorded(ctx, s.cfg.Token, contracts.TestUSDC, func(tx common.Hash) error {
		row.PayTx, row.UpdatedAt = tx.Hex(), t.now().UTC()
		return t.move(ctx, row, topups.Submitted)
	}, "transferWithAuthorization", auth.From, common.HexToAddress(row.PayTo), auth.Value, auth.ValidAfter, auth.ValidBefore, auth.Nonce, auth.V, auth.R, auth.S)
	if errors.Is(err, contracts.ErrReverted) {
		if used, uerr := s.chain.AuthorizationUsed(ctx, s.cfg.Token, auth.From, auth.Nonce); uerr == nil && used {
			return t.adoptTopup(ctx, row, auth) // submitted by someone else meanwhile
		}
		row.State, row.Reason, row.UpdatedAt = topups.Failed, err.Error(), t.now().UTC()
		if merr := t.move(ctx, row, topups.Submitted); merr != nil {
			return TopupOutput{}, merr
		}
		return TopupOutput{}, refuse(tools.CodeUpstream, "invalid_transaction_state", "the chain refused the transfer (%v); nothing was taken or credited. Sign a new authorization and call again", err)
	}
	if err != nil {
		// Unknown: the transfer may be in flight. The claim stays; a retry with the same
		// payment, or the sweeper, finds it on chain and credits it once.
		e := tools.Errorf(tools.CodeUnavailable, "the transfer was submitted but is not confirmed yet (%v); call again with the same payment (or confirmRequestId %s): it credits once", err, row.RequestID)
		e.RetryAfter = 5 * time.Second
		return TopupOutput{}, e
	}
	if t.cfg.Failpoint != nil {
		t.cfg.Failpoint("topup")
	}
	return t.credit(ctx, row, rc.TxHash.Hex())
}

// claim marks row as paid by auth (submitted), refusing when another top-up claimed it.
func (t *Topups) claim(ctx context.Context, row *topups.CreditTopup, auth contracts.Authorization, tx string) error {
	row.State, row.PayerAddress, row.Nonce, row.AuthBefore, row.PayTx, row.Reason, row.UpdatedAt =
		topups.Submitted, auth.From.Hex(), hexutil.Encode(auth.Nonce[:]), auth.ValidBefore.Int64(), tx, "", t.now().UTC()
	err := t.move(ctx, row, topups.Quoted, topups.Failed)
	if errors.Is(err, store.ErrConflict) {
		return refuse(tools.CodeConflict, reasonNonceUsed, "this authorization (from %s) is paying another top-up; nothing was credited. Sign a new one with a fresh nonce", row.PayerAddress)
	}
	return err
}

// move writes row's state, refusing (CONFLICT) when another call moved it first.
func (t *Topups) move(ctx context.Context, row *topups.CreditTopup, from ...string) error {
	return t.store.InTx(ctx, func(ctx context.Context, q *store.Q) error {
		moved, err := topups.Move(ctx, q, row, from...)
		if err == nil && !moved {
			err = tools.Errorf(tools.CodeConflict, "top-up %s is being paid by another call; call again in a moment with the same payment", row.RequestID)
		}
		return err
	})
}

// adoptTopup credits an authorization found used on chain: when its transfer paid the treasury
// the quoted amount, it is claimed for row (whatever the quote's expiry: the money arrived) and
// followed to its confirmations.
func (t *Topups) adoptTopup(ctx context.Context, row *topups.CreditTopup, auth contracts.Authorization) (TopupOutput, error) {
	s := t.pay
	tr, err := s.chain.AuthorizedTransfer(ctx, s.cfg.Token, auth.From, common.HexToAddress(row.PayTo), auth.Nonce)
	if err != nil {
		return TopupOutput{}, s.unreachable(err)
	}
	if tr == nil || tr.Value == nil || tr.Value.Cmp(big.NewInt(row.AmountAtomic)) != 0 {
		return TopupOutput{}, refuse(tools.CodeConflict, reasonNonceUsed, "this authorization's nonce (from %s) was used for something else on chain; nothing was credited. Sign a new one with a fresh nonce", auth.From.Hex())
	}
	if row.State != topups.Submitted {
		if err := t.claim(ctx, row, auth, tr.Tx.Hex()); err != nil {
			return TopupOutput{}, err
		}
	} else if row.PayTx != tr.Tx.Hex() {
		row.PayTx, row.UpdatedAt = tr.Tx.Hex(), t.now().UTC()
		if err := t.move(ctx, row, topups.Submitted); err != nil {
			return TopupOutput{}, err
		}
	}
	return t.follow(ctx, row)
}

// follow finishes a submitted top-up from what the chain says: its transfer confirmed is
// credited; not confirmed yet, the caller is told to call again; never used and past its
// validBefore, it failed (nothing was taken).
func (t *Topups) follow(ctx context.Context, row *topups.CreditTopup) (TopupOutput, error) {
	s := t.pay
	var nonce [32]byte
	copy(nonce[:], common.FromHex(row.Nonce))
	from := common.HexToAddress(row.PayerAddress)
	used, err := s.chain.AuthorizationUsed(ctx, s.cfg.Token, from, nonce)
	if err != nil {
		return TopupOutput{}, s.unreachable(err)
	}
	if !used {
		chainNow, err := s.chain.Now(ctx)
		if err != nil {
			return TopupOutput{}, s.unreachable(err)
		}
		if chainNow.Unix() <= row.AuthBefore {
			e := tools.Errorf(tools.CodeUnavailable, "top-up %s's transfer is not on chain yet; call again with the same payment: it credits once", row.RequestID)
			e.RetryAfter = 5 * time.Second
			return TopupOutput{}, e
		}
		row.State, row.Reason, row.UpdatedAt = topups.Failed, "the authorization expired before it reached the chain", t.now().UTC()
		if err := t.move(ctx, row, topups.Submitted); err != nil {
			return TopupOutput{}, err
		}
		return TopupOutput{}, refuse(tools.CodeConflict, "invalid_exact_evm_payload_authorization_valid_before", "top-up %s's authorization expired before it reached the chain; nothing was taken or credited. Call without confirmRequestId for a new requirement", row.RequestID)
	}
	tr, err := s.chain.AuthorizedTransfer(ctx, s.cfg.Token, from, common.HexToAddress(row.PayTo), nonce)
	if err != nil {
		return TopupOutput{}, s.unreachable(err)
	}
	if tr == nil || tr.Value == nil || tr.Value.Cmp(big.NewInt(row.AmountAtomic)) != 0 {
		row.State, row.Reason, row.UpdatedAt = topups.Failed, "the authorization's nonce was used for another transfer", t.now().UTC()
		if err := t.move(ctx, row, topups.Submitted); err != nil {
			return TopupOutput{}, err
		}
		return TopupOutput{}, refuse(tools.CodeConflict, reasonNonceUsed, "top-up %s's authorization nonce was used for another transfer on chain; nothing was credited. Sign a new one with a fresh nonce", row.RequestID)
	}
	ok, err := s.chain.Confirmed(ctx, tr.Tx)
	if err != nil {
		return TopupOutput{}, s.unreachable(err)
	}
	if !ok {
		e := tools.Errorf(tools.CodeUnavailable, "top-up %s's transfer %s waits for %d confirmations; call again with the same payment (or confirmRequestId): it credits once", row.RequestID, tr.Tx.Hex(), s.cfg.Confirmations)
		e.RetryAfter = 5 * time.Second
		return TopupOutput{}, e
	}
	return t.credit(ctx, row, tr.Tx.Hex())
}

// walletPayment signs row's TransferWithAuthorization with the account's embedded EVM wallet
// (allowed only when the account turned signing on), with a fresh random nonce.
func (t *Topups) walletPayment(ctx context.Context, row *topups.CreditTopup) (*Payment, error) {
	s := t.pay
	if s.cfg.WalletKey == nil {
		return nil, tools.Errorf(tools.CodeBadInput, "paying with the embedded wallet is not available here; pay with your own wallet and send payment")
	}
	raw, addr, err := s.cfg.WalletKey(ctx, row.AccountID)
	if err != nil {
		if errors.Is(err, wallets.ErrSigningOff) {
			return nil, tools.Errorf(tools.CodeForbidden, "signing with the embedded wallet is off for this account (the account's signingEnabled setting); a human turns it on in the portal's settings, or pay with your own wallet and send payment").Wrap(err)
		}
		return nil, err
	}
	key, err := crypto.ToECDSA(raw)
	clear(raw)
	if err != nil {
		return nil, fmt.Errorf("embedded wallet key: %w", err)
	}
	chainNow, err := s.chain.Now(ctx)
	if err != nil {
		return nil, s.unreachable(err)
	}
	var nonce [32]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, err
	}
	after, before := chainNow.Unix()-60, min(chainNow.Add(s.cfg.QuoteTTL).Unix(), row.ValidBefore+int64(clockSkew/time.Second))
	from := common.HexToAddress(addr)
	td := contracts.TypedData(contracts.TransferWithAuthorization, row.ChainID, common.HexToAddress(row.Token), from, common.HexToAddress(row.PayTo),
		big.NewInt(row.AmountAtomic), after, before, nonce)
	sig, err := contracts.Sign(td, key)
	if err != nil {
		return nil, err
	}
	return &Payment{Signature: hexutil.Encode(sig), PrimaryType: contracts.TransferWithAuthorization, Authorization: Authorization{
		From: from.Hex(), To: row.PayTo, Value: fmt.Sprint(row.AmountAtomic), ValidAfter: fmt.Sprint(after),
		ValidBefore: fmt.Sprint(before), Nonce: hexutil.Encode(nonce[:])}}, nil
}

// ReconcileTopups follows top-ups left submitted (a lost answer, a crash between submission and
// credit): each is credited once its transfer is confirmed, or failed once its authorization
// can no longer land. It returns how many it concluded.
func (t *Topups) ReconcileTopups(ctx context.Context) (int, error) {
	if t.pay == nil {
		return 0, nil
	}
	rows, err := t.rows.In(ctx, topups.Submitted, t.now().UTC().Add(-time.Minute), 100)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, row := range rows {
		_, err := t.follow(ctx, row)
		var te *tools.Error
		switch {
		case err == nil:
			n++
		case errors.As(err, &te) && te.Code == tools.CodeUnavailable:
			// not on chain, or not confirmed, yet: the next run
		case errors.As(err, &te):
			n++ // failed: nothing was taken
		default:
			return n, err
		}
	}
	return n, nil
}

// Package payments is the flat-fee path: a stablecoin quote, the caller's EIP-3009 authorization
// checked off chain and submitted by the relayer into the FlatFeePayer escrow, then settled (split
// to the partner and the treasury) when the partner succeeds or refunded when it does not; and
// partner payouts of per-call fees in the same stablecoin, the ledger mirroring every movement.
package payments

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/shopspring/decimal"
	"github.com/switchboard-hq/switchboard/contracts"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/flatpay"
	"github.com/switchboard-hq/switchboard/store/ledger"
	"github.com/switchboard-hq/switchboard/store/partners"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/service"
	"github.com/switchboard-hq/switchboard/tools/wallets"
)

// Config is the flat-fee network.
type Config struct {
	RPCURL        string
	ChainID       int64
	Token         common.Address // an EIP-3009 stablecoin with 6 decimals (USDC on a test network)
	Payer         common.Address // the FlatFeePayer contract
	Treasury      common.Address // where top-ups are paid (credit_topup); zero: the payer contract's treasury
	RelayerKey    *ecdsa.PrivateKey
	Confirmations int
	PlatformMicro int64         // the platform's share of each flat-fee call, in the stablecoin's atomic units (= micro-USD)
	QuoteTTL      time.Duration // how long a quote's authorization may be submitted (its validBefore); x402's maxTimeoutSeconds
	BaseURL       string        // the service's public base URL: x402's resource.url is absolute
	SweepMargin   time.Duration // past an x402 payment's request timeout, the sweeper judges it (default 30 s)
	// WalletKey unseals an account's embedded EVM wallet key (wallets.EVMKey); nil: none.
	WalletKey func(ctx context.Context, accountID string) (key []byte, address string, err error)
}

// Service runs flat-fee payments.
type Service struct {
	cfg     Config
	store   *store.Store
	billing *billing.Service // ends the record of a call paid but never dispatched
	chain   *contracts.Client
	now     func() time.Time
	log     *slog.Logger
	topups  *Topups // credit_topup on this network (NewTopups), followed by Reconcile
}

// New dials the chain and checks its id.
func New(ctx context.Context, cfg Config, d service.Deps, bill *billing.Service) (*Service, error) {
	d = d.WithDefaults()
	if cfg.QuoteTTL <= 0 {
		cfg.QuoteTTL = 10 * time.Minute
	}
	c, err := contracts.Dial(ctx, cfg.RPCURL, cfg.ChainID, cfg.RelayerKey, cfg.Confirmations)
	if err != nil {
		return nil, fmt.Errorf("flat-fee chain: %w", err)
	}
	if cfg.Treasury == (common.Address{}) && cfg.Payer != (common.Address{}) {
		out, err := c.Call(ctx, cfg.Payer, contracts.FlatFeePayer, "treasury")
		if err != nil || len(out) != 1 {
			c.Close()
			return nil, fmt.Errorf("the payer contract %s's treasury: %v", cfg.Payer.Hex(), err)
		}
		cfg.Treasury, _ = out[0].(common.Address)
	}
	return &Service{cfg: cfg, store: d.Store, billing: bill, chain: c, now: d.Now, log: d.Log}, nil
}

// Shutdown closes the chain connection.
func (s *Service) Shutdown() { s.chain.Close() }

// Network is the chain's CAIP-2 id.
func (s *Service) Network() string { return fmt.Sprintf("eip155:%d", s.cfg.ChainID) }

// Split is how a flat fee is divided, in atomic units of the stablecoin.
type Split struct {
	Partner        string `json:"partner" jsonschema_description:"to the partner's payout address when the call succeeds"`
	Platform       string `json:"platform" jsonschema_description:"to the platform's treasury when the call succeeds"`
	Gas            string `json:"gas" jsonschema_description:"network gas: paid by the platform's relayer, covered by its share (0)"`
	PartnerAddress string `json:"partnerAddress"`
}

// Quote is a flat-fee call's payment quote: everything needed to sign the authorization.
type Quote struct {
	RequestID   string    `json:"requestId"`
	ChainID     int64     `json:"chainId"`
	Network     string    `json:"network" jsonschema_description:"CAIP-2 chain id, e.g. eip155:84532"`
	Token       string    `json:"token" jsonschema_description:"the stablecoin contract (EIP-3009)"`
	PayTo       string    `json:"payTo" jsonschema_description:"the FlatFeePayer contract that escrows the payment"`
	Amount      string    `json:"amount" jsonschema_description:"atomic units (6 decimals)"`
	AmountUsd   tools.USD `json:"amountUsd"`
	Split       Split     `json:"split"`
	ValidAfter  int64     `json:"validAfter"`
	ValidBefore int64     `json:"validBefore"`
	Nonce       string    `json:"nonce" jsonschema_description:"the EIP-3009 nonce, derived from the requestId"`
	TypedData   TypedData `json:"typedData" jsonschema_description:"the EIP-712 ReceiveWithAuthorization to sign as it is (viem signTypedData, eth_signTypedData_v4); its message.from is the payer you named (payer), else set it to the paying wallet. TransferWithAuthorization of the same fields is accepted too, with any unused nonce"`
	ExpiresAt   time.Time `json:"expiresAt"`
}

// Quoted prices a flat-fee call of intent: the partner's feeRate plus the platform's share,
// payable until the quote expires. The row is written by the caller with the invocation.
// payer, when an address, is who will sign: the quote's typedData is then complete.
func (s *Service) Quoted(ctx context.Context, requestID, accountID, payer string, intent *partners.Intent) (*flatpay.FlatPayment, Quote, error) {
	partnerAddr, ok := PayoutAddress(intent.PayoutAddresses, s.cfg.ChainID)
	rate, err := decimal.NewFromString(intent.FeeRate)
	if err != nil || rate.IsNegative() {
		return nil, Quote{}, fmt.Errorf("intent %s has feeRate %q", intent.PublicIdentifier, intent.FeeRate)
	}
	partner := billing.MicroUSD(rate)
	if partner > 0 && !ok {
		return nil, Quote{}, tools.Errorf(tools.CodeUpstream, "%s has no EVM payout address to be paid at; the partner must publish one", intent.PublicIdentifier)
	}
	chainNow, err := s.chain.Now(ctx)
	if err != nil {
		return nil, Quote{}, tools.Errorf(tools.CodeUnavailable, "the payment network (%s) cannot be reached to quote (%v); try again later", s.Network(), err)
	}
	p := &flatpay.FlatPayment{
		RequestID: requestID, AccountID: accountID, IntentID: intent.ID, ChainID: s.cfg.ChainID,
		Token: s.cfg.Token.Hex(), PayerContract: s.cfg.Payer.Hex(), PartnerAddress: partnerAddr,
		AmountAtomic: partner + s.cfg.PlatformMicro, PartnerAtomic: partner, PlatformAtomic: s.cfg.PlatformMicro,
		Nonce:      hexutil.Encode(contractsNonce(s.cfg, requestID)),
		ValidAfter: chainNow.Unix() - 60, ValidBefore: chainNow.Add(s.cfg.QuoteTTL).Unix(),
		State: flatpay.Quoted, CreatedAt: s.now().UTC(), UpdatedAt: s.now().UTC(),
	}
	if common.IsHexAddress(payer) {
		p.PayerAddress = common.HexToAddress(payer).Hex() // the signer named; the payment records who paid
	}
	return p, s.QuoteOf(p), nil
}

// QuoteOf is the quote of a stored payment.
func (s *Service) QuoteOf(p *flatpay.FlatPayment) Quote {
	var nonce [32]byte
	copy(nonce[:], common.FromHex(p.Nonce))
	td := contracts.TypedData(contracts.ReceiveWithAuthorization, p.ChainID, common.HexToAddress(p.Token), common.Address{}, common.HexToAddress(p.PayerContract),
		big.NewInt(p.AmountAtomic), p.ValidAfter, p.ValidBefore, nonce)
	td.Message["from"] = "<your address>" // the payer's own address goes here
	if p.PayerAddress != "" {
		td.Message["from"] = p.PayerAddress
	}
	return Quote{
		RequestID: p.RequestID, ChainID: p.ChainID, Network: fmt.Sprintf("eip155:%d", p.ChainID), Token: p.Token, PayTo: p.PayerContract,
		Amount: fmt.Sprint(p.AmountAtomic), AmountUsd: tools.USD(p.AmountAtomic),
		Split:      Split{Partner: fmt.Sprint(p.PartnerAtomic), Platform: fmt.Sprint(p.PlatformAtomic), Gas: "0", PartnerAddress: p.PartnerAddress},
		ValidAfter: p.ValidAfter, ValidBefore: p.ValidBefore, Nonce: p.Nonce, TypedData: typedDataOf(td),
		ExpiresAt: time.Unix(p.ValidBefore, 0).UTC(),
	}
}

// Required is a flat-fee call's one payment answer before it is paid: the quote, what the
// call is and why it must be paid first. The tool puts it in PAYMENT_REQUIRED's details under
// RequiredKey; each door renders it for its transport (tools/payments/x402: x402 version 2's
// PaymentRequired in the PAYMENT-REQUIRED header, or as MCP's structuredContent).
type Required struct {
	Quote Quote
	// Message is the request quoted, which the paid retry sends again; Description says what
	// is paid for, Reason why it is paid first.
	Message, Description, Reason string
	// BaseURL is the service's public base URL (x402's resource.url is absolute);
	// MaxTimeoutSeconds is how long a client's authorization may be valid (the quote's TTL).
	BaseURL           string
	MaxTimeoutSeconds int64
	// Resource, when set, is what is paid for when it is not a partner call (a top-up).
	Resource *PaidResource
}

// PaidResource is a paid call other than invoke_partner_message, for x402's resource and its
// bazaar extension: its REST path, its MCP tool, the body the paid retry sends again and its
// schema.
type PaidResource struct {
	HTTPPath, Tool   string
	Body, BodySchema map[string]any
}

// RequiredKey is where a PAYMENT_REQUIRED error's details hold its *Required.
const RequiredKey = "x402"

// Required is the answer that asks for q's payment.
func (s *Service) Required(q Quote, message, description, reason string) *Required {
	return &Required{Quote: q, Message: message, Description: description, Reason: reason,
		BaseURL: s.cfg.BaseURL, MaxTimeoutSeconds: int64(s.cfg.QuoteTTL / time.Second)}
}

// PayoutAddress picks a partner's EVM payout address for chainID: the evm:<chainID> entry
// first, then the bare evm entry.
func PayoutAddress(addrs map[string]string, chainID int64) (string, bool) {
	for _, k := range []string{fmt.Sprintf("evm:%d", chainID), "evm"} {
		if a, ok := addrs[k]; ok && common.IsHexAddress(a) {
			return common.HexToAddress(a).Hex(), true
		}
	}
	return "", false
}

// Payment is a signed EIP-3009 authorization, in x402's exact-scheme payload shape.
type Payment struct {
	Signature     string        `json:"signature" jsonschema:"pattern=^0x[0-9a-fA-F]{130}$" jsonschema_description:"the 65-byte EIP-712 signature, hex"`
	Authorization Authorization `json:"authorization"`
	PrimaryType   string        `json:"primaryType,omitempty" jsonschema:"enum=ReceiveWithAuthorization,enum=TransferWithAuthorization" jsonschema_description:"which authorization was signed; default ReceiveWithAuthorization (x402 clients sign TransferWithAuthorization)"`
	// Accepted is the x402 requirement the client chose, as it echoed it (PAYMENT-SIGNATURE,
	// _meta["x402/payment"]); checked against the quote when present.
	Accepted *Accepted `json:"accepted,omitempty" jsonschema_description:"x402 clients: the accepts[] entry paid, as offered"`
}

// Accepted is an echoed x402 PaymentRequirements.
type Accepted struct {
	Scheme  string         `json:"scheme,omitempty"`
	Network string         `json:"network,omitempty"`
	Amount  string         `json:"amount,omitempty"`
	Asset   string         `json:"asset,omitempty"`
	PayTo   string         `json:"payTo,omitempty"`
	Extra   map[string]any `json:"extra,omitempty"`
	// MaxTimeoutSeconds is as offered; the window is checked on the authorization itself.
	MaxTimeoutSeconds int64 `json:"maxTimeoutSeconds,omitempty"`
}

// Authorization is the signed message's fields.
type Authorization struct {
	From        string `json:"from" jsonschema:"pattern=^0x[0-9a-fA-F]{40}$"`
	To          string `json:"to" jsonschema:"pattern=^0x[0-9a-fA-F]{40}$"`
	Value       string `json:"value" jsonschema:"pattern=^[0-9]{1\\,40}$"`
	ValidAfter  string `json:"validAfter" jsonschema:"pattern=^[0-9]{1\\,20}$"`
	ValidBefore string `json:"validBefore" jsonschema:"pattern=^[0-9]{1\\,20}$"`
	Nonce       string `json:"nonce" jsonschema:"pattern=^0x[0-9a-fA-F]{64}$"`
}

// Receipt is what a flat-fee call paid, on chain.
type Receipt struct {
	State       string `json:"state" jsonschema:"enum=held,enum=settled,enum=refunded" jsonschema_description:"settled: split to the partner and the treasury; refunded: returned to the payer"`
	Network     string `json:"network"`
	Payer       string `json:"payer"`
	Amount      string `json:"amount" jsonschema_description:"atomic units"`
	Partner     string `json:"partner"`
	Platform    string `json:"platform"`
	PayTx       string `json:"payTx"`
	SettleTx    string `json:"settleTx,omitempty"`
	RefundTx    string `json:"refundTx,omitempty"`
	Explanation string `json:"explanation,omitempty"`
}

// ReceiptOf describes a payment.
func ReceiptOf(p *flatpay.FlatPayment) *Receipt {
	r := &Receipt{State: p.State, Network: fmt.Sprintf("eip155:%d", p.ChainID), Payer: p.PayerAddress, Amount: fmt.Sprint(p.AmountAtomic),
		Partner: fmt.Sprint(p.PartnerAtomic), Platform: fmt.Sprint(p.PlatformAtomic), PayTx: p.PayTx, Explanation: p.Reason}
	switch p.State {
	case flatpay.Settled:
		r.SettleTx = p.CloseTx
	case flatpay.Refunded:
		r.RefundTx = p.CloseTx
	}
	return r
}

// Collect checks a payment against its quote off chain (signer, amount, recipient, token,
// network, window, the authorization unused, the balance) and puts it in escrow on chain,
// keyed by its (from, nonce) and bound to this quote's requestId, waiting for the configured
// confirmations. The nonce is the client's own. A payment already in escrow (a retry after a
// lost answer) is found and not paid twice; an authorization someone else submitted to the
// token (x402's TransferWithAuthorization can be) is adopted into the escrow. Nothing is
// dispatched unless this returns nil. Refusals carry x402's invalidReason.
//
// guard, when not nil, runs in the transaction that marks the payment as being made, before
// anything is sent: its error refuses the payment with nothing sent (the spend policies).
func (s *Service) Collect(ctx context.Context, requestID string, pay *Payment, guard func(ctx context.Context, q *store.Q) error) (*flatpay.FlatPayment, error) {
	p, err := s.Payment(ctx, requestID)
	if err != nil {
		return nil, err
	}
	switch p.State {
	case flatpay.Held:
		return p, nil
	case flatpay.Settled, flatpay.Refunded:
		return p, tools.Errorf(tools.CodeConflict, "request %s was paid and concluded already (%s); ask for a new quote", requestID, p.State)
	}
	if pay == nil {
		return nil, tools.Errorf(tools.CodePaymentRequired, "request %s waits for its payment: sign the quote's authorization and call again with `payment`", requestID)
	}
	auth, err := s.check(ctx, p, pay)
	if err != nil {
		return nil, err
	}
	// Already in escrow (a submit whose answer was lost), or this authorization paid another call?
	e, err := s.chain.EscrowOf(ctx, s.cfg.Payer, auth.From, auth.Nonce)
	if err != nil {
		return nil, s.unreachable(err)
	}
	if e.State != contracts.EscrowNone {
		if e.Ref != contracts.Ref(requestID) {
			return nil, refuse(tools.CodeConflict, reasonNonceUsed, "this authorization (from %s, nonce %s) was used for another payment; sign a new one with a fresh nonce", auth.From.Hex(), hexutil.Encode(auth.Nonce[:]))
		}
		p.Nonce = hexutil.Encode(auth.Nonce[:])
		return s.found(ctx, p, e)
	}
	used, err := s.chain.AuthorizationUsed(ctx, s.cfg.Token, auth.From, auth.Nonce)
	if err != nil {
		return nil, s.unreachable(err)
	}
	if used {
		return s.adopt(ctx, p, auth, guard)
	}
	bal, err := s.chain.BalanceOf(ctx, s.cfg.Token, auth.From)
	if err != nil {
		return nil, s.unreachable(err)
	}
	if bal.Cmp(auth.Value) < 0 {
		return nil, tools.Errorf(tools.CodePaymentRequired, "%s holds %s of the stablecoin and the quote is %d (atomic units); fund it and call again with the same payment", auth.From.Hex(), bal, p.AmountAtomic).
			WithDetails(map[string]any{"balance": bal.String(), "amount": fmt.Sprint(p.AmountAtomic), "invalidReason": "insufficient_funds"})
	}
	p.State, p.PayerAddress, p.Nonce, p.UpdatedAt = flatpay.Submitted, auth.From.Hex(), hexutil.Encode(auth.Nonce[:]), s.now().UTC()
	if moved, err := s.moveGuarded(ctx, p, guard, flatpay.Quoted, flatpay.Failed, flatpay.Submitted); err != nil || !moved {
		if err == nil {
			err = tools.Errorf(tools.CodeConflict, "request %s is being paid by another call; call again in a moment", requestID)
		}
		return nil, err
	}
	rc, err := s.chain.Transact(ctx, s.cfg.Payer, contracts.FlatFeePayer, "pay", contracts.Ref(requestID), common.HexToAddress(orZero(p.PartnerAddress)), big.NewInt(p.PartnerAtomic), auth)
	if errors.Is(err, contracts.ErrReverted) {
		// Submitted to the token by someone else meanwhile (a front-run)? Then it is here: adopt it.
		if used, uerr := s.chain.AuthorizationUsed(ctx, s.cfg.Token, auth.From, auth.Nonce); uerr == nil && used {
			return s.adopt(ctx, p, auth, nil) // guard passed already: it is counted as submitted
		}
		p.State, p.Reason, p.UpdatedAt = flatpay.Failed, err.Error(), s.now().UTC()
		if _, merr := s.move(ctx, p, flatpay.Submitted); merr != nil {
			return nil, merr
		}
		return nil, refuse(tools.CodeUpstream, "invalid_transaction_state", "the chain refused the payment (%v); nothing was taken and the partner was not called", err)
	}
	if err != nil {
		// Unknown: the transaction may be in flight. The payment stays submitted; a retry with
		// the same payment finds it in escrow or submits it again (the nonce pays at most once).
		return nil, s.unreachable(err)
	}
	p.State, p.PayTx, p.UpdatedAt = flatpay.Held, rc.TxHash.Hex(), s.now().UTC()
	return p, s.held(ctx, p)
}

// x402's invalidReason for an authorization whose nonce was spent.
const reasonNonceUsed = "invalid_exact_evm_nonce_already_used"

// refuse is a payment refused, with x402's invalidReason for why.
func refuse(code tools.Code, reason, format string, a ...any) *tools.Error {
	return tools.Errorf(code, format, a...).WithDetails(map[string]any{"invalidReason": reason})
}

// adopt escrows an authorization that was submitted to the token by someone else: its
// transfer to the payer contract is found on chain (the same value, from the same payer), then
// the contract records the escrow for this quote, so the call is dispatched and the payment
// settled or refunded like any other. guard is Collect's, run where the payment is marked as
// being made (nil: it ran already).
func (s *Service) adopt(ctx context.Context, p *flatpay.FlatPayment, auth contracts.Authorization, guard func(ctx context.Context, q *store.Q) error) (*flatpay.FlatPayment, error) {
	tr, err := s.chain.AuthorizedTransfer(ctx, s.cfg.Token, auth.From, s.cfg.Payer, auth.Nonce)
	if err != nil {
		return nil, s.unreachable(err)
	}
	if tr == nil || tr.Value == nil || tr.Value.Cmp(auth.Value) != 0 || auth.ViaReceive {
		return nil, refuse(tools.CodeConflict, reasonNonceUsed, "this authorization's nonce (from %s) was used already; sign a new one with a fresh nonce", auth.From.Hex())
	}
	p.State, p.PayerAddress, p.Nonce, p.UpdatedAt = flatpay.Submitted, auth.From.Hex(), hexutil.Encode(auth.Nonce[:]), s.now().UTC()
	moved, err := s.moveGuarded(ctx, p, guard, flatpay.Quoted, flatpay.Failed, flatpay.Submitted)
	if refused := (*tools.Error)(nil); guard != nil && errors.As(err, &refused) {
		// Refused (the owner's policy), but the money is in the payer contract already: escrow
		// it for this quote and refund it at once, so that the refusal strands nothing.
		p.State = flatpay.Quoted
		if _, aerr := s.adopt(ctx, p, auth, nil); aerr != nil {
			return nil, aerr
		}
		if _, cerr := s.Conclude(context.WithoutCancel(ctx), p.RequestID, false); cerr != nil {
			s.log.WarnContext(ctx, "refund a refused adopted payment; the sweeper will", "request_id", p.RequestID, "err", cerr)
		}
		if refused.Details == nil {
			refused.Details = map[string]any{}
		}
		refused.Details["payment"] = "refunded: it was submitted to the token directly, and is returned to " + auth.From.Hex()
		return nil, refused
	}
	if err != nil || !moved {
		if err == nil {
			err = tools.Errorf(tools.CodeConflict, "request %s is being paid by another call; call again in a moment", p.RequestID)
		}
		return nil, err
	}
	_, err = s.chain.Transact(ctx, s.cfg.Payer, contracts.FlatFeePayer, "adopt", contracts.Ref(p.RequestID), common.HexToAddress(orZero(p.PartnerAddress)),
		big.NewInt(p.PartnerAtomic), auth.From, auth.Nonce, auth.Value)
	if errors.Is(err, contracts.ErrReverted) {
		// Adopted already: by this call's lost answer, or refunded by the sweeper.
		if e, eerr := s.chain.EscrowOf(ctx, s.cfg.Payer, auth.From, auth.Nonce); eerr == nil && e.State != contracts.EscrowNone && e.Ref == contracts.Ref(p.RequestID) {
			p.PayTx = tr.Tx.Hex()
			return s.found(ctx, p, e)
		}
		p.State, p.Reason, p.UpdatedAt = flatpay.Failed, err.Error(), s.now().UTC()
		if _, merr := s.move(ctx, p, flatpay.Submitted); merr != nil {
			return nil, merr
		}
		return nil, refuse(tools.CodeConflict, reasonNonceUsed, "this authorization (from %s) was submitted to the token directly and is held for another call or was refunded; sign a new one with a fresh nonce", auth.From.Hex())
	}
	if err != nil {
		return nil, s.unreachable(err)
	}
	p.State, p.PayTx, p.UpdatedAt = flatpay.Held, tr.Tx.Hex(), s.now().UTC()
	s.log.InfoContext(ctx, "adopted a flat-fee authorization submitted to the token by someone else", "request_id", p.RequestID, "tx", p.PayTx)
	return p, s.held(ctx, p)
}

func orZero(a string) string {
	if a == "" {
		return common.Address{}.Hex()
	}
	return a
}

// clockSkew is how far a client's clock may run ahead of the chain's when it sets its
// authorization's validBefore (now + maxTimeoutSeconds).
const clockSkew = 5 * time.Minute

// check verifies the payment against the quote without touching the chain's state: the
// signature recovers `from`, the recipient is the payer contract, the value the quote's, the
// window open now and no longer than the quote allows (validBefore at most maxTimeoutSeconds
// ahead, give or take clock skew), and the echoed requirement (x402's accepted) the quote's.
func (s *Service) check(ctx context.Context, p *flatpay.FlatPayment, pay *Payment) (contracts.Authorization, error) {
	bad := func(reason, format string, a ...any) error {
		return refuse(tools.CodeBadInput, reason, "payment: "+format+"; sign the quote's typedData or pay the PAYMENT-REQUIRED requirement as offered, and send it again", a...)
	}
	primary := pay.PrimaryType
	if primary == "" {
		primary = contracts.ReceiveWithAuthorization
	}
	if primary != contracts.ReceiveWithAuthorization && primary != contracts.TransferWithAuthorization {
		return contracts.Authorization{}, bad("invalid_payload", "primaryType %q is neither ReceiveWithAuthorization nor TransferWithAuthorization", primary)
	}
	req := requirement{what: "quote", chainID: p.ChainID, token: p.Token, payTo: p.PayerContract, payToName: "the payer contract", amount: p.AmountAtomic, requestID: p.RequestID}
	window := func(after, before int64) error { return s.checkWindow(ctx, p, after, before, bad) }
	return verifyAuthorization(req, primary, pay, window, bad)
}

// requirement is what an EIP-3009 payment must match, whoever is paid: a flat fee's payer
// contract or a top-up's treasury.
type requirement struct {
	what         string // "quote", "top-up": named in refusals
	chainID      int64
	token, payTo string
	payToName    string // "the payer contract", "the treasury"
	amount       int64  // token units
	requestID    string // checked against accepted.extra.requestId when echoed
}

type refusal func(reason, format string, a ...any) error

// verifyAuthorization checks a payment off chain against its requirement: the echoed x402
// requirement (accepted), the recipient, the exact value, a 32-byte nonce, the validity window
// (window, when not nil, judges it) and a signature by from over primary's typed data.
func verifyAuthorization(req requirement, primary string, pay *Payment, window func(after, before int64) error, bad refusal) (contracts.Authorization, error) {
	if err := checkAccepted(req, pay.Accepted, bad); err != nil {
		return contracts.Authorization{}, err
	}
	a := pay.Authorization
	if !common.IsHexAddress(a.From) || !common.IsHexAddress(a.To) {
		return contracts.Authorization{}, bad("invalid_payload", "from and to must be addresses")
	}
	if common.HexToAddress(a.To) != common.HexToAddress(req.payTo) {
		return contracts.Authorization{}, bad("invalid_exact_evm_payload_recipient_mismatch", "to is %s, not %s %s", a.To, req.payToName, req.payTo)
	}
	value, ok := new(big.Int).SetString(a.Value, 10)
	if !ok || value.Cmp(big.NewInt(req.amount)) != 0 {
		return contracts.Authorization{}, bad("invalid_exact_evm_payload_authorization_value_mismatch", "value is %s, not the quoted %d", a.Value, req.amount)
	}
	nonceBytes, err := hexutil.Decode(a.Nonce)
	if err != nil || len(nonceBytes) != 32 {
		return contracts.Authorization{}, bad("invalid_payload", "nonce must be 32 bytes, hex")
	}
	after, ok1 := new(big.Int).SetString(a.ValidAfter, 10)
	before, ok2 := new(big.Int).SetString(a.ValidBefore, 10)
	if !ok1 || !ok2 || !after.IsInt64() || !before.IsInt64() {
		return contracts.Authorization{}, bad("invalid_payload", "validAfter and validBefore must be unix seconds")
	}
	if window != nil {
		if err := window(after.Int64(), before.Int64()); err != nil {
			return contracts.Authorization{}, err
		}
	}
	sig, err := hexutil.Decode(pay.Signature)
	if err != nil {
		return contracts.Authorization{}, bad("invalid_exact_evm_payload_signature", "signature is not hex")
	}
	var nonce [32]byte
	copy(nonce[:], nonceBytes)
	from := common.HexToAddress(a.From)
	td := contracts.TypedData(primary, req.chainID, common.HexToAddress(req.token), from, common.HexToAddress(req.payTo), value, after.Int64(), before.Int64(), nonce)
	signer, v, r, sv, err := contracts.Signer(td, sig)
	if err != nil {
		return contracts.Authorization{}, bad("invalid_exact_evm_payload_signature", "%v", err)
	}
	if signer != from {
		return contracts.Authorization{}, bad("invalid_exact_evm_payload_signature", "the signature is by %s, not by from (%s): sign with the paying wallet, for chain %d and token %s", signer.Hex(), from.Hex(), req.chainID, req.token)
	}
	return contracts.Authorization{From: from, Value: value, ValidAfter: after, ValidBefore: before, Nonce: nonce, V: v, R: r, S: sv,
		ViaReceive: primary == contracts.ReceiveWithAuthorization}, nil
}

// checkAccepted compares the requirement a stock x402 client echoes (accepted) with the
// one offered; nil when there is none (the spec's own path).
func checkAccepted(req requirement, acc *Accepted, bad refusal) error {
	if acc == nil {
		return nil
	}
	switch {
	case acc.Scheme != "" && acc.Scheme != "exact":
		return bad("invalid_scheme", "scheme %q: this %s is paid with scheme exact", acc.Scheme, req.what)
	case acc.Network != "" && acc.Network != fmt.Sprintf("eip155:%d", req.chainID):
		return bad("invalid_network", "network %s: this %s is paid on eip155:%d", acc.Network, req.what, req.chainID)
	case acc.Asset != "" && (!common.IsHexAddress(acc.Asset) || common.HexToAddress(acc.Asset) != common.HexToAddress(req.token)):
		return bad("invalid_payment_requirements", "asset %s: this %s is paid in the token %s", acc.Asset, req.what, req.token)
	case acc.Amount != "" && acc.Amount != fmt.Sprint(req.amount):
		return bad("invalid_exact_evm_payload_authorization_value_mismatch", "amount %s: the %s is %d", acc.Amount, req.what, req.amount)
	case acc.PayTo != "" && (!common.IsHexAddress(acc.PayTo) || common.HexToAddress(acc.PayTo) != common.HexToAddress(req.payTo)):
		return bad("invalid_exact_evm_payload_recipient_mismatch", "payTo %s: the %s is paid to %s", acc.PayTo, req.what, req.payTo)
	case req.requestID != "" && acc.Extra["requestId"] != nil && acc.Extra["requestId"] != req.requestID:
		return bad("invalid_payment_requirements", "the requirement paid is %s %v, not %s", req.what, acc.Extra["requestId"], req.requestID)
	}
	return nil
}

// checkWindow checks the quote is still payable and the authorization's validity window
// (validAfter, validBefore in unix seconds) is open now, lasts long enough to be submitted,
// and no longer than the quote allows.
func (s *Service) checkWindow(ctx context.Context, p *flatpay.FlatPayment, after, before int64, bad func(reason, format string, a ...any) error) error {
	chainNow, err := s.chain.Now(ctx)
	if err != nil {
		return s.unreachable(err)
	}
	if chainNow.Unix() > p.ValidBefore {
		return refuse(tools.CodeConflict, "invalid_exact_evm_payload_authorization_valid_before", "the quote %s expired at %d (the chain's time is %d); call without confirmRequestId (or without payment) for a new quote", p.RequestID, p.ValidBefore, chainNow.Unix())
	}
	latest := chainNow
	if n := s.now(); n.After(latest) {
		latest = n
	}
	switch {
	case after >= chainNow.Unix():
		return bad("invalid_exact_evm_payload_authorization_valid_after", "it is not valid yet (validAfter %d, the chain's time %d)", after, chainNow.Unix())
	case before < chainNow.Unix()+30:
		return refuse(tools.CodeConflict, "invalid_exact_evm_payload_authorization_valid_before", "the authorization expires at %d, too soon to be submitted (the chain's time is %d); sign it again with a later validBefore", before, chainNow.Unix())
	case before > latest.Add(s.cfg.QuoteTTL+clockSkew).Unix():
		return bad("invalid_exact_evm_payload_authorization_valid_before", "validBefore %d is further than maxTimeoutSeconds (%d) ahead", before, int64(s.cfg.QuoteTTL/time.Second))
	}
	return nil
}

func (s *Service) unreachable(err error) error {
	e := tools.Errorf(tools.CodeUnavailable, "the payment network (%s) did not answer (%v); nothing was dispatched. Call again with the same payment: it can never be paid twice", s.Network(), err)
	e.RetryAfter = 5 * time.Second
	return e
}

// found records an escrow discovered on chain for a payment the service lost track of.
func (s *Service) found(ctx context.Context, p *flatpay.FlatPayment, e contracts.Escrow) (*flatpay.FlatPayment, error) {
	if e.State != contracts.EscrowHeld {
		return p, tools.Errorf(tools.CodeConflict, "request %s's escrow was concluded on chain already; ask for a new quote", p.RequestID)
	}
	p.State, p.PayerAddress, p.UpdatedAt = flatpay.Held, e.Payer.Hex(), s.now().UTC()
	return p, s.held(ctx, p)
}

// held records the escrow and mirrors it on the ledger, once.
func (s *Service) held(ctx context.Context, p *flatpay.FlatPayment) error {
	return s.store.InTx(ctx, func(ctx context.Context, q *store.Q) error {
		moved, err := flatpay.Move(ctx, q, p, flatpay.Quoted, flatpay.Submitted, flatpay.Failed)
		if err != nil || !moved {
			return err
		}
		return ledger.Post(ctx, q, p.RequestID, "pay "+p.PayTx, p.UpdatedAt,
			ledger.Posting{Book: "external:chain:" + p.PayerAddress, Micro: -p.AmountAtomic, Kind: "chain_pay"},
			ledger.Posting{Book: BookEscrow, Micro: p.AmountAtomic, Kind: "chain_pay"})
	})
}

// BookEscrow mirrors the payer contract's escrow on the ledger.
const BookEscrow = "chain:escrow"

func (s *Service) move(ctx context.Context, p *flatpay.FlatPayment, from ...string) (bool, error) {
	return s.moveGuarded(ctx, p, nil, from...)
}

// moveGuarded moves p, after guard (when not nil) allowed it in the same transaction.
func (s *Service) moveGuarded(ctx context.Context, p *flatpay.FlatPayment, guard func(ctx context.Context, q *store.Q) error, from ...string) (bool, error) {
	var moved bool
	err := s.store.InTx(ctx, func(ctx context.Context, q *store.Q) error {
		if guard != nil {
			if err := guard(ctx, q); err != nil {
				return err
			}
		}
		var err error
		moved, err = flatpay.Move(ctx, q, p, from...)
		return err
	})
	return moved, err
}

// Conclude concludes a held payment on chain: settle (the partner succeeded) or refund. A
// payment concluded already is returned as it is; an escrow concluded on chain by another
// process is recorded as the chain says. Exactly one settlement or refund ever happens: the
// contract enforces it.
func (s *Service) Conclude(ctx context.Context, requestID string, success bool) (*flatpay.FlatPayment, error) {
	p, err := s.Payment(ctx, requestID)
	if err != nil || p.State != flatpay.Held {
		return p, err
	}
	var nonce [32]byte
	copy(nonce[:], common.FromHex(p.Nonce))
	method, state := "refund", flatpay.Refunded
	if success {
		method, state = "settle", flatpay.Settled
	}
	from := common.HexToAddress(p.PayerAddress)
	rc, err := s.chain.Transact(ctx, s.cfg.Payer, contracts.FlatFeePayer, method, contracts.EscrowID(from, nonce))
	tx := ""
	if err == nil {
		tx = rc.TxHash.Hex()
	} else {
		e, rerr := s.chain.EscrowOf(ctx, s.cfg.Payer, from, nonce)
		switch {
		case rerr != nil || e.State == contracts.EscrowHeld:
			return p, fmt.Errorf("%s %s: %w", method, requestID, err) // the sweeper tries again
		case e.State == contracts.EscrowSettled:
			state = flatpay.Settled
		default:
			state = flatpay.Refunded
		}
	}
	p.State, p.CloseTx, p.UpdatedAt = state, tx, s.now().UTC()
	err = s.store.InTx(ctx, func(ctx context.Context, q *store.Q) error {
		moved, err := flatpay.Move(ctx, q, p, flatpay.Held)
		if err != nil || !moved {
			return err
		}
		if state == flatpay.Settled {
			return ledger.Post(ctx, q, p.RequestID, "settle "+tx, p.UpdatedAt,
				ledger.Posting{Book: BookEscrow, Micro: -p.AmountAtomic, Kind: "chain_settle"},
				ledger.Posting{Book: "chain:partner:" + p.PartnerAddress, Micro: p.PartnerAtomic, Kind: "chain_settle"},
				ledger.Posting{Book: "chain:treasury", Micro: p.PlatformAtomic, Kind: "chain_settle"})
		}
		return ledger.Post(ctx, q, p.RequestID, "refund "+tx, p.UpdatedAt,
			ledger.Posting{Book: BookEscrow, Micro: -p.AmountAtomic, Kind: "chain_refund"},
			ledger.Posting{Book: "external:chain:" + p.PayerAddress, Micro: p.AmountAtomic, Kind: "chain_refund"})
	})
	return p, err
}

// WalletPayment signs a quote's authorization with the account's embedded EVM wallet: allowed
// only when the account turned signing on, and only for that account's own quote.
func (s *Service) WalletPayment(ctx context.Context, requestID, accountID string) (*Payment, error) {
	if s.cfg.WalletKey == nil {
		return nil, tools.Errorf(tools.CodeBadInput, "paying with the embedded wallet is not available here; sign with your own wallet and send payment")
	}
	p, err := s.Payment(ctx, requestID)
	if err != nil {
		return nil, err
	}
	if p.AccountID != accountID {
		return nil, tools.Errorf(tools.CodeNotFound, "no quote %s in this account", requestID)
	}
	raw, addr, err := s.cfg.WalletKey(ctx, accountID)
	if err != nil {
		if errors.Is(err, wallets.ErrSigningOff) {
			return nil, tools.Errorf(tools.CodeForbidden, "signing with the embedded wallet is off for this account; a human turns it on in the portal's settings, or sign with your own wallet and send payment").Wrap(err)
		}
		return nil, err
	}
	key, err := contracts.KeyFromBytes(raw)
	clear(raw)
	if err != nil {
		return nil, fmt.Errorf("embedded wallet key: %w", err)
	}
	var nonce [32]byte
	copy(nonce[:], common.FromHex(p.Nonce))
	from := common.HexToAddress(addr)
	td := contracts.TypedData(contracts.ReceiveWithAuthorization, p.ChainID, common.HexToAddress(p.Token), from, common.HexToAddress(p.PayerContract),
		big.NewInt(p.AmountAtomic), p.ValidAfter, p.ValidBefore, nonce)
	sig, err := contracts.Sign(td, key)
	if err != nil {
		return nil, err
	}
	return &Payment{Signature: hexutil.Encode(sig), PrimaryType: contracts.ReceiveWithAuthorization, Authorization: Authorization{
		From: from.Hex(), To: p.PayerContract, Value: fmt.Sprint(p.AmountAtomic), ValidAfter: fmt.Sprint(p.ValidAfter),
		ValidBefore: fmt.Sprint(p.ValidBefore), Nonce: p.Nonce}}, nil
}

package payments

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/switchboard-hq/switchboard/contracts"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/invocations"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/partners/outbound"
	"github.com/switchboard-hq/switchboard/tools/policies"
	"github.com/switchboard-hq/switchboard/tools/service"
	"github.com/switchboard-hq/switchboard/tools/wallets"
	"github.com/switchboard-hq/switchboard/tools/webhooks"
)

// Paying any x402 resource (x402_fetch) from the account's embedded EVM wallet: Switchboard
// requests the URL through the partner client (its SSRF guard, verified TLS, no redirects,
// bodies capped), and on a 402 takes an exact offer on the flat-fee network in its stablecoin,
// judges the price (at most maxUsd, then the owner's policies through the movement's ticket),
// records the payment dispatching, signs the EIP-3009 TransferWithAuthorization, sends the same
// request again with it and relays the seller's answer and settlement. Nothing is signed
// before the price and the policies said yes.

// FetchConfig configures x402_fetch.
type FetchConfig struct {
	Client  *outbound.Client // the partner client: SSRF guard, TLS, no redirects, capped bodies
	Timeout time.Duration    // each request to the resource (default 30 s)
}

// Fetches serves x402_fetch on pay's network (nil pay: not configured).
type Fetches struct {
	cfg       FetchConfig
	pay       *Service
	bill      *billing.Service
	approvals *policies.Approvals
	store     *store.Store
	now       func() time.Time
}

// NewFetches builds x402_fetch's service.
func NewFetches(cfg FetchConfig, d service.Deps, pay *Service, bill *billing.Service, approvals *policies.Approvals) *Fetches {
	d = d.WithDefaults()
	if cfg.Timeout <= 0 {
		cfg.Timeout = FetchTimeout
	}
	return &Fetches{cfg: cfg, pay: pay, bill: bill, approvals: approvals, store: d.Store, now: d.Now}
}

// MaxFetchBody is the most of a resource's answer relayed (and of a request body sent).
const MaxFetchBody = 1 << 20

// defaultMaxUsd is the most one x402_fetch pays when the caller names no maxUsd.
const defaultMaxUsd = 1_000_000

// FetchInput is x402_fetch's input.
type FetchInput struct {
	URL              string        `json:"url" jsonschema:"maxLength=2048" jsonschema_description:"the resource: an https URL (the partner SSRF guard applies: public addresses only)"`
	Method           string        `json:"method,omitempty" jsonschema:"enum=GET,enum=POST,enum=PUT,enum=PATCH,enum=DELETE" jsonschema_description:"default GET"`
	Headers          FetchHeaders  `json:"headers,omitempty" jsonschema_description:"request headers to send: at most 32, names HTTP tokens, values at most 4096 characters; not Host, Content-Length, Cookie, Authorization, hop-by-hop headers, or x402's own"`
	Body             string        `json:"body,omitempty" jsonschema:"maxLength=1048576" jsonschema_description:"the request body, as text"`
	MaxUsd           *tools.USD    `json:"maxUsd,omitempty" jsonschema_description:"the most to pay for this request, in USD (default 1); a higher price is refused with nothing signed"`
	ConfirmRequestID string        `json:"confirmRequestId,omitempty" jsonschema:"format=uuid" jsonschema_description:"the requestId of an APPROVAL_REQUIRED answer, once the owner approved it: the same request is paid"`
	MCPTool          *FetchMCPTool `json:"mcpTool,omitempty" jsonschema_description:"call this tool of the MCP server at url (Streamable HTTP) instead of requesting the URL: a payment the tool asks for (x402's MCP transport) is judged and paid the same way, and the tool's result is the answer's body (JSON)"`
}

// FetchPayment is what paid for the resource.
type FetchPayment struct {
	Network string `json:"network" jsonschema_description:"CAIP-2 chain id the payment was made on"`
	Payer   string `json:"payer" jsonschema_description:"the embedded wallet that signed"`
	PayTo   string `json:"payTo" jsonschema_description:"the seller's address"`
	TxHash  string `json:"txHash,omitempty" jsonschema_description:"the seller's settlement transaction (its PAYMENT-RESPONSE)"`
}

// FetchOutput is the resource's answer, relayed.
type FetchOutput struct {
	Status       int               `json:"status" jsonschema_description:"the resource's HTTP status"`
	Headers      map[string]string `json:"headers"`
	Body         string            `json:"body" jsonschema_description:"the answer's body, cut at 1 MiB: text, or base64 when it is not UTF-8 (bodyEncoding)"`
	BodyEncoding string            `json:"bodyEncoding" jsonschema:"enum=text,enum=base64"`
	Truncated    bool              `json:"truncated,omitempty" jsonschema_description:"the body was longer than 1 MiB and is cut"`
	PaidUsd      tools.USD         `json:"paidUsd" jsonschema_description:"what was paid (0: the resource asked for nothing)"`
	Payment      *FetchPayment     `json:"payment,omitempty" jsonschema_description:"absent when nothing was paid"`
	RequestID    string            `json:"requestId,omitempty" jsonschema_description:"the payment's record (usage shows it)"`
}

// Tools returns x402_fetch.
func (f *Fetches) Tools() []*tools.Tool {
	return []*tools.Tool{tools.New(tools.Def{
		Name:  "x402_fetch",
		Title: "Fetch a paid resource (x402)",
		Description: "Request a URL and, when it answers 402 Payment Required (x402), pay it from the account's embedded EVM wallet and relay the answer. " +
			"The price must be at most maxUsd (default 1 USD) and pass the owner's spend policies (caps, per-call maximum, allow/deny by host and recipient, approvals); " +
			"otherwise nothing is signed. Signing must be on for the account (a human turns it on in the portal). The answer has the resource's status, headers and body, paidUsd and the payment's settlement.",
		Access:      tools.RequireScope(tools.ScopeSend),
		Annotations: tools.Annotations{ReadOnly: tools.Bool(false), Destructive: tools.Bool(false), OpenWorld: tools.Bool(true)},

		TakesIdempotencyKey: true, // a retry with the caller's key pays once
	}, f.fetch)}
}

// ask is one x402_fetch request, as checked.
type ask struct {
	in     FetchInput
	u      *url.URL
	method string
	maxUsd int64
	mcp    *mcpCall // the MCP tool called, when in.MCPTool is set
}

func (f *Fetches) fetch(ctx context.Context, c *tools.Caller, in FetchInput) (FetchOutput, error) {
	if f.pay == nil {
		return FetchOutput{}, tools.Errorf(tools.CodeUnavailable, "paying x402 resources is not configured on this deployment (it needs the payment network, SWITCHBOARD_FLATFEE_*); ask its operator")
	}
	a, err := f.check(ctx, in)
	if err != nil {
		return FetchOutput{}, err
	}
	// The call's requestId names its record: a call that finds it (a retry of a call whose
	// process died, taken over after idempotency.Abandoned under the same CallID) answers what
	// it recorded and signs nothing.
	id := c.NewCallID()
	if c.CallID != "" && in.ConfirmRequestID == "" {
		if out, found, err := f.recorded(ctx, c.Principal.AccountID, id); found {
			return out, err
		}
	}
	var approved *store.Invocation
	if in.ConfirmRequestID != "" {
		inv, out, err := f.resume(ctx, c, in.ConfirmRequestID)
		if err != nil || inv == nil {
			return out, err
		}
		approved = inv
	}
	var of offered
	var ok bool
	if in.MCPTool != nil {
		var out *FetchOutput
		if a.mcp, out, of, ok, err = f.callMCP(ctx, a); err != nil || out != nil {
			return derefFetch(out), err
		}
		defer a.mcp.close()
	} else {
		status, h, body, serr := f.send(ctx, a, "", "")
		if serr != nil {
			return FetchOutput{}, serr
		}
		if status != http.StatusPaymentRequired {
			return relay(status, h, body), nil
		}
		of, ok, err = readOffers(h, body)
	}
	if err != nil || !ok {
		return FetchOutput{}, tools.Errorf(tools.CodeUpstream, "%s answered 402 without x402 payment requirements Switchboard can read (%v); nothing was paid", a.u.Host, err)
	}
	o, price, err := f.pick(of, a)
	if err != nil {
		return FetchOutput{}, err
	}
	return f.buy(ctx, c, id, a, of, o, price, approved)
}

// check refuses a request that cannot be sent, saying what to fix.
func (f *Fetches) check(ctx context.Context, in FetchInput) (ask, error) {
	a := ask{in: in, method: strings.ToUpper(in.Method), maxUsd: defaultMaxUsd}
	if a.method == "" {
		a.method = http.MethodGet
	}
	if in.MaxUsd != nil {
		a.maxUsd = in.MaxUsd.Micro()
	}
	u, err := f.cfg.Client.Guard().CheckURL(ctx, in.URL)
	if err != nil {
		return a, tools.Errorf(tools.CodeBadInput, "url: %v", strings.ReplaceAll(err.Error(), "partner endpoints", "x402 resources"))
	}
	a.u = u
	return a, checkHeaders(in.Headers)
}

// send makes the request, with the payment header name: value when name is set.
func (f *Fetches) send(ctx context.Context, a ask, name, value string) (int, http.Header, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, f.cfg.Timeout)
	defer cancel()
	var body io.Reader
	if a.in.Body != "" {
		body = strings.NewReader(a.in.Body)
	}
	req, err := http.NewRequestWithContext(ctx, a.method, a.u.String(), body)
	if err != nil {
		return 0, nil, nil, tools.Errorf(tools.CodeBadInput, "the request: %v", err)
	}
	for k, v := range a.in.Headers {
		req.Header.Set(k, v)
	}
	if name != "" {
		req.Header.Set(name, value)
		req.Header.Set("Access-Control-Expose-Headers", "PAYMENT-RESPONSE,X-PAYMENT-RESPONSE")
	}
	resp, err := f.cfg.Client.HTTPClient().Do(req)
	if err != nil {
		if outbound.IsBlocked(err) {
			return 0, nil, nil, tools.Errorf(tools.CodeBadInput, "url: %v", err)
		}
		return 0, nil, nil, tools.Errorf(tools.CodeUpstream, "%s did not answer (%v)", a.u.Host, err).Wrap(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxFetchBody+1))
	if err != nil && !errors.Is(err, outbound.ErrBodyTooLarge) {
		return 0, nil, nil, tools.Errorf(tools.CodeUpstream, "%s's answer could not be read (%v)", a.u.Host, err).Wrap(err)
	}
	return resp.StatusCode, resp.Header, b, nil
}

// relay is a resource's answer as x402_fetch gives it.
func relay(status int, h http.Header, body []byte) FetchOutput {
	out := FetchOutput{Status: status, Headers: map[string]string{}, BodyEncoding: "text"}
	for k, v := range h {
		if len(v) > 0 && !strings.EqualFold(k, "Set-Cookie") {
			out.Headers[k] = strings.Join(v, ", ")
		}
	}
	if len(body) > MaxFetchBody {
		body, out.Truncated = body[:MaxFetchBody], true
	}
	if utf8.Valid(body) {
		out.Body = string(body)
	} else {
		out.Body, out.BodyEncoding = base64.StdEncoding.EncodeToString(body), "base64"
	}
	return out
}

// pick takes the first exact offer on the payment network in its stablecoin, and refuses a
// price above maxUsd (the stablecoin's atomic units are micro-USD).
func (f *Fetches) pick(of offered, a ask) (offer, int64, error) {
	s := f.pay
	var seen []string
	for _, o := range of.Accepts {
		seen = append(seen, fmt.Sprintf("%s on %s in %s", o.Scheme, o.Network, o.Asset))
		if o.Scheme != "exact" || o.Network != s.Network() || !strings.EqualFold(o.Asset, s.cfg.Token.Hex()) || !common.IsHexAddress(o.PayTo) {
			continue
		}
		price, ok := o.atomic()
		if !ok {
			continue
		}
		if price > a.maxUsd {
			return o, price, tools.Errorf(tools.CodePolicyDenied, "%s asks %s USD and this request may pay at most %s USD (maxUsd); nothing was signed. Raise maxUsd to pay it",
				a.u.Host, tools.USD(price), tools.USD(a.maxUsd)).WithDetails(map[string]any{"rule": "maxUsd", "priceUsd": tools.USD(price).String(), "maxUsd": tools.USD(a.maxUsd).String()})
		}
		return o, price, nil
	}
	return offer{}, 0, tools.Errorf(tools.CodeUpstream, "%s offers no payment Switchboard can make (it pays the exact scheme on %s in %s; offered: %s); nothing was paid",
		a.u.Host, s.Network(), s.cfg.Token.Hex(), strings.Join(seen, "; "))
}

// buy judges, records, signs and pays offer o at price, and relays the paid answer. approved
// is the record of an approved request (nil: a new one, recorded as id).
func (f *Fetches) buy(ctx context.Context, c *tools.Caller, id string, a ask, of offered, o offer, price int64, approved *store.Invocation) (FetchOutput, error) {
	p := c.Principal
	host := strings.ToLower(a.u.Hostname())
	t := f.bill.Movement(p, billing.Movement{Kind: store.KindX402, ValueMicro: price, Network: f.pay.Network(), Category: billing.CategoryX402,
		Label: host, Recipient: o.PayTo, Host: host})
	args := fetchArgs{URL: a.u.String(), Method: a.method, PayTo: o.PayTo, Amount: o.Amount}
	inv, from := approved, store.InvAwaitingApproval
	if inv == nil {
		from = ""
		var err error
		if inv, err = t.Record(id, args, f.now()); err != nil {
			return FetchOutput{}, err
		}
		if err := f.admit(ctx, t, inv, price); err != nil {
			return FetchOutput{}, err
		}
	}
	key, payer, err := f.walletKey(ctx, p.AccountID)
	if err != nil {
		return FetchOutput{}, err
	}
	defer clear(key)
	auth, err := f.authorize(payer, o, price)
	if err != nil {
		return FetchOutput{}, err
	}
	if err := withAuth(inv, auth); err != nil {
		return FetchOutput{}, err
	}
	if err := t.OpenMove(ctx, inv, from); err != nil {
		return FetchOutput{}, err
	}
	pay, err := f.sign(key, auth)
	if err != nil {
		return FetchOutput{}, f.conclude(ctx, t, inv, a, o, price, payer, billing.Moved{Code: string(tools.CodeInternal), Detail: "not signed: " + err.Error()}, err)
	}
	d, sent, err := f.deliver(ctx, a, of, o, pay)
	if !sent {
		return FetchOutput{}, f.conclude(ctx, t, inv, a, o, price, payer, billing.Moved{Code: string(tools.CodeInternal), Detail: "not sent: " + err.Error()}, err)
	}
	if err != nil {
		// The signed authorization may have reached the seller, who may settle it: the record
		// stays dispatching (counted as spent) until the sweeper learns from the chain whether
		// it was used, and a retry with the same key answers that.
		e := tools.Errorf(tools.CodeUpstream, "%s took the payment but did not answer (%v); x402 payment %s is recorded and its outcome is being determined on chain: "+
			"retry in a minute with the same Idempotency-Key for it (a call without the key would pay again)", a.u.Host, err, inv.RequestID).
			WithDetails(map[string]any{"requestId": inv.RequestID, "state": store.InvDispatching}).Wrap(err)
		e.RetryAfter = 30 * time.Second
		return FetchOutput{}, e
	}
	out, status, st := d.out, d.status, d.st
	out.RequestID = inv.RequestID
	if d.refused {
		// A refusal is believed once the chain says the authorization is unused (a seller
		// that settled and answers 402 to a repeat of the request paid all the same).
		used, tx, err := f.pay.authUsed(ctx, auth)
		if err != nil {
			return out, nil // the sweeper learns the outcome; the record stays dispatching
		}
		if used {
			return f.paid(ctx, t, inv, a, o, price, payer, out, status, tx)
		}
		reason := st.ErrorReason
		if reason == "" {
			reason = "the seller answered 402 to the payment"
		}
		answer, _ := json.Marshal(out)
		return out, f.conclude(ctx, t, inv, a, o, price, payer, billing.Moved{Code: string(tools.CodeUpstream), Detail: "refused by the seller: " + reason, Answer: answer, Status: status}, nil)
	}
	return f.paid(ctx, t, inv, a, o, price, payer, out, status, st.Transaction)
}

// delivered is the seller's answer to the signed payment.
type delivered struct {
	out     FetchOutput
	status  int
	st      settled
	refused bool // the seller asked for payment again, or said its settlement failed
}

// deliver sends the signed payment to the resource (over HTTP, or to the MCP tool) and reads
// its answer; sent is false when nothing went out.
func (f *Fetches) deliver(ctx context.Context, a ask, of offered, o offer, pay *Payment) (d delivered, sent bool, err error) {
	if a.mcp != nil {
		return a.mcp.pay(ctx, of, o, pay)
	}
	name, value, err := paymentHeader(of, o, pay)
	if err != nil {
		return d, false, err
	}
	status, h, body, err := f.send(ctx, a, name, value)
	if err != nil {
		return d, true, err
	}
	st, hasSettle := readSettled(h)
	return delivered{out: relay(status, h, body), status: status, st: st, refused: status == http.StatusPaymentRequired || hasSettle && !st.Success}, true, nil
}

// paid records a settled payment (in transaction tx) and answers the seller's answer out.
func (f *Fetches) paid(ctx context.Context, t *billing.Ticket, inv *store.Invocation, a ask, o offer, price int64, payer string, out FetchOutput, status int, tx string) (FetchOutput, error) {
	out.PaidUsd = tools.USD(price)
	out.Payment = &FetchPayment{Network: f.pay.Network(), Payer: payer, PayTo: common.HexToAddress(o.PayTo).Hex(), TxHash: tx}
	answer, _ := json.Marshal(out)
	return out, f.conclude(ctx, t, inv, a, o, price, payer, billing.Moved{Settled: true, TxHash: tx, Detail: "paid", Answer: answer, Status: status}, nil)
}

// admit judges a new payment by the owner's policies before anything is signed; one a policy
// sends to a human is recorded awaiting approval and answered APPROVAL_REQUIRED.
func (f *Fetches) admit(ctx context.Context, t *billing.Ticket, inv *store.Invocation, price int64) error {
	err := t.Admit(ctx, price)
	var need *billing.ErrApprovalRequired
	if !errors.As(err, &need) {
		return err
	}
	charge := map[string]any{"x402Usd": tools.USD(price).String(), "maxChargeUsd": tools.USD(price).String()}
	return f.approvals.Ask(ctx, t, policies.Ask{Record: inv, Rule: need.Rule, WorstMicro: price, Charge: charge, Asking: fetchAsking})
}

// fetchAsking is how an approval names an x402 payment to the agent.
var fetchAsking = policies.Asking{What: "this payment", Nothing: "nothing was signed", Again: "call x402_fetch again with the same request"}

// resume reads the record a confirmRequestId names: approved, it is paid now (inv); a payment
// that ended answers again as it did (out); pending, declined or expired is said so.
func (f *Fetches) resume(ctx context.Context, c *tools.Caller, requestID string) (*store.Invocation, FetchOutput, error) {
	inv, err := invocations.New(f.store).Get(ctx, c.Principal.AccountID, requestID)
	if errors.Is(err, store.ErrNotFound) || err == nil && inv.Kind != store.KindX402 {
		return nil, FetchOutput{}, tools.Errorf(tools.CodeNotFound, "no x402 payment %s in this account; call x402_fetch without confirmRequestId", requestID)
	}
	if err != nil {
		return nil, FetchOutput{}, err
	}
	if inv.Answer != nil && store.StateOf(inv.State).Final || inv.State == store.InvDispatching {
		out, err := answerOf(inv) // paid (or being learned): never signed again
		return nil, out, err
	}
	if inv.State != store.InvAwaitingApproval {
		return nil, FetchOutput{}, tools.Errorf(tools.CodeConflict, "x402 payment %s is %s; call x402_fetch without confirmRequestId for a new one", requestID, inv.State)
	}
	if err := f.approvals.Await(ctx, f.bill.Movement(c.Principal, billing.Movement{Kind: store.KindX402}), inv, fetchAsking); err != nil {
		return nil, FetchOutput{}, err
	}
	return inv, FetchOutput{}, nil
}

// walletKey unseals the account's embedded EVM wallet key, allowed only when the account
// turned signing on.
func (f *Fetches) walletKey(ctx context.Context, accountID string) ([]byte, string, error) {
	if f.pay.cfg.WalletKey == nil {
		return nil, "", tools.Errorf(tools.CodeUnavailable, "paying with the embedded wallet is not available on this deployment")
	}
	raw, addr, err := f.pay.cfg.WalletKey(ctx, accountID)
	if errors.Is(err, wallets.ErrSigningOff) {
		return nil, "", tools.Errorf(tools.CodeForbidden, "signing with the embedded wallet is off for this account (the account's signingEnabled setting); a human turns it on in the portal's settings. Nothing was signed or paid").Wrap(err)
	}
	return raw, common.HexToAddress(addr).Hex(), err
}

// sign is the TransferWithAuthorization auth (drawn by authorize and recorded), signed with
// the embedded wallet's key.
func (f *Fetches) sign(raw []byte, auth *signedAuth) (*Payment, error) {
	key, err := crypto.ToECDSA(raw)
	if err != nil {
		return nil, fmt.Errorf("embedded wallet key: %w", err)
	}
	a := auth.Authorization
	value, ok1 := new(big.Int).SetString(a.Value, 10)
	after, ok2 := new(big.Int).SetString(a.ValidAfter, 10)
	before, ok3 := new(big.Int).SetString(a.ValidBefore, 10)
	if !ok1 || !ok2 || !ok3 {
		return nil, fmt.Errorf("authorization %+v does not read", a)
	}
	var nonce [32]byte
	copy(nonce[:], common.FromHex(a.Nonce))
	td := contracts.TypedData(contracts.TransferWithAuthorization, auth.ChainID, common.HexToAddress(auth.Token), common.HexToAddress(a.From), common.HexToAddress(a.To),
		value, after.Int64(), before.Int64(), nonce)
	sig, err := contracts.Sign(td, key)
	if err != nil {
		return nil, err
	}
	return &Payment{Signature: hexutil.Encode(sig), PrimaryType: contracts.TransferWithAuthorization, Authorization: a}, nil
}

// conclude records how the payment ended (its webhook event with it) and returns cause, or
// the record's failure when it could not be written.
func (f *Fetches) conclude(ctx context.Context, t *billing.Ticket, inv *store.Invocation, a ask, o offer, price int64, payer string, m billing.Moved, cause error) error {
	m.Event = webhooks.X402Data{RequestID: inv.RequestID, KeyID: inv.KeyID, URL: a.u.String(), Host: inv.Handle, PaidUsd: tools.USD(price).String(),
		Network: f.pay.Network(), Payer: payer, PayTo: common.HexToAddress(o.PayTo).Hex(), TxHash: m.TxHash, Status: m.Status, Reason: m.Detail}
	if err := t.ConcludeMove(context.WithoutCancel(ctx), m); errors.Is(err, billing.ErrAlreadyFinished) && cause == nil {
		// The sweeper judged it first by the chain (its answer took longer than the bound):
		// the caller still gets the seller's answer.
		return nil
	} else if err != nil {
		return fmt.Errorf("record x402 payment %s: %w", inv.RequestID, err)
	}
	if cause != nil {
		var te *tools.Error
		if errors.As(cause, &te) {
			return te
		}
		return tools.Errorf(tools.CodeUpstream, "the payment to %s did not complete (%v); its record %s says so", a.u.Host, cause, inv.RequestID).Wrap(cause)
	}
	return nil // paid, or refused by the seller: its answer is relayed (paidUsd 0 when refused)
}

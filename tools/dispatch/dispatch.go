// Package dispatch is invoke_partner_message: find the @handle, build and check the args,
// reserve, sign and call the partner (REST or MCP_HTTP), check the answer, and bill honestly.
package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"

	invopop "github.com/invopop/jsonschema"
	"github.com/santhosh-tekuri/jsonschema/v5"
	"github.com/shopspring/decimal"
	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/partners"
	"github.com/switchboard-hq/switchboard/tools/partners/outbound"
	"github.com/switchboard-hq/switchboard/tools/payments"
	"github.com/switchboard-hq/switchboard/tools/tokens"
)

// ConfirmWindow is how long a write-category quote can be confirmed.
const ConfirmWindow = 10 * time.Minute

// Config configures dispatch.
type Config struct {
	// UserID is the pairwise pseudonym a partner sees for an account (partners.Service.UserID:
	// one home for the rule and its secret).
	UserID func(accountID, partnerID string) string
	// SettlementChain is the payoutAddresses key a partner fee lands on first (e.g. "evm:base");
	// its namespace ("evm") is the fallback.
	SettlementChain string
	// Payments runs flat-fee intents' on-chain payments; nil: they answer PAYMENT_REQUIRED
	// with no way to pay on this deployment.
	Payments *payments.Service
	// Signer signs the receipt of every answered call; nil: no receipts.
	Signer *signing.Signer
	// Observe, when set, is told how each dispatched call went (metrics); it must not block.
	Observe func(Observation)
	// Intents reads an intent by @handle (the app passes its cache); nil: the store.
	Intents func(ctx context.Context, handle string) (*store.PartnerIntent, error)
	// Failpoint, when set, is told each step an invoke reaches ("reserve": the reservation is
	// written, not committed; "answered": the partner answered, nothing is recorded yet); the
	// crash-consistency tests kill the process there.
	Failpoint func(step string)
}

// Service dispatches invocations.
type Service struct {
	cfg     Config
	store   *store.Store
	client  *outbound.Client
	billing *billing.Service
	tokens  *tokens.Service // nil: no token resolution before writes
	batch   *store.Batcher  // nil: outcomes commit before the caller is answered
	leases  *billing.Leases // nil: every call's reservation commits before its dispatch
	journal *store.Journal  // nil: a write's outcome waits for the database alone
	now     func() time.Time
	log     *slog.Logger

	mu      sync.Mutex
	schemas map[string]*jsonschema.Schema // by intent id, revision and which
}

// NewService builds the dispatcher. tokens may be nil.
func NewService(cfg Config, st *store.Store, client *outbound.Client, bill *billing.Service, tok *tokens.Service, now func() time.Time, log *slog.Logger) *Service {
	if cfg.Intents == nil {
		cfg.Intents = st.IntentByHandle
	}
	if cfg.Failpoint == nil {
		cfg.Failpoint = func(string) {}
	}
	return &Service{cfg: cfg, store: st, client: client, billing: bill, tokens: tok, now: now, log: log, schemas: map[string]*jsonschema.Schema{}}
}

// SettleInBatches lets finished invocations commit through b after their callers are
// answered (group commit); readers of an account wait for its pending ones (Batcher.Wait).
func (s *Service) SettleInBatches(b *store.Batcher) { s.batch = b }

// ReserveOnLeases lets new calls made with an API key that are not writes take their
// reservations from budget leases (billing.Leases): no transaction before the partner is called. It needs
// SettleInBatches with the leases' batch writer.
func (s *Service) ReserveOnLeases(l *billing.Leases) { s.leases = l }

// UseJournal keeps each write's outcome in j until the database has it (finishDurable), and
// replays what j holds before every sweep (ReplayJournal).
func (s *Service) UseJournal(j *store.Journal) { s.journal = j }

// InvokeInput is invoke_partner_message's input.
type InvokeInput struct {
	Message          string            `json:"message" jsonschema:"minLength=2,maxLength=4000" jsonschema_description:"the request in natural language, naming exactly one partner by its @handle, e.g. '@weather forecast for Lisbon'"`
	Args             partners.ArgsDoc  `json:"args,omitempty" jsonschema_description:"structured arguments matching the intent's parametersSchema (from discover); omit for intents that take only {query}"`
	ConfirmRequestID string            `json:"confirmRequestId,omitempty" jsonschema:"format=uuid" jsonschema_description:"for write intents: the requestId of a CONFIRMATION_REQUIRED answer, sent after the user approved it; for flat-fee intents: the requestId of the PAYMENT_REQUIRED quote being paid"`
	Payment          *payments.Payment `json:"payment,omitempty" jsonschema_description:"for flat-fee intents, with confirmRequestId: the signed EIP-3009 authorization of the quote (x402 exact-scheme payload: signature + authorization)"`
	PayWithWallet    bool              `json:"payWithWallet,omitempty" jsonschema_description:"for flat-fee intents, with confirmRequestId and instead of payment: sign the quote with your embedded EVM wallet (the account's signing must be on); sending it is your confirmation"`
	Payer            string            `json:"payer,omitempty" jsonschema:"pattern=^0x[0-9a-fA-F]{40}$" jsonschema_description:"for flat-fee intents, asking for the quote: the wallet that will sign, so the quote's typedData is complete and signable as it is"`
	Decline          bool              `json:"decline,omitempty" jsonschema_description:"for write intents, with confirmRequestId: the user declined that quote. It is closed: nothing is sent (a quote holds no reservation), and confirming it later answers CONFLICT"`
}

// Anything is free-form JSON (the partner's result), relayed byte for byte.
type Anything json.RawMessage

// MarshalJSON writes the JSON as received, null when there was none.
func (a Anything) MarshalJSON() ([]byte, error) {
	if len(a) == 0 {
		return []byte("null"), nil
	}
	return a, nil
}

// UnmarshalJSON keeps the bytes (a stored answer being replayed).
func (a *Anything) UnmarshalJSON(b []byte) error {
	*a = append((*a)[:0], b...)
	return nil
}

// JSONSchema: any JSON value.
func (Anything) JSONSchema() *invopop.Schema {
	return tools.AnyValue("the partner's JSON result, relayed as is (any JSON value)")
}

// InvokeOutput is the partner's reply, attributed to its handle, with what it cost.
type InvokeOutput struct {
	Handle            string                 `json:"handle" jsonschema_description:"the partner that answered"`
	RequestID         string                 `json:"requestId"`
	Success           bool                   `json:"success"`
	Result            Anything               `json:"result" jsonschema_description:"the partner's JSON result, relayed as is (any JSON value)"`
	Charge            billing.Charge         `json:"charge"`
	OutputSchemaValid *bool                  `json:"outputSchemaValid,omitempty" jsonschema_description:"whether the result matched the intent's outputSchema (absent when it has none); a mismatch is relayed but flagged"`
	PartnerError      *PartnerError          `json:"partnerError,omitempty" jsonschema_description:"when success is false: the partner's own answer (e.g. it needs more information); nothing was charged for the partner"`
	Payment           *payments.Receipt      `json:"payment,omitempty" jsonschema_description:"flat-fee intents: the on-chain payment, settled to the partner on success or refunded, with transaction hashes"`
	Receipt           *signing.SignedReceipt `json:"receipt,omitempty" jsonschema_description:"Switchboard's signed receipt of this call (the service key, same scheme as envelopes): verify it with switchboard verify-receipt or the partner kit"`
	Attempts          int                    `json:"attempts"`
}

// X402Payment is the call's on-chain payment, for the REST adapter's PAYMENT-RESPONSE header.
func (o InvokeOutput) X402Payment() *payments.Receipt { return o.Payment }

// PartnerError is a partner's failure answer, relayed to the caller as the partner's words.
type PartnerError struct {
	Code    string `json:"code" jsonschema_description:"the partner's short code, e.g. BAD_INPUT"`
	Message string `json:"message" jsonschema_description:"the partner's message: ask the user or refine the call"`
}

// ReceiptInput names a call of one of the caller's intents.
type ReceiptInput struct {
	RequestID string `json:"requestId" jsonschema:"format=uuid" jsonschema_description:"the call's requestId (the envelope's requestId)"`
}

// receiptTool lets a partner fetch the signed receipt of a call to one of its intents.
func (s *Service) receiptTool() *tools.Tool {
	return tools.New(tools.Def{
		Name:  "partner_receipt",
		Title: "Partner call receipt",
		Description: "The signed receipt of a call to one of your intents, by its requestId: handle, the caller's pseudonymous userId for you, " +
			"charges, timestamps and the SHA-256 of the result Switchboard relayed, signed with the service key (verify with switchboard verify-receipt or the partner kit).",
		Access:             tools.RequireScope(tools.ScopePublish),
		Annotations:        tools.Annotations{ReadOnly: tools.Bool(true), Destructive: tools.Bool(false), Idempotent: true, OpenWorld: tools.Bool(false)},
		ReadsOtherAccounts: true,
	}, func(ctx context.Context, c *tools.Caller, in ReceiptInput) (signing.SignedReceipt, error) {
		notFound := tools.Errorf(tools.CodeNotFound, "no receipt for request %s among your intents' calls (receipts exist for answered calls)", in.RequestID)
		inv, err := s.store.InvocationByID(ctx, in.RequestID)
		if errors.Is(err, store.ErrNotFound) {
			return signing.SignedReceipt{}, notFound
		}
		if err != nil {
			return signing.SignedReceipt{}, err
		}
		intent, err := s.store.IntentByID(ctx, inv.IntentID)
		if err != nil || intent.OwnerID != c.AccountID() || inv.Answer == nil {
			return signing.SignedReceipt{}, notFound
		}
		var out InvokeOutput
		if json.Unmarshal([]byte(*inv.Answer), &out) != nil || out.Receipt == nil {
			return signing.SignedReceipt{}, notFound
		}
		return *out.Receipt, nil
	})
}

// Tools returns invoke_partner_message and partner_receipt.
func (s *Service) Tools() []*tools.Tool {
	return []*tools.Tool{s.receiptTool(), tools.New(tools.Def{
		Name:  "invoke_partner_message",
		Title: "Invoke a partner by @handle",
		Description: "Call a marketplace partner named by its @handle in the message (find handles with discover). " +
			"Intents whose parametersSchema is just {query} get the message text; others need `args` matching their parametersSchema. " +
			"Write intents (SWAP, SEND, BRIDGE, ...) answer CONFIRMATION_REQUIRED first with the exact args and the most it can cost: " +
			"ask the user, then call again with confirmRequestId. You are charged only when the partner succeeds; failures refund the reservation. " +
			"When the partner answers success false (e.g. it needs more information), the result says so in partnerError: ask the user or refine the call.",
		Access:      tools.RequireScope(tools.ScopePartner),
		Annotations: tools.Annotations{ReadOnly: tools.Bool(false), Destructive: tools.Bool(true), OpenWorld: tools.Bool(true)},
	}, s.invoke)}
}

var handleRe = regexp.MustCompile(`(?i)(^|[^a-z0-9_@.-])(@[a-z0-9_-]{3,32})\b`)

// FindHandle returns the one @handle in a message and the message without it.
func FindHandle(message string) (handle, rest string, err error) {
	found := map[string]bool{}
	var first string
	for _, m := range handleRe.FindAllStringSubmatch(message, -1) {
		h := strings.ToLower(m[2])
		if !found[h] {
			found[h] = true
			if first == "" {
				first = h
			}
		}
	}
	switch len(found) {
	case 0:
		return "", "", tools.Errorf(tools.CodeBadInput, "the message names no partner: include one @handle (find one with discover)")
	case 1:
	default:
		return "", "", tools.Errorf(tools.CodeBadInput, "the message names %d partners; name exactly one @handle per call", len(found))
	}
	rest = handleRe.ReplaceAllStringFunc(message, func(m string) string {
		i := strings.LastIndex(m, "@")
		return m[:i]
	})
	return first, strings.Join(strings.Fields(rest), " "), nil
}

// call is everything decided before dispatch.
type call struct {
	intent *store.PartnerIntent
	args   []byte // canonical JSON object
	quote  billing.Quote
	routed tokens.Routed // what a write moves (zero for other calls)
	// settleBy is the deadline of the call's reservation, after which the sweeper may refund
	// it: finishing well before it may commit after the caller has its answer. Zero: the
	// outcome is committed before anyone is answered (the sweeper's own conclusions).
	settleBy time.Time
	// onLease is the call's reservation drawn from its key's budget lease (startOnLease); nil
	// when the reservation was written before the dispatch.
	onLease *leased
	// durable: a write or a flat-fee call, answered only once its outcome has committed.
	durable bool
}

func (s *Service) invoke(ctx context.Context, c *tools.Caller, in InvokeInput) (InvokeOutput, error) {
	handle, rest, err := FindHandle(in.Message)
	if err != nil {
		return InvokeOutput{}, err
	}
	intent, err := s.callable(ctx, c, handle)
	if err != nil {
		return InvokeOutput{}, err
	}
	if err := checkScope(c.Principal, intent.Category); err != nil {
		return InvokeOutput{}, err
	}
	if in.Decline {
		return InvokeOutput{}, s.decline(ctx, c, intent, in.ConfirmRequestID)
	}
	if in.ConfirmRequestID != "" {
		return s.confirm(ctx, c, intent, in)
	}
	if partners.IsFlatFee(intent.FeeRateUnit) && s.cfg.Payments != nil {
		return InvokeOutput{}, s.quoteFlat(ctx, c, intent, rest, in.Payer)
	}
	cl, err := s.prepare(ctx, c.Principal, intent, rest, in.Args)
	if err != nil {
		return InvokeOutput{}, err
	}
	requestID := signing.NewRequestID()
	inv := s.newInvocation(c, cl, requestID)
	if partners.IsWriteCategory(intent.Category) {
		// A quote the caller could not pay is refused now; a dispatched call is checked by
		// the reservation itself, under the balance lock.
		if err := s.billing.Check(ctx, c.Principal, cl.quote); err != nil {
			return InvokeOutput{}, err
		}
		inv.State = store.InvAwaitingConfirmation
		if err := s.store.CreateInvocation(ctx, inv, "quoted; waiting for the caller's confirmation"); err != nil {
			return InvokeOutput{}, err
		}
		return InvokeOutput{}, confirmation(handle, intent.Category, requestID, cl, inv.CreatedAt.Add(ConfirmWindow))
	}
	return s.dispatch(ctx, c, cl, inv, "")
}

// callable finds an intent the caller may invoke: active ones for everybody, inactive ones
// only for their publisher; archived and unknown are NOT_FOUND.
func (s *Service) callable(ctx context.Context, c *tools.Caller, handle string) (*store.PartnerIntent, error) {
	intent, err := s.cfg.Intents(ctx, handle)
	if errors.Is(err, store.ErrNotFound) {
		return nil, tools.Errorf(tools.CodeNotFound, "no partner %s; use discover to find one by what it does", handle)
	}
	if err != nil {
		return nil, err
	}
	if err := partners.CanInvoke(intent, c.AccountID()); err != nil {
		return nil, err
	}
	if intent.IsCoreIntent {
		return nil, tools.Errorf(tools.CodeBadInput, "%s is a built-in capability, not a partner: call the tool %s directly", handle, strings.TrimPrefix(handle, "@"))
	}
	return intent, nil
}

func checkScope(p *tools.Principal, category string) error {
	if need := partners.RuleOf(category).Scope; need != "" && !p.HasScope(need) {
		return tools.Errorf(tools.CodeForbidden, "%s intents need scope %q as well as \"partner\"; use a key that has it", category, need)
	}
	return nil
}

// prepare builds and checks the args, resolves a write's tokens, and prices the call.
func (s *Service) prepare(ctx context.Context, p *tools.Principal, intent *store.PartnerIntent, rest string, given partners.ArgsDoc) (*call, error) {
	if partners.IsFlatFee(intent.FeeRateUnit) {
		return nil, tools.Errorf(tools.CodePaymentRequired, "%s is paid by a flat on-chain fee (%s) before dispatch, and that payment path is not available yet; it is never called unpaid", intent.PublicIdentifier, intent.FeeRateUnit)
	}
	schemaRaw := []byte(intent.ParametersSchema)
	var args []byte
	switch {
	case len(given) > 0:
		args = given
	case partners.QueryOnly(schemaRaw):
		args, _ = json.Marshal(map[string]string{"query": rest})
	default:
		return nil, tools.Errorf(tools.CodeBadInput, "%s takes structured args: call again with `args` matching its parametersSchema (in details)", intent.PublicIdentifier).
			WithDetails(map[string]any{"parametersSchema": json.RawMessage(schemaRaw)})
	}
	canon, err := signing.Canonicalize(args)
	if err != nil {
		return nil, tools.Errorf(tools.CodeBadInput, "args cannot be signed: %v", err)
	}
	v, err := tools.DecodeJSON(canon)
	if err != nil {
		return nil, tools.Errorf(tools.CodeBadInput, "args: %v", err)
	}
	schema, err := s.schema(intent, "parameters", schemaRaw)
	if err != nil {
		return nil, err
	}
	if e := tools.Validate(schema, v, "args"); e != nil {
		e.Message += fmt.Sprintf(" of %s's parametersSchema (in details)", intent.PublicIdentifier)
		e.Details["parametersSchema"] = json.RawMessage(schemaRaw)
		return nil, e
	}
	cl := &call{intent: intent, args: canon}
	terms := billing.Terms{FeeUnit: intent.FeeRateUnit, FeeRate: feeRate(intent)}
	if rule := partners.RuleOf(intent.Category); s.tokens != nil && rule.MovesTokens {
		m, _ := v.(map[string]any)
		resolved, err := s.tokens.ResolveArgs(ctx, intent.Category, schemaRaw, m)
		if err != nil {
			return nil, err
		}
		if cl.routed, err = s.tokens.RoutedValue(ctx, schemaRaw, m, resolved); err != nil {
			return nil, err
		}
		terms.Routed = cl.routed.Micro
		if gasChain := writeChain(cl.routed, resolved); gasChain != "" && rule.GasUnits > 0 {
			micro, err := s.tokens.GasEstimate(ctx, gasChain, rule.GasUnits)
			if err != nil {
				return nil, err
			}
			terms.Gas = &billing.Gas{Chain: gasChain, EstimateMicro: micro}
		}
	}
	cl.quote, err = s.billing.QuoteFor(ctx, p.AccountID, terms)
	if errors.Is(err, billing.ErrNeedsRoutedValue) {
		if cl.routed.Reason != "" {
			return nil, tools.Errorf(tools.CodeUnavailable, "%s charges %s basis points of the value the call routes, and that value cannot be quoted now (%s); nothing was sent or charged. Try again later",
				intent.PublicIdentifier, intent.FeeRate, cl.routed.Reason)
		}
		return nil, tools.Errorf(tools.CodeBadInput, "%s charges %s basis points of the value the call routes: give the amount and token its parametersSchema marks (in details)",
			intent.PublicIdentifier, intent.FeeRate).WithDetails(map[string]any{"parametersSchema": json.RawMessage(schemaRaw)})
	}
	if err != nil {
		return nil, err
	}
	return cl, nil
}

// writeChain is where a write's on-chain step happens: the chain of the token it routes, else
// of the first token it names.
func writeChain(r tokens.Routed, resolved []tokens.ResolvedArg) string {
	if r.Token != nil {
		return r.Token.Chain
	}
	if len(resolved) > 0 {
		return resolved[0].Token.Chain
	}
	return ""
}

// feeRate is the intent's feeRate (validated at publish).
func feeRate(intent *store.PartnerIntent) decimal.Decimal {
	d, err := decimal.NewFromString(intent.FeeRate)
	if err != nil || d.IsNegative() {
		return decimal.Zero
	}
	return d
}

// confirmation is a write's CONFIRMATION_REQUIRED answer: the exact args and the one bundled
// charge, itemised, with the worst case that will be reserved.
func confirmation(handle, category, requestID string, cl *call, expires time.Time) *tools.Error {
	q := cl.quote
	expected := q.ReserveMicro + q.MaxPartnerFeeMicro + q.PlatformFeeMicro + q.GasEstimateMicro
	value := "no routed value"
	var routed any
	if q.RoutedValueMicro != nil {
		value = fmt.Sprintf("routing %s USD", tools.USD(*q.RoutedValueMicro))
		routed = tools.USD(*q.RoutedValueMicro)
	} else if cl.routed.Reason != "" {
		value = "the value routed cannot be quoted now (" + cl.routed.Reason + ")"
	}
	details := map[string]any{
		"requestId": requestID, "handle": handle, "category": category,
		"args": json.RawMessage(cl.args), "routedValueUsd": routed,
		"partnerFeeUsd": tools.USD(q.MaxPartnerFeeMicro), "platformFeeUsd": tools.USD(q.PlatformFeeMicro),
		"platformFeeBps": q.PlatformBps, "tier": q.Tier, "infrastructureUsd": tools.USD(q.ReserveMicro),
		"gasEstimateUsd": tools.USD(q.GasEstimateMicro), "gasChain": q.GasChain,
		"totalUsd": tools.USD(expected), "maxChargeUsd": tools.USD(q.WorstMicro()),
		"expiresAt": expires,
	}
	return tools.Errorf(tools.CodeConfirmationRequired,
		"%s is a %s intent (%s): nothing was sent. It costs %s USD in one charge (partner up to %s, platform %s, gas about %s, infrastructure %s); up to %s USD is reserved. "+
			"Show the user the handle, args and charge; if they approve, call invoke_partner_message again with the same message and confirmRequestId %q within %d minutes",
		handle, category, value, tools.USD(expected), tools.USD(q.MaxPartnerFeeMicro), tools.USD(q.PlatformFeeMicro), tools.USD(q.GasEstimateMicro),
		tools.USD(q.ReserveMicro), tools.USD(q.WorstMicro()), requestID, int(ConfirmWindow.Minutes())).WithDetails(details)
}

func (s *Service) schema(intent *store.PartnerIntent, which string, raw []byte) (*jsonschema.Schema, error) {
	key := fmt.Sprintf("%s/%d/%s", intent.ID, intent.Revision, which)
	s.mu.Lock()
	defer s.mu.Unlock()
	if sc, ok := s.schemas[key]; ok {
		return sc, nil
	}
	sc, err := tools.CompileSchema(raw)
	if err != nil {
		return nil, fmt.Errorf("compile %s %sSchema: %w", intent.PublicIdentifier, which, err)
	}
	if len(s.schemas) > 4096 {
		clear(s.schemas) // bounded: recompiling is cheap next to a partner call
	}
	s.schemas[key] = sc
	return sc, nil
}

func (s *Service) newInvocation(c *tools.Caller, cl *call, requestID string) *store.Invocation {
	return &store.Invocation{
		RequestID: requestID, AccountID: c.Principal.AccountID, KeyID: c.Principal.KeyID,
		IntentID: cl.intent.ID, Handle: cl.intent.PublicIdentifier, Category: cl.intent.Category,
		IntentRevision: cl.intent.Revision, Args: string(cl.args),
		ReserveMicro: cl.quote.ReserveMicro, MaxPartnerFeeMicro: cl.quote.MaxPartnerFeeMicro, MaxPlatformFeeMicro: cl.quote.PlatformFeeMicro,
		RoutedValueMicro: cl.quote.RoutedValueMicro, GasChain: cl.quote.GasChain,
		GasEstimateMicro: cl.quote.GasEstimateMicro, MaxGasMicro: cl.quote.MaxGasMicro,
		CreatedAt: s.now().UTC(),
	}
}

// quoteOf is the quote an invocation was priced with.
func quoteOf(inv *store.Invocation) billing.Quote {
	return billing.Quote{ReserveMicro: inv.ReserveMicro, MaxPartnerFeeMicro: inv.MaxPartnerFeeMicro, PlatformFeeMicro: inv.MaxPlatformFeeMicro,
		RoutedValueMicro: inv.RoutedValueMicro, GasChain: inv.GasChain, GasEstimateMicro: inv.GasEstimateMicro, MaxGasMicro: inv.MaxGasMicro}
}

// confirm dispatches a quoted write once; later confirmations get the stored outcome.
func (s *Service) confirm(ctx context.Context, c *tools.Caller, intent *store.PartnerIntent, in InvokeInput) (InvokeOutput, error) {
	if s.batch != nil { // an outcome answered a moment ago may still be on its way to the database
		if err := s.batch.Wait(ctx, c.Principal.AccountID); err != nil {
			return InvokeOutput{}, err
		}
	}
	inv, err := s.store.Invocation(ctx, c.Principal.AccountID, in.ConfirmRequestID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && inv.IntentID != intent.ID) {
		return InvokeOutput{}, tools.Errorf(tools.CodeNotFound, "no quote %s for %s in this account; call without confirmRequestId for a new quote", in.ConfirmRequestID, intent.PublicIdentifier)
	}
	if err != nil {
		return InvokeOutput{}, err
	}
	if inv.State == store.InvDispatching && s.journal != nil && s.journal.Has(inv.RequestID) {
		// Its outcome waits in this replica's journal (the database was away): record it now.
		if ok, err := s.replayOne(ctx, inv.RequestID); err != nil {
			return InvokeOutput{}, err
		} else if ok {
			if inv, err = s.store.Invocation(ctx, c.Principal.AccountID, in.ConfirmRequestID); err != nil {
				return InvokeOutput{}, err
			}
		}
	}
	switch inv.State {
	case store.InvSucceeded, store.InvFailed, store.InvCancelled, store.InvOutcomeUnknown, store.InvDeclined:
		return s.withPayment(replay(inv))
	case store.InvAwaitingPayment:
		return s.payAndDispatch(ctx, c, intent, inv, in)
	case store.InvDispatching:
		return InvokeOutput{}, tools.Errorf(tools.CodeConflict, "request %s is being dispatched now; call again in a moment for its outcome (a dispatch that never finishes is concluded by the sweeper within a minute of its deadline)", inv.RequestID).
			WithDetails(map[string]any{"requestId": inv.RequestID})
	}
	if s.now().UTC().Sub(inv.CreatedAt) > ConfirmWindow {
		return InvokeOutput{}, tools.Errorf(tools.CodeConflict, "the quote %s expired (%d minutes); call without confirmRequestId for a new one", inv.RequestID, int(ConfirmWindow.Minutes()))
	}
	if intent.Revision != inv.IntentRevision {
		return InvokeOutput{}, tools.Errorf(tools.CodeConflict, "%s changed since the quote; call without confirmRequestId for a new quote and confirm that one", intent.PublicIdentifier)
	}
	if len(in.Args) > 0 {
		canon, err := signing.Canonicalize(in.Args)
		if err != nil || !bytes.Equal(canon, []byte(inv.Args)) {
			return InvokeOutput{}, tools.Errorf(tools.CodeConflict, "the args differ from the quoted ones; confirm with the same args (or none), or ask for a new quote")
		}
	}
	cl := &call{intent: intent, args: []byte(inv.Args), quote: quoteOf(inv)}
	return s.dispatch(ctx, c, cl, inv, store.InvAwaitingConfirmation)
}

// replay returns the stored outcome of a finished invocation: the error it answered, or the
// result (a success, or a partner's relayed failure).
func replay(inv *store.Invocation) (InvokeOutput, error) {
	if inv.Answer == nil {
		return InvokeOutput{}, tools.Errorf(tools.CodeInternal, "request %s finished without a stored answer", inv.RequestID)
	}
	var body tools.Body
	if json.Unmarshal([]byte(*inv.Answer), &body) == nil && body.Error != nil {
		return InvokeOutput{}, body.Error
	}
	var out InvokeOutput
	if err := json.Unmarshal([]byte(*inv.Answer), &out); err != nil {
		return InvokeOutput{}, fmt.Errorf("stored answer of %s: %w", inv.RequestID, err)
	}
	return out, nil
}

// dispatch reserves (moving inv from state `from`, or inserting it when from is ""), calls
// the partner (retrying idempotent categories once), and settles or refunds. The database sees
// two transactions: start (invocation + reservation) and finish (attempts, money, outcome).
func (s *Service) dispatch(ctx context.Context, c *tools.Caller, cl *call, inv *store.Invocation, from string) (InvokeOutput, error) {
	began := time.Now() // wall time for Observe: s.now may be a test's clock
	intent := cl.intent
	timeout := time.Duration(intent.TimeoutMs) * time.Millisecond
	tries := 1
	if !partners.IsWriteCategory(intent.Category) {
		tries = 2
	}
	// Records and money must land even when the caller has gone.
	bg := context.WithoutCancel(ctx)
	res := s.billing.Reservation(inv.RequestID, c.Principal, cl.quote, time.Duration(tries)*timeout)
	cl.settleBy = res.ExpiresAt
	cl.durable = partners.IsWriteCategory(intent.Category) || partners.IsFlatFee(intent.FeeRateUnit)
	var moved bool
	var err error
	if s.leases != nil && from == "" && !partners.IsWriteCategory(intent.Category) && c.Principal.KeyID != "" {
		cl.onLease, err = s.startOnLease(bg, c.Principal, inv, res)
		moved = err == nil
	} else {
		moved, err = s.start(bg, inv, from, res, c.Principal.SpendLimitMicro)
	}
	if err != nil {
		return InvokeOutput{}, err
	}
	if !moved {
		return InvokeOutput{}, tools.Errorf(tools.CodeConflict, "request %s was confirmed by another call; call again for its outcome", inv.RequestID)
	}
	fields := signing.CallFields{
		RequestID: inv.RequestID, IntentDefinitionID: intent.ID,
		UserID: s.cfg.UserID(c.Principal.AccountID, intent.PartnerID),
		Args:   json.RawMessage(cl.args),
	}
	target := partners.Target(intent)
	var answer *outbound.Result
	var attempts []store.Attempt
	called := time.Now()
	for range tries {
		answer, err = s.client.Call(ctx, target, fields)
		attempts = append(attempts, store.Attempt{Detail: attemptDetail(answer, err), At: s.now().UTC()})
		if ctx.Err() != nil || !retryable(answer, err) {
			break
		}
	}
	partnerTime := time.Since(called)
	s.cfg.Failpoint("answered")
	defer s.observe(intent.PublicIdentifier, outcomeOf(ctx, answer, err), partnerTime, began)
	if ctx.Err() != nil {
		refunded := cl.quote.Refunded()
		e := tools.Errorf(tools.CodeUnavailable, "the call was cancelled by the caller; nothing was charged")
		return InvokeOutput{}, s.fail(bg, inv, cl, store.InvCancelled, answer, attempts, refunded, e, "caller cancelled: "+ctx.Err().Error())
	}
	out, err := s.conclude(bg, inv, cl, answer, err, attempts)
	switch {
	case errors.Is(err, ErrAlreadyFinished):
		// The sweeper of another replica finished it first (this one lost its database for a
		// while): its record is the truth.
		if done, ferr := s.store.Invocation(bg, inv.AccountID, inv.RequestID); ferr == nil {
			return replay(done)
		}
	case store.IsUnavailable(err):
		// True whatever happens next: nothing is charged before the record lands, and the
		// record, when it lands, is what a confirmation with the requestId answers.
		kept := "it is recorded (and charged, if it succeeded) when the database is back, or, if this replica stops first, concluded by the sweeper, which asks the partner again with the same requestId"
		switch {
		case cl.onLease != nil:
			kept = "it is recorded (and charged, if it succeeded) when the database is back, or never, if this replica stops first"
		case cl.durable && s.journal != nil:
			kept = "it is kept in this replica's journal and recorded (and charged, if it succeeded) as soon as the database is back"
		}
		return InvokeOutput{}, tools.Errorf(tools.CodeUnavailable,
			"%s answered, but the database is unavailable, so the outcome of request %s is not recorded yet: %s. "+
				"Nothing is charged before then, and never twice. Call again later with confirmRequestId %q to read the outcome",
			intent.PublicIdentifier, inv.RequestID, kept, inv.RequestID).
			WithDetails(map[string]any{"requestId": inv.RequestID, "handle": intent.PublicIdentifier, "outcome": "not recorded yet"}).Wrap(err)
	}
	return out, err
}

// conclude records the outcome of a dispatch from the partner's answer: a success is settled
// and relayed, anything else refunded and mapped to the error model. Only one process
// concludes an invocation (store.ErrAlreadyFinished for the others).
func (s *Service) conclude(ctx context.Context, inv *store.Invocation, cl *call, answer *outbound.Result, callErr error, attempts []store.Attempt) (InvokeOutput, error) {
	intent := cl.intent
	refunded := cl.quote.Refunded()
	if relayable(answer, callErr) {
		// The partner answered, and its answer is "no" (it needs more information, the input is
		// wrong): that is a result for the caller, not an outage. No partner fee; refunded.
		out := InvokeOutput{Handle: intent.PublicIdentifier, RequestID: inv.RequestID, Success: false, Result: Anything("null"),
			PartnerError: &PartnerError{Code: answer.Envelope.Error.Code, Message: answer.Envelope.Error.Message},
			Charge:       refunded, Attempts: len(attempts)}
		out.Receipt = s.receipt(inv, intent.PartnerID, out, nil)
		raw, _ := json.Marshal(out)
		stored := string(raw)
		inv.Answer = &stored
		s.outcome(inv, store.InvFailed, answer, refunded)
		detail := fmt.Sprintf("the partner answered success false (%s): relayed, refunded", answer.Envelope.Error.Code)
		if err := s.finish(ctx, inv, cl, attempts, nil, detail, detail); err != nil {
			return InvokeOutput{}, err
		}
		return out, nil
	}
	if e := classify(intent, answer, callErr); e != nil {
		e.Details = mergeDetails(e.Details, map[string]any{"handle": intent.PublicIdentifier, "requestId": inv.RequestID,
			"success": false, "charge": refunded, "attempts": len(attempts)})
		return InvokeOutput{}, s.fail(ctx, inv, cl, store.InvFailed, answer, attempts, refunded, e, e.Message)
	}
	settlement, charge := s.billing.Settle(cl.quote, answer.Envelope.ProviderCostMicro, answer.Envelope.GasCostMicro, s.payoutBook(intent))
	out := InvokeOutput{Handle: intent.PublicIdentifier, RequestID: inv.RequestID, Success: true,
		Result: Anything(answer.Envelope.Result), Charge: charge, Attempts: len(attempts)}
	if intent.OutputSchema != nil && *intent.OutputSchema != "" {
		valid := s.matchesOutput(intent, answer.Envelope.Result)
		out.OutputSchemaValid = &valid
	}
	record := func(st *billing.Settlement, detail string) error {
		out.Receipt = s.receipt(inv, intent.PartnerID, out, answer.Envelope.Result)
		raw, _ := json.Marshal(out)
		stored := string(raw)
		inv.Answer, inv.OutputSchemaValid = &stored, out.OutputSchemaValid
		s.outcome(inv, store.InvSucceeded, answer, out.Charge)
		return s.finish(ctx, inv, cl, attempts, st, "", detail)
	}
	err := record(&settlement, fmt.Sprintf("charged %d micro-USD: infrastructure %d, partner fee %d, platform fee %d, gas %d",
		charge.TotalMicro, charge.ReservedMicro, charge.PartnerFeeMicro, charge.PlatformFeeMicro, charge.GasMicro))
	if errors.Is(err, ErrReservationClosed) {
		// Its reservation was refunded by an older sweeper: relay the answer, charge nothing.
		out.Charge = cl.quote.Refunded()
		err = record(nil, "partner succeeded after its reservation was refunded: nothing charged")
	}
	if err != nil {
		return InvokeOutput{}, err
	}
	return out, nil
}

// fail records a failed or cancelled invocation, refunding its reservation, and returns e
// (or the recording error, which the caller must then see: the money did not move).
func (s *Service) fail(ctx context.Context, inv *store.Invocation, cl *call, state string, answer *outbound.Result, attempts []store.Attempt, ch billing.Charge, e *tools.Error, detail string) error {
	s.outcome(inv, state, answer, ch)
	if inv.OutcomeCode == "" {
		inv.OutcomeCode, inv.OutcomeMessage = string(e.Code), e.Message
	}
	raw, _ := json.Marshal(tools.Body{Error: e})
	stored := string(raw)
	inv.Answer = &stored
	if err := s.finish(ctx, inv, cl, attempts, nil, detail, detail); err != nil {
		return err
	}
	return e
}

// outcome fills the outcome fields of inv.
func (s *Service) outcome(inv *store.Invocation, state string, answer *outbound.Result, ch billing.Charge) {
	now := s.now().UTC()
	inv.State, inv.FinishedAt = state, &now
	inv.PartnerFeeMicro, inv.PlatformFeeMicro, inv.GasMicro, inv.RefundedMicro = ch.PartnerFeeMicro, ch.PlatformFeeMicro, ch.GasMicro, ch.RefundedMicro
	if answer != nil {
		status, ms := answer.Status, int(answer.Latency.Milliseconds())
		inv.HTTPStatus, inv.LatencyMs = &status, &ms
		if answer.Envelope != nil && answer.Envelope.Error != nil {
			inv.OutcomeCode, inv.OutcomeMessage = answer.Envelope.Error.Code, answer.Envelope.Error.Message
		}
	}
}

func (s *Service) matchesOutput(intent *store.PartnerIntent, result []byte) bool {
	sc, err := s.schema(intent, "output", []byte(*intent.OutputSchema))
	if err != nil {
		return false
	}
	if len(result) == 0 {
		result = []byte("null")
	}
	v, err := tools.DecodeJSON(result)
	return err == nil && sc.Validate(v) == nil
}

// payoutBook picks the ledger book of the partner's payout address: the settlement chain's
// namespace:chain entry first, then the bare namespace.
func (s *Service) payoutBook(intent *store.PartnerIntent) string {
	key := s.cfg.SettlementChain
	ns, _, _ := strings.Cut(key, ":")
	for _, k := range []string{key, ns} {
		if addr, ok := intent.PayoutAddresses[k]; ok && addr != "" {
			return store.PartnerPayable(intent.PartnerID, k+":"+addr)
		}
	}
	return store.PartnerPayable(intent.PartnerID, "unassigned")
}

// retryable: the spec's one more try after a 5xx or a network error (a timeout included);
// never after the SSRF guard refused the address, which a retry would not change.
func retryable(res *outbound.Result, err error) bool {
	if err != nil {
		return !outbound.IsBlocked(err)
	}
	return res.Status >= 500
}

func attemptDetail(res *outbound.Result, err error) string {
	if err != nil {
		return "no answer: " + err.Error()
	}
	d := fmt.Sprintf("HTTP %d in %d ms", res.Status, res.Latency.Milliseconds())
	if res.ParseError != "" {
		d += "; " + res.ParseError
	}
	return d
}

// relayable reports a partner's considered failure answer (the spec's "partner needs more
// information"): relayed as a result, not an error.
func relayable(res *outbound.Result, err error) bool {
	return outbound.Classify(res, err) == outbound.OutcomePartnerAnswer
}

// classify maps a partner's answer to the error model, nil meaning success (or a relayed
// partner answer).
func classify(intent *store.PartnerIntent, res *outbound.Result, err error) *tools.Error {
	h := intent.PublicIdentifier
	switch outbound.Classify(res, err) {
	case outbound.OutcomeTimeout:
		return tools.Errorf(tools.CodeUnavailable, "%s did not answer within %d ms; nothing was charged. Try again later", h, intent.TimeoutMs)
	case outbound.OutcomeBlocked:
		return tools.Errorf(tools.CodeUpstream, "%s's endpoint cannot be called safely (%v); nothing was charged", h, err)
	case outbound.OutcomeNoAnswer:
		return tools.Errorf(tools.CodeUnavailable, "%s could not be reached (%v); nothing was charged. Try again later", h, err)
	case outbound.OutcomeRefused:
		return tools.Errorf(tools.CodeUpstream, "%s refused Switchboard's signature (HTTP %d); nothing was charged. The partner must fix its verification", h, res.Status).
			WithDetails(partnerDetails(res))
	case outbound.OutcomeBadResponse:
		code := tools.CodeUpstream
		if res.Status >= 500 {
			code = tools.CodeUnavailable
		}
		if res.Envelope == nil {
			return tools.Errorf(code, "%s answered HTTP %d with no valid response envelope (%s); nothing was charged", h, res.Status, res.ParseError).
				WithDetails(partnerDetails(res))
		}
		return tools.Errorf(code, "%s answered HTTP %d with success true, which is not a success; nothing was charged", h, res.Status).
			WithDetails(partnerDetails(res))
	case outbound.OutcomeServerError:
		pe := res.Envelope.Error
		return tools.Errorf(tools.CodeUnavailable, "%s: %s (%s); nothing was charged", h, pe.Message, pe.Code).WithDetails(partnerDetails(res))
	}
	return nil
}

func partnerDetails(res *outbound.Result) map[string]any {
	d := map[string]any{"httpStatus": res.Status}
	if res.Envelope != nil && res.Envelope.Error != nil {
		d["partnerError"] = res.Envelope.Error
	}
	return d
}

func mergeDetails(a, b map[string]any) map[string]any {
	if a == nil {
		a = map[string]any{}
	}
	for k, v := range b {
		a[k] = v
	}
	return a
}

// receipt signs what the caller is answered: the charges and the hash of the relayed result.
func (s *Service) receipt(inv *store.Invocation, partnerID string, out InvokeOutput, result json.RawMessage) *signing.SignedReceipt {
	if s.cfg.Signer == nil {
		return nil
	}
	now := s.now().UTC()
	c := out.Charge
	sr, err := s.cfg.Signer.SignReceipt(signing.Receipt{
		RequestID: inv.RequestID, Handle: inv.Handle, IntentID: inv.IntentID,
		UserID: s.cfg.UserID(inv.AccountID, partnerID), Success: out.Success,
		Charges: signing.ReceiptCharges{ReservedMicro: c.ReservedMicro, PartnerFeeMicro: c.PartnerFeeMicro, PlatformFeeMicro: c.PlatformFeeMicro,
			GasMicro: c.GasMicro, RefundedMicro: c.RefundedMicro, TotalMicro: c.TotalMicro},
		CreatedAt: inv.CreatedAt.UTC().Format(time.RFC3339), FinishedAt: now.Format(time.RFC3339), ResultSHA256: signing.ResultHash(result),
	})
	if err != nil {
		s.log.Error("sign receipt", "request_id", inv.RequestID, "err", err)
		return nil
	}
	return &sr
}

package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/partners"
	"github.com/switchboard-hq/switchboard/tools/payments"
)

// prepare builds and checks a call's args (argsOf) and prices it from credit (price): a call
// that is neither a write nor paid by a flat fee (quoting prepares those).
func (s *Service) prepare(ctx context.Context, cl *call, given partners.ArgsDoc) error {
	if _, err := cl.argsOf(given); err != nil {
		return err
	}
	return s.price(ctx, cl, cl.money.Terms)
}

// prepareQuoted prepares a write or a flat-fee call: a flat fee's args are its message (it is
// priced by its payment's quote, when ask records it); a write's are checked as any call's,
// its tokens resolved and the value it routes priced (route), then priced from credit.
func (s *Service) prepareQuoted(ctx context.Context, cl *call, given partners.ArgsDoc) error {
	if cl.flat { // paid on chain, not from credit: the message is its query
		canon, err := queryArgs(cl.said)
		if err != nil {
			return tools.Errorf(tools.CodeBadInput, "the message cannot be signed: %v", err)
		}
		cl.args = canon
		return nil
	}
	v, err := cl.argsOf(given)
	if err != nil {
		return err
	}
	terms := cl.money.Terms
	if err := s.route(ctx, cl, v, &terms); err != nil {
		return err
	}
	return s.price(ctx, cl, terms)
}

// argsOf builds the call's args (given, or the message as {query} for an intent that takes only
// that), checks them against the intent's parametersSchema and keeps them in canonical JSON;
// it returns them decoded.
func (cl *call) argsOf(given partners.ArgsDoc) (any, error) {
	intent, rest := cl.intent, cl.said
	schemaRaw := func() []byte { return []byte(intent.ParametersSchema) } // in errors' details, and to compile once
	var args []byte
	var v any // args decoded, for the schema
	switch {
	case len(given) > 0:
		args = given
	case cl.schemas.queryOnly:
		args, _ = json.Marshal(map[string]string{"query": rest})
		if utf8.ValidString(rest) { // as json.Marshal wrote it (it replaces invalid bytes)
			v = map[string]any{"query": rest}
		}
	default:
		return nil, tools.Errorf(tools.CodeBadInput, "%s takes structured args: call again with `args` matching its parametersSchema (in details)", intent.PublicIdentifier).
			WithDetails(map[string]any{"parametersSchema": json.RawMessage(schemaRaw())})
	}
	canon, err := signing.Canonicalize(args)
	if err != nil {
		return nil, tools.Errorf(tools.CodeBadInput, "args cannot be signed: %v", err)
	}
	if v == nil {
		if v, err = tools.DecodeJSON(canon); err != nil {
			return nil, tools.Errorf(tools.CodeBadInput, "args: %v", err)
		}
	}
	if cl.schemas.paramsErr != nil {
		return nil, cl.schemas.paramsErr
	}
	if e := tools.Validate(cl.schemas.params, v, "args"); e != nil {
		e.Message += fmt.Sprintf(" of %s's parametersSchema (in details)", intent.PublicIdentifier)
		e.Details["parametersSchema"] = json.RawMessage(schemaRaw())
		return nil, e
	}
	cl.args = canon
	return v, nil
}

// route resolves the tokens of a write that moves them (its args decoded, v) and prices the
// value it routes and its gas into terms.
func (s *Service) route(ctx context.Context, cl *call, v any, terms *billing.Terms) error {
	rule := cl.rule
	if s.tokens == nil || !rule.MovesTokens {
		return nil
	}
	m, _ := v.(map[string]any)
	gasUnits := rule.GasUnits
	if terms.WalletSigns { // the wallet pays its transactions' gas on chain: none is priced here
		gasUnits = 0
	}
	w, err := s.tokens.PriceWrite(ctx, cl.intent.Category, []byte(cl.intent.ParametersSchema), m, gasUnits)
	if err != nil {
		return err
	}
	cl.routed, terms.Routed = w.Routed, w.Routed.Micro
	if w.GasChain != "" {
		terms.Gas = &billing.Gas{Chain: w.GasChain, EstimateMicro: w.GasMicro}
	}
	return nil
}

// price quotes cl by terms. A write's quote is kept for its confirmation: one the caller
// could not pay is refused now (the hold checks again under the balance lock).
func (s *Service) price(ctx context.Context, cl *call, terms billing.Terms) error {
	intent := cl.intent
	var err error
	cl.quote, err = cl.bill.Quote(ctx, terms)
	if errors.Is(err, billing.ErrNeedsRoutedValue) {
		if cl.routed.Reason != "" {
			return tools.Errorf(tools.CodeUnavailable, "%s charges %s basis points of the value the call routes, and that value cannot be quoted now (%s); nothing was sent or charged. Try again later",
				intent.PublicIdentifier, intent.FeeRate, cl.routed.Reason)
		}
		return tools.Errorf(tools.CodeBadInput, "%s charges %s basis points of the value the call routes: give the amount and token its parametersSchema marks (in details)",
			intent.PublicIdentifier, intent.FeeRate).WithDetails(map[string]any{"parametersSchema": json.RawMessage(intent.ParametersSchema)})
	}
	return err
}

// queryArgs are a flat-fee call's args: the message without its handle as {query}, in
// canonical JSON (what its quote records and its payment pays for).
func queryArgs(rest string) ([]byte, error) {
	args, _ := json.Marshal(map[string]string{"query": rest})
	return signing.Canonicalize(args)
}

// quoting is the way of a new write or flat-fee call: recorded and quoted (ask), sent only
// once its caller confirms or pays.
type quoting struct{ s *Service }

func (w quoting) take(ctx context.Context, c *tools.Caller, cl *call, in InvokeInput) (InvokeOutput, error) {
	s := w.s
	if cl.flat && s.cfg.Payments == nil {
		return InvokeOutput{}, tools.Errorf(tools.CodePaymentRequired, "%s is paid by a flat on-chain fee (%s) before dispatch, and that payment path is not available on this deployment; it is never called unpaid", cl.intent.PublicIdentifier, cl.intent.FeeRateUnit)
	}
	if err := s.prepareQuoted(ctx, cl, in.Args); err != nil {
		return InvokeOutput{}, err
	}
	return InvokeOutput{}, s.ask(ctx, cl, s.newInvocation(cl, c.NewCallID()), in.Payer)
}

// ask records a call that waits for its caller before it is dispatched, and returns what the
// caller is asked: a write's confirmation, or a flat fee's payment, quoted here (for payer, the
// wallet that will sign, when known) and recorded with the call.
func (s *Service) ask(ctx context.Context, cl *call, inv *store.Invocation, payer string) error {
	var asked error
	var also []func(ctx context.Context, q *store.Q) error
	detail := "quoted; waiting for the caller's confirmation"
	if !cl.flat { // a flat fee is paid before dispatch, whatever its category
		inv.MessageHash = messageHash(cl.said)
		// The owner's policies first: refused, or sent to a human instead of the caller.
		if err := s.admit(ctx, cl, inv, cl.quote.WorstMicro(), chargeOf(cl.quote)); err != nil {
			return err
		}
		asked = confirmation(inv.Handle, cl.intent.Category, inv.RequestID, cl, inv.CreatedAt.Add(ConfirmWindow))
		inv.State = store.InvAwaitingConfirmation
	} else {
		p, q, err := s.cfg.Payments.Quoted(ctx, inv.RequestID, inv.AccountID, payer, cl.intent)
		if err != nil {
			return err
		}
		also = append(also, payments.QuotedIn(p))
		fee := q.AmountUsd.String()
		if err := s.admit(ctx, cl, inv, p.AmountAtomic, map[string]any{"flatFeeUsd": fee, "totalUsd": fee, "maxChargeUsd": fee, "network": q.Network}, also...); err != nil {
			return err
		}
		inv.State, detail, asked = store.InvAwaitingPayment, "flat fee quoted; waiting for the caller's authorization", s.paymentRequired(cl.intent, q, cl.said)
	}
	if err := cl.bill.Ask(ctx, inv, detail, also...); err != nil {
		return err
	}
	return asked
}

// confirmation is a write's CONFIRMATION_REQUIRED answer: the exact args and the one bundled
// charge, itemised, with the worst case that will be reserved.
func confirmation(handle, category, requestID string, cl *call, expires time.Time) *tools.Error {
	q := cl.quote
	expected := q.ExpectedMicro()
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
		"%s is a %s intent (%s): nothing was sent. It costs up to %s USD in one charge (partner up to %s, as it reports; platform %s; gas about %s; infrastructure %s); %s USD, the most it can cost, is reserved. "+
			"Show the user the handle, args and charge; if they approve, call invoke_partner_message again with the same message and confirmRequestId %q within %d minutes",
		handle, category, value, tools.USD(expected), tools.USD(q.MaxPartnerFeeMicro), tools.USD(q.PlatformFeeMicro), tools.USD(q.GasEstimateMicro),
		tools.USD(q.ReserveMicro), tools.USD(q.WorstMicro()), requestID, int(ConfirmWindow.Minutes())).WithDetails(details).
		WithContinue(&tools.Continuation{Kind: tools.ContinueConfirm, RequestID: requestID, ExpiresAt: expires, Summary: confirmSummary(handle, category, cl)})
}

// confirmSummary is the quote as its user reads it before approving: the call, its args, and
// the one charge itemised with the most that is reserved.
func confirmSummary(handle, category string, cl *call) []string {
	q := cl.quote
	head := fmt.Sprintf("%s wants to run a %s call", handle, category)
	if q.RoutedValueMicro != nil {
		head += fmt.Sprintf(" routing %s USD", tools.USD(*q.RoutedValueMicro))
	}
	lines := []string{head + " with these arguments:", string(cl.args), "", "Charge, in one payment:",
		fmt.Sprintf("- partner fee: up to %s USD", tools.USD(q.MaxPartnerFeeMicro)),
		fmt.Sprintf("- platform fee: %s USD", tools.USD(q.PlatformFeeMicro))}
	if q.GasChain != "" {
		lines = append(lines, fmt.Sprintf("- gas on %s: about %s USD", q.GasChain, tools.USD(q.GasEstimateMicro)))
	}
	lines = append(lines, fmt.Sprintf("- infrastructure: %s USD", tools.USD(q.ReserveMicro)),
		fmt.Sprintf("Total: %s USD. At most %s USD (maxChargeUsd) is reserved when you approve.", tools.USD(q.ExpectedMicro()), tools.USD(q.WorstMicro())))
	if mutates(cl.intent) {
		lines = append(lines, "", "The partner then proposes transactions for your embedded wallet: you see each one decoded, and confirm it, before anything is signed. Their network fee is paid from the wallet.")
	}
	return lines
}

func (s *Service) newInvocation(cl *call, requestID string) *store.Invocation {
	return &store.Invocation{
		RequestID: requestID, AccountID: cl.bill.Caller().AccountID, KeyID: cl.bill.Caller().KeyID,
		IntentID: cl.intent.ID, Handle: cl.intent.PublicIdentifier, Category: cl.intent.Category,
		IntentRevision: cl.intent.Revision, Args: string(cl.args), Price: cl.quote.Price(),
		CreatedAt: s.now().UTC(),
	}
}

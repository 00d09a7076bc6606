package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"github.com/shopspring/decimal"
	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/partners"
	"github.com/switchboard-hq/switchboard/tools/tokens"
)

// prepare builds and checks cl's args, resolves a write's tokens, and prices the call (a flat
// fee is priced by its payment's quote, when ask records it).
func (s *Service) prepare(ctx context.Context, cl *call, rest string, given partners.ArgsDoc) error {
	intent := cl.intent
	if cl.flat { // paid on chain, not from credit: the message is its query
		canon, err := queryArgs(rest)
		if err != nil {
			return tools.Errorf(tools.CodeBadInput, "the message cannot be signed: %v", err)
		}
		cl.args = canon
		return nil
	}
	schemaRaw := func() []byte { return []byte(intent.ParametersSchema) } // in errors' details, and to compile once
	var args []byte
	var v any // args decoded, for the schema
	switch {
	case len(given) > 0:
		args = given
	case s.isQueryOnly(intent):
		args, _ = json.Marshal(map[string]string{"query": rest})
		if utf8.ValidString(rest) { // as json.Marshal wrote it (it replaces invalid bytes)
			v = map[string]any{"query": rest}
		}
	default:
		return tools.Errorf(tools.CodeBadInput, "%s takes structured args: call again with `args` matching its parametersSchema (in details)", intent.PublicIdentifier).
			WithDetails(map[string]any{"parametersSchema": json.RawMessage(schemaRaw())})
	}
	canon, err := signing.Canonicalize(args)
	if err != nil {
		return tools.Errorf(tools.CodeBadInput, "args cannot be signed: %v", err)
	}
	if v == nil {
		if v, err = tools.DecodeJSON(canon); err != nil {
			return tools.Errorf(tools.CodeBadInput, "args: %v", err)
		}
	}
	schema, err := s.schema(intent, "parameters", intent.ParametersSchema)
	if err != nil {
		return err
	}
	if e := tools.Validate(schema, v, "args"); e != nil {
		e.Message += fmt.Sprintf(" of %s's parametersSchema (in details)", intent.PublicIdentifier)
		e.Details["parametersSchema"] = json.RawMessage(schemaRaw())
		return e
	}
	cl.args = canon
	// A write's quote is kept for its confirmation: one the caller could not pay is refused
	// now (the hold checks again under the balance lock).
	terms := billing.Terms{FeeUnit: intent.FeeRateUnit, FeeRate: feeRate(intent), Kept: cl.write}
	if rule := cl.rule; s.tokens != nil && rule.MovesTokens {
		m, _ := v.(map[string]any)
		resolved, err := s.tokens.ResolveArgs(ctx, intent.Category, schemaRaw(), m)
		if err != nil {
			return err
		}
		if cl.routed, err = s.tokens.RoutedValue(ctx, schemaRaw(), m, resolved); err != nil {
			return err
		}
		terms.Routed = cl.routed.Micro
		if gasChain := writeChain(cl.routed, resolved); gasChain != "" && rule.GasUnits > 0 {
			micro, err := s.tokens.GasEstimate(ctx, gasChain, rule.GasUnits)
			if err != nil {
				return err
			}
			terms.Gas = &billing.Gas{Chain: gasChain, EstimateMicro: micro}
		}
	}
	cl.quote, err = cl.bill.Quote(ctx, terms)
	if errors.Is(err, billing.ErrNeedsRoutedValue) {
		if cl.routed.Reason != "" {
			return tools.Errorf(tools.CodeUnavailable, "%s charges %s basis points of the value the call routes, and that value cannot be quoted now (%s); nothing was sent or charged. Try again later",
				intent.PublicIdentifier, intent.FeeRate, cl.routed.Reason)
		}
		return tools.Errorf(tools.CodeBadInput, "%s charges %s basis points of the value the call routes: give the amount and token its parametersSchema marks (in details)",
			intent.PublicIdentifier, intent.FeeRate).WithDetails(map[string]any{"parametersSchema": json.RawMessage(schemaRaw())})
	}
	return err
}

// queryArgs are a flat-fee call's args: the message without its handle as {query}, in
// canonical JSON (what its quote records and its payment pays for).
func queryArgs(rest string) ([]byte, error) {
	args, _ := json.Marshal(map[string]string{"query": rest})
	return signing.Canonicalize(args)
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

// ask records a call that waits for its caller before it is dispatched, and returns what the
// caller is asked: a write's confirmation, or a flat fee's payment, quoted here (for payer, the
// wallet that will sign, when known) and recorded with the call.
func (s *Service) ask(ctx context.Context, cl *call, inv *store.Invocation, rest, payer string) error {
	var asked error
	var also []func(ctx context.Context, q *store.Q) error
	detail := "quoted; waiting for the caller's confirmation"
	if !cl.flat { // a flat fee is paid before dispatch, whatever its category
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
		also = append(also, func(ctx context.Context, q *store.Q) error { return q.InsertPayment(ctx, p) })
		fee := q.AmountUsd.String()
		if err := s.admit(ctx, cl, inv, p.AmountAtomic, map[string]any{"flatFeeUsd": fee, "totalUsd": fee, "maxChargeUsd": fee, "network": q.Network}, also...); err != nil {
			return err
		}
		inv.State, detail, asked = store.InvAwaitingPayment, "flat fee quoted; waiting for the caller's authorization", s.paymentRequired(cl.intent, q, rest)
	}
	if err := s.store.CreateInvocation(ctx, inv, detail, also...); err != nil {
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
		tools.USD(q.ReserveMicro), tools.USD(q.WorstMicro()), requestID, int(ConfirmWindow.Minutes())).WithDetails(details)
}

// schema is intent's schema which ("parameters" or "output"), raw, compiled once per revision.
func (s *Service) schema(intent *store.PartnerIntent, which string, raw string) (*jsonschema.Schema, error) {
	key := schemaKey{intent.ID, intent.Revision, which}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sc, ok := s.schemas[key]; ok {
		return sc, nil
	}
	sc, err := tools.CompileSchema([]byte(raw))
	if err != nil {
		return nil, fmt.Errorf("compile %s %sSchema: %w", intent.PublicIdentifier, which, err)
	}
	if len(s.schemas) > 4096 {
		clear(s.schemas) // bounded: recompiling is cheap next to a partner call
	}
	s.schemas[key] = sc
	return sc, nil
}

// isQueryOnly reports whether intent's parametersSchema is the spec's {query}
// (partners.QueryOnly), parsed once per revision.
func (s *Service) isQueryOnly(intent *store.PartnerIntent) bool {
	key := schemaKey{intent.ID, intent.Revision, "parameters"}
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.queryOnly[key]
	if !ok {
		q = partners.QueryOnly([]byte(intent.ParametersSchema))
		if len(s.queryOnly) > 4096 {
			clear(s.queryOnly)
		}
		s.queryOnly[key] = q
	}
	return q
}

func (s *Service) newInvocation(cl *call, requestID string) *store.Invocation {
	return &store.Invocation{
		RequestID: requestID, AccountID: cl.bill.Caller().AccountID, KeyID: cl.bill.Caller().KeyID,
		IntentID: cl.intent.ID, Handle: cl.intent.PublicIdentifier, Category: cl.intent.Category,
		IntentRevision: cl.intent.Revision, Args: string(cl.args), Price: cl.quote.Price(),
		CreatedAt: s.now().UTC(),
	}
}

package dispatch

import (
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v5"
	partnerstore "github.com/switchboard-hq/switchboard/store/partners"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/partners"
	"github.com/switchboard-hq/switchboard/tools/partners/outbound"
	"github.com/switchboard-hq/switchboard/tools/tokens"
)

// call is the call plan: what the intent means for this call, decided once by plan at the
// start of invoke (and of a confirmation or a recovery), then its args and price (prepare);
// every later step reads it instead of asking again. Its ticket is the call's money and
// record, for its caller: priced, admitted, held and concluded through it (billing.Ticket).
type call struct {
	bill   *billing.Ticket
	intent *partnerstore.Intent
	rule   partners.Rule // the category's rule
	write  bool          // a write category: quoted and confirmed first, never retried
	flat   bool          // paid by a flat on-chain fee before dispatch
	money  billing.Money // billing's: its price terms, payout book and durability
	tries  int           // partner attempts: 2 for idempotent categories (one retry), 1 for writes

	target  outbound.Target // the partner's endpoint and binding, with the per-attempt timeout
	userID  string          // the pseudonym the partner knows the caller by (its envelope's and receipt's)
	escrow  billing.Escrow  // a flat fee's payment, held until the outcome is recorded; nil: none
	schemas *intentSchemas

	said   string // the caller's message without its handle (FindHandle's rest): a confirmation says it again
	args   []byte // canonical JSON object
	quote  billing.Quote
	routed tokens.Routed // what a write moves (zero for other calls)
	taskID string        // the task the call runs as; "" when it answers in its request
}

// intentSchemas is what one revision of an intent's schemas means, worked out once per
// revision and shared by its calls.
type intentSchemas struct {
	params    *jsonschema.Schema
	paramsErr error              // a parametersSchema that does not compile: a call with args fails with it
	queryOnly bool               // the parametersSchema is the spec's {query}: a bare message is its args
	hasOutput bool               // the intent declares an outputSchema
	output    *jsonschema.Schema // nil with hasOutput: it does not compile, so nothing matches it
}

// schemaKey names one revision of an intent.
type schemaKey struct {
	intentID string
	revision int
}

// plan decides what intent means for a call of it by accountID: its rule, its partner's
// endpoint, its payment, what it means for money (billing's), and its schemas (compiled once
// per revision).
func (s *Service) plan(intent *partnerstore.Intent, accountID string) *call {
	cl := &call{intent: intent, rule: partners.RuleOf(intent.Category), flat: partners.IsFlatFee(intent.FeeRateUnit), tries: 2,
		target: partners.Target(intent), userID: s.cfg.UserID(accountID, intent.PartnerID), schemas: s.schemasOf(intent)}
	cl.write = cl.rule.Write
	cl.money = billing.MoneyOf(billing.Intent{PartnerID: intent.PartnerID, PayoutAddresses: intent.PayoutAddresses, FeeUnit: intent.FeeRateUnit,
		FeeRate: intent.FeeRate, Write: cl.write, PaidOnChain: cl.flat, WalletSigns: mutates(intent)}, s.cfg.SettlementChain)
	if cl.write {
		cl.tries = 1
	}
	if cl.flat && s.cfg.Payments != nil {
		cl.escrow = s.cfg.Payments
	}
	return cl
}

// spend is the call as the owner's spend policies see it (its worst case aside).
func (cl *call) spend() billing.Spend {
	return billing.Spend{Handle: cl.intent.PublicIdentifier, IntentID: cl.intent.ID, PublisherID: cl.intent.PartnerID, Category: cl.intent.Category}
}

// schemasOf is intent's schemas at its revision, compiled on the first call of it.
func (s *Service) schemasOf(intent *partnerstore.Intent) *intentSchemas {
	key := schemaKey{intent.ID, intent.Revision}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sc, ok := s.schemas[key]; ok {
		return sc
	}
	sc := &intentSchemas{queryOnly: partners.QueryOnly([]byte(intent.ParametersSchema))}
	var err error
	if sc.params, err = tools.CompileSchema([]byte(intent.ParametersSchema)); err != nil {
		sc.paramsErr = fmt.Errorf("compile %s parametersSchema: %w", intent.PublicIdentifier, err)
	}
	if o := intent.OutputSchema; o != nil && *o != "" {
		sc.hasOutput = true
		sc.output, _ = tools.CompileSchema([]byte(*o))
	}
	if len(s.schemas) > 4096 {
		clear(s.schemas) // bounded: recompiling is cheap next to a partner call
	}
	s.schemas[key] = sc
	return sc
}

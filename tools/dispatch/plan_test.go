package dispatch

import (
	"strings"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store/ledger"
	partnerstore "github.com/switchboard-hq/switchboard/store/partners"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/service"
)

// durable reports whether billing made cl's call durable.
func durable(cl *call) bool { return cl.money.Durability == billing.DurabilityOf(true, false) }

// The plan decides once what an intent means for a call: its rule, endpoint, pseudonym, fee
// rate and payout book, and its schemas, compiled once per revision (a schema that does not
// compile is kept with its revision: the parameters' refuses calls with args, the output's
// matches nothing).
func TestPlanDecidesWhatTheIntentMeans(t *testing.T) {
	s := NewService(Config{SettlementChain: "evm:base", UserID: func(account, partner string) string { return "u-" + account + "-" + partner }},
		service.Deps{}, nil, nil, nil)
	out := `{"type":"object","required":["n"],"properties":{"n":{"type":"number"}}}`
	intent := &partnerstore.Intent{ID: "i1", PartnerID: "p1", PublicIdentifier: "@a", Category: "QUERY", Revision: 1, TimeoutMs: 1500,
		BindingType: "REST", ToolEndpoint: "https://partner.example/a", FeeRate: "0.25", FeeRateUnit: "usd_per_call",
		ParametersSchema: `{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`, OutputSchema: &out,
		PayoutAddresses: map[string]string{"evm": "0xabc"}}

	cl := s.plan(intent, "acct")
	if cl.write || cl.flat || durable(cl) || cl.tries != 2 || cl.escrow != nil {
		t.Fatalf("a read: write %v flat %v durable %v tries %d escrow %v", cl.write, cl.flat, durable(cl), cl.tries, cl.escrow)
	}
	if cl.target.Endpoint != intent.ToolEndpoint || cl.target.Timeout != 1500*time.Millisecond || cl.userID != "u-acct-p1" {
		t.Fatalf("target %+v, user %q", cl.target, cl.userID)
	}
	if m := cl.money; m.Terms.FeeRate.String() != "0.25" || m.Terms.FeeUnit != billing.FeeUSDPerCall || m.Terms.Kept || m.PayoutBook != ledger.PartnerPayable("p1", "evm:0xabc") {
		t.Fatalf("money %+v (want the namespace's address, the chain having none)", m)
	}
	if !cl.schemas.queryOnly || cl.schemas.params == nil || cl.schemas.paramsErr != nil || !cl.schemas.hasOutput {
		t.Fatalf("schemas: %+v", cl.schemas)
	}
	if !cl.matchesOutput([]byte(`{"n":1}`)) || cl.matchesOutput([]byte(`{"n":"one"}`)) || cl.matchesOutput(nil) {
		t.Fatal("the output schema does not decide what matches")
	}
	if again := s.plan(intent, "other"); again.schemas != cl.schemas || again.userID != "u-other-p1" {
		t.Fatal("the same revision's schemas were compiled again, or the pseudonym was not the caller's")
	}

	// A new revision whose schemas do not compile; a write, paid from credit, with no payout address.
	bad := `{"type":12}`
	next := *intent
	next.Revision, next.Category, next.ParametersSchema, next.OutputSchema, next.PayoutAddresses = 2, "SWAP", `{"type":12}`, &bad, nil
	cl = s.plan(&next, "acct")
	if !cl.write || !durable(cl) || cl.tries != 1 || !cl.money.Terms.Kept {
		t.Fatalf("a write: write %v durable %v tries %d", cl.write, durable(cl), cl.tries)
	}
	if cl.schemas.paramsErr == nil || !strings.Contains(cl.schemas.paramsErr.Error(), "@a parametersSchema") {
		t.Fatalf("a parametersSchema that does not compile: %v", cl.schemas.paramsErr)
	}
	if !cl.schemas.hasOutput || cl.schemas.output != nil || cl.matchesOutput([]byte(`{"n":1}`)) {
		t.Fatal("an outputSchema that does not compile must match nothing")
	}
	if cl.money.PayoutBook != ledger.PartnerPayable("p1", "unassigned") {
		t.Fatalf("payout book without an address: %q", cl.money.PayoutBook)
	}

	// A flat fee with no payment path on this deployment holds no escrow.
	flat := *intent
	flat.Revision, flat.FeeRateUnit = 3, "flat_usdc"
	if cl = s.plan(&flat, "acct"); !cl.flat || !durable(cl) || cl.escrow != nil {
		t.Fatalf("a flat fee without payments: flat %v durable %v escrow %v", cl.flat, durable(cl), cl.escrow)
	}
}

// Package dispatch is invoke_partner_message: find the @handle, build and check the args,
// reserve, sign and call the partner (REST or MCP_HTTP), check the answer, and bill honestly.
//
// One file per stage of a call: invoke.go (the tool, the handle), plan.go (what the intent
// means for the call, decided once: its rule, endpoint, payment, fee rate, payout book and
// compiled schemas), prepare.go (args, price, a quote recorded: ask), confirm.go and
// decline.go (a quote's answers), flatfee.go (a flat fee's payment), dispatch.go (the ticket
// opened, the partner called, the call observed), conclude.go (the answer mapped, settled or
// refunded), recover.go (the sweeper's conclusions). How each call's money and record commit
// is billing's (billing.Ticket).
package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/invocations"
	partnerstore "github.com/switchboard-hq/switchboard/store/partners"
	"github.com/switchboard-hq/switchboard/store/tasks"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/partners/outbound"
	"github.com/switchboard-hq/switchboard/tools/payments"
	"github.com/switchboard-hq/switchboard/tools/policies"
	"github.com/switchboard-hq/switchboard/tools/send"
	"github.com/switchboard-hq/switchboard/tools/service"
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
	// Intents reads an intent by @handle (the app passes its cache); nil: the store's.
	Intents func(ctx context.Context, handle string) (*partnerstore.Intent, error)
	// Failpoint, when set, is told each step an invoke reaches ("reserve": the reservation is
	// written, not committed; "answered": the partner answered, nothing is recorded yet); the
	// crash-consistency tests kill the process there.
	Failpoint func(step string)
	// Approvals is where a call a policy sends to its owner is asked for, read and closed
	// (the one the owner decides with: policies.Service's); nil: one on the same store that
	// e-mails nobody (the portal's inbox and the approval.requested event tell the owner).
	Approvals *policies.Approvals
	// TaskAfter: a call of an intent whose timeoutMs is above it runs as a task for a caller
	// that takes one (task.go); 0: DefaultTaskAfter.
	TaskAfter time.Duration
	// Replica names this replica in the tasks it runs.
	Replica string
	// Wallet signs what a MUTATES_USER_FUNDS partner proposes (propose.go) with the account's
	// embedded wallets, on the chains it has nodes for; nil: proposals are refused unsigned.
	Wallet *send.Wallet
}

// OutcomeCancelled is an Observation's outcome when the caller went away mid-call.
const OutcomeCancelled = "CANCELLED"

// Observation is one dispatched call, for Config.Observe: how the partner call ended and where
// the time went (Total - Partner is Switchboard's own overhead: reserving, checking, and
// settling unless that is left to the batch writer).
type Observation struct {
	Handle  string
	Outcome string        // an outbound.Outcome (OK, PARTNER_FAILURE, TIMEOUT, ...) or OutcomeCancelled
	Partner time.Duration // the partner call, every try included
	Total   time.Duration // from dispatch start (reservation) until the answer is ready (its outcome recorded, or queued for the batch writer)
}

// observe reports a call to Config.Observe; dispatch defers it once the partner has answered.
func (s *Service) observe(handle, outcome string, partner time.Duration, began time.Time) {
	if s.cfg.Observe != nil {
		s.cfg.Observe(Observation{Handle: handle, Outcome: outcome, Partner: partner, Total: time.Since(began)})
	}
}

func outcomeOf(ctx context.Context, answer *outbound.Result, err error) string {
	if ctx.Err() != nil {
		return OutcomeCancelled
	}
	return string(outbound.Classify(answer, err))
}

// Service dispatches invocations.
type Service struct {
	cfg         Config
	store       *store.Store
	accounts    accounts.Accounts
	partners    partnerstore.Partners   // nil for a service of no store
	invocations invocations.Invocations // nil for a service of no store
	approvals   *policies.Approvals
	client      *outbound.Client
	billing     *billing.Service
	tokens      *tokens.Service // nil: no token resolution before writes
	tasks       tasks.Tasks
	runners     *taskRunners
	now         func() time.Time
	log         *slog.Logger

	mu      sync.Mutex
	schemas map[schemaKey]*intentSchemas // by intent revision
}

// NewService builds the dispatcher. tokens may be nil.
func NewService(cfg Config, d service.Deps, client *outbound.Client, bill *billing.Service, tok *tokens.Service) *Service {
	d = d.WithDefaults()
	st, now, log := d.Store, d.Now, d.Log
	if cfg.Failpoint == nil {
		cfg.Failpoint = func(string) {}
	}
	if cfg.Approvals == nil {
		cfg.Approvals = policies.NewApprovals(d, nil)
	}
	if cfg.TaskAfter <= 0 {
		cfg.TaskAfter = DefaultTaskAfter
	}
	s := &Service{cfg: cfg, store: st, accounts: accounts.New(st), approvals: cfg.Approvals, client: client, billing: bill, tokens: tok, now: now, log: log,
		runners: newTaskRunners(), schemas: map[schemaKey]*intentSchemas{}}
	if st != nil { // a plan's test builds a service of no store
		s.tasks, s.partners, s.invocations = tasks.New(st), partnerstore.New(st), invocations.New(st)
		if s.cfg.Intents == nil {
			s.cfg.Intents = s.partners.IntentByHandle
		}
	}
	return s
}

// answered is the way of a new call answered in its request: admitted, then dispatched.
type answered struct{ s *Service }

func (w answered) take(ctx context.Context, c *tools.Caller, cl *call, in InvokeInput) (InvokeOutput, error) {
	inv, err := w.s.admitted(ctx, c, cl, in)
	if err != nil {
		return InvokeOutput{}, err
	}
	return w.s.dispatch(ctx, cl, inv, "")
}

// dispatch opens the call's ticket (its hold, and its record moved from state `from`, or
// inserted when from is ""), calls the partner (retrying idempotent categories once), and
// concludes the ticket with the outcome: settled or refunded, and recorded the way the ticket
// says (billing.Ticket).
func (s *Service) dispatch(ctx context.Context, cl *call, inv *store.Invocation, from string) (InvokeOutput, error) {
	began := time.Now() // wall time for Observe: s.now may be a test's clock
	if err := s.open(ctx, cl, inv, from); err != nil {
		return InvokeOutput{}, err
	}
	return s.run(ctx, cl, inv, began)
}

// open opens the call's ticket: its hold taken, its record moved from state from (inserted
// when from is "") to dispatching.
func (s *Service) open(ctx context.Context, cl *call, inv *store.Invocation, from string) error {
	// Records and money must land even when the caller has gone.
	err := cl.bill.Open(context.WithoutCancel(ctx), billing.Call{Record: inv, From: from, Quote: cl.quote,
		Runs: time.Duration(cl.tries) * cl.target.Timeout, Durability: cl.money.Durability, Escrow: cl.escrow})
	if errors.Is(err, billing.ErrMoved) {
		return tools.Errorf(tools.CodeConflict, "request %s was confirmed by another call; call again for its outcome", inv.RequestID)
	}
	return err
}

// run calls the partner on an open ticket and concludes it: ctx ending first (the caller
// gone, a task cancelled) concludes it cancelled, refunded.
func (s *Service) run(ctx context.Context, cl *call, inv *store.Invocation, began time.Time) (InvokeOutput, error) {
	intent := cl.intent
	bg := context.WithoutCancel(ctx)
	fields := signing.CallFields{
		RequestID: inv.RequestID, IntentDefinitionID: intent.ID,
		UserID: cl.userID,
		Args:   json.RawMessage(cl.args),
	}
	var answer *outbound.Result
	var attempts []store.Attempt
	var err error
	called := time.Now()
	for range cl.tries {
		answer, err = s.client.Call(ctx, cl.target, fields)
		attempts = append(attempts, store.Attempt{Detail: attemptDetail(answer, err), At: s.now().UTC()})
		if ctx.Err() != nil || !retryable(answer, err) {
			break
		}
	}
	partnerTime := time.Since(called)
	if errors.Is(context.Cause(ctx), errReplicaGone) { // a task whose replica stopped: the sweeper's
		return InvokeOutput{}, errReplicaGone
	}
	s.cfg.Failpoint("answered")
	defer s.observe(intent.PublicIdentifier, outcomeOf(ctx, answer, err), partnerTime, began)
	if ctx.Err() != nil {
		e := tools.Errorf(tools.CodeUnavailable, "the call was cancelled by the caller; nothing was charged").Wrap(context.Cause(ctx))
		return InvokeOutput{}, s.fail(bg, inv, cl, store.InvCancelled, answer, attempts, e, "caller cancelled: "+ctx.Err().Error())
	}
	out, err := s.conclude(bg, inv, cl, answer, err, attempts)
	switch {
	case errors.Is(err, billing.ErrAlreadyFinished):
		// The sweeper of another replica finished it first (this one lost its database for a
		// while), or its own record landed in a commit whose answer was lost: its record is
		// the truth.
		if done, ferr := s.invocations.Get(bg, inv.AccountID, inv.RequestID); ferr == nil {
			return replay(done)
		}
	case store.IsUnavailable(err):
		// True whatever happens next: nothing is charged before the record lands, and the
		// record, when it lands, is what a confirmation with the requestId answers.
		return InvokeOutput{}, tools.Errorf(tools.CodeUnavailable,
			"%s answered, but the database is unavailable, so the outcome of request %s is not recorded yet: %s. "+
				"Nothing is charged before then, and never twice. Call again later with confirmRequestId %q to read the outcome",
			intent.PublicIdentifier, inv.RequestID, cl.bill.Kept(err), inv.RequestID).
			WithDetails(map[string]any{"requestId": inv.RequestID, "handle": intent.PublicIdentifier, "outcome": "not recorded yet"}).Wrap(err)
	}
	return out, err
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

package policies_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/invocations"
	"github.com/switchboard-hq/switchboard/store/partners"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/policies"
	"github.com/switchboard-hq/switchboard/tools/service"
)

// life is an approval's life on a real store, with a clock the test moves and the owner's
// e-mails kept.
type life struct {
	st        *store.Store
	bill      *billing.Service
	approvals *policies.Approvals
	ticket    *billing.Ticket

	mu    sync.Mutex
	now   time.Time
	mails []string // subject, then text
}

func newLife(t *testing.T, st *store.Store) *life {
	ctx := context.Background()
	storetest.Account(t, st, "acct")
	l := &life{st: st, now: time.Now().UTC().Truncate(time.Millisecond)}
	if _, err := partners.New(st).Publish(ctx, "acct", []*partners.Intent{storetest.IntentRow("i1", "@asked", l.now)}, l.now); err != nil {
		t.Fatal(err)
	}
	d := service.Deps{Store: st, Now: l.clock}
	l.bill = billing.NewService(billing.DefaultConfig(), d, billing.Recording{})
	l.approvals = policies.NewApprovals(d, func(_ context.Context, accountID, subject, text string) error {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.mails = append(l.mails, accountID+": "+subject, text)
		return nil
	})
	l.ticket = l.bill.For(&tools.Principal{AccountID: "acct", KeyID: "k-acct"}, billing.Spend{Handle: "@asked", IntentID: "i1", Category: "QUERY"})
	return l
}

func (l *life) clock() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.now
}

func (l *life) advance(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.now = l.now.Add(d)
}

// asking names the test's calls to their agent.
var asking = policies.Asking{What: "this call", Nothing: "nothing was sent", Again: "call it again", Continues: true}

// asked is err as an APPROVAL_REQUIRED answer.
func asked(t *testing.T, err error) *tools.Error {
	t.Helper()
	var e *tools.Error
	if !errors.As(err, &e) || e.Code != tools.CodeApprovalRequired {
		t.Fatalf("want APPROVAL_REQUIRED, got %v", err)
	}
	return e
}

// record is a new call's record, as dispatch builds it.
func (l *life) record(requestID string) *store.Invocation {
	return &store.Invocation{RequestID: requestID, AccountID: "acct", KeyID: "k-acct", IntentID: "i1", Handle: "@asked", Category: "QUERY",
		IntentRevision: 1, Args: "{}", Price: store.Price{ReserveMicro: 1_000, MaxPartnerFeeMicro: 2_000_000}, CreatedAt: l.clock()}
}

func (l *life) ask(t *testing.T, requestID string) *store.Invocation {
	t.Helper()
	inv := l.record(requestID)
	err := l.approvals.Ask(context.Background(), l.ticket, policies.Ask{Record: inv, Rule: "approval.aboveUsd", WorstMicro: 2_001_000,
		Charge: map[string]any{"totalUsd": "2.001", "maxChargeUsd": "2.001"}, Asking: asking})
	if e := asked(t, err); e.Details["requestId"] != requestID {
		t.Fatalf("APPROVAL_REQUIRED for %v, asked for %s", e.Details, requestID)
	}
	return inv
}

// events are the account's webhook events of type typ, their data decoded.
func (l *life) events(t *testing.T, typ string) []map[string]any {
	t.Helper()
	var evs []store.WebhookEvent
	if err := l.st.DB().NewSelect().Model(&evs).Where("account_id = ? AND type = ?", "acct", typ).OrderExpr("created_at, id").Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	out := make([]map[string]any, 0, len(evs))
	for _, ev := range evs {
		var body struct {
			Data map[string]any `json:"data"`
		}
		if err := json.Unmarshal([]byte(ev.Body), &body); err != nil {
			t.Fatal(err)
		}
		out = append(out, body.Data)
	}
	return out
}

const (
	reqA = "0193b6c0-0000-7000-8000-00000000000a"
	reqB = "0193b6c0-0000-7000-8000-00000000000b"
	reqC = "0193b6c0-0000-7000-8000-00000000000c"
)

// Ask writes the call's record awaiting approval, its approval and approval.requested in one
// transaction, then e-mails the owner; when anything of that transaction fails, none of it is
// written and the owner is told nothing.
func TestAskRecordsTheCallAndItsApprovalTogether(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		l := newLife(t, st)
		call := l.record(reqA)
		e := asked(t, l.approvals.Ask(ctx, l.ticket, policies.Ask{Record: call, Rule: "approval.aboveUsd", WorstMicro: 2_001_000,
			Charge: map[string]any{"totalUsd": "2.001", "maxChargeUsd": "2.001"}, Details: map[string]any{"transactions": 2}, Asking: asking}))
		expires, _ := e.Details["expiresAt"].(time.Time)
		if !expires.Equal(call.CreatedAt.Add(policies.ApprovalWindow)) || e.Details["requestId"] != reqA || e.Details["rule"] != "approval.aboveUsd" ||
			e.Details["handle"] != "@asked" || e.Details["transactions"] != 2 {
			t.Fatalf("APPROVAL_REQUIRED's details %v, asked at %v", e.Details, call.CreatedAt)
		}
		if !strings.Contains(e.Message, "sends this call to its owner first (approval.aboveUsd): nothing was sent") ||
			!strings.Contains(e.Message, `then call it again and confirmRequestId "`+reqA+`"`) {
			t.Fatalf("APPROVAL_REQUIRED says %q", e.Message)
		}
		if c := e.Continue; c == nil || c.Kind != tools.ContinueApprove || c.RequestID != reqA || !c.ExpiresAt.Equal(expires) ||
			len(c.Summary) != 2 || c.Summary[1] != "It may cost up to 2.001 USD." {
			t.Fatalf("APPROVAL_REQUIRED's continuation: %+v", e.Continue)
		}
		inv, err := invocations.New(st).Get(ctx, "acct", reqA)
		if err != nil || inv.State != store.InvAwaitingApproval {
			t.Fatalf("the call's record: %+v %v", inv, err)
		}
		if evs, err := invocations.New(st).Events(ctx, reqA); err != nil || len(evs) != 1 || evs[0].Detail != "sent to the account's owner for approval (approval.aboveUsd)" {
			t.Fatalf("the record's events: %+v %v", evs, err)
		}
		st1, err := l.approvals.Standing(ctx, inv)
		if err != nil || st1.State != policies.Pending || st1.Rule != "approval.aboveUsd" || !st1.ExpiresAt.Equal(expires) ||
			string(st1.Charge) != `{"maxChargeUsd":"2.001","totalUsd":"2.001"}` {
			t.Fatalf("standing: %+v %v", st1, err)
		}
		req := l.events(t, "approval.requested")
		if len(req) != 1 || req[0]["requestId"] != reqA || req[0]["rule"] != "approval.aboveUsd" || req[0]["maxChargeUsd"] != "2.001" ||
			req[0]["charge"].(map[string]any)["totalUsd"] != "2.001" {
			t.Fatalf("approval.requested: %v", req)
		}
		if len(l.mails) != 2 || l.mails[0] != "acct: Approve a call of @asked?" || !strings.Contains(l.mails[1], "Request: "+reqA) ||
			!strings.Contains(l.mails[1], "up to 2.001 USD") {
			t.Fatalf("the owner's e-mail: %q", l.mails)
		}

		// A row beside it fails: nothing of the ask lands, nobody is told.
		broken := errors.New("the flat fee's payment row did not fit")
		err = l.approvals.Ask(ctx, l.ticket, policies.Ask{Record: l.record(reqB), Rule: "approval.aboveUsd", WorstMicro: 1, Asking: asking},
			func(context.Context, *store.Q) error { return broken })
		if !errors.Is(err, broken) {
			t.Fatalf("a failing row beside the ask: %v", err)
		}
		if _, err := invocations.New(st).Get(ctx, "acct", reqB); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("the call's record was written without its approval: %v", err)
		}
		if _, err := l.approvals.Standing(ctx, l.record(reqB)); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("the approval was written without its transaction: %v", err)
		}
		if n := len(l.events(t, "approval.requested")); n != 1 || len(l.mails) != 2 {
			t.Fatalf("%d approval.requested events and %d mails after a failed ask", n, len(l.mails)/2)
		}
	})
}

// The owner's answer is recorded once, with approval.decided: approved or declined, then the
// call's approval stands so; a second answer, or one after the window, changes nothing.
func TestDecideAnswersOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		l := newLife(t, st)
		yes, no, late := l.ask(t, reqA), l.ask(t, reqB), l.ask(t, reqC)
		l.advance(time.Minute)
		if ok, err := l.approvals.Decide(ctx, "acct", reqA, true, "portal"); !ok || err != nil {
			t.Fatalf("approve: %v %v", ok, err)
		}
		if ok, err := l.approvals.Decide(ctx, "acct", reqB, false, "portal"); !ok || err != nil {
			t.Fatalf("decline: %v %v", ok, err)
		}
		if ok, err := l.approvals.Decide(ctx, "acct", reqA, false, "portal"); ok || err != nil {
			t.Fatalf("a second answer: %v %v", ok, err)
		}
		if ok, err := l.approvals.Decide(ctx, "other", reqC, true, "portal"); ok || err != nil {
			t.Fatalf("another account's answer: %v %v", ok, err)
		}
		for inv, want := range map[*store.Invocation]string{yes: policies.Approved, no: policies.Declined, late: policies.Pending} {
			if s, err := l.approvals.Standing(ctx, inv); err != nil || s.State != want {
				t.Fatalf("%s stands %+v (%v), want %s", inv.RequestID, s, err, want)
			}
		}
		l.advance(policies.ApprovalWindow)
		if ok, err := l.approvals.Decide(ctx, "acct", reqC, true, "portal"); ok || err != nil {
			t.Fatalf("an answer after the window: %v %v", ok, err)
		}
		if s, err := l.approvals.Standing(ctx, late); err != nil || s.State != policies.Expired {
			t.Fatalf("unanswered past the window: %+v %v", s, err)
		}
		decided := l.events(t, "approval.decided")
		if len(decided) != 2 || decided[0]["requestId"] == decided[1]["requestId"] {
			t.Fatalf("approval.decided: %v", decided)
		}
		for _, d := range decided {
			if want := map[any]string{reqA: "approved", reqB: "declined"}[d["requestId"]]; d["decision"] != want {
				t.Fatalf("approval.decided %v, want %s", d, want)
			}
		}
	})
}

// A call whose approval will not let it out is closed once, nothing held: expired (told as
// approval.decided), declined (told when it was decided) or approved but asked for again after
// Lag (lapsed); its record keeps the CONFLICT answer, and a second close writes nothing.
func TestCloseLapsedApprovals(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		l := newLife(t, st)
		expired, declined, lapsed := l.ask(t, reqA), l.ask(t, reqB), l.ask(t, reqC)
		for id, yes := range map[string]bool{reqB: false, reqC: true} {
			if ok, err := l.approvals.Decide(ctx, "acct", id, yes, "portal"); !ok || err != nil {
				t.Fatalf("decide %s: %v %v", id, ok, err)
			}
		}
		l.advance(policies.ApprovalWindow)
		if s, err := l.approvals.Standing(ctx, lapsed); err != nil || s.State != policies.Approved {
			t.Fatalf("approved within Lag: %+v %v", s, err)
		}
		l.advance(policies.Lag)
		for inv, how := range map[*store.Invocation]string{expired: policies.Expired, declined: policies.Declined, lapsed: policies.Lapsed} {
			s, err := l.approvals.Standing(ctx, inv)
			if err != nil || s.State != how {
				t.Fatalf("%s stands %+v (%v), want %s", inv.RequestID, s, err, how)
			}
			closed, answer, err := l.approvals.Close(ctx, l.ticket, inv, s.State)
			if err != nil || !closed || answer.Code != tools.CodeConflict || answer.Details["approval"] != how ||
				!strings.Contains(answer.Message, "Nothing was sent, held or charged") {
				t.Fatalf("close %s: %v %+v %v", how, closed, answer, err)
			}
			row, err := invocations.New(st).Get(ctx, "acct", inv.RequestID)
			if err != nil || row.State != store.InvDeclined || row.OutcomeMessage != "approval "+how || row.Answer == nil ||
				!strings.Contains(*row.Answer, answer.Message) || row.DispatchedAt != nil {
				t.Fatalf("the closed record of %s: %+v %v", how, row, err)
			}
			if again, answer, err := l.approvals.Close(ctx, l.ticket, inv, how); again || answer != nil || err != nil {
				t.Fatalf("closed twice (%s): %v %v %v", how, again, answer, err)
			}
		}
		decided := map[string]string{}
		for _, d := range l.events(t, "approval.decided") {
			decided[d["requestId"].(string)] += d["decision"].(string) + " "
		}
		if decided[reqA] != "expired " || decided[reqB] != "declined " || decided[reqC] != "approved " {
			t.Fatalf("approval.decided by request: %v", decided)
		}
	})
}

// A call asked for again is answered by where its approval stands (Await): pending is
// APPROVAL_PENDING with its continuation and a retry; approved lets it out; declined closes it
// with the CONFLICT its record keeps; one another call closed first is a CONFLICT naming
// billing.ErrMoved; a deployment without approvals cannot read one, nor ask for one.
func TestAwaitAnswersByTheApproval(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		l := newLife(t, st)
		yes, no := l.ask(t, reqA), l.ask(t, reqB)
		var e *tools.Error
		if err := l.approvals.Await(ctx, l.ticket, yes, asking); !errors.As(err, &e) || e.Code != tools.CodeApprovalPending ||
			e.RetryAfter != 30*time.Second || e.Details["requestId"] != reqA || e.Continue == nil || e.Continue.Kind != tools.ContinueApprove ||
			!strings.HasPrefix(e.Message, "this call (request "+reqA+"): the account's owner has not decided yet") ||
			string(e.Details["charge"].(json.RawMessage)) != `{"maxChargeUsd":"2.001","totalUsd":"2.001"}` {
			t.Fatalf("pending: %v %+v", err, e)
		}
		if err := l.approvals.Await(ctx, l.ticket, yes, policies.Asking{What: "this send"}); !errors.As(err, &e) || e.Continue != nil {
			t.Fatalf("pending, for a tool that takes no decision: %v %+v", err, e)
		}
		for id, approve := range map[string]bool{reqA: true, reqB: false} {
			if ok, err := l.approvals.Decide(ctx, "acct", id, approve, "portal"); !ok || err != nil {
				t.Fatalf("decide %s: %v %v", id, ok, err)
			}
		}
		if err := l.approvals.Await(ctx, l.ticket, yes, asking); err != nil {
			t.Fatalf("approved: %v", err)
		}
		if err := l.approvals.Await(ctx, l.ticket, no, asking); !errors.As(err, &e) || e.Code != tools.CodeConflict || e.Details["approval"] != policies.Declined {
			t.Fatalf("declined: %v", err)
		}
		if row, err := invocations.New(st).Get(ctx, "acct", reqB); err != nil || row.State != store.InvDeclined {
			t.Fatalf("the declined call's record: %+v %v", row, err)
		}
		// Read before the first close landed: the second finds the record moved.
		stale := *no
		stale.State = store.InvAwaitingApproval
		if err := l.approvals.Await(ctx, l.ticket, &stale, asking); !errors.Is(err, billing.ErrMoved) || !errors.As(err, &e) || e.Code != tools.CodeConflict {
			t.Fatalf("moved by another call first: %v", err)
		}
		var none *policies.Approvals
		if err := none.Await(ctx, l.ticket, yes, asking); !errors.As(err, &e) || e.Code != tools.CodeConflict {
			t.Fatalf("no approvals, awaited: %v", err)
		}
		if err := none.Ask(ctx, l.ticket, policies.Ask{Record: l.record(reqC), Rule: "approval.aboveUsd", Asking: asking}); !errors.As(err, &e) || e.Code != tools.CodePolicyDenied {
			t.Fatalf("no approvals, asked: %v", err)
		}
		if _, err := invocations.New(st).Get(ctx, "acct", reqC); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("asked without approvals, the call was written: %v", err)
		}
	})
}

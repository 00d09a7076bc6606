package billing

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/spending"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/webhooks"
)

// Spend policies are decided here, in the money seam, for every call and every door: what
// the policies say is Judge's (policy.go); here is when they are read and asked. Each time,
// what the decision needs is read at once (spending.View: the governing policies, what each
// one's windows spent, whether the account called the intent before), then judged, then a
// refusal is told (policy.denied). A call is judged twice:
//
//	asked for (Admit)       before anything is held or sent: refused, or sent to a human for
//	                        approval (the caps as they stand, without a lock)
//	held (Hold, and a flat  inside the transaction that holds it (or marks its payment as
//	fee's AdmitPayment)     being made), after the account's credit row is locked: the caps
//	                        are exact, since calls held one after another see each other
//
// A call of an account under any policy is never drawn from a budget lease: a lease holds in
// memory, where no other call's check can see it.

// Spend is a call as the policies see it.
type Spend struct {
	Handle, IntentID, PublisherID, Category string
	WorstMicro                              int64 // the most it can cost: its hold, or its flat fee
	// An on-chain movement's facts (Movement): where its money goes; "" for a partner call.
	Recipient, Host, Contract string
	// Unpriced: an on-chain movement whose USD value is unknown (WorstMicro 0 says nothing).
	Unpriced bool
}

// noPolicies remembers for a moment the accounts with no policy, so their calls cost no read:
// a policy set on this replica binds at once (ForgetPolicies), one set on another within
// noPolicyTTL.
type noPolicies struct {
	mu   sync.Mutex
	seen map[string]time.Time
	gen  uint64 // bumped by ForgetPolicies: a read begun before it must not be remembered
}

const noPolicyTTL = 2 * time.Second

// governed reports whether p's account may be under a policy (false: it had none a moment ago).
func (s *Service) governed(accountID string) bool {
	now := s.now()
	s.pol.mu.Lock()
	defer s.pol.mu.Unlock()
	at, ok := s.pol.seen[accountID]
	return !ok || now.Sub(at) >= noPolicyTTL || now.Before(at)
}

// generation is the count of ForgetPolicies, to take before a read that saw may remember.
func (s *Service) generation() uint64 {
	s.pol.mu.Lock()
	defer s.pol.mu.Unlock()
	return s.pol.gen
}

// saw records what a read found of an account's policies, begun at generation gen: a read a
// policy change overtook is not remembered.
func (s *Service) saw(accountID string, v *spending.View, gen uint64) {
	s.pol.mu.Lock()
	defer s.pol.mu.Unlock()
	if gen != s.pol.gen {
		return
	}
	if len(v.Policies) > 0 {
		delete(s.pol.seen, accountID)
		return
	}
	if len(s.pol.seen) > 100_000 {
		clear(s.pol.seen)
	}
	s.pol.seen[accountID] = s.now()
}

// ForgetPolicies drops what is known of an account's policies (they changed on this replica).
func (s *Service) ForgetPolicies(accountID string) {
	s.pol.mu.Lock()
	delete(s.pol.seen, accountID)
	s.pol.gen++
	s.pol.mu.Unlock()
}

// Admit applies the caller's policies to its call, which may cost worst, before anything is
// held or sent: a refusal is POLICY_DENIED naming the rule (and the window, what it spent and
// what is left); a call that must be approved first is *ErrApprovalRequired.
func (t *Ticket) Admit(ctx context.Context, worst int64) error {
	s, p, c := t.svc, t.p, t.costing(worst)
	if !s.governed(p.AccountID) {
		return nil
	}
	gen := s.generation()
	v, err := s.spending.View(ctx, p.AccountID, chainOf(p), c.IntentID, windowsOf(s.now()))
	if err != nil {
		return err
	}
	s.saw(p.AccountID, v, gen)
	return s.denied(ctx, p, c, Judge(p, v, c, true))
}

// heldCheck is the check of a call's policies inside the transaction that holds it (nil: its
// account had no policy a moment ago).
func (s *Service) heldCheck(p *tools.Principal, c *Spend) func(ctx context.Context, q *store.Q) error {
	if c == nil || !s.governed(p.AccountID) {
		return nil
	}
	return func(ctx context.Context, q *store.Q) error {
		v, err := spending.ViewIn(ctx, q, p.AccountID, chainOf(p), "", windowsOf(s.now()))
		if err != nil {
			return err
		}
		return Judge(p, v, *c, false)
	}
}

// AdmitPayment is the exact check of a flat-fee call's policies for its payment of worst, to
// run in the transaction that marks the payment as being made (counted from then on): the
// account's credit row is locked first, so payments checked one after another see each other.
func (t *Ticket) AdmitPayment(worst int64) func(ctx context.Context, q *store.Q) error {
	s, p, c := t.svc, t.p, t.costing(worst)
	return func(ctx context.Context, q *store.Q) error {
		if _, err := q.LockCredit(ctx, p.AccountID, s.now().UTC()); err != nil {
			return err
		}
		v, err := spending.ViewIn(ctx, q, p.AccountID, chainOf(p), "", windowsOf(s.now()))
		if err != nil {
			return err
		}
		return Judge(p, v, c, false)
	}
}

// PaymentRefused tells the account's owner of a refusal of the call's payment of worst (the
// POLICY_DENIED of AdmitPayment's guard, returned by the payment), and returns err.
func (t *Ticket) PaymentRefused(ctx context.Context, worst int64, err error) error {
	return t.svc.denied(ctx, t.p, t.costing(worst), err)
}

// denied tells the account's owner of a refusal (err, when it is POLICY_DENIED), after the
// refused call's transaction has ended, and returns err. A refusal is answered even when its
// event cannot be written.
func (s *Service) denied(ctx context.Context, p *tools.Principal, c Spend, err error) error {
	var te *tools.Error
	if !errors.As(err, &te) || te.Code != tools.CodePolicyDenied {
		return err
	}
	str := func(k string) string { v, _ := te.Details[k].(string); return v }
	ev, werr := webhooks.New(webhooks.PolicyDenied, p.AccountID, s.now().UTC(), webhooks.PolicyDeniedData{KeyID: p.KeyID, Handle: c.Handle,
		Category: c.Category, Rule: str("rule"), Policy: str("policy"), PolicyKeyID: str("keyId"), Window: str("window"),
		SpentUsd: str("spentUsd"), LeftUsd: str("leftUsd"), MaxChargeUsd: tools.USD(c.WorstMicro).String()})
	if werr == nil {
		werr = s.store.AddWebhookEvents(context.WithoutCancel(ctx), ev)
	}
	if werr != nil {
		s.log.WarnContext(ctx, "record a policy.denied event", "account", p.AccountID, "err", werr)
	}
	return err
}

// Package policies is the owner's side of spend policies and approvals: reading and setting
// the account's and its keys' policies (policy_get, policy_set), and the calls waiting for a
// human (approval_list, approval_get; approval_decide, the portal's alone), and an approval's
// whole life (Approvals, life.go: asked, decided, read and closed; dispatch calls it). What a
// policy means for a call is billing's (billing.Policy, decided in the money seam).
package policies

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shopspring/decimal"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	partnerstore "github.com/switchboard-hq/switchboard/store/partners"
	"github.com/switchboard-hq/switchboard/store/spending"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/keys"
	"github.com/switchboard-hq/switchboard/tools/partners"
	"github.com/switchboard-hq/switchboard/tools/service"
)

// Service serves the policy and approval tools.
type Service struct {
	store     *store.Store
	partners  partnerstore.Partners
	accounts  accounts.Accounts
	spending  spending.Queries
	billing   *billing.Service
	keys      *keys.Service
	approvals *Approvals
	now       func() time.Time
}

// NewService builds the service; approvals is where the owner's decisions are recorded (the
// one dispatch asks with).
func NewService(d service.Deps, bill *billing.Service, ks *keys.Service, approvals *Approvals) *Service {
	d = d.WithDefaults()
	return &Service{store: d.Store, accounts: accounts.New(d.Store), partners: partnerstore.New(d.Store), spending: spending.New(d.Store), billing: bill, keys: ks, approvals: approvals, now: d.Now}
}

// GetInput names whose policy to read.
type GetInput struct {
	KeyID string `json:"keyId,omitempty" jsonschema:"maxLength=64" jsonschema_description:"a key you act on (yours, or one minted under it); default: the calling key (on the portal: the account)"`
}

// Window is what a cap window has spent and has left.
type Window struct {
	Window   string `json:"window" jsonschema_description:"hour, day or 30d"`
	SpentUsd string `json:"spentUsd" jsonschema_description:"what the calls and on-chain movements it covers spent in the window (creditUsd + onchainUsd), calls in flight at the most they can cost"`
	// The two parts of SpentUsd.
	CreditUsd  string `json:"creditUsd" jsonschema_description:"what credit calls cost in the window (fees, and flat fees paid on chain)"`
	OnchainUsd string `json:"onchainUsd" jsonschema_description:"what the embedded wallets paid or sent on chain in the window (x402 payments, sends, proposed transactions) at their USD value when judged; top-ups are not spending"`
	LeftUsd    string `json:"leftUsd,omitempty" jsonschema_description:"what the tightest cap on it leaves (absent when no policy caps the window)"`
}

// GetOutput is a key's (or the account's) policies and what they leave.
type GetOutput struct {
	Account   *billing.Policy `json:"account" jsonschema_description:"the account's policy (null: none), set on the portal or by the operator"`
	Key       *billing.Policy `json:"key" jsonschema_description:"the key's own policy (null: none, or the portal's view of the account)"`
	KeyID     string          `json:"keyId,omitempty"`
	Effective billing.Policy  `json:"effective" jsonschema_description:"every policy that governs the key's calls, combined: the lowest caps and per-call maximum, every deny, every approval rule, and denyByDefault when any says so; its allow is always empty, as allow lists do not combine into one: see allowOnly"`
	AllowOnly []AllowOnly     `json:"allowOnly" jsonschema_description:"the allow list of each governing policy that denies by default, in the order of governing: a call must be named (by its @handle, its publisher or its category) in every one"`
	Governing []string        `json:"governing" jsonschema_description:"whose policies govern the calls: account, then keys from the root down"`
	Windows   []Window        `json:"windows"`
}

// AllowOnly is what a deny-by-default policy lets through: a call its lists name in any way.
type AllowOnly struct {
	Policy string        `json:"policy" jsonschema_description:"whose policy: account, or key <id>"`
	Allow  billing.Lists `json:"allow"`
}

// SetInput is a new policy for a key (or, on the portal, the account).
type SetInput struct {
	KeyID  string          `json:"keyId,omitempty" jsonschema:"maxLength=64" jsonschema_description:"a key you act on (yours, or one minted under it); default: the calling key (on the portal: the account)"`
	Policy *billing.Policy `json:"policy" jsonschema:"nullable" jsonschema_description:"the whole new policy; null removes it. A key may only narrow (never loosen) its own policy and its descendants'"`
}

// target is whose policy a call names: the account's (keyID "") or a key's.
func (s *Service) target(ctx context.Context, c *tools.Caller, keyID string) (string, error) {
	p := c.Principal
	if keyID == "" {
		if p.Method == tools.AuthSession {
			return "", nil
		}
		return p.KeyID, nil
	}
	visible, err := s.keys.Visible(ctx, p)
	if err != nil {
		return "", err
	}
	if !slices.ContainsFunc(visible, func(k *accounts.APIKey) bool { return k.ID == keyID }) {
		return "", tools.Errorf(tools.CodeNotFound, "no key %s that this caller acts on (a key acts on itself and the keys minted under it); api_key_list shows them", keyID)
	}
	return keyID, nil
}

// chain is the keys whose policies govern keyID's calls: its ancestors from the root, then it.
func (s *Service) chain(ctx context.Context, accountID, keyID string) ([]string, error) {
	if keyID == "" {
		return nil, nil
	}
	ks, err := s.accounts.Keys(ctx, accountID)
	if err != nil {
		return nil, err
	}
	parent := map[string]string{}
	for _, k := range ks {
		if k.ParentID != nil {
			parent[k.ID] = *k.ParentID
		}
	}
	out := []string{keyID}
	for id := parent[keyID]; id != "" && len(out) < 64; id = parent[id] {
		out = append(out, id)
	}
	slices.Reverse(out)
	return out, nil
}

func parse(row *spending.Policy) (*billing.Policy, error) {
	if row == nil {
		return nil, nil
	}
	p, err := billing.ParsePolicy([]byte(row.Body))
	if err != nil {
		return nil, fmt.Errorf("stored policy of %s/%q: %w", row.AccountID, row.KeyID, err)
	}
	n := p.Normalized()
	return &n, nil
}

func (s *Service) get(ctx context.Context, c *tools.Caller, in GetInput) (GetOutput, error) {
	keyID, err := s.target(ctx, c, in.KeyID)
	if err != nil {
		return GetOutput{}, err
	}
	return s.read(ctx, c.AccountID(), keyID)
}

func (s *Service) read(ctx context.Context, accountID, keyID string) (GetOutput, error) {
	chain, err := s.chain(ctx, accountID, keyID)
	if err != nil {
		return GetOutput{}, err
	}
	rows, err := s.spending.Policies(ctx, accountID, chain...)
	if err != nil {
		return GetOutput{}, err
	}
	out := GetOutput{KeyID: keyID, AllowOnly: []AllowOnly{}, Governing: []string{}, Windows: []Window{}}
	byKey := map[string]*billing.Policy{}
	for _, r := range rows {
		p, err := parse(r)
		if err != nil {
			return GetOutput{}, err
		}
		byKey[r.KeyID] = p
	}
	out.Account = byKey[""]
	if keyID != "" {
		out.Key = byKey[keyID]
	}
	var governing []*billing.Policy
	limits := map[string]int64{} // window -> the least left under any cap
	now := s.now().UTC()
	since := make([]time.Time, len(billing.Windows))
	for i, w := range billing.Windows {
		since[i] = now.Add(-w.Span)
	}
	for _, k := range append([]string{""}, chain...) {
		p := byKey[k]
		if p == nil {
			continue
		}
		governing = append(governing, p)
		whose := "account"
		if k != "" {
			whose = "key " + k
		}
		out.Governing = append(out.Governing, whose)
		if p.DenyByDefault {
			out.AllowOnly = append(out.AllowOnly, AllowOnly{Policy: whose, Allow: p.Allow})
		}
		if len(p.Caps) == 0 {
			continue
		}
		spent, err := s.spending.Spent(ctx, accountID, k, since)
		if err != nil {
			return GetOutput{}, err
		}
		for _, cp := range p.Caps {
			i := slices.IndexFunc(billing.Windows, func(w struct {
				Name string
				Span time.Duration
			}) bool {
				return w.Name == cp.Window
			})
			limit := billing.MicroUSD(mustDecimal(cp.USD))
			left := max(limit-spent[i], 0)
			if was, ok := limits[cp.Window]; !ok || left < was {
				limits[cp.Window] = left
			}
		}
	}
	out.Effective = combine(governing)
	credit, onchain, err := s.spending.SpentParts(ctx, accountID, keyID, since)
	if err != nil {
		return GetOutput{}, err
	}
	for i, w := range billing.Windows {
		win := Window{Window: w.Name, SpentUsd: tools.USD(credit[i] + onchain[i]).String(),
			CreditUsd: tools.USD(credit[i]).String(), OnchainUsd: tools.USD(onchain[i]).String()}
		if left, ok := limits[w.Name]; ok {
			win.LeftUsd = tools.USD(left).String()
		}
		out.Windows = append(out.Windows, win)
	}
	return out, nil
}

// combine is the policies as one, in what combines as billing.Judge applies them: each
// policy's caps, maximum, denies and approval rules. Allow lists do not: Judge lets a call
// through a deny-by-default policy when any of its lists names it, so two policies allowing
// a handle and a category allow that handle's calls of that category, which no one list
// says; the effective allow stays empty, and read shows each policy's (AllowOnly).
func combine(ps []*billing.Policy) billing.Policy {
	var e billing.Policy
	minUSD := func(a, b string) string {
		if a == "" {
			return b
		}
		if b == "" || mustDecimal(a).LessThan(mustDecimal(b)) {
			return a
		}
		return b
	}
	union := func(a, b []string) []string {
		for _, s := range b {
			if !slices.Contains(a, s) {
				a = append(a, s)
			}
		}
		return a
	}
	caps := map[string]string{}
	for _, p := range ps {
		for _, c := range p.Caps {
			caps[c.Window] = minUSD(caps[c.Window], c.USD)
		}
		e.PerCallMaxUsd = minUSD(e.PerCallMaxUsd, p.PerCallMaxUsd)
		e.Deny.Handles, e.Deny.Publishers, e.Deny.Categories = union(e.Deny.Handles, p.Deny.Handles), union(e.Deny.Publishers, p.Deny.Publishers), union(e.Deny.Categories, p.Deny.Categories)
		e.Deny.Recipients, e.Deny.Hosts, e.Deny.Contracts = union(e.Deny.Recipients, p.Deny.Recipients), union(e.Deny.Hosts, p.Deny.Hosts), union(e.Deny.Contracts, p.Deny.Contracts)
		e.DenyByDefault = e.DenyByDefault || p.DenyByDefault
		e.Approval.AboveUsd = minUSD(e.Approval.AboveUsd, p.Approval.AboveUsd)
		e.Approval.Categories = union(e.Approval.Categories, p.Approval.Categories)
		e.Approval.FirstCallToPartner = e.Approval.FirstCallToPartner || p.Approval.FirstCallToPartner
	}
	for _, w := range billing.Windows {
		if v, ok := caps[w.Name]; ok {
			e.Caps = append(e.Caps, billing.Cap{Window: w.Name, USD: v})
		}
	}
	return e.Normalized()
}

func (s *Service) set(ctx context.Context, c *tools.Caller, in SetInput) (GetOutput, error) {
	p := c.Principal
	keyID, err := s.target(ctx, c, in.KeyID)
	if err != nil {
		return GetOutput{}, err
	}
	by := "portal"
	if p.Method != tools.AuthSession {
		by = "key " + p.KeyID
	}
	if err := s.Put(ctx, p.AccountID, keyID, in.Policy, by, p.Method != tools.AuthSession); err != nil {
		return GetOutput{}, err
	}
	return s.read(ctx, p.AccountID, keyID)
}

// SetAs sets a policy as the account's owner does (the operator's CLI): any key's or the
// account's, loosening included, and answers what policy_get would.
func (s *Service) SetAs(ctx context.Context, accountID, keyID string, pol *billing.Policy, by string) (GetOutput, error) {
	if err := s.Put(ctx, accountID, keyID, pol, by, false); err != nil {
		return GetOutput{}, err
	}
	return s.read(ctx, accountID, keyID)
}

// Put checks and writes a policy (nil removes it). narrowOnly: the writer is a key, which may
// only make the policy stricter than it is (the portal's human and the operator may loosen it).
// The policy in force is read, checked against and replaced in one transaction with it locked:
// an owner's tightening meanwhile is never overwritten by a key's write checked against the
// older policy.
func (s *Service) Put(ctx context.Context, accountID, keyID string, pol *billing.Policy, by string, narrowOnly bool) error {
	if narrowOnly && keyID == "" {
		return tools.Errorf(tools.CodeForbidden, "only the account's owner (signed in on the portal) or the operator sets the account's policy; a key sets its own policy and its descendants' (pass keyId, or none for its own)")
	}
	row := &spending.Policy{AccountID: accountID, KeyID: keyID, UpdatedAt: s.now().UTC(), UpdatedBy: by}
	if pol != nil {
		if err := pol.Check(); err != nil {
			return err
		}
		n := pol.Normalized()
		if err := s.known(ctx, &n); err != nil {
			return err
		}
		if err := s.aboveHeld(ctx, accountID, keyID, &n); err != nil {
			return err
		}
		raw, err := json.Marshal(n)
		if err != nil {
			return err
		}
		row.Body = string(raw)
		pol = &n
	}
	err := s.store.InTx(ctx, func(ctx context.Context, q *store.Q) error {
		old, err := spending.PolicyForUpdate(ctx, q, accountID, keyID)
		if errors.Is(err, store.ErrNotFound) {
			return tools.Errorf(tools.CodeNotFound, "no key %s in account %s", keyID, accountID)
		}
		if err != nil {
			return err
		}
		if narrowOnly {
			if err := narrows(old, pol); err != nil {
				return err
			}
		}
		return spending.PutPolicy(ctx, q, row)
	})
	if err != nil {
		return err
	}
	s.billing.ForgetPolicies(accountID)
	s.billing.ReturnLeases(accountID) // a call on a lease is not held where a cap can see it
	return nil
}

// narrows refuses a key's new policy (nil: none) that loosens the one in force, old.
func narrows(old *spending.Policy, pol *billing.Policy) error {
	oldPol, err := parse(old)
	if err != nil {
		return err
	}
	if oldPol != nil && pol == nil {
		return tools.Errorf(tools.CodeForbidden, "a key cannot remove a policy (that would loosen it); set a stricter one, or ask the account's owner on the portal")
	}
	if pol != nil {
		if ok, rule := pol.Narrows(oldPol); !ok {
			return tools.Errorf(tools.CodeForbidden, "the new policy loosens %s of the one in force; a key may only narrow a policy (the account's owner may loosen it on the portal)", rule).
				WithDetails(map[string]any{"rule": rule})
		}
	}
	return nil
}

// known refuses lists that name what does not exist, saying which.
func (s *Service) known(ctx context.Context, p *billing.Policy) error {
	cats := append(slices.Clone(partners.WriteCategories), partners.IdempotentCategories...)
	cats = append(cats, billing.CategoryX402) // an x402 payment from the embedded wallet (x402_fetch)
	for name, l := range map[string][]string{"allow.categories": p.Allow.Categories, "deny.categories": p.Deny.Categories, "approval.categories": p.Approval.Categories} {
		for _, cat := range l {
			if !slices.Contains(cats, cat) {
				return tools.Errorf(tools.CodeBadInput, "%s: %q is not a category; the categories are %s", name, cat, strings.Join(cats, ", "))
			}
		}
	}
	for name, l := range map[string][]string{"allow.handles": p.Allow.Handles, "deny.handles": p.Deny.Handles} {
		for _, h := range l {
			if _, err := s.partners.IntentByHandle(ctx, h); errors.Is(err, store.ErrNotFound) {
				return tools.Errorf(tools.CodeBadInput, "%s: no partner %s; use discover to find handles", name, h)
			} else if err != nil {
				return err
			}
		}
	}
	for name, l := range map[string][]string{"allow.publishers": p.Allow.Publishers, "deny.publishers": p.Deny.Publishers} {
		for _, id := range l {
			if ok, err := s.spending.PartnerExists(ctx, id); err != nil {
				return err
			} else if !ok {
				return tools.Errorf(tools.CodeBadInput, "%s: no publisher %s (publishers are named by the partnerId discover shows)", name, id)
			}
		}
	}
	return nil
}

// aboveHeld refuses a cap below what calls in flight under it hold now.
func (s *Service) aboveHeld(ctx context.Context, accountID, keyID string, p *billing.Policy) error {
	if len(p.Caps) == 0 {
		return nil
	}
	held, err := s.spending.Held(ctx, accountID, keyID)
	if err != nil {
		return err
	}
	for _, c := range p.Caps {
		if m := billing.MicroUSD(mustDecimal(c.USD)); m < held {
			return tools.Errorf(tools.CodeBadInput, "caps: the %s cap of %s USD is below the %s USD that calls in flight hold now; set it at least that high, or wait for them to finish", c.Window, c.USD, tools.USD(held))
		}
	}
	return nil
}

func mustDecimal(s string) decimal.Decimal {
	d, _ := decimal.NewFromString(s) // checked by billing.Policy.Check before it is kept
	return d
}

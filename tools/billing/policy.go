package billing

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shopspring/decimal"
	"github.com/switchboard-hq/switchboard/store/spending"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/jsonlimit"
)

// Spend policies are the owner's bounds on what an account's calls may spend, decided here, in
// the money seam, for every call and every door: the account's policy and each policy on the
// calling key's chain (its ancestors' and its own) must all allow a call, and each one's caps
// count the spending of what it covers (the whole account, or a key with its descendants).
// A call is checked twice: when it is asked for (Admit: refused before anything is quoted or
// sent, or sent to a human for approval), and under the account's credit lock when its
// worst case is held (Hold), where the caps are exact: calls held one after another see each
// other, so concurrent calls never spend past a cap. A call on a key under a policy with caps
// is never drawn from a budget lease (its hold must be written to be seen).

// Policy is DESIGN.md's policy shape. Amounts are decimal USD strings.
type Policy struct {
	Caps          []Cap        `json:"caps,omitempty" jsonschema:"maxItems=3" jsonschema_description:"spend caps per rolling window: at most one per window"`
	PerCallMaxUsd string       `json:"perCallMaxUsd,omitempty" jsonschema_description:"the most one call may cost, in USD (its worst case: fees, gas, or a flat fee)"`
	Allow         Lists        `json:"allow,omitempty" jsonschema_description:"with denyByDefault: only these are allowed"`
	Deny          Lists        `json:"deny,omitempty" jsonschema_description:"never allowed, whatever else says"`
	DenyByDefault bool         `json:"denyByDefault,omitempty" jsonschema_description:"only what allow names may be called"`
	Approval      ApprovalRule `json:"approval,omitempty" jsonschema_description:"calls a human approves first, in the portal"`
}

// Cap bounds the spending of a rolling window.
type Cap struct {
	Window string `json:"window" jsonschema:"enum=hour,enum=day,enum=30d" jsonschema_description:"the rolling window: the last hour, day (24 h) or 30 days"`
	USD    string `json:"usd" jsonschema_description:"the most the window's calls may cost, in USD (more than 0)"`
}

// Lists name partners by @handle, by publisher (the partnerId discover shows) and by category,
// and on-chain movements by where their money goes: a recipient's address, an x402 resource's
// host, a proposed transaction's contract.
type Lists struct {
	Handles    []string `json:"handles,omitempty" jsonschema:"maxItems=200" jsonschema_description:"@handles"`
	Publishers []string `json:"publishers,omitempty" jsonschema:"maxItems=200" jsonschema_description:"publishers, by partnerId"`
	Categories []string `json:"categories,omitempty" jsonschema:"maxItems=50" jsonschema_description:"categories, e.g. QUERY, SWAP, SEND, X402"`
	Recipients []string `json:"recipients,omitempty" jsonschema:"maxItems=200" jsonschema_description:"addresses money is sent or paid to (wallet sends, x402 payments' payTo); EVM addresses match whatever their case"`
	Hosts      []string `json:"hosts,omitempty" jsonschema:"maxItems=200" jsonschema_description:"x402 resources by host name, e.g. api.example.com (x402_fetch)"`
	Contracts  []string `json:"contracts,omitempty" jsonschema:"maxItems=200" jsonschema_description:"contracts a partner-proposed transaction calls (its to), by address"`
}

// CategoryX402 is the category of an x402 payment from the embedded wallet (x402_fetch), for
// the lists and approval rules; a wallet send is SEND, the partner category of the same name.
const CategoryX402 = "X402"

// CategorySend is a wallet send's category (wallet_send), the partner category of its name.
const CategorySend = "SEND"

// empty reports whether l names nothing.
func (l Lists) empty() bool {
	return len(l.Handles)+len(l.Publishers)+len(l.Categories)+len(l.Recipients)+len(l.Hosts)+len(l.Contracts) == 0
}

// Address is how a list entry or a movement's address is compared: an EVM address whatever
// its case, anything else (a Solana address is case-sensitive base58) as it is.
func Address(a string) string {
	if len(a) == 42 && (strings.HasPrefix(a, "0x") || strings.HasPrefix(a, "0X")) {
		return "0x" + strings.ToLower(a[2:])
	}
	return a
}

// ApprovalRule sends calls to a human: above an amount, in listed categories, or a caller's
// first call to a partner.
type ApprovalRule struct {
	AboveUsd           string   `json:"aboveUsd,omitempty" jsonschema_description:"calls whose worst case is above this many USD"`
	Categories         []string `json:"categories,omitempty" jsonschema:"maxItems=50" jsonschema_description:"calls of these categories"`
	FirstCallToPartner bool     `json:"firstCallToPartner,omitempty" jsonschema_description:"the account's first call of each @handle"`
}

// Windows are the cap windows, shortest first.
var Windows = []struct {
	Name string
	Span time.Duration
}{{"hour", time.Hour}, {"day", 24 * time.Hour}, {"30d", 30 * 24 * time.Hour}}

func windowSpan(name string) (time.Duration, bool) {
	for _, w := range Windows {
		if w.Name == name {
			return w.Span, true
		}
	}
	return 0, false
}

// MaxPolicyBytes bounds a policy's JSON.
const MaxPolicyBytes = 32 << 10

// ParsePolicy reads a stored or given policy's JSON, strictly (unknown fields are refused).
func ParsePolicy(raw []byte) (*Policy, error) {
	if len(raw) > MaxPolicyBytes {
		return nil, tools.Errorf(tools.CodeBadInput, "the policy is %d bytes; at most %d", len(raw), MaxPolicyBytes)
	}
	if err := jsonlimit.Request(raw); err != nil {
		return nil, tools.Errorf(tools.CodeBadInput, "the policy: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	p := new(Policy)
	if err := dec.Decode(p); err != nil {
		return nil, tools.Errorf(tools.CodeBadInput, "the policy is not DESIGN's shape: %v", err)
	}
	return p, p.Check()
}

// usd reads a policy amount: a decimal USD string of at most 6 decimals.
func usd(field, s string, positive bool) (int64, error) {
	d, err := decimal.NewFromString(s)
	if err != nil || d.IsNegative() || d.Exponent() < -6 {
		return 0, tools.Errorf(tools.CodeBadInput, "%s must be a decimal USD amount with at most 6 decimals, like \"5.00\"; got %q", field, s)
	}
	if positive && d.IsZero() {
		return 0, tools.Errorf(tools.CodeBadInput, "%s is 0, which would allow nothing; remove it, or deny what you mean to deny", field)
	}
	if d.GreaterThan(decimal.NewFromInt(MaxGrantMicro / 1_000_000)) {
		return 0, tools.Errorf(tools.CodeBadInput, "%s is more than %d USD, more than any account can hold", field, MaxGrantMicro/1_000_000)
	}
	return MicroUSD(d), nil
}

// Check refuses a policy that is not well formed, saying what to fix. Whether the handles,
// publishers and categories it names exist is the caller's to check (they are the
// marketplace's).
func (p *Policy) Check() error {
	seen := map[string]bool{}
	for i, c := range p.Caps {
		if _, ok := windowSpan(c.Window); !ok {
			return tools.Errorf(tools.CodeBadInput, "caps[%d].window %q is not a window; use hour, day or 30d", i, c.Window)
		}
		if seen[c.Window] {
			return tools.Errorf(tools.CodeBadInput, "caps names the window %s twice; keep one cap per window", c.Window)
		}
		seen[c.Window] = true
		if _, err := usd(fmt.Sprintf("caps[%d].usd", i), c.USD, true); err != nil {
			return err
		}
	}
	if p.PerCallMaxUsd != "" {
		if _, err := usd("perCallMaxUsd", p.PerCallMaxUsd, true); err != nil {
			return err
		}
	}
	if p.Approval.AboveUsd != "" {
		if _, err := usd("approval.aboveUsd", p.Approval.AboveUsd, false); err != nil {
			return err
		}
	}
	for name, l := range map[string][]string{"allow.handles": p.Allow.Handles, "deny.handles": p.Deny.Handles} {
		for _, h := range l {
			if !strings.HasPrefix(h, "@") {
				return tools.Errorf(tools.CodeBadInput, "%s: %q is not an @handle", name, h)
			}
		}
	}
	if p.DenyByDefault && p.Allow.empty() {
		return tools.Errorf(tools.CodeBadInput, "denyByDefault with nothing in allow would refuse every call; name what is allowed in allow, or revoke the key instead")
	}
	return nil
}

// Normalized is the policy with its lists never null, handles lowercased and sorted (how it
// is stored and shown).
func (p Policy) Normalized() Policy {
	norm := func(l []string, lower bool) []string {
		out := make([]string, 0, len(l))
		for _, s := range l {
			if lower {
				s = strings.ToLower(s)
			}
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
		slices.Sort(out)
		return out
	}
	addrs := func(l []string) []string {
		out := make([]string, len(l))
		for i, a := range l {
			out[i] = Address(a)
		}
		return norm(out, false)
	}
	lists := func(l Lists) Lists {
		return Lists{Handles: norm(l.Handles, true), Publishers: norm(l.Publishers, false), Categories: norm(l.Categories, false),
			Recipients: addrs(l.Recipients), Hosts: norm(l.Hosts, true), Contracts: addrs(l.Contracts)}
	}
	p.Allow, p.Deny = lists(p.Allow), lists(p.Deny)
	p.Approval.Categories = norm(p.Approval.Categories, false)
	if p.Caps == nil {
		p.Caps = []Cap{}
	}
	slices.SortFunc(p.Caps, func(a, b Cap) int {
		sa, _ := windowSpan(a.Window)
		sb, _ := windowSpan(b.Window)
		return int(sa - sb)
	})
	return p
}

// Narrows reports whether p is at least as strict as old in every rule (nil old: no policy),
// and if not, the first rule it loosens: what a key may set on itself or its descendants.
func (p *Policy) Narrows(old *Policy) (bool, string) {
	if old == nil {
		return true, ""
	}
	capOf := func(ps *Policy, window string) (int64, bool) {
		for _, c := range ps.Caps {
			if c.Window == window {
				m, _ := usd("", c.USD, true)
				return m, true
			}
		}
		return 0, false
	}
	for _, c := range old.Caps {
		was, _ := capOf(old, c.Window)
		now, ok := capOf(p, c.Window)
		if !ok || now > was {
			return false, "caps." + c.Window
		}
	}
	if atMost := func(was, now string) bool {
		if was == "" {
			return true
		}
		if now == "" {
			return false
		}
		w, _ := usd("", was, false)
		n, _ := usd("", now, false)
		return n <= w
	}; !atMost(old.PerCallMaxUsd, p.PerCallMaxUsd) {
		return false, "perCallMaxUsd"
	} else if !atMost(old.Approval.AboveUsd, p.Approval.AboveUsd) {
		return false, "approval.aboveUsd"
	}
	superset := func(was, now []string) bool {
		for _, s := range was {
			if !slices.Contains(now, s) {
				return false
			}
		}
		return true
	}
	if name := denyLoosened(old.Deny, p.Deny, superset); name != "" {
		return false, "deny." + name
	}
	switch {
	case !superset(old.Approval.Categories, p.Approval.Categories):
		return false, "approval.categories"
	case old.Approval.FirstCallToPartner && !p.Approval.FirstCallToPartner:
		return false, "approval.firstCallToPartner"
	case old.DenyByDefault && !p.DenyByDefault:
		return false, "denyByDefault"
	case old.DenyByDefault && !allowsWithin(p.Allow, old.Allow, superset):
		return false, "allow"
	}
	return true, ""
}

// denyLoosened is the first deny list now lacks an entry of ("" when none does).
func denyLoosened(old, now Lists, superset func(was, now []string) bool) string {
	for _, l := range []struct {
		name     string
		was, now []string
	}{{"handles", old.Handles, now.Handles}, {"publishers", old.Publishers, now.Publishers}, {"categories", old.Categories, now.Categories},
		{"recipients", old.Recipients, now.Recipients}, {"hosts", old.Hosts, now.Hosts}, {"contracts", old.Contracts, now.Contracts}} {
		if !superset(l.was, l.now) {
			return l.name
		}
	}
	return ""
}

// allowsWithin reports whether the allow lists now name nothing the old ones did not.
func allowsWithin(now, old Lists, superset func(was, now []string) bool) bool {
	return superset(now.Handles, old.Handles) && superset(now.Publishers, old.Publishers) && superset(now.Categories, old.Categories) &&
		superset(now.Recipients, old.Recipients) && superset(now.Hosts, old.Hosts) && superset(now.Contracts, old.Contracts)
}

// scoped is a policy with what it covers: the account (KeyID "") or a key and its descendants.
type scoped struct {
	KeyID  string
	Policy *Policy
}

func (sp scoped) name() string {
	if sp.KeyID == "" {
		return "account"
	}
	return "key " + sp.KeyID
}

// PolicyDenied is a call a policy refuses.
func policyDenied(sp scoped, rule, why string, details map[string]any) *tools.Error {
	d := map[string]any{"rule": rule, "policy": "account"}
	if sp.KeyID != "" {
		d["policy"], d["keyId"] = "key", sp.KeyID
	}
	for k, v := range details {
		d[k] = v
	}
	return tools.Errorf(tools.CodePolicyDenied, "the %s's spend policy refuses this call (%s): %s. Its owner sets the policy (policy_get shows it)", sp.name(), rule, why).WithDetails(d)
}

// allows applies a policy's lists and per-call maximum to a call.
func (sp scoped) allows(c Spend) error {
	p := sp.Policy
	lists := []struct {
		rule, what string
		in         []string
		eq         func(a, b string) bool
	}{{"deny.handles", c.Handle, p.Deny.Handles, exact}, {"deny.publishers", c.PublisherID, p.Deny.Publishers, exact}, {"deny.categories", c.Category, p.Deny.Categories, exact},
		{"deny.recipients", c.Recipient, p.Deny.Recipients, sameAddress}, {"deny.hosts", c.Host, p.Deny.Hosts, strings.EqualFold}, {"deny.contracts", c.Contract, p.Deny.Contracts, sameAddress}}
	for _, l := range lists {
		if listed(l.in, l.what, l.eq) {
			return policyDenied(sp, l.rule, fmt.Sprintf("%s is denied", l.what), nil)
		}
	}
	if c.Unpriced && (p.PerCallMaxUsd != "" || len(p.Caps) > 0 || p.Approval.AboveUsd != "") {
		return policyDenied(sp, "unpriced", "its USD value cannot be known (no price provider gives the token a current price), and the policy bounds spending in USD (caps, perCallMaxUsd or approval.aboveUsd)", nil)
	}
	if p.DenyByDefault && !named(p.Allow, c) {
		return policyDenied(sp, "denyByDefault", fmt.Sprintf("only what allow names may be called, and it names none of %s", c.what()), nil)
	}
	if p.PerCallMaxUsd != "" {
		if m, _ := usd("", p.PerCallMaxUsd, true); c.WorstMicro > m {
			return policyDenied(sp, "perCallMaxUsd", fmt.Sprintf("it may cost up to %s USD and one call may cost at most %s USD", tools.USD(c.WorstMicro), tools.USD(m)),
				map[string]any{"maxChargeUsd": tools.USD(c.WorstMicro).String(), "perCallMaxUsd": tools.USD(m).String()})
		}
	}
	return nil
}

// named reports whether an allow list names call c in any way.
func named(l Lists, c Spend) bool {
	return listed(l.Handles, c.Handle, exact) || listed(l.Publishers, c.PublisherID, exact) || listed(l.Categories, c.Category, exact) ||
		listed(l.Recipients, c.Recipient, sameAddress) || listed(l.Hosts, c.Host, strings.EqualFold) || listed(l.Contracts, c.Contract, sameAddress)
}

// listed reports whether list names what ("" is never named), by eq.
func listed(list []string, what string, eq func(a, b string) bool) bool {
	return what != "" && slices.ContainsFunc(list, func(s string) bool { return eq(s, what) })
}

// exact, sameAddress and strings.EqualFold (hosts) are how list entries compare: addresses
// whatever an EVM address's case, as a policy stored before it was normalized may hold them.
func exact(a, b string) bool       { return a == b }
func sameAddress(a, b string) bool { return Address(a) == Address(b) }

// what names what the lists could name of c, for a refusal.
func (c Spend) what() string {
	var out []string
	for _, s := range []string{c.Handle, c.PublisherID, c.Category, c.Recipient, c.Host, c.Contract} {
		if s != "" {
			out = append(out, s)
		}
	}
	return strings.Join(out, ", ")
}

// within applies a policy's caps to a call, given what its windows have spent (sums, in the
// order of Windows).
func (sp scoped) within(c Spend, sums []int64) error {
	for _, cp := range sp.Policy.Caps {
		limit, _ := usd("", cp.USD, true)
		i := slices.IndexFunc(Windows, func(w struct {
			Name string
			Span time.Duration
		}) bool {
			return w.Name == cp.Window
		})
		if sums[i]+c.WorstMicro > limit {
			left := max(limit-sums[i], 0)
			return policyDenied(sp, "caps."+cp.Window, fmt.Sprintf("it may cost up to %s USD and the last %s has spent or holds %s of its %s USD cap (%s USD left)",
				tools.USD(c.WorstMicro), cp.Window, tools.USD(sums[i]), tools.USD(limit), tools.USD(left)),
				map[string]any{"window": cp.Window, "spentUsd": tools.USD(sums[i]).String(), "leftUsd": tools.USD(left).String(), "capUsd": tools.USD(limit).String(), "maxChargeUsd": tools.USD(c.WorstMicro).String()})
		}
	}
	return nil
}

// approval is the first approval rule a policy asks of a call ("" for none); calledBefore:
// the account has called the intent before.
func (sp scoped) approval(c Spend, calledBefore bool) string {
	a := sp.Policy.Approval
	if a.AboveUsd != "" {
		if m, _ := usd("", a.AboveUsd, false); c.WorstMicro > m {
			return "approval.aboveUsd"
		}
	}
	switch {
	case slices.Contains(a.Categories, c.Category):
		return "approval.categories"
	case a.FirstCallToPartner && !calledBefore:
		return "approval.firstCallToPartner"
	}
	return ""
}

// ErrApprovalRequired is a call a policy sends to a human first.
type ErrApprovalRequired struct{ Rule string }

func (e *ErrApprovalRequired) Error() string {
	return "the call needs its owner's approval (" + e.Rule + ")"
}

// Judge is the one decision of what p's policies, as read in v, say of call c: nil (it may go
// on), POLICY_DENIED naming the rule, or, with asking (a call being asked for, not yet held),
// *ErrApprovalRequired. Every governing policy must allow it, lists and maximum first, then
// caps (each counting what it covers); a call then goes to a human when any policy's approval
// rule says so.
func Judge(p *tools.Principal, v *spending.View, c Spend, asking bool) error {
	ps, err := governing(p, v.Policies)
	if err != nil {
		return err
	}
	for _, sp := range ps {
		if err := sp.allows(c); err != nil {
			return err
		}
	}
	for _, sp := range ps {
		if err := sp.within(c, v.Spent[sp.KeyID]); err != nil {
			return err
		}
	}
	if !asking {
		return nil
	}
	for _, sp := range ps {
		if rule := sp.approval(c, v.CalledBefore); rule != "" {
			return &ErrApprovalRequired{Rule: rule}
		}
	}
	return nil
}

// chainOf are the keys whose policies govern p's calls, root first, then p's own.
func chainOf(p *tools.Principal) []string {
	if p.KeyID == "" {
		return nil
	}
	keys := make([]string, 0, 1+len(p.Ancestors))
	for i := len(p.Ancestors) - 1; i >= 0; i-- {
		keys = append(keys, p.Ancestors[i].KeyID)
	}
	return append(keys, p.KeyID)
}

// governing orders the stored policies that govern p: the account's, then its key chain's
// from the root down.
func governing(p *tools.Principal, rows []*spending.Policy) ([]scoped, error) {
	order := append([]string{""}, chainOf(p)...)
	out := make([]scoped, 0, len(rows))
	for _, k := range order {
		for _, r := range rows {
			if r.KeyID != k {
				continue
			}
			pol, err := ParsePolicy([]byte(r.Body))
			if err != nil {
				return nil, fmt.Errorf("stored policy of %s/%q: %w", r.AccountID, r.KeyID, err)
			}
			out = append(out, scoped{KeyID: k, Policy: pol})
		}
	}
	return out, nil
}

// windowsSince are the starts of the cap windows at now, in the order of Windows.
func windowsSince(now time.Time) []time.Time {
	out := make([]time.Time, len(Windows))
	for i, w := range Windows {
		out[i] = now.UTC().Add(-w.Span)
	}
	return out
}

// windowsOf is what a policy's check needs summed at now (spending.View's since): the starts
// of the windows the stored policy caps, in the order of Windows, where a window it does not
// cap starts at now (it sums nothing and reads no older call); nil when it caps none, so a
// policy of lists, a per-call maximum or approvals alone reads no history at all. A body that
// does not parse gets every window: Judge refuses the call with its error.
func windowsOf(now time.Time) func(*spending.Policy) []time.Time {
	now = now.UTC()
	return func(row *spending.Policy) []time.Time {
		pol, err := ParsePolicy([]byte(row.Body))
		if err != nil {
			return windowsSince(now)
		}
		if len(pol.Caps) == 0 {
			return nil
		}
		out := make([]time.Time, len(Windows))
		for i, w := range Windows {
			out[i] = now
			if slices.ContainsFunc(pol.Caps, func(c Cap) bool { return c.Window == w.Name }) {
				out[i] = now.Add(-w.Span)
			}
		}
		return out
	}
}

package tools

import (
	"context"
	"slices"
	"strings"
)

// Toolset is a group of tools a host may choose to be shown (an MCP host puts every listed
// tool's definition into its model's context). A tool's toolset follows from its access, so
// it is declared once, with the tool's scope.
type Toolset string

// The toolsets, in listing order.
const (
	ToolsetOnboarding Toolset = "onboarding" // the tools that need no key: sign up, verify
	ToolsetAgent      Toolset = "agent"      // keys, account, look-ups, discovery, invoking partners, wallets
	ToolsetPartner    Toolset = "partner"    // publishing and running intents (scope publish)
	// ToolsetOwner is the owner's controls an agent reads or narrows (spend policies,
	// approvals): listed only when a host asks for it, so an agent's default list stays small
	// (POLICY_DENIED and APPROVAL_REQUIRED answers say what to do without them).
	ToolsetOwner Toolset = "owner"
)

var allToolsets = []Toolset{ToolsetOnboarding, ToolsetAgent, ToolsetPartner, ToolsetOwner}

// Toolsets returns every toolset, in listing order.
func Toolsets() []Toolset { return slices.Clone(allToolsets) }

// Toolset is the toolset t belongs to: the one its definition names, else onboarding without
// a key, partner with scope publish, agent otherwise.
func (t *Tool) Toolset() Toolset {
	switch {
	case t.Def.Toolset != "":
		return t.Def.Toolset
	case !t.Access.NeedsKey():
		return ToolsetOnboarding
	case t.Access.Scope() == ScopePublish:
		return ToolsetPartner
	default:
		return ToolsetAgent
	}
}

// ParseToolsets reads a host's choice: names separated by commas, any case, spaces ignored;
// "" chooses none (the caller's default). An unknown name is refused, saying which exist,
// rather than silently listing less.
func ParseToolsets(s string) ([]Toolset, *Error) {
	var out []Toolset
	for name := range strings.SplitSeq(s, ",") {
		name = strings.ToLower(strings.TrimSpace(name))
		if name == "" {
			continue
		}
		ts := Toolset(name)
		if !slices.Contains(allToolsets, ts) {
			return nil, Errorf(CodeBadInput, "unknown toolset %q; the toolsets are %s (comma-separated), or none for the default", name, joinToolsets(allToolsets))
		}
		if !slices.Contains(out, ts) {
			out = append(out, ts)
		}
	}
	return out, nil
}

func joinToolsets(ts []Toolset) string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = string(t)
	}
	return strings.Join(names, ", ")
}

// Listed returns the tools a host is shown, in registration order: those of the chosen
// toolsets that the caller may call. Without a choice, a keyless caller is shown onboarding
// and agent (an MCP host that signs in by MCP authorization does so when its model first calls
// a keyed tool, so the agent tools must be listed before it has a key), and a keyed caller
// agent and partner: a key has no use for onboarding. A keyless caller that names partner is
// shown it too (it signs in on the first call). A key is shown only the tools its scopes
// allow; a key that does not authenticate is refused as a keyed call would be.
func (k *Kernel) Listed(ctx context.Context, apiKey string, chosen []Toolset) ([]*Tool, error) {
	var p *Principal
	if apiKey != "" {
		var err error
		if p, err = k.auth.Authenticate(ctx, apiKey); err != nil {
			return nil, err
		}
	}
	if len(chosen) == 0 {
		chosen = []Toolset{ToolsetAgent, ToolsetPartner}
		if p == nil {
			chosen = []Toolset{ToolsetOnboarding, ToolsetAgent}
		}
	}
	var out []*Tool
	for _, t := range k.tools {
		if slices.Contains(chosen, t.Toolset()) && (p == nil || p.May(t.Access)) {
			out = append(out, t)
		}
	}
	return out, nil
}

// May reports whether the principal may call a tool of access a (every tool with its
// scope, or none required).
func (p *Principal) May(a Access) bool { return a.scope == "" || p.HasScope(a.scope) }

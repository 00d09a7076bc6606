package tools

import (
	"slices"

	invopop "github.com/invopop/jsonschema"
)

// Scope is a permission an API key carries. The set is closed: the constants below are every
// scope there is, a key is minted only with these, and NewKernel refuses a tool that requires
// any other (a typo would otherwise compile and make the tool uncallable).
type Scope string

// The scopes, in the spec's order.
const (
	ScopeRead    Scope = "read"    // look-ups: tokens, prices, balances, discovery
	ScopeQuote   Scope = "quote"   // in the spec's set; no tool requires it alone yet
	ScopeSwap    Scope = "swap"    // SWAP intents, beside partner (partners' rules)
	ScopeBridge  Scope = "bridge"  // BRIDGE intents, beside partner
	ScopeSend    Scope = "send"    // SEND and TRANSFER intents, beside partner
	ScopeWallet  Scope = "wallet"  // connecting and removing wallets
	ScopePublish Scope = "publish" // the partner tools: publish, manage, receipts
	ScopePartner Scope = "partner" // invoking partner intents
)

var allScopes = []Scope{ScopeRead, ScopeQuote, ScopeSwap, ScopeBridge, ScopeSend, ScopeWallet, ScopePublish, ScopePartner}

// Scopes returns every scope, in the spec's order. The first key of an account carries all.
func Scopes() []Scope { return slices.Clone(allScopes) }

// ScopeNames returns every scope as the strings a stored key holds, in the spec's order.
func ScopeNames() []string {
	names := make([]string, len(allScopes))
	for i, s := range allScopes {
		names[i] = string(s)
	}
	return names
}

// Known reports whether s is one of the scopes.
func (s Scope) Known() bool { return slices.Contains(allScopes, s) }

// JSONSchema is a string limited to the scopes, so every schema that takes one lists exactly
// this set.
func (Scope) JSONSchema() *invopop.Schema {
	enum := make([]any, len(allScopes))
	for i, s := range allScopes {
		enum[i] = string(s)
	}
	return &invopop.Schema{Type: "string", Enum: enum}
}

package usage

import (
	"context"

	"github.com/switchboard-hq/switchboard/tools"
)

// The portal's charts and call logs as tools (tools.SessionOnly): agents read their spend
// through policy_get and their receipts through the partner tools; these pages are the
// human's.

// SpendInput is usage_spend's (empty) input.
type SpendInput struct{}

// IntentInput names one of the caller's intents.
type IntentInput struct {
	IntentID string `json:"intentId" jsonschema:"minLength=1,maxLength=64"`
}

// CallsInput is one page of a call log.
type CallsInput struct {
	Side     Side   `json:"side" jsonschema:"enum=caller,enum=partner"`
	KeyID    string `json:"keyId,omitempty" jsonschema:"maxLength=200"`
	IntentID string `json:"intentId,omitempty" jsonschema:"maxLength=200"`
	Outcome  string `json:"outcome,omitempty" jsonschema:"maxLength=40"`
	Kind     string `json:"kind,omitempty" jsonschema:"enum=call,enum=topup,enum=x402,enum=send,enum=proposed" jsonschema_description:"only movements of this kind: call, topup (credit bought), x402, send, proposed"`
	Cursor   string `json:"cursor,omitempty" jsonschema:"maxLength=200"`
	Limit    int    `json:"limit,omitempty" jsonschema_description:"default 25, at most 100"`
}

// ListInput is one page of the caller's own record (usage_list, GET /v1/usage).
type ListInput struct {
	Kind    string `json:"kind,omitempty" jsonschema:"enum=call,enum=topup,enum=x402,enum=send,enum=proposed" jsonschema_description:"only movements of this kind: call, topup (credit bought), x402, send, proposed"`
	Outcome string `json:"outcome,omitempty" jsonschema:"maxLength=40" jsonschema_description:"only movements in this state, e.g. succeeded, failed"`
	Cursor  string `json:"cursor,omitempty" jsonschema:"maxLength=200" jsonschema_description:"the previous page's next"`
	Limit   int    `json:"limit,omitempty" jsonschema_description:"default 25, at most 100"`
}

// CallInput names one call of a log.
type CallInput struct {
	Side      Side   `json:"side" jsonschema:"enum=caller,enum=partner"`
	RequestID string `json:"requestId" jsonschema:"minLength=1,maxLength=64"`
}

var readOnly = tools.Annotations{ReadOnly: tools.Bool(true), OpenWorld: tools.Bool(false)}

// OwnKey is the key whose movements a key may read in usage_list: "" (the account's) for a
// root key or a portal session, its own for a minted key, which sees no sibling's spending.
func OwnKey(p *tools.Principal) string {
	if p.KeyID == "" || len(p.Ancestors) == 0 {
		return ""
	}
	return p.KeyID
}

// Tools returns usage_spend, usage_intent, usage_calls, usage_list and usage_call.
func (s *Service) Tools() []*tools.Tool {
	return []*tools.Tool{
		tools.New(tools.Def{Name: "usage_spend", Title: "Spend per day", Access: tools.SessionOnly, Annotations: readOnly,
			Description: "The account's spend per UTC day over the last 30 days, in micro-USD, overall and per key (the keys that spent, biggest first)."},
			func(ctx context.Context, c *tools.Caller, _ SpendInput) (Spend, error) {
				return s.Spend(ctx, c.Principal)
			}),
		tools.New(tools.Def{Name: "usage_intent", Title: "An intent's record", Access: tools.SessionOnly, Annotations: readOnly,
			Description: "One of the account's intents over the last 30 days: calls, successes, latency percentiles and earnings per UTC day. Another account's intent is NOT_FOUND."},
			func(ctx context.Context, c *tools.Caller, in IntentInput) (IntentStats, error) {
				return s.Intent(ctx, c.Principal, in.IntentID)
			}),
		tools.New(tools.Def{Name: "usage_calls", Title: "Call log", Access: tools.SessionOnly, Annotations: readOnly,
			Description: "One page of a call log, newest first: the account's own calls (side caller), or the calls to its intents (side partner). Pass next as the cursor for the next page."},
			func(ctx context.Context, c *tools.Caller, in CallsInput) (Page, error) {
				return s.Calls(ctx, c.Principal, in.Side, Filter{KeyID: in.KeyID, IntentID: in.IntentID, Outcome: in.Outcome, Kind: in.Kind, Cursor: in.Cursor, Limit: in.Limit})
			}),
		tools.New(tools.Def{Name: "usage_list", Title: "Usage log", Access: tools.AnyKey, Annotations: tools.Annotations{ReadOnly: tools.Bool(true), Idempotent: true, OpenWorld: tools.Bool(false)}, Toolset: tools.ToolsetOwner,
			Description: "One page of the account's record of money movements, newest first: partner calls (kind call, their cost in chargeMicro) and " +
				"on-chain movements (kind topup for credit bought, x402, send, proposed) with valueUsd, network and txHash. A root key reads the account's; " +
				"a minted key, its own. Filter by kind and outcome; pass next as the cursor for the next page."},
			func(ctx context.Context, c *tools.Caller, in ListInput) (Page, error) {
				return s.Calls(ctx, c.Principal, Caller, Filter{KeyID: OwnKey(c.Principal), Outcome: in.Outcome, Kind: in.Kind, Cursor: in.Cursor, Limit: in.Limit})
			}),
		tools.New(tools.Def{Name: "usage_call", Title: "One call", Access: tools.SessionOnly, Annotations: readOnly,
			Description: "One call of a call log with its arguments, answer, events and receipt; a call outside the log is NOT_FOUND. A partner sees the caller only as its pseudonym."},
			func(ctx context.Context, c *tools.Caller, in CallInput) (Detail, error) {
				return s.Call(ctx, c.Principal, in.Side, in.RequestID)
			}),
	}
}

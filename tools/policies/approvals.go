package policies

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/spending"
	"github.com/switchboard-hq/switchboard/tools"
)

// Approval is a call a policy sent to the account's owner.
type Approval struct {
	RequestID string            `json:"requestId"`
	KeyID     string            `json:"keyId" jsonschema_description:"the key that made the call"`
	Handle    string            `json:"handle"`
	Category  string            `json:"category"`
	Rule      string            `json:"rule" jsonschema_description:"the policy rule that asked for approval, e.g. approval.aboveUsd"`
	Charge    map[string]string `json:"charge" jsonschema_description:"the itemized most the call can cost: decimal USD strings by part (infrastructureUsd, partnerFeeUsd, platformFeeUsd, gasEstimateUsd or flatFeeUsd, totalUsd, maxChargeUsd)"`
	MaxUsd    string            `json:"maxUsd" jsonschema_description:"the most the call can cost, in USD"`
	State     string            `json:"state" jsonschema:"enum=pending,enum=approved,enum=declined,enum=expired"`
	CreatedAt time.Time         `json:"createdAt"`
	ExpiresAt time.Time         `json:"expiresAt"`
	DecidedAt *time.Time        `json:"decidedAt,omitempty"`
}

func (s *Service) approvalOf(a *spending.Approval) Approval {
	out := Approval{RequestID: a.RequestID, KeyID: a.KeyID, Handle: a.Handle, Category: a.Category, Rule: a.Rule,
		MaxUsd: tools.USD(a.WorstMicro).String(), State: a.StateAt(s.now()),
		CreatedAt: a.CreatedAt.UTC(), ExpiresAt: a.ExpiresAt.UTC()}
	_ = json.Unmarshal([]byte(a.Charge), &out.Charge) // written by Approvals.Ask from the same shape
	if a.DecidedAt != nil {
		t := a.DecidedAt.UTC()
		out.DecidedAt = &t
	}
	return out
}

// ListInput filters approvals.
type ListInput struct {
	Pending bool `json:"pending,omitempty" jsonschema_description:"only those still waiting for a decision"`
	Limit   int  `json:"limit,omitempty" jsonschema:"minimum=1,maximum=200" jsonschema_description:"default 50"`
}

// ListOutput is the account's approvals, newest first.
type ListOutput struct {
	Approvals []Approval `json:"approvals"`
}

// GetApprovalInput names an approval.
type GetApprovalInput struct {
	RequestID string `json:"requestId" jsonschema:"format=uuid" jsonschema_description:"the requestId of the APPROVAL_REQUIRED answer"`
}

// DecideInput is the owner's decision.
type DecideInput struct {
	RequestID string `json:"requestId" jsonschema:"format=uuid"`
	Approve   bool   `json:"approve" jsonschema_description:"true approves the call (the agent's next call with its requestId dispatches it, once); false declines it (nothing is sent)"`
}

func (s *Service) list(ctx context.Context, c *tools.Caller, in ListInput) (ListOutput, error) {
	limit := in.Limit
	if limit == 0 {
		limit = 50
	}
	keyIDs, err := s.visible(ctx, c)
	if err != nil {
		return ListOutput{}, err
	}
	rows, err := s.spending.Approvals(ctx, c.AccountID(), keyIDs, in.Pending, s.now().UTC(), limit)
	if err != nil {
		return ListOutput{}, err
	}
	out := ListOutput{Approvals: make([]Approval, 0, len(rows))}
	for _, a := range rows {
		out.Approvals = append(out.Approvals, s.approvalOf(a))
	}
	return out, nil
}

func (s *Service) getApproval(ctx context.Context, c *tools.Caller, in GetApprovalInput) (Approval, error) {
	a, err := s.spending.Approval(ctx, c.AccountID(), in.RequestID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return Approval{}, err
	}
	if err == nil {
		keyIDs, err := s.visible(ctx, c)
		if err != nil {
			return Approval{}, err
		}
		if keyIDs == nil || slices.Contains(keyIDs, a.KeyID) {
			return s.approvalOf(a), nil
		}
	}
	return Approval{}, tools.Errorf(tools.CodeNotFound, "no approval %s of this key's calls or its descendants' in this account; approval_list shows them", in.RequestID)
}

// visible is the keys whose approvals c may read: nil (all of them) for the portal's session,
// otherwise the calling key and those minted under it, as api_key_list shows (an agent does
// not read its parent's or siblings' calls).
func (s *Service) visible(ctx context.Context, c *tools.Caller) ([]string, error) {
	if c.Principal.Method == tools.AuthSession {
		return nil, nil
	}
	ks, err := s.keys.Visible(ctx, c.Principal)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(ks))
	for _, k := range ks {
		ids = append(ids, k.ID)
	}
	return ids, nil
}

// Decide records the owner's decision on a pending approval (Approvals.Decide). Nothing is
// sent or charged by it: an approved call is dispatched when its agent asks again with its
// requestId.
func (s *Service) Decide(ctx context.Context, c *tools.Caller, in DecideInput) (Approval, error) {
	decided, err := s.approvals.Decide(ctx, c.AccountID(), in.RequestID, in.Approve, "portal")
	if err != nil {
		return Approval{}, err
	}
	a, err := s.getApproval(ctx, c, GetApprovalInput{RequestID: in.RequestID})
	if err != nil {
		return Approval{}, err
	}
	if !decided {
		return a, tools.Errorf(tools.CodeConflict, "approval %s is %s already; nothing changed", in.RequestID, a.State).WithDetails(map[string]any{"state": a.State})
	}
	return a, nil
}

// Tools returns policy_get, policy_set, approval_list, approval_get and the portal's
// approval_decide.
func (s *Service) Tools() []*tools.Tool {
	ro := tools.Annotations{ReadOnly: tools.Bool(true), Idempotent: true, OpenWorld: tools.Bool(false)}
	return []*tools.Tool{
		tools.New(tools.Def{
			Name:  "policy_get",
			Title: "Read a spend policy",
			Description: "The spend policies that govern a key's calls (the account's and the key chain's), combined as effective, and what each cap window has spent and left. " +
				"Without keyId: the calling key's. A refused call answers POLICY_DENIED naming the rule.",
			Access: tools.AnyKey, Annotations: ro, Toolset: tools.ToolsetOwner,
		}, s.get),
		tools.New(tools.Def{
			Name:  "policy_set",
			Title: "Narrow a key's spend policy",
			Description: "Set the whole spend policy of the calling key (no keyId) or of a key minted under it: caps per hour/day/30d in USD, a per-call maximum, allow and deny lists (by @handle, publisher partnerId, category), deny-by-default, and approval rules. " +
				"A key may only make a policy stricter; the account's policy, and loosening any, is the owner's, on the portal.",
			Access: tools.AnyKey, Toolset: tools.ToolsetOwner,
			Annotations: tools.Annotations{ReadOnly: tools.Bool(false), Destructive: tools.Bool(false), Idempotent: true, OpenWorld: tools.Bool(false)},
		}, s.set),
		tools.New(tools.Def{
			Name:        "approval_list",
			Title:       "List approvals",
			Description: "The calls that a spend policy sent to the account's owner for approval, newest first (pending: only those still waiting): a key's own calls and those of the keys minted under it. Only the owner decides, on the portal.",
			Access:      tools.AnyKey, Annotations: ro, Toolset: tools.ToolsetOwner,
		}, s.list),
		tools.New(tools.Def{
			Name:        "approval_get",
			Title:       "Read an approval",
			Description: "One approval by the requestId of its APPROVAL_REQUIRED answer: the rule that asked, the itemized charge, its state and expiry.",
			Access:      tools.AnyKey, Annotations: ro, Toolset: tools.ToolsetOwner,
		}, s.getApproval),
		tools.New(tools.Def{
			Name:        "approval_decide",
			Title:       "Approve or decline a call",
			Description: "The owner's decision on a pending approval (the portal's alone: an agent never approves its own spending).",
			Access:      tools.SessionOnly,
			Annotations: tools.Annotations{ReadOnly: tools.Bool(false), Destructive: tools.Bool(false), OpenWorld: tools.Bool(false)},
		}, s.Decide),
	}
}

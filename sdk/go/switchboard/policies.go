package switchboard

import (
	"context"
	"net/url"
	"strconv"
	"time"
)

// Policy is a spend policy (docs/policies.md). Amounts are decimal USD strings.
type Policy struct {
	Caps          []Cap        `json:"caps,omitempty"`
	PerCallMaxUsd string       `json:"perCallMaxUsd,omitempty"`
	Allow         PolicyLists  `json:"allow,omitempty"`
	Deny          PolicyLists  `json:"deny,omitempty"`
	DenyByDefault bool         `json:"denyByDefault,omitempty"`
	Approval      ApprovalRule `json:"approval,omitempty"`
}

// Cap bounds a rolling window's spending: window is hour, day or 30d.
type Cap struct {
	Window string `json:"window"`
	USD    string `json:"usd"`
}

// PolicyLists name partners by @handle, publisher (partnerId) and category.
type PolicyLists struct {
	Handles    []string `json:"handles,omitempty"`
	Publishers []string `json:"publishers,omitempty"`
	Categories []string `json:"categories,omitempty"`
}

// ApprovalRule sends calls to the account's owner first.
type ApprovalRule struct {
	AboveUsd           string   `json:"aboveUsd,omitempty"`
	Categories         []string `json:"categories,omitempty"`
	FirstCallToPartner bool     `json:"firstCallToPartner,omitempty"`
}

// PolicyWindow is what a cap window has spent and, under the tightest cap, has left.
type PolicyWindow struct {
	Window   string `json:"window"`
	SpentUsd string `json:"spentUsd"`
	LeftUsd  string `json:"leftUsd,omitempty"`
}

// Policies are the policies governing a key: the account's, its own, all of them combined
// (Effective, whose Allow is always empty: allow lists do not combine; see AllowOnly).
type Policies struct {
	Account   *Policy        `json:"account"`
	Key       *Policy        `json:"key"`
	KeyID     string         `json:"keyId,omitempty"`
	Effective Policy         `json:"effective"`
	AllowOnly []AllowOnly    `json:"allowOnly"`
	Governing []string       `json:"governing"`
	Windows   []PolicyWindow `json:"windows"`
}

// AllowOnly is the allow lists of one governing policy that denies by default: a call must be
// named (by @handle, publisher or category) in each of them.
type AllowOnly struct {
	Policy string      `json:"policy"`
	Allow  PolicyLists `json:"allow"`
}

// Approval is a call a spend policy sent to the account's owner.
type Approval struct {
	RequestID string            `json:"requestId"`
	KeyID     string            `json:"keyId"`
	Handle    string            `json:"handle"`
	Category  string            `json:"category"`
	Rule      string            `json:"rule"`
	Charge    map[string]string `json:"charge"`
	MaxUsd    string            `json:"maxUsd"`
	State     string            `json:"state"` // pending, approved, declined, expired
	CreatedAt time.Time         `json:"createdAt"`
	ExpiresAt time.Time         `json:"expiresAt"`
	DecidedAt *time.Time        `json:"decidedAt,omitempty"`
}

// Approvals is a list of approvals, newest first.
type Approvals struct {
	Approvals []Approval `json:"approvals"`
}

// Policy reads the policies governing keyID ("" : the calling key) (GET /v1/policy).
func (c *Client) Policy(ctx context.Context, keyID string) (*Policies, error) {
	v := url.Values{}
	if keyID != "" {
		v.Set("keyId", keyID)
	}
	return callT[Policies](ctx, c, "policy_get", nil, v, nil)
}

// SetPolicy sets the whole policy of keyID ("" : the calling key); nil removes it, which only
// the owner may. A key may only narrow a policy (PUT /v1/policy).
func (c *Client) SetPolicy(ctx context.Context, keyID string, p *Policy) (*Policies, error) {
	body := map[string]any{"policy": p}
	if keyID != "" {
		body["keyId"] = keyID
	}
	return callT[Policies](ctx, c, "policy_set", nil, nil, body)
}

// Approvals lists the account's approvals, only pending ones with pending (GET /v1/approvals).
func (c *Client) Approvals(ctx context.Context, pending bool, limit int) (*Approvals, error) {
	v := url.Values{}
	if pending {
		v.Set("pending", "true")
	}
	if limit > 0 {
		v.Set("limit", strconv.Itoa(limit))
	}
	return callT[Approvals](ctx, c, "approval_list", nil, v, nil)
}

// Approval reads one approval by its requestId (GET /v1/approvals/{request_id}).
func (c *Client) Approval(ctx context.Context, requestID string) (*Approval, error) {
	return callT[Approval](ctx, c, "approval_get", map[string]string{"request_id": requestID}, nil, nil)
}

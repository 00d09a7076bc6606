package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
)

// The event types (fixed: receivers switch on them). Partners receive their intents' events
// (intent.*, payout.settled, and call.* for calls to their intents); callers their account's.
const (
	CallSucceeded     = "call.succeeded"
	CallFailed        = "call.failed"
	CallRefunded      = "call.refunded"
	ApprovalRequested = "approval.requested"
	ApprovalDecided   = "approval.decided"
	PolicyDenied      = "policy.denied"
	IntentActivated   = "intent.activated"
	IntentDeactivated = "intent.deactivated"
	PayoutSettled     = "payout.settled"
	KeyCreated        = "key.created"
	KeyRevoked        = "key.revoked"
	WalletExported    = "wallet.exported"
	CreditToppedUp    = "credit.topped_up"
	X402Paid          = "x402.paid"
	X402Failed        = "x402.failed"
	WalletSent        = "wallet.sent"
	WalletFailed      = "wallet.failed"
)

// Types are every event type, in the order the docs list them.
var Types = []string{CallSucceeded, CallFailed, CallRefunded, ApprovalRequested, ApprovalDecided, PolicyDenied,
	IntentActivated, IntentDeactivated, PayoutSettled, KeyCreated, KeyRevoked, WalletExported, CreditToppedUp,
	X402Paid, X402Failed, WalletSent, WalletFailed}

// Known reports whether t is an event type.
func Known(t string) bool { return slices.Contains(Types, t) }

// Body is what every webhook POSTs (Standard Webhooks' recommended payload): the type, when it
// happened, and the type's data.
type Body struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      any       `json:"data"`
}

// CallData is call.succeeded's, call.failed's and call.refunded's data: one event per call,
// when its outcome commits (billing's ticket decides which). The caller's account receives it
// with its keyId; the partner's (the intent's owner) with userId, the caller's pseudonym for
// that partner (the envelope's userId), never the caller's account, key or e-mail. Amounts
// are integers in micro-USD with the same amount as a decimal USD string beside them.
type CallData struct {
	RequestID string `json:"requestId"`
	IntentID  string `json:"intentId"`
	Handle    string `json:"handle"`
	// State is the call's recorded state: succeeded, failed, cancelled or outcome_unknown.
	State  string `json:"state"`
	KeyID  string `json:"keyId,omitempty"`  // the caller's copy
	UserID string `json:"userId,omitempty"` // the partner's copy
	// ChargedMicro is what the caller's credit was charged (0 unless it succeeded), of which
	// PartnerFeeMicro is the partner's; RefundedMicro is what went back to the credit.
	ChargedMicro    int64  `json:"chargedMicro"`
	ChargedUsd      string `json:"chargedUsd"`
	PartnerFeeMicro int64  `json:"partnerFeeMicro"`
	RefundedMicro   int64  `json:"refundedMicro"`
	RefundedUsd     string `json:"refundedUsd"`
	// PaidOnChain: the caller paid a flat fee on chain before the call (x402 or EIP-3009),
	// paid to the partner on success and refunded otherwise (the payment's own record says
	// when the refund settles).
	PaidOnChain bool      `json:"paidOnChain,omitempty"`
	Attempts    int       `json:"attempts"`
	ErrorCode   string    `json:"errorCode,omitempty"` // not succeeded: the partner's or Switchboard's code
	Message     string    `json:"message,omitempty"`
	FinishedAt  time.Time `json:"finishedAt"`
}

// ApprovalRequestedData is approval.requested's data: a call waits for the owner's decision.
type ApprovalRequestedData struct {
	RequestID    string            `json:"requestId"`
	KeyID        string            `json:"keyId"`
	Handle       string            `json:"handle"`
	Category     string            `json:"category"`
	Rule         string            `json:"rule"`
	Charge       map[string]string `json:"charge"`       // the itemized most it can cost, decimal USD strings
	MaxChargeUsd string            `json:"maxChargeUsd"` // decimal USD
	ExpiresAt    time.Time         `json:"expiresAt"`
}

// ApprovalDecidedData is approval.decided's data.
type ApprovalDecidedData struct {
	RequestID string    `json:"requestId"`
	Handle    string    `json:"handle"`
	Decision  string    `json:"decision"` // approved, declined, expired
	DecidedAt time.Time `json:"decidedAt"`
}

// PolicyDeniedData is policy.denied's data: a call the account's policy refused. Amounts are
// decimal USD strings.
type PolicyDeniedData struct {
	KeyID        string `json:"keyId"`
	Handle       string `json:"handle"`
	Category     string `json:"category"`
	Rule         string `json:"rule"`
	Policy       string `json:"policy"` // account, or key (with policyKeyId)
	PolicyKeyID  string `json:"policyKeyId,omitempty"`
	Window       string `json:"window,omitempty"`
	SpentUsd     string `json:"spentUsd,omitempty"`
	LeftUsd      string `json:"leftUsd,omitempty"`
	MaxChargeUsd string `json:"maxChargeUsd"`
}

// IntentData is intent.activated's and intent.deactivated's data.
type IntentData struct {
	IntentID string `json:"intentId"`
	Handle   string `json:"handle"`
	// By is what changed it: "owner" (partner_set_active, the portal, archiving), "update" (a
	// new endpoint failed the probe) or "reprobe" (the periodic re-probe failed).
	By     string `json:"by"`
	Reason string `json:"reason,omitempty"`
}

// PayoutData is payout.settled's data: accrued fees paid on chain.
type PayoutData struct {
	PayoutID     string `json:"payoutId"`
	ChainID      int64  `json:"chainId"`
	Address      string `json:"address"`
	AmountAtomic string `json:"amountAtomic"` // the stablecoin's smallest unit, a decimal string
	Tx           string `json:"tx"`
}

// TopupData is credit.topped_up's data: credit bought on chain (credit_topup) was credited,
// written in the credit's own transaction. Amounts are decimal USD strings.
type TopupData struct {
	RequestID   string `json:"requestId"`
	CreditedUsd string `json:"creditedUsd"`
	CreditUsd   string `json:"creditUsd"` // the available credit after it
	Network     string `json:"network"`
	Payer       string `json:"payer"`
	TxHash      string `json:"txHash"`
}

// X402Data is x402.paid's and x402.failed's data: an x402 resource paid (or not) from the
// account's embedded wallet by x402_fetch, written with the payment's record. Amounts are
// decimal USD strings; TxHash is the seller's settlement (absent when it named none).
type X402Data struct {
	RequestID string `json:"requestId"`
	KeyID     string `json:"keyId"`
	URL       string `json:"url"`
	Host      string `json:"host"`
	PaidUsd   string `json:"paidUsd"`
	Network   string `json:"network"`
	Payer     string `json:"payer"`
	PayTo     string `json:"payTo"`
	TxHash    string `json:"txHash,omitempty"`
	Status    int    `json:"status"` // the seller's HTTP status to the paid request
	Reason    string `json:"reason,omitempty"`
}

// WalletSendData is wallet.sent's and wallet.failed's data: a wallet_send from the account's
// embedded wallet that ended on chain (confirmed: wallet.sent; failed, dropped or refused by the
// node: wallet.failed), written with the send's record once. Amount is the token's decimal
// amount, ValueUsd its USD value when it was judged ("" when the token had no price).
type WalletSendData struct {
	RequestID   string `json:"requestId"`
	KeyID       string `json:"keyId"`
	Chain       string `json:"chain"`
	Network     string `json:"network"`
	Token       string `json:"token"`
	From        string `json:"from"`
	To          string `json:"to"`
	Amount      string `json:"amount"`
	ValueUsd    string `json:"valueUsd,omitempty"`
	TxHash      string `json:"txHash,omitempty"`
	ExplorerURL string `json:"explorerUrl,omitempty"`
	Status      string `json:"status"` // confirmed, failed, dropped
	Reason      string `json:"reason,omitempty"`
}

// KeyData is key.created's data (never the secret).
type KeyData struct {
	KeyID    string   `json:"keyId"`
	Name     string   `json:"name"`
	Prefix   string   `json:"prefix"`
	Scopes   []string `json:"scopes"`
	ParentID string   `json:"parentId,omitempty"`
}

// KeyRevokedData is key.revoked's data: the key named and every key minted under it, revoked
// by api_key_revoke or, with GrantID, by the end of the OAuth connection that created the key.
type KeyRevokedData struct {
	KeyID   string   `json:"keyId"`
	Revoked []string `json:"revoked"`
	GrantID string   `json:"grantId,omitempty"`
	Reason  string   `json:"reason,omitempty"`
}

// WalletExportedData is wallet.exported's data: the owner exported the wallets' private keys.
type WalletExportedData struct {
	Addresses  []string `json:"addresses"`
	ClientAddr string   `json:"clientAddr"`
}

// NewID is a webhook-id: "msg_" and a time-ordered UUID, no dots (the signed content is
// id.timestamp.body).
func NewID() string { return "msg_" + strings.ReplaceAll(uuid.Must(uuid.NewV7()).String(), "-", "") }

// New builds an event for accountID's endpoints: its body is fixed here, so every attempt and
// every replay sends (and signs) the same bytes.
func New(typ, accountID string, at time.Time, data any) (*store.WebhookEvent, error) {
	if !Known(typ) {
		return nil, fmt.Errorf("webhooks: unknown event type %q", typ)
	}
	if accountID == "" {
		return nil, fmt.Errorf("webhooks: %s event without an account", typ)
	}
	at = at.UTC().Truncate(time.Microsecond)
	body, err := json.Marshal(Body{Type: typ, Timestamp: at, Data: data})
	if err != nil {
		return nil, fmt.Errorf("webhooks: %s body: %w", typ, err)
	}
	return &store.WebhookEvent{ID: NewID(), AccountID: accountID, Type: typ, Body: string(body), CreatedAt: at}, nil
}

// Emit writes an event into the outbox inside q's transaction: it is delivered if and only if
// that transaction commits. On PostgreSQL the insert is queued with the transaction's other
// writes, so it costs no round trip.
func Emit(ctx context.Context, q *store.Q, typ, accountID string, at time.Time, data any) error {
	ev, err := New(typ, accountID, at, data)
	if err != nil {
		return err
	}
	return q.InsertWebhookEvent(ctx, ev)
}

// KeyCreatedEvent is key.created for a key about to be stored.
func KeyCreatedEvent(k *accounts.APIKey) (*store.WebhookEvent, error) {
	d := KeyData{KeyID: k.ID, Name: k.Name, Prefix: k.Prefix, Scopes: nonNil(k.Scopes)}
	if k.ParentID != nil {
		d.ParentID = *k.ParentID
	}
	return New(KeyCreated, k.AccountID, k.CreatedAt, d)
}

// KeyRevokedEvents gives key.revoked for a revocation of keyID that revoked the keys revoked
// (store.RevokeKey's events).
func KeyRevokedEvents(accountID, keyID string, at time.Time) func(revoked []string) ([]*store.WebhookEvent, error) {
	return func(revoked []string) ([]*store.WebhookEvent, error) {
		ev, err := New(KeyRevoked, accountID, at, KeyRevokedData{KeyID: keyID, Revoked: revoked})
		return []*store.WebhookEvent{ev}, err
	}
}

// The events of a call's approval, written in the transaction that records the approval's
// request or its decision (a policy's refusal writes nothing else: tools/billing writes its
// policy.denied with store.AddWebhookEvents).

// EmitApprovalRequested writes approval.requested for accountID inside q's transaction.
func EmitApprovalRequested(ctx context.Context, q *store.Q, accountID string, at time.Time, d ApprovalRequestedData) error {
	return Emit(ctx, q, ApprovalRequested, accountID, at, d)
}

// EmitApprovalDecided writes approval.decided for accountID inside q's transaction.
func EmitApprovalDecided(ctx context.Context, q *store.Q, accountID string, at time.Time, d ApprovalDecidedData) error {
	return Emit(ctx, q, ApprovalDecided, accountID, at, d)
}

package app

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/invocations"
	"github.com/switchboard-hq/switchboard/store/ledger"
	"github.com/switchboard-hq/switchboard/store/payouts"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/dispatch"
	"github.com/switchboard-hq/switchboard/tools/idempotency"
	"github.com/switchboard-hq/switchboard/tools/keyring"
	"github.com/switchboard-hq/switchboard/tools/keys"
	"github.com/switchboard-hq/switchboard/tools/onboarding"
	"github.com/switchboard-hq/switchboard/tools/partners"
	"github.com/switchboard-hq/switchboard/tools/payments"
	"github.com/switchboard-hq/switchboard/tools/policies"
	"github.com/switchboard-hq/switchboard/tools/wallets"
)

// Admin is what the operator CLI (`switchboard admin`) does with a built service, on the same
// services the tools use: partner listings, accounts and their keys, credit and fee tiers,
// what a request left behind, the ledger check, service key rotation, the master key's
// reseal, sweeps and payouts. BuildOn builds it with the App (App.Admin); the CLI reaches
// nothing else. Errors come as the services return them: the CLI words them for the operator.
type Admin struct {
	store       *store.Store
	accounts    accounts.Accounts
	invocations invocations.Invocations
	partners    *partners.Service
	billing     *billing.Service
	dispatch    *dispatch.Service
	payments    *payments.Service // nil without the flat-fee network
	ring        *keyring.Ring
	sealer      *wallets.Sealer
	onboarding  *onboarding.Service
	apiKeys     *keys.Service
	policies    *policies.Service
	// idempotency's answers are sealed under the master key too (Reseal).
	idempotency *idempotency.Service
}

// SetPolicy sets (or, with nil, removes) an account's spend policy, or one of its keys'
// (keyID), as the owner may: loosening included.
func (a *Admin) SetPolicy(ctx context.Context, accountID, keyID string, p *billing.Policy) (policies.GetOutput, error) {
	return a.policies.SetAs(ctx, accountID, keyID, p, "admin")
}

// InsertListing lists a partner intent as the operator does: the publishing validator, any
// verification status, no rate limit. It starts inactive.
func (a *Admin) InsertListing(ctx context.Context, ownerID string, in partners.IntentInput, status string, core bool) (partners.Intent, error) {
	return a.partners.Insert(ctx, ownerID, in, status, core)
}

// SetVerification sets a listing's verificationStatus (ref: an id or @handle).
func (a *Admin) SetVerification(ctx context.Context, ref, status string) (partners.Intent, error) {
	return a.partners.SetVerificationStatus(ctx, ref, status)
}

// SetActive activates a listing (after the negative-auth probe passes) or deactivates it.
func (a *Admin) SetActive(ctx context.Context, ref string, active bool) (partners.SetActiveOutput, error) {
	row, err := a.partners.Lookup(ctx, ref)
	if err != nil {
		return partners.SetActiveOutput{}, err
	}
	return a.partners.SetActive(ctx, row, active)
}

// Listing is a listing as partner_get_intent shows it.
func (a *Admin) Listing(ctx context.Context, ref string) (partners.Intent, error) {
	row, err := a.partners.Lookup(ctx, ref)
	if err != nil {
		return partners.Intent{}, err
	}
	return partners.IntentOf(row), nil
}

// Account finds an account by id or, failing that, by e-mail.
func (a *Admin) Account(ctx context.Context, who string) (*accounts.Account, error) {
	acct, err := a.accounts.ByID(ctx, who)
	if errors.Is(err, store.ErrNotFound) {
		acct, err = a.accounts.ByEmail(ctx, strings.ToLower(who))
	}
	if err != nil {
		return nil, fmt.Errorf("no account %q: %w", who, err)
	}
	return acct, nil
}

// AccountByEmail is the account of an e-mail (store.ErrNotFound when there is none).
func (a *Admin) AccountByEmail(ctx context.Context, email string) (*accounts.Account, error) {
	return a.accounts.ByEmail(ctx, email)
}

// AccountForEmail returns the account of an e-mail, creating it with its wallets (and, in the
// test environment, its starting credit) as agent_verify does when there is none.
func (a *Admin) AccountForEmail(ctx context.Context, email string) (string, error) {
	return a.onboarding.AccountForEmail(ctx, email)
}

// Wallets are an account's wallet addresses.
func (a *Admin) Wallets(ctx context.Context, accountID string) (onboarding.Wallets, error) {
	ws, err := a.accounts.Wallets(ctx, accountID)
	if err != nil {
		return onboarding.Wallets{}, err
	}
	return onboarding.AddressesOf(ws), nil
}

// KeyDefaults are the limits a key gets when its issuer names none
// (SWITCHBOARD_DEFAULT_SPEND_LIMIT_USD, SWITCHBOARD_DEFAULT_RATE_LIMIT_PER_MINUTE).
func (a *Admin) KeyDefaults() keys.Limits { return a.apiKeys.Defaults() }

// IssueKey issues an API key; its secret is in the answer alone (it is stored as a hash).
func (a *Admin) IssueKey(ctx context.Context, in keys.IssueInput) (keys.CreateOutput, error) {
	return a.apiKeys.Issue(ctx, in)
}

// Credit grants micro-USD to an account as operator credit and returns its balance after.
func (a *Admin) Credit(ctx context.Context, accountID string, micro int64) (*store.CreditAccount, error) {
	if err := a.billing.Grant(ctx, accountID, micro, "operator credit"); err != nil {
		return nil, err
	}
	return a.store.Credit(ctx, accountID)
}

// SetTier moves an account to a fee tier and returns the tier's basis points.
func (a *Admin) SetTier(ctx context.Context, accountID, tier string) (int64, error) {
	if err := a.billing.SetTier(ctx, accountID, tier); err != nil {
		return 0, err
	}
	return a.billing.Config().TierBps[tier], nil
}

// InvocationRecord is everything recorded about one request.
type InvocationRecord struct {
	Invocation *store.Invocation
	Events     []store.InvocationEvent
	Ledger     []ledger.Entry
	// LedgerBatch are the postings of the batch it was recorded in whole (Invocation.LedgerTxn
	// set), where its own are summed; nil otherwise.
	LedgerBatch []ledger.Entry
}

// Invocation gathers what happened to a request: the invocation, its transitions and its
// ledger rows.
func (a *Admin) Invocation(ctx context.Context, requestID string) (InvocationRecord, error) {
	inv, err := a.invocations.ByID(ctx, requestID)
	if err != nil {
		return InvocationRecord{}, fmt.Errorf("invocation %s: %w", requestID, err)
	}
	r := InvocationRecord{Invocation: inv}
	if r.Events, err = a.invocations.Events(ctx, requestID); err != nil {
		return InvocationRecord{}, err
	}
	if r.Ledger, err = ledger.Entries(ctx, a.store, requestID); err != nil {
		return InvocationRecord{}, err
	}
	if inv.LedgerTxn != nil {
		if r.LedgerBatch, err = ledger.BatchEntries(ctx, a.store, *inv.LedgerTxn); err != nil {
			return InvocationRecord{}, err
		}
	}
	return r, nil
}

// CheckLedger verifies the ledger's invariants (balanced, matching balances).
func (a *Admin) CheckLedger(ctx context.Context) error { return ledger.Check(ctx, a.store) }

// RotateKey takes the service's signing key rotation one step (keyring.Ring.Rotate).
func (a *Admin) RotateKey(ctx context.Context) (keyring.Step, error) { return a.ring.Rotate(ctx) }

// RetireKey stops publishing the previous signing key and returns how many keys it retired.
func (a *Admin) RetireKey(ctx context.Context) (int, error) { return a.ring.Retire(ctx) }

// Sweep is App.Sweep, now.
func (a *Admin) Sweep(ctx context.Context) (recovered, refunded int, err error) {
	return sweep(ctx, a.dispatch, a.billing, a.payments)
}

// Payouts pays partners' accrued per-call fees on chain now.
func (a *Admin) Payouts(ctx context.Context) ([]*payouts.Payout, error) {
	if a.payments == nil {
		return nil, errors.New("payout needs the flat-fee network: set SWITCHBOARD_FLATFEE_RPC_URL and the other SWITCHBOARD_FLATFEE_* settings")
	}
	return a.payments.Payouts(ctx)
}

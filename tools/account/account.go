// Package account answers account_get: who the calling key belongs to and what it may do.
package account

import (
	"context"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/invocations"
	"github.com/switchboard-hq/switchboard/store/reports"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/keys"
	"github.com/switchboard-hq/switchboard/tools/onboarding"
	"github.com/switchboard-hq/switchboard/tools/service"
)

// Service reads accounts.
type Service struct {
	store       *store.Store
	accounts    accounts.Accounts
	invocations invocations.Invocations
	reports     reports.Reports
	keys        *keys.Service
	now         func() time.Time
}

// NewService builds the account tool's service on ks's keys.
func NewService(d service.Deps, ks *keys.Service) *Service {
	d = d.WithDefaults()
	return &Service{store: d.Store, accounts: accounts.New(d.Store), invocations: invocations.New(d.Store), reports: reports.New(d.Store), keys: ks, now: d.Now}
}

// GetInput is account_get's (empty) input.
type GetInput struct{}

// Limits are the calling key's limits and the defaults new keys get.
type Limits struct {
	SpendLimitUsd             tools.USD `json:"spendLimitUsd" jsonschema_description:"the calling key's spend limit"`
	RateLimitPerMinute        int       `json:"rateLimitPerMinute" jsonschema_description:"the calling key's requests per minute"`
	DefaultSpendLimitUsd      tools.USD `json:"defaultSpendLimitUsd" jsonschema_description:"what a key minted without limits gets (capped at the minting key's)"`
	DefaultRateLimitPerMinute int       `json:"defaultRateLimitPerMinute"`
}

// Credit is the account's balance and what the calling key has spent.
type Credit struct {
	AvailableUsd  tools.USD `json:"availableUsd" jsonschema_description:"credit free to spend"`
	ReservedUsd   tools.USD `json:"reservedUsd" jsonschema_description:"reserved by invocations in flight"`
	KeySpentUsd   tools.USD `json:"keySpentUsd" jsonschema_description:"what the calling key and the keys minted under it have spent in total (counted against its spendLimitUsd)"`
	MonthSpentUsd tools.USD `json:"monthSpentUsd" jsonschema_description:"what the account's partner calls cost this calendar month (UTC), all keys"`
}

// Invocation is one of the account's recent partner calls.
type Invocation struct {
	RequestID string    `json:"requestId"`
	Handle    string    `json:"handle"`
	State     string    `json:"state" jsonschema_description:"awaiting_confirmation, dispatching, succeeded, failed, cancelled or outcome_unknown"`
	CostUsd   tools.USD `json:"costUsd" jsonschema_description:"what it cost: the reserve kept plus partner and platform fees"`
	At        time.Time `json:"at"`
}

// GetOutput is the account as its owner sees it.
type GetOutput struct {
	UserID         string             `json:"userId"`
	Email          string             `json:"email"`
	CreatedAt      time.Time          `json:"createdAt"`
	Wallets        onboarding.Wallets `json:"wallets"`
	SigningEnabled bool               `json:"signingEnabled" jsonschema_description:"whether Switchboard may sign with the embedded wallets on the agent's behalf (off by default)"`
	KeyID          string             `json:"keyId" jsonschema_description:"id of the key making this call"`
	Scopes         []string           `json:"scopes" jsonschema_description:"scopes of the key making this call"`
	Limits         Limits             `json:"limits"`
	CreditUsd      tools.USD          `json:"creditUsd" jsonschema_description:"credit free to spend (credit.availableUsd); buy more with credit_topup"`
	Credit         Credit             `json:"credit"`
	Keys           []keys.Meta        `json:"keys" jsonschema_description:"the keys this key may act on: itself and the keys minted under it (on the portal, every key of the account)"`
	Recent         []Invocation       `json:"recentInvocations" jsonschema_description:"the account's latest 10 partner calls"`
}

// Tools returns account_get.
func (s *Service) Tools() []*tools.Tool {
	return []*tools.Tool{tools.New(tools.Def{
		Name:  "account_get",
		Title: "Get account",
		Description: "Show the account of the calling key: userId, e-mail, wallet addresses (EVM, Solana), whether signing on " +
			"the agent's behalf is enabled, the calling key's scopes, limits and spend, the account's credit, and every key's metadata.",
		Access:      tools.AnyKey,
		Annotations: tools.Annotations{ReadOnly: tools.Bool(true), Idempotent: true, OpenWorld: tools.Bool(false)},
	}, s.get)}
}

func (s *Service) get(ctx context.Context, c *tools.Caller, _ GetInput) (GetOutput, error) {
	acct, err := s.accounts.ByID(ctx, c.Principal.AccountID)
	if err != nil {
		return GetOutput{}, err
	}
	ws, err := s.accounts.Wallets(ctx, acct.ID)
	if err != nil {
		return GetOutput{}, err
	}
	ks, err := s.keys.Visible(ctx, c.Principal)
	if err != nil {
		return GetOutput{}, err
	}
	credit, err := s.store.Credit(ctx, acct.ID)
	if err != nil {
		return GetOutput{}, err
	}
	spend, err := s.store.KeySpendOf(ctx, c.Principal.KeyID)
	if err != nil {
		return GetOutput{}, err
	}
	now := s.now().UTC()
	monthSpent, err := s.invocations.SpentSince(ctx, acct.ID, time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		return GetOutput{}, err
	}
	invs, err := s.reports.AccountInvocations(ctx, acct.ID, 10)
	if err != nil {
		return GetOutput{}, err
	}
	def := s.keys.Defaults()
	out := GetOutput{
		UserID: acct.ID, Email: acct.Email, CreatedAt: acct.CreatedAt.UTC(), Wallets: onboarding.AddressesOf(ws),
		SigningEnabled: acct.SigningEnabled, KeyID: c.Principal.KeyID, Scopes: c.Principal.Scopes,
		Limits: Limits{SpendLimitUsd: tools.USD(c.Principal.SpendLimitMicro), RateLimitPerMinute: c.Principal.RateLimitPerMinute,
			DefaultSpendLimitUsd: tools.USD(def.SpendMicro), DefaultRateLimitPerMinute: def.RatePerMinute},
		CreditUsd: tools.USD(credit.AvailableMicro),
		Credit: Credit{AvailableUsd: tools.USD(credit.AvailableMicro), ReservedUsd: tools.USD(credit.ReservedMicro), KeySpentUsd: tools.USD(spend.SpentMicro),
			MonthSpentUsd: tools.USD(monthSpent)},
		Keys:   make([]keys.Meta, 0, len(ks)),
		Recent: make([]Invocation, 0, len(invs)),
	}
	for _, inv := range invs {
		var cost int64
		if inv.FinishedAt != nil { // quoted or in flight: nothing spent yet
			cost = inv.ReserveMicro - inv.RefundedMicro + inv.PartnerFeeMicro + inv.PlatformFeeMicro + inv.GasMicro
		}
		out.Recent = append(out.Recent, Invocation{RequestID: inv.RequestID, Handle: inv.Handle, State: inv.State,
			CostUsd: tools.USD(cost), At: inv.CreatedAt.UTC()})
	}
	for _, k := range ks {
		out.Keys = append(out.Keys, keys.MetaOf(k))
	}
	return out, nil
}

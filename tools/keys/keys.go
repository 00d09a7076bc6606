// Package keys mints, lists and revokes API keys: api_key_create, api_key_list, api_key_revoke.
package keys

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/integrations"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/service"
	"github.com/switchboard-hq/switchboard/tools/webhooks"
)

// MaxLiveKeys is the most live (unrevoked) keys an account holds: every key api_key_create or
// the portal mints counts, and one more is refused until a key is revoked. agent_verify
// always issues its key (it is how a locked-out owner gets back in), so an account may be
// over the cap by the keys verification issued.
const MaxLiveKeys = 50

// Limits are a key's spend and rate limits.
type Limits struct {
	SpendMicro    int64
	RatePerMinute int
}

// Config is what keys are minted with.
type Config struct {
	Env      string // "test" or "production": the secrets' prefix (tools.NewKeySecret)
	Defaults Limits // what a key minted without limits gets
}

// Service mints and manages keys.
type Service struct {
	accounts     accounts.Accounts
	integrations integrations.Integrations
	env          string
	defaults     Limits
	now          func() time.Time
}

// NewService builds the key service.
func NewService(cfg Config, d service.Deps) *Service {
	d = d.WithDefaults()
	return &Service{accounts: accounts.New(d.Store), integrations: integrations.New(d.Store), env: cfg.Env, defaults: cfg.Defaults, now: d.Now}
}

// Defaults returns the configured default limits.
func (s *Service) Defaults() Limits { return s.defaults }

// New builds (does not store) a key for accountID, returning it and its secret.
func (s *Service) New(accountID, name string, scopes []string, lim Limits) (*accounts.APIKey, string) {
	secret, prefix := tools.NewKeySecret(s.env)
	return &accounts.APIKey{
		ID:                 uuid.NewString(),
		AccountID:          accountID,
		Name:               name,
		Prefix:             prefix,
		Hash:               tools.HashKey(secret),
		Scopes:             scopes,
		SpendLimitMicro:    lim.SpendMicro,
		RateLimitPerMinute: lim.RatePerMinute,
		CreatedAt:          s.now().UTC().Truncate(time.Microsecond),
	}, secret
}

// Meta is a key as listed: metadata only, never the secret or its hash.
type Meta struct {
	ID                 string     `json:"id" jsonschema_description:"key id, for api_key_revoke"`
	Name               string     `json:"name"`
	Prefix             string     `json:"prefix" jsonschema_description:"first characters of the secret, to recognise it"`
	Scopes             []string   `json:"scopes"`
	SpendLimitUsd      tools.USD  `json:"spendLimitUsd"`
	RateLimitPerMinute int        `json:"rateLimitPerMinute"`
	CreatedAt          time.Time  `json:"createdAt"`
	LastUsedAt         *time.Time `json:"lastUsedAt,omitempty"`
	RevokedAt          *time.Time `json:"revokedAt,omitempty"`
	IntegrationID      string     `json:"integrationId,omitempty" jsonschema_description:"the partner integration whose connect page issued it"`
	ParentID           string     `json:"parentId,omitempty" jsonschema_description:"the key it was minted under, whose limits its spending and calls count against too; absent for a root key (from agent_verify or the portal)"`
}

// MetaOf returns a key's public metadata.
func MetaOf(k *accounts.APIKey) Meta {
	return Meta{ID: k.ID, Name: k.Name, Prefix: k.Prefix, Scopes: k.Scopes,
		SpendLimitUsd: tools.USD(k.SpendLimitMicro), RateLimitPerMinute: k.RateLimitPerMinute,
		CreatedAt: k.CreatedAt.UTC(), LastUsedAt: utc(k.LastUsedAt), RevokedAt: utc(k.RevokedAt), IntegrationID: deref(k.IntegrationID), ParentID: deref(k.ParentID)}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// CreateInput is api_key_create's input.
type CreateInput struct {
	Name               string        `json:"name" jsonschema:"minLength=1,maxLength=100" jsonschema_description:"a label for the key"`
	Scopes             []tools.Scope `json:"scopes" jsonschema:"minItems=1,uniqueItems=true" jsonschema_description:"scopes for the new key; each must be a scope of the key making the call"`
	SpendLimitUsd      *tools.USD    `json:"spendLimitUsd,omitempty" jsonschema_description:"total USD the key may spend; default the agent default, never above the calling key's"`
	RateLimitPerMinute *int          `json:"rateLimitPerMinute,omitempty" jsonschema:"minimum=1,maximum=10000" jsonschema_description:"requests per minute; default the agent default, never above the calling key's"`
	IntegrationID      string        `json:"integrationId,omitempty" jsonschema:"maxLength=64" jsonschema_description:"issue the key for a partner integration (its /connect page): the scopes must be among the integration's"`
}

// CreateOutput is the new key: its metadata and, this once, its secret.
type CreateOutput struct {
	Meta
	Secret string `json:"secret" jsonschema_description:"the API key; shown only now, store it"`
}

// ListInput is api_key_list's (empty) input.
type ListInput struct{}

// ListOutput lists the account's keys.
type ListOutput struct {
	Keys []Meta `json:"keys"`
}

// RevokeInput is api_key_revoke's input.
type RevokeInput struct {
	KeyID string `json:"keyId" jsonschema:"minLength=1,maxLength=64" jsonschema_description:"id of this key or of one minted under it, from api_key_list"`
}

// Tools returns the key tools.
func (s *Service) Tools() []*tools.Tool {
	return []*tools.Tool{
		tools.New(tools.Def{
			Name:  "api_key_create",
			Title: "Create API key",
			Description: "Mint a new API key under the calling key. The new key's scopes must be a subset of the calling key's, " +
				"and its limits can be at most the calling key's (omitted limits take the agent defaults, capped the same way). " +
				"Its spending and calls also count against the calling key's limits and those of every key above it, so minting never raises what a tree of keys may spend or call. " +
				"An account holds at most 50 live keys; an OAuth connection cannot mint keys. The secret is returned once; store it.",
			Access:              tools.AnyKey,
			TakesIdempotencyKey: true,
			Annotations:         tools.Annotations{ReadOnly: tools.Bool(false), Destructive: tools.Bool(false), OpenWorld: tools.Bool(false)},
		}, s.create),
		tools.New(tools.Def{
			Name:  "api_key_list",
			Title: "List API keys",
			Description: "List the API keys this key may act on: itself and the keys minted under it, at any depth (the portal's signed-in owner sees every key of the account). " +
				"Each with id, name, prefix, scopes, limits, parentId, createdAt, lastUsedAt, revokedAt. Never the secrets.",
			Access:      tools.AnyKey,
			Annotations: tools.Annotations{ReadOnly: tools.Bool(true), Idempotent: true, OpenWorld: tools.Bool(false)},
		}, s.list),
		tools.New(tools.Def{
			Name:  "api_key_revoke",
			Title: "Revoke API key",
			Description: "Revoke this key or a key minted under it, by id (from api_key_list); the keys minted under it are revoked with it. " +
				"A revoked key stops working at once; revoking it again changes nothing. Other keys of the account are revoked by its owner on the portal.",
			Access:      tools.AnyKey,
			Annotations: tools.Annotations{ReadOnly: tools.Bool(false), Destructive: tools.Bool(true), Idempotent: true, OpenWorld: tools.Bool(false)},
		}, s.revoke),
	}
}

func (s *Service) create(ctx context.Context, c *tools.Caller, in CreateInput) (CreateOutput, error) {
	if c.Principal.Method == tools.AuthOAuth {
		// A key would outlive the grant (its secret is the holder's to keep), so a grant mints none.
		return CreateOutput{}, tools.Errorf(tools.CodeForbidden, "an OAuth connection cannot mint API keys: a key would outlive the connection. Issue keys in the portal (/developer/api-keys) or call api_key_create with an API key")
	}
	for _, sc := range in.Scopes {
		if !c.Principal.HasScope(sc) {
			return CreateOutput{}, tools.Errorf(tools.CodeForbidden, "scope %q is not a scope of the calling key (%v); a key can only grant scopes it has", sc, c.Principal.Scopes)
		}
	}
	lim := Limits{
		SpendMicro:    min(s.defaults.SpendMicro, c.Principal.SpendLimitMicro),
		RatePerMinute: min(s.defaults.RatePerMinute, c.Principal.RateLimitPerMinute),
	}
	if in.SpendLimitUsd != nil {
		if in.SpendLimitUsd.Micro() > c.Principal.SpendLimitMicro {
			return CreateOutput{}, tools.Errorf(tools.CodeForbidden, "spendLimitUsd %s is above the calling key's %s; ask for at most that", in.SpendLimitUsd, tools.USD(c.Principal.SpendLimitMicro))
		}
		lim.SpendMicro = in.SpendLimitUsd.Micro()
	}
	if in.RateLimitPerMinute != nil {
		if *in.RateLimitPerMinute > c.Principal.RateLimitPerMinute {
			return CreateOutput{}, tools.Errorf(tools.CodeForbidden, "rateLimitPerMinute %d is above the calling key's %d; ask for at most that", *in.RateLimitPerMinute, c.Principal.RateLimitPerMinute)
		}
		lim.RatePerMinute = *in.RateLimitPerMinute
	}
	scopes := make([]string, len(in.Scopes))
	for i, sc := range in.Scopes {
		scopes[i] = string(sc)
	}
	if c.CallID != "" {
		// A call with an idempotency key retried after its process died: the key it minted,
		// if it got that far, has the call's id, and its secret went with the lost answer.
		if err := s.mintedBy(ctx, c); err != nil {
			return CreateOutput{}, err
		}
	}
	key, secret := s.New(c.Principal.AccountID, in.Name, scopes, lim)
	key.ID = c.NewCallID() // the call's id when it has one: one call never mints two keys
	if c.Principal.Method == tools.AuthAPIKey {
		key.ParentID = &c.Principal.KeyID // the portal's human mints roots
	}
	if in.IntegrationID != "" {
		ig, err := s.integrations.IntegrationBy(ctx, "id", in.IntegrationID)
		if errors.Is(err, store.ErrNotFound) {
			return CreateOutput{}, tools.Errorf(tools.CodeNotFound, "no integration %q; the id is on the integration's connect page", in.IntegrationID)
		}
		if err != nil {
			return CreateOutput{}, err
		}
		for _, sc := range scopes {
			if !slices.Contains(ig.Scopes, sc) {
				return CreateOutput{}, tools.Errorf(tools.CodeForbidden, "scope %q is not one the integration %s asks for (%v)", sc, ig.Name, ig.Scopes)
			}
		}
		key.IntegrationID = &ig.ID
	}
	if err := s.mint(ctx, key); err != nil {
		if c.CallID != "" {
			if merr := s.mintedBy(ctx, c); merr != nil {
				return CreateOutput{}, merr // a run of the same call minted it meanwhile
			}
		}
		return CreateOutput{}, err
	}
	return CreateOutput{Meta: MetaOf(key), Secret: secret}, nil
}

// mintedBy refuses a call whose key was minted already, by a run of the same call (its
// idempotency key's) whose answer was lost with its process: the key exists, and its secret,
// shown once, cannot be shown again.
func (s *Service) mintedBy(ctx context.Context, c *tools.Caller) error {
	k, err := s.accounts.KeyByID(ctx, c.CallID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil
	case err != nil:
		return err
	case k.AccountID != c.Principal.AccountID:
		return fmt.Errorf("call id %s names another account's key", c.CallID)
	}
	return tools.Errorf(tools.CodeConflict, "the first call with this idempotency key minted key %s (prefix %s), but the server stopped before answering it, and its secret is shown only once: it cannot be shown again. "+
		"Revoke that key (api_key_revoke with keyId %q) and mint another with a new idempotency key", k.ID, k.Prefix, k.ID).
		WithDetails(map[string]any{"keyId": k.ID, "prefix": k.Prefix})
}

// mint stores a new key within the account's cap.
func (s *Service) mint(ctx context.Context, key *accounts.APIKey) error {
	ev, err := webhooks.KeyCreatedEvent(key)
	if err != nil {
		return err
	}
	err = s.accounts.MintKey(ctx, key, MaxLiveKeys, ev)
	switch {
	case errors.Is(err, accounts.ErrTooManyKeys):
		return tools.Errorf(tools.CodeConflict, "this account already has %d live API keys, the most it may hold; revoke keys it no longer uses (api_key_list, then api_key_revoke, or the portal's Keys page) and mint again", MaxLiveKeys)
	case errors.Is(err, accounts.ErrParentRevoked):
		return tools.Errorf(tools.CodeUnauthenticated, "the calling key was revoked while this key was being minted; use another key of the account")
	case err != nil:
		return fmt.Errorf("store key: %w", err)
	}
	return nil
}

// Visible are the account's keys p may see and act on (revoked ones included), oldest first:
// the portal's human sees every key; an API key (or the key behind an OAuth token) sees
// itself and the keys minted under it, at any depth.
func (s *Service) Visible(ctx context.Context, p *tools.Principal) ([]*accounts.APIKey, error) {
	ks, err := s.accounts.Keys(ctx, p.AccountID)
	if err != nil || p.Method == tools.AuthSession {
		return ks, err
	}
	return subtree(ks, p.KeyID), nil
}

// subtree is the key root and its descendants among ks, in the order of ks.
func subtree(ks []*accounts.APIKey, root string) []*accounts.APIKey {
	children := map[string][]string{}
	for _, k := range ks {
		if k.ParentID != nil {
			children[*k.ParentID] = append(children[*k.ParentID], k.ID)
		}
	}
	in := map[string]bool{root: true}
	for next := []string{root}; len(next) > 0; {
		id := next[len(next)-1]
		next = next[:len(next)-1]
		for _, c := range children[id] {
			if !in[c] {
				in[c] = true
				next = append(next, c)
			}
		}
	}
	out := make([]*accounts.APIKey, 0, len(in))
	for _, k := range ks {
		if in[k.ID] {
			out = append(out, k)
		}
	}
	return out
}

func (s *Service) list(ctx context.Context, c *tools.Caller, _ ListInput) (ListOutput, error) {
	ks, err := s.Visible(ctx, c.Principal)
	if err != nil {
		return ListOutput{}, err
	}
	out := ListOutput{Keys: make([]Meta, 0, len(ks))}
	for _, k := range ks {
		out.Keys = append(out.Keys, MetaOf(k))
	}
	return out, nil
}

func (s *Service) revoke(ctx context.Context, c *tools.Caller, in RevokeInput) (Meta, error) {
	switch c.Principal.Method {
	case tools.AuthOAuth:
		return Meta{}, tools.Errorf(tools.CodeForbidden, "an OAuth connection revokes no API keys (it mints none); to end this connection, revoke its token (/oauth/revoke) or the connection on the portal's Connections page")
	case tools.AuthAPIKey:
		ks, err := s.accounts.Keys(ctx, c.Principal.AccountID)
		if err != nil {
			return Meta{}, err
		}
		is := func(k *accounts.APIKey) bool { return k.ID == in.KeyID }
		if slices.ContainsFunc(ks, is) && !slices.ContainsFunc(subtree(ks, c.Principal.KeyID), is) {
			return Meta{}, tools.Errorf(tools.CodeForbidden, "key %q is not this key nor one minted under it; a key revokes only itself and the keys minted under it (api_key_list shows them). The account's other keys are revoked by its owner on the portal's Keys page", in.KeyID)
		}
	}
	now := s.now().UTC()
	k, err := s.accounts.RevokeKey(ctx, c.Principal.AccountID, in.KeyID, now, webhooks.KeyRevokedEvents(c.Principal.AccountID, in.KeyID, now))
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return Meta{}, tools.Errorf(tools.CodeNotFound, "no key %q in this account; api_key_list shows the account's key ids", in.KeyID)
		}
		return Meta{}, err
	}
	return MetaOf(k), nil
}

// TryItKeyName names the key a signed-in human's Try it calls are made and billed on.
const TryItKeyName = "Try it on the portal"

// ForSession returns the principal a portal session calls partners as: the session with the
// account's Try it key for exactly the scopes the call needs (scopes: partner, and the
// intent's own write scope, if any), so the call is reserved, limited and charged on a key
// like any agent's (spend is per key) and shows in the charts under that key. The key is
// created on the first call that needs its scopes, never before, with the default limits;
// its secret is never shown, so only the portal uses it; its use is recorded (lastUsedAt)
// as an agent's is. Revoked, it is replaced on the next call.
func (s *Service) ForSession(ctx context.Context, p *tools.Principal, scopes []string) (*tools.Principal, error) {
	if p == nil || p.Method != tools.AuthSession {
		return nil, tools.Errorf(tools.CodeForbidden, "only a signed-in portal session calls with the Try it key")
	}
	need := slices.Clone(scopes)
	slices.Sort(need)
	need = slices.Compact(need)
	if len(need) == 0 {
		return nil, tools.Errorf(tools.CodeInternal, "a Try it call names no scope")
	}
	for _, sc := range need {
		if !slices.Contains(tools.ScopeNames(), sc) {
			return nil, tools.Errorf(tools.CodeInternal, "a Try it call needs the unknown scope %q", sc)
		}
	}
	name := TryItKeyName
	if extra := slices.DeleteFunc(slices.Clone(need), func(sc string) bool { return sc == string(tools.ScopePartner) }); len(extra) > 0 {
		name += " (" + strings.Join(extra, ", ") + ")"
	}
	list, err := s.accounts.Keys(ctx, p.AccountID)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(list, func(k *accounts.APIKey) bool {
		have := slices.Clone(k.Scopes)
		slices.Sort(have)
		return k.Name == name && k.RevokedAt == nil && slices.Equal(have, need)
	})
	var key *accounts.APIKey
	if i >= 0 {
		key = list[i]
	} else {
		key, _ = s.New(p.AccountID, name, need, s.defaults)
		if err := s.mint(ctx, key); err != nil {
			return nil, fmt.Errorf("create the Try it key: %w", err)
		}
	}
	// Recorded at most once a minute, as the authenticator records an agent's key.
	if now := s.now().UTC(); key.LastUsedAt == nil || now.Sub(*key.LastUsedAt) > touchEvery {
		if err := s.accounts.TouchKeys(ctx, map[string]time.Time{key.ID: now}); err != nil {
			return nil, fmt.Errorf("record the Try it key's use: %w", err)
		}
	}
	out := *p
	out.Scopes = append([]string(nil), key.Scopes...)
	out.KeyID, out.SpendLimitMicro, out.RateLimitPerMinute = key.ID, key.SpendLimitMicro, key.RateLimitPerMinute
	return &out, nil
}

// Package integrations keeps partner integrations: a /connect/<slug> page where a signed-in
// human issues a key already scoped for the integration, and the manifest.json that lists the
// onboarding methods the integration offers.
package integrations

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	integrationstore "github.com/switchboard-hq/switchboard/store/integrations"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/service"
)

// The onboarding methods an integration can offer.
const (
	MethodPasteKey  = "paste_key"
	MethodEmailCode = "email_code"
)

// Methods are the onboarding methods in the spec's order.
var Methods = []string{MethodPasteKey, MethodEmailCode}

var slugRe = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{1,38}[a-z0-9]$`)

// Integration is what the portal shows and the manifest lists.
type Integration struct {
	ID        string    `json:"id"`
	Slug      string    `json:"slug"`
	Name      string    `json:"name"`
	AccountID string    `json:"accountId" jsonschema_description:"the partner that created it"`
	Scopes    []string  `json:"scopes"`
	Methods   []string  `json:"methods"`
	CreatedAt time.Time `json:"createdAt"`
}

// Offers reports whether the integration offers method.
func (i Integration) Offers(method string) bool { return slices.Contains(i.Methods, method) }

func of(in *integrationstore.Integration) Integration {
	return Integration{ID: in.ID, Slug: in.Slug, Name: in.Name, AccountID: in.AccountID, Scopes: in.Scopes, Methods: in.Methods, CreatedAt: in.CreatedAt}
}

// Service creates and finds integrations.
type Service struct {
	accounts     accounts.Accounts
	integrations integrationstore.Integrations
	now          func() time.Time
}

// NewService builds the service.
func NewService(d service.Deps) *Service {
	d = d.WithDefaults()
	return &Service{accounts: accounts.New(d.Store), integrations: integrationstore.New(d.Store), now: d.Now}
}

// Create validates and stores an integration of accountID. Problems are BAD_INPUT with the
// field in details["field"]; a taken slug is CONFLICT.
func (s *Service) Create(ctx context.Context, accountID, slug, name string, scopes, methods []string) (Integration, error) {
	slug, name = strings.TrimSpace(slug), strings.TrimSpace(name)
	bad := func(field, msg string) (Integration, error) {
		return Integration{}, tools.Errorf(tools.CodeBadInput, "%s", msg).WithDetails(map[string]any{"field": field})
	}
	switch {
	case !slugRe.MatchString(slug):
		return bad("slug", "3 to 40 of a-z, 0-9 and -, starting and ending with a letter or digit")
	case name == "" || len(name) > 80:
		return bad("name", "1 to 80 characters")
	case len(scopes) == 0:
		return bad("scopes", "choose at least one scope for the keys it issues")
	case len(methods) == 0:
		return bad("methods", "choose at least one onboarding method")
	}
	for _, sc := range scopes {
		if !tools.Scope(sc).Known() {
			return bad("scopes", "unknown scope "+sc)
		}
	}
	for _, m := range methods {
		if !slices.Contains(Methods, m) {
			return bad("methods", "unknown method "+m)
		}
	}
	in := &integrationstore.Integration{ID: uuid.NewString(), AccountID: accountID, Slug: slug, Name: name,
		Scopes: slices.Clone(scopes), Methods: slices.Clone(methods), CreatedAt: s.now().UTC()}
	if err := s.integrations.CreateIntegration(ctx, in); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return Integration{}, tools.Errorf(tools.CodeConflict, "the slug %q is taken; choose another", slug).WithDetails(map[string]any{"field": "slug"})
		}
		return Integration{}, err
	}
	return of(in), nil
}

// List returns accountID's integrations.
func (s *Service) List(ctx context.Context, accountID string) ([]Integration, error) {
	all, err := s.integrations.Integrations(ctx, accountID)
	out := make([]Integration, 0, len(all))
	for _, in := range all {
		out = append(out, of(in))
	}
	return out, err
}

// BySlug finds an integration for its connect page; NOT_FOUND when there is none.
func (s *Service) BySlug(ctx context.Context, slug string) (Integration, error) {
	in, err := s.integrations.IntegrationBy(ctx, "slug", slug)
	if errors.Is(err, store.ErrNotFound) {
		return Integration{}, tools.Errorf(tools.CodeNotFound, "no integration %q", slug)
	}
	if err != nil {
		return Integration{}, err
	}
	return of(in), nil
}

// Publisher is the domain of the e-mail the integration's publisher signed in with: a claim
// Switchboard checked, unlike the integration's name (the connect page shows it first).
func (s *Service) Publisher(ctx context.Context, in Integration) string {
	acct, err := s.accounts.ByID(ctx, in.AccountID)
	if err != nil {
		return "an unknown publisher"
	}
	_, domain, _ := strings.Cut(acct.Email, "@")
	return domain
}

// CreateInput is a new integration, as the portal's form sends it.
type CreateInput struct {
	Slug    string   `json:"slug" jsonschema:"maxLength=200"`
	Name    string   `json:"name" jsonschema:"maxLength=200"`
	Scopes  []string `json:"scopes" jsonschema:"maxItems=16"`
	Methods []string `json:"methods" jsonschema:"maxItems=8"`
}

// ListOutput is the account's integrations.
type ListOutput struct {
	Integrations []Integration `json:"integrations"`
}

// Tools returns integration_list and integration_create: a partner manages its integrations on
// the portal (tools.SessionOnly); the connect pages and manifests are public.
func (s *Service) Tools() []*tools.Tool {
	return []*tools.Tool{
		tools.New(tools.Def{Name: "integration_list", Title: "List integrations", Access: tools.SessionOnly,
			Annotations: tools.Annotations{ReadOnly: tools.Bool(true), OpenWorld: tools.Bool(false)},
			Description: "List the account's partner integrations: each one's /connect/<slug> page issues keys with its scopes, and its manifest.json lists its onboarding methods."},
			func(ctx context.Context, c *tools.Caller, _ struct{}) (ListOutput, error) {
				list, err := s.List(ctx, c.Principal.AccountID)
				return ListOutput{Integrations: list}, err
			}),
		tools.New(tools.Def{Name: "integration_create", Title: "Create an integration", Access: tools.SessionOnly,
			Annotations: tools.Annotations{ReadOnly: tools.Bool(false), Destructive: tools.Bool(false), OpenWorld: tools.Bool(false)},
			Description: "Create a partner integration: a slug for its /connect/<slug> page, the name its users know, the scopes of the keys it issues and its onboarding methods. " +
				"A problem is BAD_INPUT naming the field in details.field; a taken slug is CONFLICT."},
			func(ctx context.Context, c *tools.Caller, in CreateInput) (Integration, error) {
				return s.Create(ctx, c.Principal.AccountID, in.Slug, in.Name, in.Scopes, in.Methods)
			}),
	}
}

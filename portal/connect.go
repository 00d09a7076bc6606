package portal

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/integrations"
)

// Partner integrations: a partner creates one on /developer/integrations; its users sign in
// on /connect/{slug} and issue a key already scoped for it (through api_key_create, recording
// the integration on the key); /connect/{slug}/manifest.json lists its onboarding methods.

// nextCookie remembers where a human was going when sent to sign in.
const nextCookie = "sb_next"

type integrationsData struct {
	List            []integrations.Integration
	Created         *integrations.Integration
	Scopes, Methods []string
}

func (p *portal) integrationsPage(w http.ResponseWriter, r *http.Request, pr *tools.Principal) {
	p.renderIntegrations(w, r, pr, http.StatusOK, nil, map[string]any{"methods": integrations.Methods}, nil)
}

func (p *portal) renderIntegrations(w http.ResponseWriter, r *http.Request, pr *tools.Principal, status int, created *integrations.Integration, form map[string]any, errs map[string]string) {
	list, e := callAs[integrations.ListOutput](p, r, pr, "integration_list", nil)
	if e != nil {
		p.fail(w, r, e)
		return
	}
	v := p.page(pr, "Integrations", integrationsData{List: list.Integrations, Created: created, Scopes: tools.ScopeNames(), Methods: integrations.Methods})
	v.Form, v.Errors = form, errs
	p.render(w, status, "integrations", v)
}

func (p *portal) createIntegration(w http.ResponseWriter, r *http.Request, pr *tools.Principal) {
	form := map[string]any{"slug": r.PostFormValue("slug"), "name": r.PostFormValue("name"), "scopes": r.PostForm["scopes"], "methods": r.PostForm["methods"]}
	errs := map[string]string{}
	for k, msg := range map[string]string{"slug": "use 3-40 of a-z, 0-9 and -, e.g. my-app", "name": "give it the name your users know"} {
		if e := tools.CheckText(k, form[k].(string)); e != nil || form[k] == "" {
			errs[k] = msg
		}
	}
	if len(r.PostForm["scopes"]) == 0 {
		errs["scopes"] = "choose at least one scope"
	}
	if len(errs) > 0 { // every problem at once, each at its field
		p.renderIntegrations(w, r, pr, http.StatusUnprocessableEntity, nil, form, errs)
		return
	}
	in, e := callAs[integrations.Integration](p, r, pr, "integration_create", integrations.CreateInput{Slug: form["slug"].(string), Name: form["name"].(string),
		Scopes: r.PostForm["scopes"], Methods: append([]string{}, r.PostForm["methods"]...)})
	if e != nil {
		field, _ := e.Details["field"].(string)
		if field == "" {
			field = "form"
		}
		p.renderIntegrations(w, r, pr, http.StatusUnprocessableEntity, nil, form, map[string]string{field: e.Message})
		return
	}
	p.renderIntegrations(w, r, pr, http.StatusOK, &in, map[string]any{"methods": integrations.Methods}, nil)
}

type connectData struct {
	Integration integrations.Integration
	Publisher   string // the e-mail domain its publisher proved, shown before anything is asked
	SignedOut   bool
	Issued      map[string]any
}

// connect shows the integration's request; a signed-out human signs in and comes back.
func (p *portal) connect(w http.ResponseWriter, r *http.Request) {
	in, err := p.o.Integrations.BySlug(r.Context(), r.PathValue("slug"))
	if err != nil {
		p.fail(w, r, tools.Errorf(tools.CodeNotFound, "there is no integration at this address; check the link the app gave you"))
		return
	}
	if !in.Offers(integrations.MethodPasteKey) {
		p.fail(w, r, tools.Errorf(tools.CodeNotFound, "%s does not issue keys here; see its manifest.json for how to onboard", in.Name))
		return
	}
	publisher := p.o.Integrations.Publisher(r.Context(), in)
	pr := p.sessionOf(r)
	if pr == nil {
		// Who asks, and for what, before signing in; the sign-in comes back here.
		http.SetCookie(w, &http.Cookie{Name: nextCookie, Value: "/connect/" + in.Slug, Path: "/", MaxAge: 900, HttpOnly: true, SameSite: http.SameSiteLaxMode})
		p.render(w, http.StatusOK, "connect", view{Title: "Connect " + in.Name, Data: connectData{Integration: in, Publisher: publisher, SignedOut: true}})
		return
	}
	if r.Method == http.MethodGet {
		p.render(w, http.StatusOK, "connect", p.page(pr, "Connect "+in.Name, connectData{Integration: in, Publisher: publisher}))
		return
	}
	if !p.validForm(r, pr) {
		p.fail(w, r, tools.Errorf(tools.CodeForbidden, "this form is stale or was not sent from this site; reload the page and try again"))
		return
	}
	out, e := p.call(r, pr, "api_key_create", map[string]any{"name": in.Name + " (connect)", "scopes": in.Scopes, "integrationId": in.ID})
	v := p.page(pr, "Connect "+in.Name, connectData{Integration: in, Publisher: publisher, Issued: out})
	if e != nil {
		v.Errors = map[string]string{"form": e.Message}
		p.render(w, http.StatusUnprocessableEntity, "connect", v)
		return
	}
	p.render(w, http.StatusOK, "connect", v)
}

// manifest lists the integration's enabled onboarding methods with the URLs an agent needs.
func (p *portal) manifest(w http.ResponseWriter, r *http.Request) {
	in, err := p.o.Integrations.BySlug(r.Context(), r.PathValue("slug"))
	if err != nil {
		http.NotFound(w, r)
		return
	}
	base := p.o.BaseURL
	var methods []map[string]any
	for _, m := range in.Methods {
		switch {
		case m == integrations.MethodPasteKey:
			methods = append(methods, map[string]any{"method": m, "description": "ask a human to sign in here, click Issue key and paste the key to you",
				"url": base + "/connect/" + url.PathEscape(in.Slug)})
		case m == integrations.MethodEmailCode && p.o.SignIn != nil:
			methods = append(methods, map[string]any{"method": m, "description": "with an inbox you can read: signup, then verify with the e-mailed code",
				"signup": base + "/v1/agents/signup", "verify": base + "/v1/agents/verify"})
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(map[string]any{"name": in.Name, "slug": in.Slug, "scopes": in.Scopes, "onboardingMethods": methods,
		"mcp": base + "/mcp", "llms": base + "/llms.txt", "docs": base + "/docs/agents.md"})
}

// next is where a signed-in human goes: back to the page that sent them to sign in.
func next(r *http.Request) string {
	if c, err := r.Cookie(nextCookie); err == nil && (strings.HasPrefix(c.Value, "/connect/") || strings.HasPrefix(c.Value, "/oauth/authorize?")) && !strings.ContainsAny(c.Value, "\\\r\n") && !strings.HasPrefix(c.Value, "//") {
		return c.Value
	}
	return "/developer"
}

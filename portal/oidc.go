package portal

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// OIDCProvider is an OpenID Connect identity provider humans may sign in with.
type OIDCProvider struct {
	Label, Issuer, ClientID, ClientSecret string
}

// oidcFlow is what the browser carries between the redirect to the provider and the
// callback, in a cookie signed with the portal's key: which provider, and the state, nonce and
// PKCE verifier of this sign-in.
type oidcFlow struct {
	Provider int    `json:"p"`
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	Expires  int64  `json:"e"`
}

const oidcCookie = "sb_oidc"

// oidcClient is how the portal talks to providers: bounded in time.
var oidcClient = &http.Client{Timeout: 15 * time.Second}

type providers struct {
	mu    sync.Mutex
	found map[int]*oidc.Provider // discovered lazily: a provider down at start-up must not stop serve
}

func (p *portal) provider(ctx context.Context, i int) (*oidc.Provider, *oauth2.Config, error) {
	if i < 0 || i >= len(p.o.OIDC) {
		return nil, nil, errors.New("no such provider")
	}
	cfg := p.o.OIDC[i]
	p.oidc.mu.Lock()
	defer p.oidc.mu.Unlock()
	pv := p.oidc.found[i]
	if pv == nil {
		var err error
		if pv, err = oidc.NewProvider(oidc.ClientContext(ctx, oidcClient), cfg.Issuer); err != nil {
			return nil, nil, fmt.Errorf("discover %s: %w", cfg.Issuer, err)
		}
		p.oidc.found[i] = pv
	}
	return pv, &oauth2.Config{ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, Endpoint: pv.Endpoint(),
		RedirectURL: p.o.BaseURL + "/developer/sign-in/oidc/callback", Scopes: []string{oidc.ScopeOpenID, "email"}}, nil
}

func random() string {
	b := make([]byte, 24)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (p *portal) sign(payload []byte) string {
	m := hmac.New(sha256.New, p.o.CSRFKey)
	m.Write([]byte("oidc flow v1\x00"))
	m.Write(payload)
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// oidcStart sends the browser to provider i with a fresh state, nonce and PKCE challenge.
func (p *portal) oidcStart(w http.ResponseWriter, r *http.Request) {
	i, err := strconv.Atoi(r.PathValue("n"))
	if err != nil {
		p.fail(w, r, notFound)
		return
	}
	_, conf, err := p.provider(r.Context(), i)
	if err != nil {
		p.o.Log.WarnContext(r.Context(), "oidc", "err", err)
		p.render(w, http.StatusBadGateway, "signin", view{Title: "Sign in", Data: p.signInData(signInData{}),
			Errors: map[string]string{"email": "that sign-in provider cannot be reached right now; try again, or sign in with an e-mail code"}})
		return
	}
	f := oidcFlow{Provider: i, State: random(), Nonce: random(), Verifier: oauth2.GenerateVerifier(), Expires: time.Now().Add(10 * time.Minute).Unix()}
	raw, _ := json.Marshal(f)
	payload := base64.RawURLEncoding.EncodeToString(raw)
	http.SetCookie(w, &http.Cookie{Name: oidcCookie, Value: payload + "." + p.sign([]byte(payload)), Path: "/developer/sign-in/oidc",
		MaxAge: 600, HttpOnly: true, Secure: strings.HasPrefix(p.o.BaseURL, "https://"), SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, conf.AuthCodeURL(f.State, oidc.Nonce(f.Nonce), oauth2.S256ChallengeOption(f.Verifier)), http.StatusFound)
}

func (p *portal) readFlow(r *http.Request) (*oidcFlow, bool) {
	c, err := r.Cookie(oidcCookie)
	if err != nil {
		return nil, false
	}
	payload, sig, ok := strings.Cut(c.Value, ".")
	if !ok || !hmac.Equal([]byte(sig), []byte(p.sign([]byte(payload)))) {
		return nil, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	var f oidcFlow
	if err != nil || json.Unmarshal(raw, &f) != nil || time.Now().Unix() > f.Expires {
		return nil, false
	}
	return &f, true
}

// oidcCallback finishes the sign-in: the state must match this browser's flow, the code is
// exchanged with the PKCE verifier, the ID token verified (issuer, audience, expiry, signature)
// with this flow's nonce, and only a verified e-mail is accepted.
func (p *portal) oidcCallback(w http.ResponseWriter, r *http.Request) {
	refuse := func(msg string) {
		p.render(w, http.StatusUnauthorized, "signin", view{Title: "Sign in", Data: p.signInData(signInData{}), Errors: map[string]string{"email": msg}})
	}
	http.SetCookie(w, &http.Cookie{Name: oidcCookie, Value: "", Path: "/developer/sign-in/oidc", MaxAge: -1})
	f, ok := p.readFlow(r)
	if !ok || !hmac.Equal([]byte(r.URL.Query().Get("state")), []byte(f.State)) {
		refuse("this sign-in was not started here or has expired; start again")
		return
	}
	if e := r.URL.Query().Get("error"); e != "" {
		refuse("the provider did not sign you in (" + e + "); try again or use an e-mail code")
		return
	}
	pv, conf, err := p.provider(r.Context(), f.Provider)
	if err != nil {
		refuse("that sign-in provider cannot be reached right now; try again")
		return
	}
	ctx := oidc.ClientContext(r.Context(), oidcClient)
	tok, err := conf.Exchange(ctx, r.URL.Query().Get("code"), oauth2.VerifierOption(f.Verifier))
	if err != nil {
		p.o.Log.WarnContext(r.Context(), "oidc exchange", "err", err)
		refuse("the provider refused the sign-in; start again")
		return
	}
	rawID, _ := tok.Extra("id_token").(string)
	idt, err := pv.Verifier(&oidc.Config{ClientID: conf.ClientID}).Verify(ctx, rawID)
	if err != nil || idt.Nonce != f.Nonce {
		p.o.Log.WarnContext(r.Context(), "oidc token", "err", err)
		refuse("the provider's answer could not be verified; start again")
		return
	}
	var claims struct {
		Email         string `json:"email"`
		EmailVerified *bool  `json:"email_verified"`
	}
	if err := idt.Claims(&claims); err != nil || claims.Email == "" {
		refuse("the provider gave no e-mail address; allow the e-mail scope, or sign in with an e-mail code")
		return
	}
	if claims.EmailVerified == nil || !*claims.EmailVerified {
		refuse("the provider has not verified " + claims.Email + "; verify it there, or sign in with an e-mail code")
		return
	}
	accountID, err := p.o.AccountForEmail(r.Context(), claims.Email)
	if err != nil {
		p.fail(w, r, toolsError(err))
		return
	}
	p.startSession(w, r, accountID, "oidc:"+p.o.OIDC[f.Provider].Issuer)
}

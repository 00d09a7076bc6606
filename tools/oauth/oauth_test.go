package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/service"
)

const testRedirect = "http://127.0.0.1:3000/callback"

// connect runs a host's whole authorization on svc for accountID, backed by a new key with
// scopes, and returns the grant's ID. exchange false stops after the consent (no tokens yet).
func connect(t *testing.T, st *store.Store, svc *Service, clientID, accountID, keyID string, scopes []string, exchange bool) string {
	t.Helper()
	ctx := context.Background()
	now := svc.now().UTC()
	if err := st.CreateKey(ctx, &store.APIKey{ID: keyID, AccountID: accountID, Name: keyID, Prefix: "sb_" + keyID, Hash: "h_" + keyID,
		Scopes: scopes, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	verifier := strings.Repeat("v", 43) + keyID
	sum := sha256.Sum256([]byte(verifier))
	challenge := base64.RawURLEncoding.EncodeToString(sum[:])
	req, _, oe := svc.CheckAuthorize(ctx, url.Values{"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {testRedirect},
		"code_challenge": {challenge}, "code_challenge_method": {"S256"}})
	if oe != nil {
		t.Fatalf("authorize: %v", oe)
	}
	code, err := svc.Consent(ctx, req, accountID, keyID)
	if err != nil {
		t.Fatalf("consent: %v", err)
	}
	var grantID string
	if err := st.DB().NewSelect().Model((*store.OAuthGrant)(nil)).Column("id").Where("key_id = ?", keyID).Scan(ctx, &grantID); err != nil {
		t.Fatalf("the consent's grant: %v", err)
	}
	if exchange {
		if _, oe := svc.Exchange(ctx, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "client_id": {clientID},
			"redirect_uri": {testRedirect}, "code_verifier": {verifier}}); oe != nil {
			t.Fatalf("exchange: %v", oe)
		}
	}
	return grantID
}

func TestConnections(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
		clock := func() time.Time { return now }
		svc := New(Config{Issuer: "https://sb.example", Resource: "https://sb.example/mcp"}, service.Deps{Store: st, Now: clock})
		for _, id := range []string{"a1", "a2"} {
			if err := st.CreateAccount(ctx, &store.Account{ID: id, Email: id + "@example.com", CreatedAt: now}, nil, nil); err != nil {
				t.Fatal(err)
			}
		}
		reg, oe := svc.Register(ctx, Registration{ClientName: "Test Host", RedirectURIs: []string{testRedirect}})
		if oe != nil {
			t.Fatal(oe)
		}

		if got, err := svc.Connections(ctx, "a1"); err != nil || len(got) != 0 {
			t.Fatalf("no connection yet: %v %v", got, err)
		}
		older := connect(t, st, svc, reg.ClientID, "a1", "k1", []string{"read"}, true)
		now = now.Add(time.Minute)
		newer := connect(t, st, svc, reg.ClientID, "a1", "k2", []string{"read", "partner"}, true)
		connect(t, st, svc, reg.ClientID, "a1", "k3", []string{"read"}, false) // consented, never exchanged
		other := connect(t, st, svc, reg.ClientID, "a2", "k4", []string{"read"}, true)

		got, err := svc.Connections(ctx, "a1")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].ID != newer || got[1].ID != older {
			t.Fatalf("a1's live connections, newest first: want [%s %s], got %v", newer, older, got)
		}
		if !slices.Equal(got[0].Scopes, []string{"read", "partner"}) || !slices.Equal(got[1].Scopes, []string{"read"}) {
			t.Fatalf("each connection carries its key's scopes: %v, %v", got[0].Scopes, got[1].Scopes)
		}
		if got[0].Client == nil || got[0].Client.Name != "Test Host" || got[0].AccountID != "a1" {
			t.Fatalf("a connection names its client: %+v", got[0].OAuthGrant)
		}

		// An account revokes only its own connections; a revoked one leaves the list.
		var te *tools.Error
		if err := svc.RevokeGrant(ctx, "a1", other); !errors.As(err, &te) || te.Code != tools.CodeNotFound {
			t.Fatalf("revoking another account's connection: want not_found, got %v", err)
		}
		if err := svc.RevokeGrant(ctx, "a1", older); err != nil {
			t.Fatal(err)
		}
		if got, err := svc.Connections(ctx, "a1"); err != nil || len(got) != 1 || got[0].ID != newer {
			t.Fatalf("after revoking %s: %v %v", older, got, err)
		}
		if got, err := svc.Connections(ctx, "a2"); err != nil || len(got) != 1 || got[0].ID != other {
			t.Fatalf("a2's connection is untouched: %v %v", got, err)
		}
	})
}

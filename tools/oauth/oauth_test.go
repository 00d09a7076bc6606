package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/grants"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/service"
	"github.com/switchboard-hq/switchboard/tools/webhooks"
)

const testRedirect = "http://127.0.0.1:3000/callback"

// connect runs a host's whole authorization on svc for accountID, backed by a new key with
// scopes, and returns the grant's ID. exchange false stops after the consent (no tokens yet).
func connect(t *testing.T, st *store.Store, svc *Service, clientID, accountID, keyID string, scopes []string, exchange bool) string {
	t.Helper()
	ctx := context.Background()
	now := svc.now().UTC()
	if err := accounts.New(st).CreateKey(ctx, &accounts.APIKey{ID: keyID, AccountID: accountID, Name: keyID, Prefix: "sb_" + keyID, Hash: "h_" + keyID,
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
	if err := st.DB().NewSelect().Model((*grants.Grant)(nil)).Column("id").Where("key_id = ?", keyID).Scan(ctx, &grantID); err != nil {
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
			if err := accounts.New(st).Create(ctx, &accounts.Account{ID: id, Email: id + "@example.com", CreatedAt: now}, nil, nil); err != nil {
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
			t.Fatalf("a connection names its client: %+v", got[0].Grant)
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

// Ending a grant revokes the keys it created and tells the account so (key.revoked, in the
// same transaction): from the portal's Revoke button and from the client revoking its token
// (RFC 7009). A grant ended already tells nothing more.
func TestEndingAGrantTellsTheAccountOfItsKeys(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
		svc := New(Config{Issuer: "https://sb.example", Resource: "https://sb.example/mcp"}, service.Deps{Store: st, Now: func() time.Time { return now }})
		if err := accounts.New(st).Create(ctx, &accounts.Account{ID: "a1", Email: "a1@example.com", CreatedAt: now}, nil, nil); err != nil {
			t.Fatal(err)
		}
		reg, oe := svc.Register(ctx, Registration{ClientName: "Test Host", RedirectURIs: []string{testRedirect}})
		if oe != nil {
			t.Fatal(oe)
		}
		revokedEvents := func() []webhooks.KeyRevokedData {
			t.Helper()
			var rows []store.WebhookEvent
			if err := st.DB().NewSelect().Model(&rows).Where("type = ? AND account_id = ?", webhooks.KeyRevoked, "a1").Order("id").Scan(ctx); err != nil {
				t.Fatal(err)
			}
			var out []webhooks.KeyRevokedData
			for _, r := range rows {
				var b struct{ Data webhooks.KeyRevokedData }
				if err := json.Unmarshal([]byte(r.Body), &b); err != nil {
					t.Fatal(err)
				}
				out = append(out, b.Data)
			}
			return out
		}

		// The portal's Revoke: the grant's key and a key minted under it.
		portal := connect(t, st, svc, reg.ClientID, "a1", "k1", []string{"read"}, true)
		parent := "k1"
		if err := accounts.New(st).MintKey(ctx, &accounts.APIKey{ID: "k1child", AccountID: "a1", ParentID: &parent, Name: "child", Prefix: "sb_k1c", Hash: "h_k1c",
			Scopes: []string{"read"}, CreatedAt: now}, 10); err != nil {
			t.Fatal(err)
		}
		if err := svc.RevokeGrant(ctx, "a1", portal); err != nil {
			t.Fatal(err)
		}
		if err := svc.RevokeGrant(ctx, "a1", portal); err != nil { // ended already
			t.Fatal(err)
		}
		got := revokedEvents()
		if len(got) != 1 || got[0].KeyID != "k1" || got[0].GrantID != portal || !slices.Equal(slices.Sorted(slices.Values(got[0].Revoked)), []string{"k1", "k1child"}) ||
			!strings.Contains(got[0].Reason, "revoked by the account") {
			t.Fatalf("key.revoked after the portal's Revoke: %+v", got)
		}

		// The client revokes its access token: the grant ends, and its key with it.
		if err := accounts.New(st).CreateKey(ctx, &accounts.APIKey{ID: "k2", AccountID: "a1", Name: "k2", Prefix: "sb_k2", Hash: "h_k2", Scopes: []string{"read"}, CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
		verifier := strings.Repeat("w", 43)
		sum := sha256.Sum256([]byte(verifier))
		req, _, oe := svc.CheckAuthorize(ctx, url.Values{"response_type": {"code"}, "client_id": {reg.ClientID}, "redirect_uri": {testRedirect},
			"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}})
		if oe != nil {
			t.Fatal(oe)
		}
		code, err := svc.Consent(ctx, req, "a1", "k2")
		if err != nil {
			t.Fatal(err)
		}
		tokens, oe := svc.Exchange(ctx, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "client_id": {reg.ClientID},
			"redirect_uri": {testRedirect}, "code_verifier": {verifier}})
		if oe != nil {
			t.Fatal(oe)
		}
		if err := svc.Revoke(ctx, tokens.AccessToken); err != nil {
			t.Fatal(err)
		}
		got = revokedEvents()
		if len(got) != 2 || got[1].KeyID != "k2" || !slices.Equal(got[1].Revoked, []string{"k2"}) || !strings.Contains(got[1].Reason, "revoked by the client") {
			t.Fatalf("key.revoked after the client's revocation: %+v", got)
		}
		if k, err := accounts.New(st).KeyByHash(ctx, "h_k2"); err != nil || k.RevokedAt == nil {
			t.Fatalf("the grant's key is live: %+v %v", k, err)
		}
	})
}

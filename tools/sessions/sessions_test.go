package sessions_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/keys"
	"github.com/switchboard-hq/switchboard/tools/service"
	"github.com/switchboard-hq/switchboard/tools/sessions"
)

func account(t *testing.T, s *store.Store, id string) {
	t.Helper()
	if err := accounts.New(s).Create(context.Background(), &accounts.Account{ID: id, Email: id + "@example.com", CreatedAt: time.Now().UTC()}, nil, nil); err != nil {
		t.Fatal(err)
	}
}

// A session's token authenticates as the account's session principal until it is idle too
// long, expires or is revoked; another account cannot revoke it; signing turns on only on a
// fresh sign-in.
func TestSessionLifecycle(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
		clock := func() time.Time { return now }
		svc := sessions.NewService(sessions.Config{Idle: time.Hour, Absolute: 24 * time.Hour, Ceiling: keys.Limits{SpendMicro: 7, RatePerMinute: 9}},
			service.Deps{Store: s, Now: clock})
		account(t, s, "a")
		account(t, s, "b")

		tok, err := svc.Start(ctx, "a", "email", "192.0.2.1", "ua")
		if err != nil {
			t.Fatal(err)
		}
		p, err := svc.Authenticate(ctx, tok)
		if err != nil {
			t.Fatal(err)
		}
		if p.AccountID != "a" || p.Method != tools.AuthSession || p.SessionID == "" || p.SpendLimitMicro != 7 || p.RateLimitPerMinute != 9 {
			t.Fatalf("principal %+v", p)
		}
		if _, err := svc.Authenticate(ctx, tok+"x"); !errors.Is(err, sessions.ErrNoSession) {
			t.Fatalf("a wrong token: %v", err)
		}
		// Use within the idle window keeps it alive past the first hour.
		now = now.Add(50 * time.Minute)
		if _, err := svc.Authenticate(ctx, tok); err != nil {
			t.Fatal(err)
		}
		now = now.Add(50 * time.Minute)
		if _, err := svc.Authenticate(ctx, tok); err != nil {
			t.Fatalf("used 50 minutes ago: %v", err)
		}
		// Signing needs a sign-in within FreshWindow: this one is 100 minutes old.
		var te *tools.Error
		if err := svc.SetSigning(ctx, p, true); !errors.As(err, &te) || te.Code != tools.CodeForbidden {
			t.Fatalf("signing on a stale session: %v", err)
		}
		if err := svc.SetSigning(ctx, p, false); err != nil {
			t.Fatal(err)
		}
		list, err := svc.List(ctx, "a")
		if err != nil || len(list) != 1 || list[0].ID != p.SessionID || list[0].ClientAddr != "192.0.2.1" {
			t.Fatalf("list %+v %v", list, err)
		}
		if _, err := svc.Revoke(ctx, "b", p.SessionID); !errors.As(err, &te) || te.Code != tools.CodeNotFound {
			t.Fatalf("another account revoked it: %v", err)
		}
		if _, err := svc.Authenticate(ctx, tok); err != nil {
			t.Fatalf("after another account's attempt: %v", err)
		}
		// Idle past the window: ended.
		now = now.Add(time.Hour)
		if _, err := svc.Authenticate(ctx, tok); !errors.Is(err, sessions.ErrNoSession) {
			t.Fatalf("idle an hour: %v", err)
		}
		if list, _ := svc.List(ctx, "a"); len(list) != 0 {
			t.Fatalf("idle session listed: %+v", list)
		}

		// A fresh one may turn signing on; revoking all ends it.
		tok2, err := svc.Start(ctx, "a", "email", "", "")
		if err != nil {
			t.Fatal(err)
		}
		p2, err := svc.Authenticate(ctx, tok2)
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.SetSigning(ctx, p2, true); err != nil {
			t.Fatal(err)
		}
		if acct, _ := accounts.New(s).ByID(ctx, "a"); !acct.SigningEnabled {
			t.Fatal("signing not on")
		}
		// Both unrevoked sessions end, the idle one too.
		if n, err := svc.Revoke(ctx, "a", ""); err != nil || n != 2 {
			t.Fatalf("revoke all: %d %v", n, err)
		}
		if _, err := svc.Authenticate(ctx, tok2); !errors.Is(err, sessions.ErrNoSession) {
			t.Fatalf("revoked: %v", err)
		}
		// Absolute expiry, however busy.
		tok3, _ := svc.Start(ctx, "b", "email", "", "")
		start := now
		for range 25 {
			now = now.Add(59 * time.Minute)
			if _, err := svc.Authenticate(ctx, tok3); err != nil {
				if !errors.Is(err, sessions.ErrNoSession) {
					t.Fatal(err)
				}
				if age := now.Sub(start); age < 24*time.Hour || age >= 25*time.Hour {
					t.Fatalf("ended at age %s, want the first check past 24h", now.Sub(start))
				}
				return
			}
		}
		t.Fatal("a session outlived its absolute lifetime")
	})
}

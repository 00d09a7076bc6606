package sessions_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/sessions"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

func account(t *testing.T, st *store.Store, id string, now time.Time) {
	t.Helper()
	if err := accounts.New(st).Create(context.Background(), &accounts.Account{ID: id, Email: id + "@example.com", CreatedAt: now}, nil, nil); err != nil {
		t.Fatal(err)
	}
}

func session(id, account, hash string, at time.Time) *sessions.Session {
	return &sessions.Session{ID: id, AccountID: account, TokenHash: hash, Method: "email_code", CreatedAt: at, LastSeenAt: at, ExpiresAt: at.Add(time.Hour)}
}

func TestSessionsRevokeOneOrAll(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s, ctx := sessions.New(st), context.Background()
		now := time.Now().UTC().Truncate(time.Second)
		account(t, st, "a1", now)
		account(t, st, "a2", now)
		for i, sess := range []*sessions.Session{session("s1", "a1", "h1", now), session("s2", "a1", "h2", now.Add(time.Second)), session("s3", "a2", "h3", now)} {
			if err := s.CreateSession(ctx, sess); err != nil {
				t.Fatalf("session %d: %v", i, err)
			}
		}
		if got, err := s.SessionByTokenHash(ctx, "h2"); err != nil || got.ID != "s2" {
			t.Fatalf("by token hash: %+v %v", got, err)
		}
		if _, err := s.SessionByTokenHash(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("unknown token: %v, want ErrNotFound", err)
		}
		if err := s.TouchSession(ctx, "s1", now.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if got, err := s.SessionByID(ctx, "a1", "s1"); err != nil || !got.LastSeenAt.Equal(now.Add(time.Minute)) {
			t.Fatalf("touched: %+v %v", got, err)
		}
		// Another account's session is not found through this one.
		if _, err := s.SessionByID(ctx, "a1", "s3"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("another account's session: %v", err)
		}
		if all, err := s.Sessions(ctx, "a1"); err != nil || len(all) != 2 || all[0].ID != "s2" {
			t.Fatalf("live sessions, newest first: %+v %v", all, err)
		}
		if n, err := s.RevokeSessions(ctx, "a1", "s3", now); err != nil || n != 0 {
			t.Fatalf("revoke another account's session: %d %v", n, err)
		}
		if n, err := s.RevokeSessions(ctx, "a1", "s1", now); err != nil || n != 1 {
			t.Fatalf("revoke one: %d %v", n, err)
		}
		if n, err := s.RevokeSessions(ctx, "a1", "", now); err != nil || n != 1 {
			t.Fatalf("revoke the rest: %d %v", n, err)
		}
		if all, err := s.Sessions(ctx, "a1"); err != nil || len(all) != 0 {
			t.Fatalf("after revoking all: %+v %v", all, err)
		}
		if all, err := s.Sessions(ctx, "a2"); err != nil || len(all) != 1 {
			t.Fatalf("the other account's sessions: %+v %v", all, err)
		}
	})
}

func TestUnseenEventsShownOncePerSession(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s, ctx := sessions.New(st), context.Background()
		now := time.Now().UTC().Truncate(time.Second)
		account(t, st, "a1", now)
		for _, sess := range []*sessions.Session{session("phone", "a1", "h1", now), session("laptop", "a1", "h2", now)} {
			if err := s.CreateSession(ctx, sess); err != nil {
				t.Fatal(err)
			}
		}
		// The export itself: the wallets read and the event written in one transaction.
		ev := &sessions.AccountEvent{ID: "e1", AccountID: "a1", Kind: sessions.EventWalletExported, SessionID: "laptop", ClientAddr: "1.2.3.4", CreatedAt: now.Add(time.Second)}
		if err := s.ExportWallets(ctx, "a1", func(ws []*accounts.Wallet) (*sessions.AccountEvent, []*store.WebhookEvent, error) {
			return ev, nil, nil
		}); err != nil {
			t.Fatal(err)
		}
		// A failed export records nothing.
		if err := s.ExportWallets(ctx, "a1", func([]*accounts.Wallet) (*sessions.AccountEvent, []*store.WebhookEvent, error) {
			return nil, nil, errors.New("wrong code")
		}); err == nil {
			t.Fatal("a failed export succeeded")
		}
		if evs, err := s.AccountEvents(ctx, "a1"); err != nil || len(evs) != 1 || evs[0].ID != "e1" {
			t.Fatalf("events: %+v %v", evs, err)
		}
		// The session that did it is not told; the other is, once.
		if evs, err := s.TakeUnseenEvents(ctx, "a1", "laptop", now.Add(2*time.Second)); err != nil || len(evs) != 0 {
			t.Fatalf("the exporting session: %+v %v", evs, err)
		}
		if evs, err := s.TakeUnseenEvents(ctx, "a1", "phone", now.Add(2*time.Second)); err != nil || len(evs) != 1 || evs[0].ID != "e1" {
			t.Fatalf("the other session: %+v %v", evs, err)
		}
		if evs, err := s.TakeUnseenEvents(ctx, "a1", "phone", now.Add(3*time.Second)); err != nil || len(evs) != 0 {
			t.Fatalf("shown twice: %+v %v", evs, err)
		}
		// A later event recorded directly is shown after what was shown.
		if err := s.RecordAccountEvent(ctx, &sessions.AccountEvent{ID: "e2", AccountID: "a1", Kind: sessions.EventWalletExported, SessionID: "laptop", CreatedAt: now.Add(4 * time.Second)}); err != nil {
			t.Fatal(err)
		}
		if evs, err := s.TakeUnseenEvents(ctx, "a1", "phone", now.Add(5*time.Second)); err != nil || len(evs) != 1 || evs[0].ID != "e2" {
			t.Fatalf("the next event: %+v %v", evs, err)
		}
	})
}

package connected_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/connected"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

func TestConnectedWallets(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := connected.New(st)
		ctx := context.Background()
		now := time.Now().UTC()
		for _, id := range []string{"a1", "a2"} {
			if err := accounts.New(st).Create(ctx, &accounts.Account{ID: id, Email: id + "@example.com", CreatedAt: now}, nil, nil); err != nil {
				t.Fatal(err)
			}
		}
		w := func(id, acct, key string) *connected.Wallet {
			return &connected.Wallet{ID: id, AccountID: acct, Family: accounts.FamilyEVM, Address: key, AddressKey: key, CreatedAt: now}
		}
		if err := s.AddConnectedWallet(ctx, w("c1", "a1", "0x1"), 2); err != nil {
			t.Fatal(err)
		}
		if err := s.AddConnectedWallet(ctx, w("c2", "a1", "0x1"), 2); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("duplicate: %v, want ErrConflict", err)
		}
		if err := s.AddConnectedWallet(ctx, w("c3", "a1", "0x2"), 2); err != nil {
			t.Fatal(err)
		}
		if err := s.AddConnectedWallet(ctx, w("c4", "a1", "0x3"), 2); !errors.Is(err, connected.ErrLimitReached) {
			t.Fatalf("over the limit: %v, want ErrLimitReached", err)
		}
		// The same address for another account is fine, and invisible to the first.
		if err := s.AddConnectedWallet(ctx, w("c5", "a2", "0x1"), 2); err != nil {
			t.Fatal(err)
		}
		ws, err := s.ConnectedWallets(ctx, "a1")
		if err != nil || len(ws) != 2 || ws[0].ID != "c1" || ws[1].ID != "c3" {
			t.Fatalf("list: %+v %v", ws, err)
		}
		if _, err := s.RemoveConnectedWallet(ctx, "a1", "0x9"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("remove unknown: %v", err)
		}
		got, err := s.RemoveConnectedWallet(ctx, "a1", "0x1")
		if err != nil || got.ID != "c1" {
			t.Fatalf("remove: %+v %v", got, err)
		}
		if _, err := s.ConnectedWalletAt(ctx, "a1", "0x1"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("removed wallet still there: %v", err)
		}
		if _, err := s.ConnectedWalletAt(ctx, "a2", "0x1"); err != nil {
			t.Fatalf("other account's wallet removed: %v", err)
		}
	})
}

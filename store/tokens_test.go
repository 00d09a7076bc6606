package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

func TestUpsertTokensKeepsListedRowsAndMarketData(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Now()
		listed := &store.Token{Chain: "base", AddressKey: "0xaaa", Address: "0xAaA", Ticker: "FOO", Name: "Foo Token",
			Decimals: 18, MarketDataID: "foo", Listed: true, Source: "coingecko-list", UpdatedAt: now}
		if err := s.UpsertTokens(ctx, []*store.Token{listed}); err != nil {
			t.Fatal(err)
		}
		// An unlisted sighting of the same contract must not overwrite the listed row.
		learned := &store.Token{Chain: "base", AddressKey: "0xaaa", Address: "0xaaa", Ticker: "FOO", Name: "Foo claim www.foo.xyz",
			Decimals: 18, IsSpam: true, SpamReason: "url", Source: "chain", UpdatedAt: now}
		if err := s.UpsertTokens(ctx, []*store.Token{learned}); err != nil {
			t.Fatal(err)
		}
		got, err := s.TokenAt(ctx, "base", "0xaaa")
		if err != nil {
			t.Fatal(err)
		}
		if !got.Listed || got.IsSpam || got.Name != "Foo Token" {
			t.Fatalf("listed row overwritten by unlisted one: %+v", got)
		}
		// A listed refresh without a market-data id keeps the known one.
		refreshed := &store.Token{Chain: "base", AddressKey: "0xaaa", Address: "0xAaA", Ticker: "FOO", Name: "Foo v2",
			Decimals: 18, Listed: true, Source: "jupiter-verified", UpdatedAt: now}
		if err := s.UpsertTokens(ctx, []*store.Token{refreshed}); err != nil {
			t.Fatal(err)
		}
		got, _ = s.TokenAt(ctx, "base", "0xaaa")
		if got.Name != "Foo v2" || got.MarketDataID != "foo" {
			t.Fatalf("refresh: name %q marketDataId %q, want Foo v2 / foo", got.Name, got.MarketDataID)
		}
		if _, err := s.TokenAt(ctx, "ethereum", "0xaaa"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("other chain: %v, want ErrNotFound", err)
		}
	})
}

func TestSearchTokensOrderAndBatches(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Now()
		var toks []*store.Token
		// More than one batch, so batching is exercised.
		for i := range 1203 {
			toks = append(toks, &store.Token{Chain: "ethereum", AddressKey: fmt.Sprintf("0x%040x", i), Address: fmt.Sprintf("0x%040x", i),
				Ticker: fmt.Sprintf("T%d", i), Name: fmt.Sprintf("Token %d", i), Decimals: 18, Listed: true, Source: "list", UpdatedAt: now})
		}
		toks = append(toks,
			&store.Token{Chain: "base", AddressKey: "0xspam", Address: "0xspam", Ticker: "USDC", Name: "USDC", Decimals: 6,
				IsSpam: true, SpamReason: "impersonates USDC", Source: "chain", UpdatedAt: now},
			&store.Token{Chain: "base", AddressKey: "0xlearned", Address: "0xlearned", Ticker: "USDC", Name: "USD Coin", Decimals: 6,
				Source: "chain", UpdatedAt: now},
			&store.Token{Chain: "base", AddressKey: "0xbridged", Address: "0xbridged", Ticker: "USDC.e", Name: "Bridged", Decimals: 6,
				Listed: true, MarketDataID: "usdc-e", Source: "list", UpdatedAt: now},
		)
		if err := s.UpsertTokens(ctx, toks); err != nil {
			t.Fatal(err)
		}
		all, listed, err := s.CountTokens(ctx)
		if err != nil || all != 1206 || listed != 1204 {
			t.Fatalf("count = %d/%d, %v; want 1206/1204", all, listed, err)
		}
		got, err := s.SearchTokens(ctx, " usdc ", "base", 10)
		if err != nil {
			t.Fatal(err)
		}
		var order []string
		for _, g := range got {
			order = append(order, g.AddressKey)
		}
		if fmt.Sprint(order) != "[0xbridged 0xlearned 0xspam]" {
			t.Fatalf("search order %v, want listed, then unlisted, then spam", order)
		}
		if got, _ := s.SearchTokens(ctx, "token 7", "", 10); len(got) != 1 || got[0].Ticker != "T7" {
			t.Fatalf("name search: %+v", got)
		}
		if got, _ := s.SearchTokens(ctx, "usdc", "ethereum", 10); len(got) != 0 {
			t.Fatalf("chain filter ignored: %+v", got)
		}
		if got, _ := s.TokensAt(ctx, "0xspam"); len(got) != 1 || got[0].Chain != "base" {
			t.Fatalf("TokensAt: %+v", got)
		}
		if got, _ := s.TokensAt(ctx, "0xspam", "ethereum"); len(got) != 0 {
			t.Fatalf("TokensAt with chain filter: %+v", got)
		}
		if got, _ := s.TokensByKeys(ctx, "base", []string{"0xspam", "0xbridged", "0xnone"}); len(got) != 2 {
			t.Fatalf("TokensByKeys: %+v", got)
		}
	})
}

func TestConnectedWallets(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Now().UTC()
		for _, id := range []string{"a1", "a2"} {
			if err := s.CreateAccount(ctx, &store.Account{ID: id, Email: id + "@example.com", CreatedAt: now}, nil, newKey("k"+id, id, "h"+id)); err != nil {
				t.Fatal(err)
			}
		}
		w := func(id, acct, key string) *store.ConnectedWallet {
			return &store.ConnectedWallet{ID: id, AccountID: acct, Family: store.FamilyEVM, Address: key, AddressKey: key, CreatedAt: now}
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
		if err := s.AddConnectedWallet(ctx, w("c4", "a1", "0x3"), 2); !errors.Is(err, store.ErrLimitReached) {
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

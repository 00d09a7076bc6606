package learned_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/learned"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

func TestUpsertTokensKeepsListedRowsAndMarketData(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Now()
		listed := &learned.Token{Chain: "base", AddressKey: "0xaaa", Address: "0xAaA", Ticker: "FOO", Name: "Foo Token",
			Decimals: 18, MarketDataID: "foo", Listed: true, Source: "coingecko-list", UpdatedAt: now}
		if err := learned.New(s).UpsertTokens(ctx, []*learned.Token{listed}); err != nil {
			t.Fatal(err)
		}
		// An unlisted sighting of the same contract must not overwrite the listed row.
		fromChain := &learned.Token{Chain: "base", AddressKey: "0xaaa", Address: "0xaaa", Ticker: "FOO", Name: "Foo claim www.foo.xyz",
			Decimals: 18, IsSpam: true, SpamReason: "url", Source: "chain", UpdatedAt: now}
		if err := learned.New(s).UpsertTokens(ctx, []*learned.Token{fromChain}); err != nil {
			t.Fatal(err)
		}
		got, err := learned.New(s).TokenAt(ctx, "base", "0xaaa")
		if err != nil {
			t.Fatal(err)
		}
		if !got.Listed || got.IsSpam || got.Name != "Foo Token" {
			t.Fatalf("listed row overwritten by unlisted one: %+v", got)
		}
		// A listed refresh without a market-data id keeps the known one.
		refreshed := &learned.Token{Chain: "base", AddressKey: "0xaaa", Address: "0xAaA", Ticker: "FOO", Name: "Foo v2",
			Decimals: 18, Listed: true, Source: "jupiter-verified", UpdatedAt: now}
		if err := learned.New(s).UpsertTokens(ctx, []*learned.Token{refreshed}); err != nil {
			t.Fatal(err)
		}
		got, _ = learned.New(s).TokenAt(ctx, "base", "0xaaa")
		if got.Name != "Foo v2" || got.MarketDataID != "foo" {
			t.Fatalf("refresh: name %q marketDataId %q, want Foo v2 / foo", got.Name, got.MarketDataID)
		}
		if _, err := learned.New(s).TokenAt(ctx, "ethereum", "0xaaa"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("other chain: %v, want ErrNotFound", err)
		}
	})
}

func TestSearchTokensOrderAndBatches(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Now()
		var toks []*learned.Token
		// More than one batch, so batching is exercised.
		for i := range 1203 {
			toks = append(toks, &learned.Token{Chain: "ethereum", AddressKey: fmt.Sprintf("0x%040x", i), Address: fmt.Sprintf("0x%040x", i),
				Ticker: fmt.Sprintf("T%d", i), Name: fmt.Sprintf("Token %d", i), Decimals: 18, Listed: true, Source: "list", UpdatedAt: now})
		}
		toks = append(toks,
			&learned.Token{Chain: "base", AddressKey: "0xspam", Address: "0xspam", Ticker: "USDC", Name: "USDC", Decimals: 6,
				IsSpam: true, SpamReason: "impersonates USDC", Source: "chain", UpdatedAt: now},
			&learned.Token{Chain: "base", AddressKey: "0xlearned", Address: "0xlearned", Ticker: "USDC", Name: "USD Coin", Decimals: 6,
				Source: "chain", UpdatedAt: now},
			&learned.Token{Chain: "base", AddressKey: "0xbridged", Address: "0xbridged", Ticker: "USDC.e", Name: "Bridged", Decimals: 6,
				Listed: true, MarketDataID: "usdc-e", Source: "list", UpdatedAt: now},
		)
		if err := learned.New(s).UpsertTokens(ctx, toks); err != nil {
			t.Fatal(err)
		}
		all, listed, err := learned.New(s).CountTokens(ctx)
		if err != nil || all != 1206 || listed != 1204 {
			t.Fatalf("count = %d/%d, %v; want 1206/1204", all, listed, err)
		}
		got, err := learned.New(s).SearchTokens(ctx, " usdc ", "base", 10)
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
		if got, _ := learned.New(s).SearchTokens(ctx, "token 7", "", 10); len(got) != 1 || got[0].Ticker != "T7" {
			t.Fatalf("name search: %+v", got)
		}
		if got, _ := learned.New(s).SearchTokens(ctx, "usdc", "ethereum", 10); len(got) != 0 {
			t.Fatalf("chain filter ignored: %+v", got)
		}
		if got, _ := learned.New(s).TokensAt(ctx, "0xspam"); len(got) != 1 || got[0].Chain != "base" {
			t.Fatalf("TokensAt: %+v", got)
		}
		if got, _ := learned.New(s).TokensAt(ctx, "0xspam", "ethereum"); len(got) != 0 {
			t.Fatalf("TokensAt with chain filter: %+v", got)
		}
		if got, _ := learned.New(s).TokensByKeys(ctx, "base", []string{"0xspam", "0xbridged", "0xnone"}); len(got) != 2 {
			t.Fatalf("TokensByKeys: %+v", got)
		}
	})
}

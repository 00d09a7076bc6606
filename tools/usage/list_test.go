package usage_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/service"
	"github.com/switchboard-hq/switchboard/tools/usage"
)

// The record shows each movement's kind, and an on-chain one's value, network and transaction
// (null on a call); the kind filter keeps one kind; a root key reads the account's movements
// (usage_list's OwnKey is ""), a key minted under it only its own.
func TestMovementsOnTheRecord(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
		storetest.Account(t, s, "a")
		root := "k-a"
		if err := accounts.New(s).CreateKey(ctx, &accounts.APIKey{ID: "k-child", AccountID: "a", Name: "c", Prefix: "p", Hash: "h-child", Scopes: []string{"read"}, CreatedAt: now, ParentID: &root}); err != nil {
			t.Fatal(err)
		}
		network, tx := "eip155:8453", "0xabc"
		done := now.Add(time.Second)
		for i, inv := range []*store.Invocation{
			{RequestID: "r1-call", KeyID: root, IntentID: "i1", Handle: "@h", Category: "QUERY", IntentRevision: 1, Price: store.Price{ReserveMicro: 1000}},
			{RequestID: "r2-topup", KeyID: root, Handle: "credit_topup", Kind: store.KindTopup, Network: &network, TxHash: &tx, ValueMicro: 5_000_000},
			{RequestID: "r3-x402", KeyID: "k-child", Handle: "x402_fetch", Kind: store.KindX402, Network: &network, TxHash: &tx, ValueMicro: 10_000},
		} {
			inv.AccountID, inv.Args, inv.CreatedAt = "a", "{}", now.Add(time.Duration(i)*time.Minute)
			inv.State, inv.FinishedAt = store.InvSucceeded, &done
			if err := s.CreateInvocation(ctx, inv, "test"); err != nil {
				t.Fatal(err)
			}
		}
		svc := usage.NewService(usage.Config{}, service.Deps{Store: s, Now: func() time.Time { return now }})
		rootP := &tools.Principal{AccountID: "a", Method: tools.AuthAPIKey, KeyID: root}
		childP := &tools.Principal{AccountID: "a", Method: tools.AuthAPIKey, KeyID: "k-child", Ancestors: []tools.Ancestor{{KeyID: root}}}
		if usage.OwnKey(rootP) != "" || usage.OwnKey(childP) != "k-child" {
			t.Fatalf("OwnKey: root %q, child %q", usage.OwnKey(rootP), usage.OwnKey(childP))
		}

		all, err := svc.Calls(ctx, rootP, usage.Caller, usage.Filter{KeyID: usage.OwnKey(rootP)})
		if err != nil || len(all.Rows) != 3 {
			t.Fatalf("the root key's record: %+v %v", all, err)
		}
		byID := map[string]usage.Row{}
		for _, r := range all.Rows {
			byID[r.RequestID] = r
		}
		if c := byID["r1-call"]; c.Kind != store.KindCall || c.ValueUsd != nil || c.Network != nil || c.TxHash != nil || c.ChargeMicro != 1000 {
			t.Fatalf("a call's row: %+v", c)
		}
		if u := byID["r2-topup"]; u.Kind != store.KindTopup || u.ValueUsd == nil || u.ValueUsd.String() != "5" || *u.Network != network || *u.TxHash != tx || u.ChargeMicro != 0 {
			t.Fatalf("a top-up's row: %+v", u)
		}

		only, err := svc.Calls(ctx, rootP, usage.Caller, usage.Filter{Kind: store.KindTopup})
		if err != nil || len(only.Rows) != 1 || only.Rows[0].RequestID != "r2-topup" {
			t.Fatalf("kind topup: %+v %v", only, err)
		}
		var te *tools.Error
		if _, err := svc.Calls(ctx, rootP, usage.Caller, usage.Filter{Kind: "refund"}); !errors.As(err, &te) || te.Code != tools.CodeBadInput {
			t.Fatalf("an unknown kind: %v, want BAD_INPUT", err)
		}
		own, err := svc.Calls(ctx, childP, usage.Caller, usage.Filter{KeyID: usage.OwnKey(childP)})
		if err != nil || len(own.Rows) != 1 || own.Rows[0].RequestID != "r3-x402" || own.Rows[0].ValueUsd.String() != "0.01" {
			t.Fatalf("the minted key's record: %+v %v", own, err)
		}
	})
}

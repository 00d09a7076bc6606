package partners_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/partners"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

func TestPublishIntentsRoundTrip(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ps := partners.New(s)
		storetest.Account(t, s, "acct1")
		now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
		r := storetest.IntentRow("i1", "@alpha", now)
		out := `{"type":"object","properties":{"b":{"type":"number"},"a":{"type":"string"}}}`
		shape := `{"managementFeeBps":100,"custom":{"x":[1,2]}}`
		r.OutputSchema, r.PricingShape, r.Tier = &out, &shape, "delegation"
		r.PayoutAddresses = map[string]string{"evm": "0x52908400098527886e0f7030069857d2e4169ee7", "evm:8453": "0x8617e340b3d01fa5f11f306f4090fd50e238070d"}
		r.SampleQueries = []string{"price of eth", "btc"}
		r.Capabilities = []string{"MUTATES_USER_FUNDS"}
		r.FeeRate = "0.25"
		p, err := ps.Publish(ctx, "acct1", []*partners.Intent{r}, now)
		if err != nil {
			t.Fatal(err)
		}
		if p.AccountID != "acct1" || p.ID == "" {
			t.Fatalf("partner = %+v", p)
		}
		got, err := ps.IntentByHandle(ctx, "@alpha")
		if err != nil {
			t.Fatal(err)
		}
		if got.PartnerID != p.ID || got.OwnerID != "acct1" || *got.OutputSchema != out || got.FeeRate != "0.25" ||
			got.PayoutAddresses["evm:8453"] != r.PayoutAddresses["evm:8453"] || len(got.SampleQueries) != 2 ||
			got.Capabilities[0] != "MUTATES_USER_FUNDS" || got.Tier != "delegation" || got.PricingShape == nil ||
			!got.CreatedAt.Equal(now) || got.ArchivedAt != nil || got.IsActive {
			t.Fatalf("stored row differs: %+v", got)
		}
		if got.ParametersSchema != r.ParametersSchema {
			t.Fatalf("parameters schema not kept byte for byte: %s", got.ParametersSchema)
		}
		// A row without payout addresses or pricing shape reads back as nil.
		r2 := storetest.IntentRow("i2", "@beta", now)
		if _, err := ps.Publish(ctx, "acct1", []*partners.Intent{r2}, now); err != nil {
			t.Fatal(err)
		}
		got2, err := ps.Intent(ctx, "i2")
		if err != nil {
			t.Fatal(err)
		}
		if got2.PayoutAddresses != nil || got2.PricingShape != nil || got2.OutputSchema != nil || got2.PartnerID != p.ID {
			t.Fatalf("null columns: %+v", got2)
		}
		// Ownership.
		storetest.Account(t, s, "acct2")
		if _, err := ps.OwnedIntent(ctx, "acct2", "i1"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("other owner: %v", err)
		}
		list, err := ps.IntentsByOwner(ctx, "acct1", false)
		if err != nil || len(list) != 2 {
			t.Fatalf("list: %v %v", list, err)
		}
	})
}

func TestPublishIntentsAtomicAndHandlesUnique(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ps := partners.New(s)
		storetest.Account(t, s, "acct1")
		storetest.Account(t, s, "acct2")
		now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
		if _, err := ps.Publish(ctx, "acct1", []*partners.Intent{storetest.IntentRow("i1", "@taken", now)}, now); err != nil {
			t.Fatal(err)
		}
		_, err := ps.Publish(ctx, "acct2", []*partners.Intent{storetest.IntentRow("i2", "@fresh", now), storetest.IntentRow("i3", "@taken", now)}, now)
		var he *partners.HandlesTakenError
		if !errors.As(err, &he) || len(he.Handles) != 1 || he.Handles[0] != "@taken" || !errors.Is(err, store.ErrConflict) {
			t.Fatalf("taken handle: %v", err)
		}
		if _, err := ps.IntentByHandle(ctx, "@fresh"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("row of a failed bundle exists: %v", err)
		}
		// A duplicate id inside the bundle fails at insert: still nothing written.
		_, err = ps.Publish(ctx, "acct2", []*partners.Intent{storetest.IntentRow("i4", "@one", now), storetest.IntentRow("i4", "@two", now)}, now)
		if !errors.Is(err, store.ErrConflict) {
			t.Fatalf("duplicate id: %v", err)
		}
		if _, err := ps.IntentByHandle(ctx, "@one"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("row of a failed bundle exists: %v", err)
		}
	})
}

func TestUpdateIntentRevision(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ps := partners.New(s)
		storetest.Account(t, s, "acct1")
		now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
		if _, err := ps.Publish(ctx, "acct1", []*partners.Intent{storetest.IntentRow("i1", "@alpha", now)}, now); err != nil {
			t.Fatal(err)
		}
		a, _ := ps.Intent(ctx, "i1")
		b, _ := ps.Intent(ctx, "i1")
		a.Name, a.IsActive, a.Category = "New", true, "SWAP"
		if err := ps.UpdateIntent(ctx, a); err != nil {
			t.Fatal(err)
		}
		if a.Revision != 2 {
			t.Fatalf("revision = %d", a.Revision)
		}
		b.Name = "Lost"
		if err := ps.UpdateIntent(ctx, b); !errors.Is(err, partners.ErrStale) || !errors.Is(err, store.ErrConflict) {
			t.Fatalf("stale update: %v", err)
		}
		got, _ := ps.Intent(ctx, "i1")
		if got.Name != "New" || !got.IsActive || got.Category != "QUERY" || got.Revision != 2 {
			t.Fatalf("after update: %+v (category must be immutable)", got)
		}
		missing := storetest.IntentRow("nope", "@nope", now)
		if err := ps.UpdateIntent(ctx, missing); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("missing: %v", err)
		}
	})
}

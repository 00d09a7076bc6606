package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

// The search follows every change of an intent: edited text, deactivation, verification,
// archiving; a re-probe changes nothing it finds.
func TestSearchFollowsUpdates(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		mustAccount(t, s, "pub")
		mustAccount(t, s, "other")
		now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
		a, b := intentRow("ia", "@weather-alpha", now), intentRow("ib", "@weather-beta", now)
		a.Description, b.Description = "Weather for any city", "Weather for any city"
		if _, err := s.PublishIntents(ctx, "pub", []*store.PartnerIntent{a, b}, store.PublishQuota{Now: now}); err != nil {
			t.Fatal(err)
		}
		for _, in := range []*store.PartnerIntent{a, b} {
			in.IsActive = true
			if err := s.UpdateIntent(ctx, in); err != nil {
				t.Fatal(err)
			}
		}
		find := func(account string, words ...string) []string {
			t.Helper()
			hits, err := s.SearchIntents(ctx, store.SearchQuery{Words: words, AccountID: account, Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			var handles []string
			for _, h := range hits {
				handles = append(handles, h.Intent.PublicIdentifier)
			}
			return handles
		}
		if got := find("other", "weather"); !slices.Equal(got, []string{"@weather-alpha", "@weather-beta"}) {
			t.Fatalf("equal matches in handle order: %v", got)
		}

		// Verification boosts beta above alpha; a re-probe leaves both findable.
		b.VerificationStatus = "VERIFIED"
		if err := s.UpdateIntent(ctx, b); err != nil {
			t.Fatal(err)
		}
		if err := s.RecordProbe(ctx, a.ID, "probe OK", 0, now); err != nil {
			t.Fatal(err)
		}
		if got := find("other", "weather"); !slices.Equal(got, []string{"@weather-beta", "@weather-alpha"}) {
			t.Fatalf("after verification and a re-probe: %v", got)
		}

		// Edited text: the new words find it, the old ones no longer do.
		a.Description, a.SampleQueries = "Tide tables for any harbour", []string{"when is high tide"}
		if err := s.UpdateIntent(ctx, a); err != nil {
			t.Fatal(err)
		}
		if got := find("other", "tide"); !slices.Equal(got, []string{"@weather-alpha"}) {
			t.Fatalf("new words: %v", got)
		}
		if got := find("other", "city"); !slices.Equal(got, []string{"@weather-beta"}) {
			t.Fatalf("old words: %v", got)
		}

		// Deactivated: only its owner finds it. Archived: nobody does.
		b.IsActive = false
		if err := s.UpdateIntent(ctx, b); err != nil {
			t.Fatal(err)
		}
		if got := find("other", "city"); len(got) != 0 {
			t.Fatalf("inactive intent found by another account: %v", got)
		}
		if got := find("pub", "city"); !slices.Equal(got, []string{"@weather-beta"}) {
			t.Fatalf("inactive intent not found by its owner: %v", got)
		}
		archived := now.Add(time.Hour)
		b.ArchivedAt = &archived
		if err := s.UpdateIntent(ctx, b); err != nil {
			t.Fatal(err)
		}
		if got := find("pub", "city"); len(got) != 0 {
			t.Fatalf("archived intent found: %v", got)
		}
	})
}

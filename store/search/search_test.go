package search_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/partners"
	"github.com/switchboard-hq/switchboard/store/search"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

// The search follows every change of an intent: edited text, deactivation, verification,
// archiving; a re-probe changes nothing it finds.
func TestSearchFollowsUpdates(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s, ps := search.New(st), partners.New(st)
		ctx := context.Background()
		storetest.Account(t, st, "pub")
		storetest.Account(t, st, "other")
		now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
		a, b := storetest.IntentRow("ia", "@weather-alpha", now), storetest.IntentRow("ib", "@weather-beta", now)
		a.Description, b.Description = "Weather for any city", "Weather for any city"
		if _, err := ps.Publish(ctx, "pub", []*partners.Intent{a, b}, now); err != nil {
			t.Fatal(err)
		}
		for _, in := range []*partners.Intent{a, b} {
			in.IsActive = true
			if err := ps.UpdateIntent(ctx, in); err != nil {
				t.Fatal(err)
			}
		}
		find := func(account string, words ...string) []string {
			t.Helper()
			hits, err := s.SearchIntents(ctx, search.SearchQuery{Words: words, AccountID: account, Limit: 10})
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
		if err := ps.UpdateIntent(ctx, b); err != nil {
			t.Fatal(err)
		}
		if err := ps.RecordProbe(ctx, a.ID, "probe OK", 0, now); err != nil {
			t.Fatal(err)
		}
		if got := find("other", "weather"); !slices.Equal(got, []string{"@weather-beta", "@weather-alpha"}) {
			t.Fatalf("after verification and a re-probe: %v", got)
		}

		// Edited text: the new words find it, the old ones no longer do.
		a.Description, a.SampleQueries = "Tide tables for any harbour", []string{"when is high tide"}
		if err := ps.UpdateIntent(ctx, a); err != nil {
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
		if err := ps.UpdateIntent(ctx, b); err != nil {
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
		if err := ps.UpdateIntent(ctx, b); err != nil {
			t.Fatal(err)
		}
		if got := find("pub", "city"); len(got) != 0 {
			t.Fatalf("archived intent found: %v", got)
		}
	})
}

// Each intent's quality counts its own latest calls: a busy intent does not crowd a quiet one
// out, and calls before the window or unfinished do not count.
func TestIntentQualityPerIntent(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := search.New(st)
		ctx := context.Background()
		storetest.Account(t, st, "caller")
		now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
		var invs []*store.Invocation
		add := func(intent string, n int, at time.Time, state string, finished bool) {
			for i := range n {
				inv := &store.Invocation{RequestID: fmt.Sprintf("%s-%s-%d-%d", intent, state, at.Unix(), i), AccountID: "caller", KeyID: "k",
					IntentID: intent, Handle: "@" + intent, Category: "QUERY", Args: "{}",
					CreatedAt: at.Add(time.Duration(i) * time.Millisecond), Outcome: store.Outcome{State: state}}
				if finished {
					f := inv.CreatedAt.Add(time.Second)
					inv.FinishedAt = &f
				}
				invs = append(invs, inv)
			}
		}
		add("busy", 1600, now.Add(-time.Hour), store.InvSucceeded, true) // more than 500 per intent asked for, all newer
		add("quiet", 3, now.Add(-2*time.Hour), store.InvFailed, true)
		add("quiet", 2, now.Add(-48*time.Hour), store.InvSucceeded, true) // before the window
		add("quiet", 1, now.Add(-time.Hour), store.InvDispatching, false) // not finished
		if err := st.InTx(ctx, func(ctx context.Context, q *store.Q) error {
			for _, inv := range invs {
				if err := q.InsertInvocation(ctx, inv); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		got, err := s.IntentQuality(ctx, []string{"busy", "quiet", "unused"}, now.Add(-24*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if b := got["busy"]; b == nil || b.Calls != 500 || b.Succeeded != 500 {
			t.Fatalf("busy: %+v, want its latest 500 calls", b)
		}
		if q := got["quiet"]; q == nil || q.Calls != 3 || q.Succeeded != 0 {
			t.Fatalf("quiet: %+v, want its 3 finished calls in the window", q)
		}
		if got["unused"] != nil {
			t.Fatalf("unused: %+v, want none", got["unused"])
		}
	})
}

// Browsing lists the intents anyone may invoke, verification first, never archived or
// inactive; the fee-unit and verification filters apply to browsing and searching alike.
func TestBrowseIntents(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s, ps := search.New(st), partners.New(st)
		ctx := context.Background()
		storetest.Account(t, st, "pub")
		now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
		rows := []*partners.Intent{storetest.IntentRow("b1", "@browse-plain", now), storetest.IntentRow("b2", "@browse-verified", now),
			storetest.IntentRow("b3", "@browse-bps", now), storetest.IntentRow("b4", "@browse-off", now), storetest.IntentRow("b5", "@browse-gone", now)}
		for _, r := range rows {
			r.Description = "browse weather"
		}
		rows[2].FeeRateUnit, rows[2].FeeRate = "bps", "30"
		if _, err := ps.Publish(ctx, "pub", rows, now); err != nil {
			t.Fatal(err)
		}
		rows[1].VerificationStatus = "VERIFIED"
		for _, r := range rows[:3] {
			r.IsActive = true
		}
		rows[4].IsActive = true
		rows[4].ArchivedAt = &now
		for _, r := range rows {
			if err := ps.UpdateIntent(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		handles := func(hits []search.SearchHit, err error) []string {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, h := range hits {
				out = append(out, h.Intent.PublicIdentifier)
			}
			return out
		}
		if got := handles(s.BrowseIntents(ctx, search.SearchQuery{Limit: 10})); !slices.Equal(got, []string{"@browse-verified", "@browse-bps", "@browse-plain"}) {
			t.Fatalf("browse: %v", got)
		}
		if got := handles(s.BrowseIntents(ctx, search.SearchQuery{FeeUnits: []string{"bps"}, Limit: 10})); !slices.Equal(got, []string{"@browse-bps"}) {
			t.Fatalf("browse bps: %v", got)
		}
		if got := handles(s.BrowseIntents(ctx, search.SearchQuery{Verification: "VERIFIED", Limit: 10})); !slices.Equal(got, []string{"@browse-verified"}) {
			t.Fatalf("browse verified: %v", got)
		}
		if got := handles(s.SearchIntents(ctx, search.SearchQuery{Words: []string{"weather"}, FeeUnits: []string{"usd_per_call"}, Limit: 10})); !slices.Equal(got, []string{"@browse-verified", "@browse-plain"}) {
			t.Fatalf("search per call: %v", got)
		}
		if got := handles(s.SearchIntents(ctx, search.SearchQuery{Words: []string{"weather"}, Verification: "UNVERIFIED", Limit: 10})); !slices.Equal(got, []string{"@browse-bps", "@browse-plain"}) {
			t.Fatalf("search unverified: %v", got)
		}
		pub, _ := ps.ByAccount(ctx, "pub")
		list, err := s.PublisherIntents(ctx, pub.ID, 10)
		if err != nil || len(list) != 3 {
			t.Fatalf("publisher intents: %d %v", len(list), err)
		}
	})
}

package store_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

// The charts' aggregates bucket by UTC day (a call stamped 00:30 at +02:00 is the previous
// UTC day), cost what SpentSince sums, and leave out unfinished calls; the call log pages by
// keyset without gaps or repeats, filters, and shows a partner only its own intents' calls.
func TestUsageQueries(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		for _, a := range []string{"pub", "pub2", "caller"} {
			mustAccount(t, s, a)
		}
		base := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
		ia, ib := intentRow("ia", "@usage-a", base), intentRow("ib", "@usage-b", base)
		pa, err := s.PublishIntents(ctx, "pub", []*store.PartnerIntent{ia}, base)
		if err != nil {
			t.Fatal(err)
		}
		pb, err := s.PublishIntents(ctx, "pub2", []*store.PartnerIntent{ib}, base)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		add := func(intent *store.PartnerIntent, key, state string, at time.Time, latency int, fee int64) string {
			t.Helper()
			n++
			id := fmt.Sprintf("00000000-0000-0000-0000-%012d", n)
			inv := &store.Invocation{RequestID: id, AccountID: "caller", KeyID: key, IntentID: intent.ID, Handle: intent.PublicIdentifier,
				Category: "QUERY", IntentRevision: 1, Args: `{"q":"x"}`, CreatedAt: at, Price: store.Price{ReserveMicro: 1000}, Outcome: store.Outcome{State: state, PartnerFeeMicro: fee, PlatformFeeMicro: 1000}}
			if state != store.InvAwaitingConfirmation {
				f := at.Add(time.Second)
				inv.FinishedAt, inv.LatencyMs = &f, &latency
			}
			if err := s.CreateInvocation(ctx, inv, "test"); err != nil {
				t.Fatal(err)
			}
			return id
		}
		east := time.FixedZone("east", 2*3600)
		add(ia, "k1", store.InvSucceeded, base, 100, 500)                                       // 11-20
		add(ia, "k2", store.InvFailed, base.Add(time.Hour), 300, 0)                             // 11-20
		add(ia, "k1", store.InvSucceeded, time.Date(2026, 11, 22, 0, 30, 0, 0, east), 200, 500) // 11-21 in UTC
		add(ib, "k1", store.InvSucceeded, base.Add(48*time.Hour), 50, 0)                        // 11-22
		add(ia, "k1", store.InvAwaitingConfirmation, base.Add(49*time.Hour), 0, 0)              // not finished
		add(ib, "k3", store.InvFailed, base.Add(-48*time.Hour), 10, 0)                          // before the window, two calls
		add(ib, "k3", store.InvFailed, base.Add(-48*time.Hour), 10, 0)                          // in one instant: by request id
		since := base.Add(-24 * time.Hour)

		spend, err := s.SpendByDay(ctx, "caller", since)
		if err != nil {
			t.Fatal(err)
		}
		want := []store.DaySpend{{Day: "2026-11-20", KeyID: "k1", Calls: 1, SpentMicro: 2500}, {Day: "2026-11-20", KeyID: "k2", Calls: 1, SpentMicro: 2000},
			{Day: "2026-11-21", KeyID: "k1", Calls: 1, SpentMicro: 2500}, {Day: "2026-11-22", KeyID: "k1", Calls: 1, SpentMicro: 2000}}
		if !slices.Equal(spend, want) {
			t.Fatalf("spend by day:\n got %+v\nwant %+v", spend, want)
		}
		var total int64
		for _, d := range spend {
			total += d.SpentMicro
		}
		if sum, _ := s.SpentSince(ctx, "caller", since); sum != total {
			t.Fatalf("the days sum to %d, SpentSince says %d", total, sum)
		}

		daily, err := s.IntentDaily(ctx, "ia", since)
		if err != nil {
			t.Fatal(err)
		}
		if want := []store.IntentDay{{Day: "2026-11-20", Calls: 2, Succeeded: 1, EarnedMicro: 500}, {Day: "2026-11-21", Calls: 1, Succeeded: 1, EarnedMicro: 500}}; !slices.Equal(daily, want) {
			t.Fatalf("intent daily: %+v", daily)
		}
		lat, err := s.IntentLatencies(ctx, "ia", since, 2)
		if err != nil {
			t.Fatal(err)
		}
		if want := []store.DayLatency{{Day: "2026-11-21", LatencyMs: 200}, {Day: "2026-11-20", LatencyMs: 300}}; !slices.Equal(lat, want) {
			t.Fatalf("latencies (newest 2): %+v", lat)
		}

		ids := func(invs []*store.Invocation) []string {
			var out []string
			for _, i := range invs {
				out = append(out, i.Handle+"/"+i.State)
			}
			return out
		}
		// Pages of two, newest first, then the next page from the last row's keyset.
		var seen []string
		q := store.CallQuery{AccountID: "caller", Limit: 2}
		for {
			page, err := s.Calls(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range page {
				seen = append(seen, p.RequestID)
				if p.Args != "" || p.Answer != nil {
					t.Fatal("a call log row carries args or the answer")
				}
			}
			if len(page) < 2 {
				break
			}
			last := page[len(page)-1]
			q.BeforeAt, q.BeforeID = &last.CreatedAt, last.RequestID
		}
		if want := []string{"00000000-0000-0000-0000-000000000005", "00000000-0000-0000-0000-000000000004", "00000000-0000-0000-0000-000000000003",
			"00000000-0000-0000-0000-000000000002", "00000000-0000-0000-0000-000000000001", "00000000-0000-0000-0000-000000000007",
			"00000000-0000-0000-0000-000000000006"}; !slices.Equal(seen, want) {
			t.Fatalf("keyset pages: %v", seen)
		}
		if got, _ := s.Calls(ctx, store.CallQuery{AccountID: "caller", KeyID: "k2", Limit: 10}); !slices.Equal(ids(got), []string{"@usage-a/failed"}) {
			t.Fatalf("key filter: %v", ids(got))
		}
		if got, _ := s.Calls(ctx, store.CallQuery{AccountID: "caller", IntentID: "ib", State: store.InvSucceeded, Limit: 10}); !slices.Equal(ids(got), []string{"@usage-b/succeeded"}) {
			t.Fatalf("intent filter: %v", ids(got))
		}
		if got, _ := s.Calls(ctx, store.CallQuery{AccountID: "caller", State: store.InvSucceeded, Limit: 10}); len(got) != 3 {
			t.Fatalf("outcome filter: %v", ids(got))
		}
		// The partner sees its own intent's calls, never the quote it was not sent.
		if got, _ := s.Calls(ctx, store.CallQuery{PartnerID: pa.ID, Limit: 10}); !slices.Equal(ids(got), []string{"@usage-a/succeeded", "@usage-a/failed", "@usage-a/succeeded"}) {
			t.Fatalf("partner a: %v", ids(got))
		}
		if got, _ := s.Calls(ctx, store.CallQuery{PartnerID: pb.ID, Limit: 10}); !slices.Equal(ids(got), []string{"@usage-b/succeeded", "@usage-b/failed", "@usage-b/failed"}) {
			t.Fatalf("partner b: %v", ids(got))
		}
		if got, _ := s.Calls(ctx, store.CallQuery{PartnerID: pb.ID, IntentID: "ia", Limit: 10}); len(got) != 0 {
			t.Fatalf("partner b filtering on a's intent sees %v", ids(got))
		}
	})
}

// Browsing lists the intents anyone may invoke, verification first, never archived or
// inactive; the fee-unit and verification filters apply to browsing and searching alike.
func TestBrowseIntents(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		mustAccount(t, s, "pub")
		now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
		rows := []*store.PartnerIntent{intentRow("b1", "@browse-plain", now), intentRow("b2", "@browse-verified", now),
			intentRow("b3", "@browse-bps", now), intentRow("b4", "@browse-off", now), intentRow("b5", "@browse-gone", now)}
		for _, r := range rows {
			r.Description = "browse weather"
		}
		rows[2].FeeRateUnit, rows[2].FeeRate = "bps", "30"
		if _, err := s.PublishIntents(ctx, "pub", rows, now); err != nil {
			t.Fatal(err)
		}
		rows[1].VerificationStatus = "VERIFIED"
		for _, r := range rows[:3] {
			r.IsActive = true
		}
		rows[4].IsActive = true
		rows[4].ArchivedAt = &now
		for _, r := range rows {
			if err := s.UpdateIntent(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		handles := func(hits []store.SearchHit, err error) []string {
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
		if got := handles(s.BrowseIntents(ctx, store.SearchQuery{Limit: 10})); !slices.Equal(got, []string{"@browse-verified", "@browse-bps", "@browse-plain"}) {
			t.Fatalf("browse: %v", got)
		}
		if got := handles(s.BrowseIntents(ctx, store.SearchQuery{FeeUnits: []string{"bps"}, Limit: 10})); !slices.Equal(got, []string{"@browse-bps"}) {
			t.Fatalf("browse bps: %v", got)
		}
		if got := handles(s.BrowseIntents(ctx, store.SearchQuery{Verification: "VERIFIED", Limit: 10})); !slices.Equal(got, []string{"@browse-verified"}) {
			t.Fatalf("browse verified: %v", got)
		}
		if got := handles(s.SearchIntents(ctx, store.SearchQuery{Words: []string{"weather"}, FeeUnits: []string{"usd_per_call"}, Limit: 10})); !slices.Equal(got, []string{"@browse-verified", "@browse-plain"}) {
			t.Fatalf("search per call: %v", got)
		}
		if got := handles(s.SearchIntents(ctx, store.SearchQuery{Words: []string{"weather"}, Verification: "UNVERIFIED", Limit: 10})); !slices.Equal(got, []string{"@browse-bps", "@browse-plain"}) {
			t.Fatalf("search unverified: %v", got)
		}
		pub, _ := s.PartnerByAccount(ctx, "pub")
		list, err := s.PublisherIntents(ctx, pub.ID, 10)
		if err != nil || len(list) != 3 {
			t.Fatalf("publisher intents: %d %v", len(list), err)
		}
	})
}

package reports_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/invocations"
	"github.com/switchboard-hq/switchboard/store/partners"
	"github.com/switchboard-hq/switchboard/store/reports"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

// The charts' aggregates bucket by UTC day (a call stamped 00:30 at +02:00 is the previous
// UTC day), cost what SpentSince sums, and leave out unfinished calls; the call log pages by
// keyset without gaps or repeats, filters, and shows a partner only its own intents' calls.
func TestUsageQueries(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := reports.New(st)
		ctx := context.Background()
		for _, a := range []string{"pub", "pub2", "caller"} {
			storetest.Account(t, st, a)
		}
		base := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
		ia, ib := storetest.IntentRow("ia", "@usage-a", base), storetest.IntentRow("ib", "@usage-b", base)
		pa, err := partners.New(st).Publish(ctx, "pub", []*partners.Intent{ia}, base)
		if err != nil {
			t.Fatal(err)
		}
		pb, err := partners.New(st).Publish(ctx, "pub2", []*partners.Intent{ib}, base)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		add := func(intent *partners.Intent, key, state string, at time.Time, latency int, fee int64) string {
			t.Helper()
			n++
			id := fmt.Sprintf("00000000-0000-0000-0000-%012d", n)
			inv := &store.Invocation{RequestID: id, AccountID: "caller", KeyID: key, IntentID: intent.ID, Handle: intent.PublicIdentifier,
				Category: "QUERY", IntentRevision: 1, Args: `{"q":"x"}`, CreatedAt: at, Price: store.Price{ReserveMicro: 1000}, Outcome: store.Outcome{State: state, PartnerFeeMicro: fee, PlatformFeeMicro: 1000}}
			if state != store.InvAwaitingConfirmation {
				f := at.Add(time.Second)
				inv.FinishedAt, inv.LatencyMs = &f, &latency
			}
			if err := st.CreateInvocation(ctx, inv, "test"); err != nil {
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
		want := []reports.DaySpend{{Day: "2026-11-20", KeyID: "k1", Calls: 1, SpentMicro: 2500}, {Day: "2026-11-20", KeyID: "k2", Calls: 1, SpentMicro: 2000},
			{Day: "2026-11-21", KeyID: "k1", Calls: 1, SpentMicro: 2500}, {Day: "2026-11-22", KeyID: "k1", Calls: 1, SpentMicro: 2000}}
		if !slices.Equal(spend, want) {
			t.Fatalf("spend by day:\n got %+v\nwant %+v", spend, want)
		}
		var total int64
		for _, d := range spend {
			total += d.SpentMicro
		}
		if sum, _ := invocations.New(st).SpentSince(ctx, "caller", since); sum != total {
			t.Fatalf("the days sum to %d, SpentSince says %d", total, sum)
		}

		daily, err := s.IntentDaily(ctx, "ia", since)
		if err != nil {
			t.Fatal(err)
		}
		if want := []reports.IntentDay{{Day: "2026-11-20", Calls: 2, Succeeded: 1, EarnedMicro: 500}, {Day: "2026-11-21", Calls: 1, Succeeded: 1, EarnedMicro: 500}}; !slices.Equal(daily, want) {
			t.Fatalf("intent daily: %+v", daily)
		}
		lat, err := s.IntentLatencies(ctx, "ia", since, 2)
		if err != nil {
			t.Fatal(err)
		}
		if want := []reports.DayLatency{{Day: "2026-11-21", LatencyMs: 200}, {Day: "2026-11-20", LatencyMs: 300}}; !slices.Equal(lat, want) {
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
		q := reports.CallQuery{AccountID: "caller", Limit: 2}
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
		if got, _ := s.Calls(ctx, reports.CallQuery{AccountID: "caller", KeyID: "k2", Limit: 10}); !slices.Equal(ids(got), []string{"@usage-a/failed"}) {
			t.Fatalf("key filter: %v", ids(got))
		}
		if got, _ := s.Calls(ctx, reports.CallQuery{AccountID: "caller", IntentID: "ib", State: store.InvSucceeded, Limit: 10}); !slices.Equal(ids(got), []string{"@usage-b/succeeded"}) {
			t.Fatalf("intent filter: %v", ids(got))
		}
		if got, _ := s.Calls(ctx, reports.CallQuery{AccountID: "caller", State: store.InvSucceeded, Limit: 10}); len(got) != 3 {
			t.Fatalf("outcome filter: %v", ids(got))
		}
		// The partner sees its own intent's calls, never the quote it was not sent.
		if got, _ := s.Calls(ctx, reports.CallQuery{PartnerID: pa.ID, Limit: 10}); !slices.Equal(ids(got), []string{"@usage-a/succeeded", "@usage-a/failed", "@usage-a/succeeded"}) {
			t.Fatalf("partner a: %v", ids(got))
		}
		if got, _ := s.Calls(ctx, reports.CallQuery{PartnerID: pb.ID, Limit: 10}); !slices.Equal(ids(got), []string{"@usage-b/succeeded", "@usage-b/failed", "@usage-b/failed"}) {
			t.Fatalf("partner b: %v", ids(got))
		}
		if got, _ := s.Calls(ctx, reports.CallQuery{PartnerID: pb.ID, IntentID: "ia", Limit: 10}); len(got) != 0 {
			t.Fatalf("partner b filtering on a's intent sees %v", ids(got))
		}
	})
}

package usage_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/partners"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/service"
	"github.com/switchboard-hq/switchboard/tools/usage"
)

// A caller's spend is summed per UTC day and per key (biggest first, labelled by key name),
// after the account's pending writes have settled; the call logs page without repeats; a
// partner sees its intents' calls with what it earned and the caller only as a pseudonym,
// never a call that was not sent to it.
func TestSpendAndCallLogs(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
		for _, a := range []string{"caller", "partner"} {
			if err := accounts.New(s).Create(ctx, &accounts.Account{ID: a, Email: a + "@example.com", CreatedAt: now}, nil,
				&accounts.APIKey{ID: "k-" + a, AccountID: a, Name: "main", Prefix: "sb_test_" + a[:2], Hash: "h-" + a, Scopes: []string{"read"},
					SpendLimitMicro: 1, RateLimitPerMinute: 1, CreatedAt: now}); err != nil {
				t.Fatal(err)
			}
		}
		intent := &partners.Intent{ID: "i1", PublicIdentifier: "@usage", Name: "N", Description: "D", Category: "QUERY",
			Capabilities: []string{}, BindingType: "REST", ToolEndpoint: "https://partner.example/x", TimeoutMs: 30000,
			ParametersSchema: `{"type":"object"}`, FeeRate: "0", FeeRateUnit: "usd_per_call", Tier: "one_shot",
			SampleQueries: []string{}, VerificationStatus: "UNVERIFIED", Revision: 1, CreatedAt: now, UpdatedAt: now}
		pt, err := partners.New(s).Publish(ctx, "partner", []*partners.Intent{intent}, now)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		add := func(key, state string, at time.Time, fee int64) string {
			t.Helper()
			n++
			id := fmt.Sprintf("00000000-0000-0000-0000-%012d", n)
			inv := &store.Invocation{RequestID: id, AccountID: "caller", KeyID: key, IntentID: "i1", Handle: "@usage", Category: "QUERY",
				IntentRevision: 1, Args: `{"q":"x"}`, CreatedAt: at, Price: store.Price{ReserveMicro: 1000}, Outcome: store.Outcome{State: state, PartnerFeeMicro: fee, PlatformFeeMicro: 100}}
			if state != store.InvAwaitingConfirmation {
				f, lat := at.Add(time.Second), 20
				inv.FinishedAt, inv.LatencyMs = &f, &lat
			}
			if err := s.CreateInvocation(ctx, inv, "test"); err != nil {
				t.Fatal(err)
			}
			return id
		}
		add("k-caller", store.InvSucceeded, now.Add(-2*time.Hour), 500)        // today: 1600
		add("k-caller", store.InvSucceeded, now.Add(-26*time.Hour), 0)         // yesterday: 1100
		add("", store.InvFailed, now.Add(-3*time.Hour), 0)                     // the portal's own: 1100
		pending := add("k-caller", store.InvAwaitingConfirmation, now, 0)      // unfinished: 0
		add("k-caller", store.InvSucceeded, now.AddDate(0, 0, -usage.Days), 9) // before the window

		var settled []string
		svc := usage.NewService(usage.Config{
			Settled: func(_ context.Context, accountID string) error { settled = append(settled, accountID); return nil },
			UserID:  func(accountID, partnerID string) string { return "pseudo-" + accountID + "-" + partnerID },
		}, service.Deps{Store: s, Now: func() time.Time { return now }})
		caller := &tools.Principal{AccountID: "caller", Method: tools.AuthSession}
		partner := &tools.Principal{AccountID: "partner", Method: tools.AuthSession}

		sp, err := svc.Spend(ctx, caller)
		if err != nil {
			t.Fatal(err)
		}
		if len(settled) != 1 || settled[0] != "caller" {
			t.Fatalf("Spend waited for %q, want the caller's account", settled)
		}
		today, yesterday := sp.Total.Values[usage.Days-1], sp.Total.Values[usage.Days-2]
		if sp.Days[usage.Days-1] != "2026-11-26" || today != 2700 || yesterday != 1100 || sp.Total.Total != 3800 || sp.Total.Calls != 3 {
			t.Fatalf("totals: today %d, yesterday %d, %+v", today, yesterday, sp.Total)
		}
		if len(sp.ByKey) != 2 || sp.ByKey[0].KeyID != "k-caller" || sp.ByKey[0].Total != 2700 || sp.ByKey[0].Label != "main (sb_test_ca…)" ||
			sp.ByKey[1].KeyID != "" || sp.ByKey[1].Label != "Signed in on the portal" {
			t.Fatalf("by key %+v", sp.ByKey)
		}

		// The caller's log, two to a page, newest first, every call once.
		var seen []string
		f := usage.Filter{Limit: 2}
		for page := 0; ; page++ {
			pg, err := svc.Calls(ctx, caller, usage.Caller, f)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range pg.Rows {
				seen = append(seen, r.RequestID)
			}
			if pg.Next == "" {
				break
			}
			f.Cursor = pg.Next
			if page > 5 {
				t.Fatal("the log does not end")
			}
		}
		if len(seen) != 5 || seen[0] != pending {
			t.Fatalf("caller's log %v", seen)
		}
		var te *tools.Error
		if _, err := svc.Calls(ctx, caller, usage.Caller, usage.Filter{Outcome: "nope"}); !errors.As(err, &te) || te.Code != tools.CodeBadInput {
			t.Fatalf("unknown outcome: %v", err)
		}
		if _, err := svc.Calls(ctx, caller, usage.Caller, usage.Filter{Cursor: "garbage"}); !errors.As(err, &te) || te.Code != tools.CodeBadInput {
			t.Fatalf("damaged cursor: %v", err)
		}

		// The partner's side: its earnings, no key, the pseudonym, and no unsent call.
		pg, err := svc.Calls(ctx, partner, usage.Partner, usage.Filter{Outcome: store.InvSucceeded})
		if err != nil {
			t.Fatal(err)
		}
		if len(pg.Rows) != 3 || pg.Rows[0].ChargeMicro != 500 || pg.Rows[0].KeyID != "" {
			t.Fatalf("partner's log %+v", pg.Rows)
		}
		d, err := svc.Call(ctx, partner, usage.Partner, pg.Rows[0].RequestID)
		if err != nil {
			t.Fatal(err)
		}
		if d.Caller != "pseudo-caller-"+pt.ID || d.ChargeMicro != 500 || d.KeyID != "" {
			t.Fatalf("partner's detail %+v", d)
		}
		if _, err := svc.Call(ctx, partner, usage.Partner, pending); !errors.As(err, &te) || te.Code != tools.CodeNotFound {
			t.Fatalf("a call never sent to the partner: %v", err)
		}
		if _, err := svc.Call(ctx, partner, usage.Caller, pending); !errors.As(err, &te) || te.Code != tools.CodeNotFound {
			t.Fatalf("another account's call: %v", err)
		}
		cd, err := svc.Call(ctx, caller, usage.Caller, pg.Rows[0].RequestID)
		if err != nil || cd.ChargeMicro != 1600 || cd.Caller != "k-caller" {
			t.Fatalf("caller's detail %+v %v", cd, err)
		}
	})
}

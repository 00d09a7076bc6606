package account_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/partners"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/account"
	"github.com/switchboard-hq/switchboard/tools/keys"
	"github.com/switchboard-hq/switchboard/tools/service"
)

// account_get, called through the kernel with a key minted under another, answers the key's
// own scopes and limits, the keys it may act on (itself and below, not its parent), and the
// account's recent calls with what each finished one cost (an unfinished one costs nothing).
func TestAccountGet(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
		clock := func() time.Time { return now }
		quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
		d := service.Deps{Store: s, Now: clock, Log: quiet}
		ks := keys.NewService(keys.Config{Env: "test", Defaults: keys.Limits{SpendMicro: 5_000_000, RatePerMinute: 60}}, d)
		root, _ := ks.New("acct", "root", []string{"read", "invoke"}, keys.Limits{SpendMicro: 9_000_000, RatePerMinute: 100})
		if err := accounts.New(s).Create(ctx, &accounts.Account{ID: "acct", Email: "who@example.com", CreatedAt: now}, nil, root); err != nil {
			t.Fatal(err)
		}
		child, secret := ks.New("acct", "child", []string{"read"}, keys.Limits{SpendMicro: 2_000_000, RatePerMinute: 30})
		child.ParentID = &root.ID
		if err := accounts.New(s).MintKey(ctx, child, keys.MaxLiveKeys); err != nil {
			t.Fatal(err)
		}
		intent := &partners.Intent{ID: "i1", PublicIdentifier: "@acct-test", Name: "N", Description: "D", Category: "QUERY",
			Capabilities: []string{}, BindingType: "REST", ToolEndpoint: "https://partner.example/x", TimeoutMs: 30000,
			ParametersSchema: `{"type":"object"}`, FeeRate: "0", FeeRateUnit: "usd_per_call", Tier: "one_shot",
			SampleQueries: []string{}, VerificationStatus: "UNVERIFIED", Revision: 1, CreatedAt: now, UpdatedAt: now}
		if _, err := partners.New(s).Publish(ctx, "acct", []*partners.Intent{intent}, now); err != nil {
			t.Fatal(err)
		}
		for i, finished := range []bool{true, false} {
			inv := &store.Invocation{RequestID: []string{"00000000-0000-0000-0000-000000000001", "00000000-0000-0000-0000-000000000002"}[i],
				AccountID: "acct", KeyID: child.ID, IntentID: "i1", Handle: "@acct-test", Category: "QUERY", IntentRevision: 1, Args: `{}`,
				CreatedAt: now.Add(time.Duration(i) * time.Second), Price: store.Price{ReserveMicro: 1000}, Outcome: store.Outcome{State: store.InvSucceeded, RefundedMicro: 400, PartnerFeeMicro: 250, PlatformFeeMicro: 100, GasMicro: 50}}
			if finished {
				f, lat := now.Add(time.Second), 10
				inv.FinishedAt, inv.LatencyMs = &f, &lat
			} else {
				inv.State = store.InvAwaitingConfirmation
			}
			if err := s.CreateInvocation(ctx, inv, "test"); err != nil {
				t.Fatal(err)
			}
		}

		k, err := tools.NewKernel(keys.NewAuthenticator(d, nil), tools.NewRateLimiter(clock), nil, quiet, clock, account.NewService(d, ks).Tools()...)
		if err != nil {
			t.Fatal(err)
		}
		res, terr := k.Call(ctx, tools.Request{Tool: "account_get", APIKey: secret})
		if terr != nil {
			t.Fatal(terr)
		}
		out := res.(account.GetOutput)
		if out.UserID != "acct" || out.Email != "who@example.com" || out.KeyID != child.ID || !slices.Equal(out.Scopes, []string{"read"}) {
			t.Fatalf("identity %+v", out)
		}
		if out.Limits.SpendLimitUsd.Micro() != 2_000_000 || out.Limits.RateLimitPerMinute != 30 ||
			out.Limits.DefaultSpendLimitUsd.Micro() != 5_000_000 || out.Limits.DefaultRateLimitPerMinute != 60 {
			t.Fatalf("limits %+v", out.Limits)
		}
		if len(out.Keys) != 1 || out.Keys[0].ID != child.ID {
			t.Fatalf("a child key sees %+v, want itself only", out.Keys)
		}
		costs := map[string]int64{}
		for _, r := range out.Recent {
			costs[r.State] = r.CostUsd.Micro()
		}
		// 1000 reserved - 400 refunded + 250 + 100 + 50 = 1000 for the finished call.
		if len(out.Recent) != 2 || costs[store.InvSucceeded] != 1000 || costs[store.InvAwaitingConfirmation] != 0 {
			t.Fatalf("recent %+v", out.Recent)
		}
	})
}

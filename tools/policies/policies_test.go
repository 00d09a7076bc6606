package policies_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/partners"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/keys"
	"github.com/switchboard-hq/switchboard/tools/policies"
	"github.com/switchboard-hq/switchboard/tools/service"
)

// A cap below what calls in flight already hold is refused saying so; the operator's SetAs
// writes what the owner may (and names keys of the account only); policy_get's windows count
// the call in flight at its worst case.
func TestCapAboveWhatIsHeld(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		storetest.Account(t, st, "acct")
		now := time.Now().UTC()
		if _, err := partners.New(st).Publish(ctx, "acct", []*partners.Intent{storetest.IntentRow("i1", "@held", now)}, now); err != nil {
			t.Fatal(err)
		}
		inv := &store.Invocation{RequestID: "0193b6c0-0000-7000-8000-000000000001", AccountID: "acct", KeyID: "k-acct", IntentID: "i1", Handle: "@held",
			Category: "QUERY", IntentRevision: 1, Args: "{}", Price: store.Price{ReserveMicro: 1_000, MaxPartnerFeeMicro: 3_000, MaxPlatformFeeMicro: 1_000},
			Outcome: store.Outcome{State: store.InvDispatching}, CreatedAt: now, DispatchedAt: &now}
		if err := st.CreateInvocation(ctx, inv, "in flight"); err != nil {
			t.Fatal(err)
		}
		d := service.Deps{Store: st}
		bill := billing.NewService(billing.DefaultConfig(), d, billing.Recording{})
		svc := policies.NewService(d, bill, keys.NewService(keys.Config{Env: "test"}, d), policies.NewApprovals(d, nil))
		low := &billing.Policy{Caps: []billing.Cap{{Window: "hour", USD: "0.004"}}}
		_, err := svc.SetAs(ctx, "acct", "", low, "admin")
		var te *tools.Error
		if !errors.As(err, &te) || te.Code != tools.CodeBadInput || !strings.Contains(te.Message, "below the 0.005 USD that calls in flight hold") {
			t.Fatalf("a cap below what is held: %v", err)
		}
		out, err := svc.SetAs(ctx, "acct", "k-acct", &billing.Policy{Caps: []billing.Cap{{Window: "hour", USD: "0.005"}}}, "admin")
		if err != nil || out.Key == nil || out.Windows[0].SpentUsd != "0.005" || out.Windows[0].LeftUsd != "0" {
			t.Fatalf("a cap at what is held: %+v %v", out, err)
		}
		storetest.Account(t, st, "acct2")
		if _, err := svc.SetAs(ctx, "acct", "k-acct2", low, "admin"); !errors.As(err, &te) || te.Code != tools.CodeNotFound {
			t.Fatalf("another account's key: %v", err)
		}
	})
}

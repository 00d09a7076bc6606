package spending_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/spending"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

// TestTopupsAreNotSpending: a credited top-up's record (kind topup, its value the credit
// bought, as credit_topup writes it) counts in no window and holds nothing, beside a call that
// counts at its charge: money in never uses up a policy's cap, whatever the sums count of
// other movements' values.
func TestTopupsAreNotSpending(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Second)
		storetest.Account(t, st, "a1")
		asked := now.Add(-time.Minute)
		network, tx := "eip155:31337", "0xabc"
		rows := []*store.Invocation{
			{RequestID: "call", AccountID: "a1", KeyID: "k-a1", IntentID: "i1", Handle: "@h", Category: "QUERY", IntentRevision: 1, Args: "{}",
				Price:   store.Price{ReserveMicro: 1_000},
				Outcome: store.Outcome{State: store.InvSucceeded, PartnerFeeMicro: 4_000, FinishedAt: &now}, CreatedAt: asked, DispatchedAt: &asked},
			{RequestID: "topup", AccountID: "a1", KeyID: "k-a1", Handle: "credit_topup", Args: `{"amountUsd":5}`, Kind: store.KindTopup,
				Network: &network, TxHash: &tx, ValueMicro: 5_000_000,
				Outcome: store.Outcome{State: store.InvSucceeded, FinishedAt: &now}, CreatedAt: asked, DispatchedAt: &now},
		}
		for _, inv := range rows {
			if err := st.CreateInvocation(ctx, inv, "test"); err != nil {
				t.Fatal(err)
			}
		}
		sp := spending.New(st)
		for _, key := range []string{"", "k-a1"} {
			got, err := sp.Spent(ctx, "a1", key, []time.Time{now.Add(-time.Hour), {}})
			if err != nil || got[0] != 5_000 || got[1] != 5_000 {
				t.Fatalf("spent under %q: %v %v; want the call's 5000 in both windows, the top-up nowhere", key, got, err)
			}
			if held, err := sp.Held(ctx, "a1", key); err != nil || held != 0 {
				t.Fatalf("held under %q: %d %v; want 0", key, held, err)
			}
		}
	})
}

package spending_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/spending"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

// BenchmarkView is what one policy check reads for an account with 20,000 finished calls
// spread over the last 30 days, by what its policy caps: an hourly cap reads the last few
// hours of them, a 30-day cap all of them, a policy without caps none.
//
//	go test ./store/spending -run '^$' -bench View -benchtime 200x
func BenchmarkView(b *testing.B) {
	const calls = 20_000
	for _, dialect := range storetest.Dialects() {
		st := storetest.Open(b, dialect)
		ctx := context.Background()
		storetest.Account(b, st, "a1")
		now := time.Now().UTC()
		rows := make([]*store.Invocation, 0, 1000)
		for i := range calls {
			at := now.Add(-time.Duration(i) * (30 * 24 * time.Hour / calls))
			inv := &store.Invocation{RequestID: fmt.Sprintf("r%06d", i), AccountID: "a1", KeyID: "k-a1", IntentID: "i1", Handle: "@h", Category: "QUERY",
				IntentRevision: 1, Args: "{}", Price: store.Price{ReserveMicro: 1_000, MaxPartnerFeeMicro: 10_000}, CreatedAt: at, DispatchedAt: &at}
			inv.State, inv.FinishedAt, inv.PartnerFeeMicro = store.InvSucceeded, &at, 4_000
			if rows = append(rows, inv); len(rows) == cap(rows) || i == calls-1 {
				if _, err := st.DB().NewInsert().Model(&rows).Exec(ctx); err != nil {
					b.Fatal(err)
				}
				rows = rows[:0]
			}
		}
		// The planner's statistics, as PostgreSQL's autovacuum would have them by now.
		if _, err := st.DB().ExecContext(ctx, "ANALYZE"); err != nil {
			b.Fatal(err)
		}
		err := st.InTx(ctx, func(ctx context.Context, q *store.Q) error {
			return spending.PutPolicy(ctx, q, &spending.Policy{AccountID: "a1", Body: `{}`, UpdatedAt: now, UpdatedBy: "bench"})
		})
		if err != nil {
			b.Fatal(err)
		}
		sp := spending.New(st)
		for _, c := range []struct {
			name  string
			since []time.Time
		}{
			{"caps-30d", []time.Time{now.Add(-time.Hour), now.Add(-24 * time.Hour), now.Add(-30 * 24 * time.Hour)}},
			{"caps-hour", []time.Time{now.Add(-time.Hour), now, now}},
			{"no-caps", nil},
		} {
			b.Run(dialect+"/"+c.name, func(b *testing.B) {
				for b.Loop() {
					v, err := sp.View(ctx, "a1", []string{"k-a1"}, "i1", func(*spending.Policy) []time.Time { return c.since })
					if err != nil || len(v.Policies) != 1 {
						b.Fatal(v, err)
					}
				}
			})
		}
	}
}

package outbox_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/outbox"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

// What a claim costs beside one endpoint's backlog of due deliveries (a receiver answering
// 500 to every one keeps them due at their own backoff): the ranking reads every due row.
func BenchmarkClaimBesideABacklog(b *testing.B) {
	for _, dialect := range storetest.Dialects() {
		for _, backlog := range []int{1_000, 20_000} {
			b.Run(fmt.Sprintf("%s/%d", dialect, backlog), func(b *testing.B) {
				ctx := context.Background()
				st := storetest.Open(b, dialect)
				o := outbox.New(st)
				now := time.Now().UTC().Truncate(time.Millisecond)
				storetest.Account(b, st, "x")
				storetest.Account(b, st, "y")
				for _, ep := range []*outbox.Endpoint{
					{ID: "ex", AccountID: "x", URL: "https://x.example/h", SecretSalt: []byte("s"), CreatedAt: now.Add(-time.Hour)},
					{ID: "ey", AccountID: "y", URL: "https://y.example/h", SecretSalt: []byte("s"), CreatedAt: now.Add(-time.Hour)},
				} {
					if err := o.CreateWebhookEndpoint(ctx, ep, 10); err != nil {
						b.Fatal(err)
					}
				}
				const batch = 1000
				for i := 0; i < backlog; i += batch {
					evs := make([]*store.WebhookEvent, 0, batch)
					ds := make([]*outbox.Delivery, 0, batch)
					for j := i; j < i+batch; j++ {
						due := now.Add(-time.Duration(backlog-j) * time.Millisecond)
						evs = append(evs, &store.WebhookEvent{ID: fmt.Sprintf("ev%d", j), AccountID: "x", Type: "key.created", Body: "{}", CreatedAt: due, FannedAt: &due})
						ds = append(ds, &outbox.Delivery{ID: fmt.Sprintf("d%d", j), EventID: fmt.Sprintf("ev%d", j), EndpointID: "ex", AccountID: "x", State: outbox.DeliveryPending, NextAttemptAt: due, CreatedAt: due})
					}
					if err := st.AddWebhookEvents(ctx, evs...); err != nil {
						b.Fatal(err)
					}
					if _, err := st.DB().NewInsert().Model(&ds).Exec(ctx); err != nil {
						b.Fatal(err)
					}
				}
				ev := &store.WebhookEvent{ID: "ev-y", AccountID: "y", Type: "key.created", Body: "{}", CreatedAt: now, FannedAt: &now}
				if err := st.AddWebhookEvents(ctx, ev); err != nil {
					b.Fatal(err)
				}
				if _, err := st.DB().NewInsert().Model(&outbox.Delivery{ID: "dy", EventID: "ev-y", EndpointID: "ey", AccountID: "y", State: outbox.DeliveryPending, NextAttemptAt: now, CreatedAt: now}).Exec(ctx); err != nil {
					b.Fatal(err)
				}
				caps := outbox.Caps{Limit: 8, PerEndpoint: 2, PerAccount: 4}
				b.ResetTimer()
				for i := range b.N {
					// Each claim at a later instant, once the previous one's leases have run out.
					at := now.Add(time.Duration(i) * time.Minute)
					ids, err := o.ClaimWebhookDeliveries(ctx, "r", at, at.Add(time.Second), caps)
					if err != nil || len(ids) != 3 {
						b.Fatalf("claimed %v (%v), want 2 of the backlog and y's", ids, err)
					}
				}
			})
		}
	}
}

// What a claim costs among many endpoints with nothing due: each is looked up in its index
// range once per claim.
func BenchmarkClaimAmongIdleEndpoints(b *testing.B) {
	for _, dialect := range storetest.Dialects() {
		b.Run(dialect, func(b *testing.B) {
			ctx := context.Background()
			st := storetest.Open(b, dialect)
			o := outbox.New(st)
			now := time.Now().UTC().Truncate(time.Millisecond)
			const endpoints = 5_000
			storetest.Account(b, st, "y")
			eps := make([]*outbox.Endpoint, 0, endpoints)
			for i := range endpoints {
				eps = append(eps, &outbox.Endpoint{ID: fmt.Sprintf("e%d", i), AccountID: "y", URL: "https://y.example/h", EventTypes: []string{}, SecretSalt: []byte("s"), CreatedAt: now.Add(-time.Hour)})
			}
			if _, err := st.DB().NewInsert().Model(&eps).Exec(ctx); err != nil {
				b.Fatal(err)
			}
			ev := &store.WebhookEvent{ID: "ev-y", AccountID: "y", Type: "key.created", Body: "{}", CreatedAt: now, FannedAt: &now}
			if err := st.AddWebhookEvents(ctx, ev); err != nil {
				b.Fatal(err)
			}
			if _, err := st.DB().NewInsert().Model(&outbox.Delivery{ID: "dy", EventID: "ev-y", EndpointID: "e0", AccountID: "y", State: outbox.DeliveryPending, NextAttemptAt: now, CreatedAt: now}).Exec(ctx); err != nil {
				b.Fatal(err)
			}
			caps := outbox.Caps{Limit: 8, PerEndpoint: 2, PerAccount: 4}
			b.ResetTimer()
			for i := range b.N {
				at := now.Add(time.Duration(i) * time.Minute)
				ids, err := o.ClaimWebhookDeliveries(ctx, "r", at, at.Add(time.Second), caps)
				if err != nil || len(ids) != 1 {
					b.Fatalf("claimed %v (%v)", ids, err)
				}
			}
		})
	}
}

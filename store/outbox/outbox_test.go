package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/outbox"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/uptrace/bun"
)

// An event written with what caused it is fanned out to the endpoints that take its type,
// claimed by one replica at a time, and its attempt recorded only by the lease's holder.
func TestOutboxFanOutClaimAndAttempt(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		o := outbox.New(st)
		now := time.Now().UTC().Truncate(time.Millisecond)
		n := 0
		id := func() string { n++; return fmt.Sprintf("id%d", n) }
		if err := accounts.New(st).Create(ctx, &accounts.Account{ID: "a", Email: "a@example.com", CreatedAt: now}, nil, nil); err != nil {
			t.Fatal(err)
		}
		all := &outbox.Endpoint{ID: "e-all", AccountID: "a", URL: "https://a.example/hooks", SecretSalt: []byte("salt"), CreatedAt: now.Add(-time.Minute)}
		keys := &outbox.Endpoint{ID: "e-keys", AccountID: "a", URL: "https://a.example/keys", EventTypes: []string{"key.created"}, SecretSalt: []byte("salt"), CreatedAt: now.Add(-time.Minute)}
		for _, ep := range []*outbox.Endpoint{all, keys} {
			if err := o.CreateWebhookEndpoint(ctx, ep, 2); err != nil {
				t.Fatal(err)
			}
		}
		third := &outbox.Endpoint{ID: "e-3", AccountID: "a", URL: "https://a.example/3", SecretSalt: []byte("salt"), CreatedAt: now}
		if err := o.CreateWebhookEndpoint(ctx, third, 2); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("a third endpoint past the cap of 2: %v, want ErrConflict", err)
		}

		// The event exists only if the transaction that wrote it committed.
		boom := errors.New("rolled back")
		for _, ev := range []struct {
			id, typ string
			err     error
		}{{"ev-key", "key.created", nil}, {"ev-call", "call.succeeded", nil}, {"ev-lost", "call.failed", boom}} {
			err := st.InTx(ctx, func(ctx context.Context, q *store.Q) error {
				if err := q.InsertWebhookEvent(ctx, &store.WebhookEvent{ID: ev.id, AccountID: "a", Type: ev.typ, Body: "{}", CreatedAt: now}); err != nil {
					return err
				}
				return ev.err
			})
			if !errors.Is(err, ev.err) {
				t.Fatalf("event %s: %v", ev.id, err)
			}
		}
		if fan, _, err := o.WebhookWork(ctx, now); err != nil || !fan {
			t.Fatalf("work before the fan-out: %v %v, want events to fan out", fan, err)
		}
		match := func(ep *outbox.Endpoint, typ string) bool {
			if len(ep.EventTypes) == 0 {
				return true
			}
			for _, t := range ep.EventTypes {
				if t == typ {
					return true
				}
			}
			return false
		}
		if got, err := o.FanOutWebhookEvents(ctx, now, 10, id, match); err != nil || got != 2 {
			t.Fatalf("fanned out %d events (%v), want the 2 that committed", got, err)
		}
		rows, err := o.WebhookDeliveries(ctx, "a", outbox.DeliveryFilter{Limit: 10})
		if err != nil || len(rows) != 3 {
			t.Fatalf("deliveries: %d (%v), want 3 (key.created to both endpoints, call.succeeded to the one taking all)", len(rows), err)
		}

		// One replica claims them; another finds nothing to claim while the lease runs.
		ids, err := o.ClaimWebhookDeliveries(ctx, "r1", now, now.Add(45*time.Second), outbox.Caps{Limit: 10})
		if err != nil || len(ids) != 3 {
			t.Fatalf("r1 claimed %v (%v), want 3", ids, err)
		}
		if ids2, err := o.ClaimWebhookDeliveries(ctx, "r2", now.Add(time.Second), now.Add(46*time.Second), outbox.Caps{Limit: 10}); err != nil || len(ids2) != 0 {
			t.Fatalf("r2 claimed %v (%v) under r1's lease", ids2, err)
		}
		send, err := o.WebhookSendOf(ctx, ids[0])
		if err != nil || send.Event == nil || send.Endpoint == nil {
			t.Fatalf("send of %s: %+v %v", ids[0], send, err)
		}
		att := &outbox.Attempt{ID: id(), DeliveryID: ids[0], At: now, Status: 200}
		if _, err := o.RecordWebhookAttempt(ctx, "r2", send, outbox.Outcome{Attempt: att, Delivered: true}, id); !errors.Is(err, outbox.ErrLeaseLost) {
			t.Fatalf("an attempt recorded by a replica without the lease: %v, want ErrLeaseLost", err)
		}
		if _, err := o.RecordWebhookAttempt(ctx, "r1", send, outbox.Outcome{Attempt: att, Delivered: true}, id); err != nil {
			t.Fatal(err)
		}
		got, err := o.WebhookAttempts(ctx, []string{ids[0]})
		if err != nil || len(got[ids[0]]) != 1 || got[ids[0]][0].Status != 200 {
			t.Fatalf("attempts of %s: %+v %v, want one 200", ids[0], got, err)
		}

		// Deleting an endpoint takes its deliveries with it; another account's is not found.
		if err := o.DeleteWebhookEndpoint(ctx, "b", "e-all"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("another account deleting e-all: %v, want ErrNotFound", err)
		}
		if err := o.DeleteWebhookEndpoint(ctx, "a", "e-keys"); err != nil {
			t.Fatal(err)
		}
		if rows, err := o.WebhookDeliveries(ctx, "a", outbox.DeliveryFilter{Limit: 10}); err != nil || len(rows) != 2 {
			t.Fatalf("deliveries after deleting e-keys: %d (%v), want 2", len(rows), err)
		}
	})
}

// Old events are pruned with their deliveries and attempts once nothing waits to deliver
// them; an old event with a pending delivery, and a recent one, stay.
func TestPruneWebhookEvents(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		o := outbox.New(st)
		now := time.Now().UTC().Truncate(time.Millisecond)
		old := now.Add(-40 * 24 * time.Hour)
		if err := accounts.New(st).Create(ctx, &accounts.Account{ID: "a", Email: "a@example.com", CreatedAt: old}, nil, nil); err != nil {
			t.Fatal(err)
		}
		if err := o.CreateWebhookEndpoint(ctx, &outbox.Endpoint{ID: "e", AccountID: "a", URL: "https://a.example/h", SecretSalt: []byte("s"), CreatedAt: old.Add(-time.Hour)}, 5); err != nil {
			t.Fatal(err)
		}
		for _, ev := range []struct {
			id string
			at time.Time
		}{{"ev-done", old}, {"ev-pending", old.Add(time.Second)}, {"ev-new", now}} {
			if err := st.InTx(ctx, func(ctx context.Context, q *store.Q) error {
				return q.InsertWebhookEvent(ctx, &store.WebhookEvent{ID: ev.id, AccountID: "a", Type: "key.created", Body: "{}", CreatedAt: ev.at})
			}); err != nil {
				t.Fatal(err)
			}
		}
		n := 0
		if _, err := o.FanOutWebhookEvents(ctx, now, 10, func() string { n++; return fmt.Sprintf("d%d", n) }, func(*outbox.Endpoint, string) bool { return true }); err != nil {
			t.Fatal(err)
		}
		// ev-done's delivery was delivered (with an attempt), ev-pending's still waits.
		if _, err := st.DB().NewUpdate().Model((*outbox.Delivery)(nil)).Set("state = ?", outbox.DeliveryDelivered).Where("event_id IN (?)", bun.List([]string{"ev-done", "ev-new"})).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		var doneDelivery string
		if err := st.DB().NewSelect().Model((*outbox.Delivery)(nil)).Column("id").Where("event_id = ?", "ev-done").Scan(ctx, &doneDelivery); err != nil {
			t.Fatal(err)
		}
		if _, err := st.DB().NewInsert().Model(&outbox.Attempt{ID: "at1", DeliveryID: doneDelivery, At: old, Status: 200}).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		pruned, err := o.PruneWebhookEvents(ctx, now.Add(-30*24*time.Hour), 10)
		if err != nil || pruned != 1 {
			t.Fatalf("pruned %d (%v), want the one old delivered event", pruned, err)
		}
		var left []string
		if err := st.DB().NewSelect().Table("webhook_events").Column("id").OrderExpr("id").Scan(ctx, &left); err != nil {
			t.Fatal(err)
		}
		attempts, _ := st.DB().NewSelect().Model((*outbox.Attempt)(nil)).Count(ctx)
		deliveries, _ := st.DB().NewSelect().Model((*outbox.Delivery)(nil)).Count(ctx)
		if strings.Join(left, ",") != "ev-new,ev-pending" || attempts != 0 || deliveries != 2 {
			t.Fatalf("left events %v, %d attempts, %d deliveries", left, attempts, deliveries)
		}
	})
}

package outbox_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/outbox"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

// The fairness rules of a claim: candidates are taken in their order while they fit; an
// endpoint holds at most PerEndpoint (1 on trial) and an account PerAccount, counting what is
// already in flight; the claim stops at Limit.
func TestPickKeepsEveryShare(t *testing.T) {
	c := func(id, ep, acct string) outbox.Candidate {
		return outbox.Candidate{ID: id, EndpointID: ep, AccountID: acct}
	}
	caps := outbox.Caps{Limit: 8, PerEndpoint: 2, PerAccount: 4}
	for _, tc := range []struct {
		name  string
		cands []outbox.Candidate
		busy  outbox.InFlight
		caps  outbox.Caps
		want  string
	}{
		{"an account's endpoints take its share, and the next account still gets its turn",
			[]outbox.Candidate{c("x1", "e1", "X"), c("x2", "e2", "X"), c("x3", "e3", "X"), c("x4", "e4", "X"), c("x5", "e5", "X"), c("y1", "f1", "Y")},
			outbox.InFlight{}, caps, "x1 x2 x3 x4 y1"},
		{"an endpoint takes at most its share",
			[]outbox.Candidate{c("a", "e1", "X"), c("b", "e1", "X"), c("c", "e1", "X"), c("d", "e2", "X")},
			outbox.InFlight{}, caps, "a b d"},
		{"what is in flight (any replica's) counts",
			[]outbox.Candidate{c("a", "e1", "X"), c("b", "e2", "X"), c("c", "e3", "X"), c("y", "f1", "Y")},
			outbox.InFlight{Endpoint: map[string]int{"e1": 2, "e2": 1}, Account: map[string]int{"X": 3}}, caps, "b y"},
		{"an endpoint on trial takes one",
			[]outbox.Candidate{{ID: "a", EndpointID: "e1", AccountID: "X", Trial: true}, {ID: "b", EndpointID: "e1", AccountID: "X", Trial: true}, c("c", "e2", "X")},
			outbox.InFlight{}, caps, "a c"},
		{"the slots bound the claim",
			[]outbox.Candidate{c("a", "e1", "X"), c("b", "e2", "Y"), c("c", "e3", "Z")},
			outbox.InFlight{}, outbox.Caps{Limit: 2, PerEndpoint: 2, PerAccount: 4}, "a b"},
		{"no shares: everything up to the limit",
			[]outbox.Candidate{c("a", "e1", "X"), c("b", "e1", "X"), c("c", "e1", "X")},
			outbox.InFlight{}, outbox.Caps{Limit: 8}, "a b c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := strings.Join(outbox.Pick(tc.cands, tc.busy, tc.caps), " "); got != tc.want {
				t.Fatalf("picked %q, want %q", got, tc.want)
			}
		})
	}
}

// A claim on the database keeps the shares across replicas: an account with ten endpoints
// and a backlog older than another account's one delivery takes only its share, and the
// other account's delivery is claimed in the same claim; a second replica claims nothing of
// the first account while the first's leases run, a paused endpoint is skipped, and one whose
// pause has ended gives one delivery at a time.
func TestClaimKeepsSharesAcrossReplicas(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		o := outbox.New(st)
		now := time.Now().UTC().Truncate(time.Millisecond)
		storetest.Account(t, st, "x")
		storetest.Account(t, st, "y")
		storetest.Account(t, st, "z")
		endpoint := func(id, acct string, paused *time.Time) {
			t.Helper()
			ep := &outbox.Endpoint{ID: id, AccountID: acct, URL: "https://" + id + ".example/h", SecretSalt: []byte("s"), CreatedAt: now.Add(-time.Hour)}
			if err := o.CreateWebhookEndpoint(ctx, ep, 20); err != nil {
				t.Fatal(err)
			}
			if paused != nil {
				if _, err := st.DB().NewUpdate().Model((*outbox.Endpoint)(nil)).Set("paused_until = ?", *paused).Where("id = ?", id).Exec(ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
		for i := range 10 {
			endpoint(fmt.Sprintf("x%d", i), "x", nil)
		}
		endpoint("y0", "y", nil)
		later, earlier := now.Add(time.Hour), now.Add(-time.Second)
		endpoint("z-paused", "z", &later)
		endpoint("z-trial", "z", &earlier)
		// Deliveries: three per endpoint of x, due for a minute; one of y, due just now; three
		// per endpoint of z.
		n := 0
		deliver := func(ep, acct string, due time.Time) {
			t.Helper()
			n++
			ev := &store.WebhookEvent{ID: fmt.Sprintf("ev%d", n), AccountID: acct, Type: "key.created", Body: "{}", CreatedAt: due, FannedAt: &due}
			if err := st.AddWebhookEvents(ctx, ev); err != nil {
				t.Fatal(err)
			}
			d := &outbox.Delivery{ID: fmt.Sprintf("d%02d-%s", n, ep), EventID: ev.ID, EndpointID: ep, AccountID: acct, State: outbox.DeliveryPending, NextAttemptAt: due, CreatedAt: due}
			if _, err := st.DB().NewInsert().Model(d).Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 10 {
			for range 3 {
				deliver(fmt.Sprintf("x%d", i), "x", now.Add(-time.Minute))
			}
		}
		deliver("y0", "y", now)
		for range 3 {
			deliver("z-paused", "z", now.Add(-time.Minute))
			deliver("z-trial", "z", now.Add(-time.Minute))
		}
		caps := outbox.Caps{Limit: 8, PerEndpoint: 2, PerAccount: 4}
		lease := now.Add(45 * time.Second)
		first, err := o.ClaimWebhookDeliveries(ctx, "r1", now, lease, caps)
		if err != nil {
			t.Fatal(err)
		}
		byAccount := func(ids []string) map[string]int {
			m := map[string]int{}
			for _, id := range ids {
				m[strings.SplitN(id, "-", 2)[1][:1]]++
			}
			return m
		}
		got := byAccount(first)
		if got["x"] != 4 || got["y"] != 1 || got["z"] != 1 || len(first) != 6 {
			t.Fatalf("first claim %v (%v): want 4 of x's, y's one and one of z's trial endpoint", first, got)
		}
		if !slices.ContainsFunc(first, func(id string) bool { return strings.HasSuffix(id, "-z-trial") }) {
			t.Fatalf("first claim %v: z's one is not its trial endpoint's", first)
		}
		second, err := o.ClaimWebhookDeliveries(ctx, "r2", now, lease, caps)
		if err != nil || len(second) != 0 {
			t.Fatalf("second replica claimed %v (%v) while the first's leases run", second, err)
		}
		// Once the leases have run out (the first replica died), the next claim takes them over.
		third, err := o.ClaimWebhookDeliveries(ctx, "r2", lease, lease.Add(45*time.Second), caps)
		if err != nil || byAccount(third)["x"] != 4 {
			t.Fatalf("after the leases ran out r2 claimed %v (%v)", third, err)
		}
	})
}

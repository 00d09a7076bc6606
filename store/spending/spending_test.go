package spending_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/spending"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

// TestSpentCountsWhatMovedInEachWindow writes calls in every state a policy's caps meet and
// reads the sums billing judges with: a finished call at its charge, one in flight at its
// worst case, a quote and a declined call at nothing, each counted from when it went out,
// and only the key's subtree when a key is asked about.
func TestSpentCountsWhatMovedInEachWindow(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Second)
		storetest.Account(t, st, "a1")
		child := "k-child"
		parent := "k-a1"
		if err := accounts.New(st).CreateKey(ctx, &accounts.APIKey{ID: child, AccountID: "a1", Name: "c", Prefix: "p", Hash: "h-child", Scopes: []string{"read"}, CreatedAt: now, ParentID: &parent}); err != nil {
			t.Fatal(err)
		}
		price := store.Price{ReserveMicro: 1_000, MaxPartnerFeeMicro: 10_000, MaxPlatformFeeMicro: 100}
		call := func(id, key, state string, asked, out, done *time.Time) *store.Invocation {
			inv := &store.Invocation{RequestID: id, AccountID: "a1", KeyID: key, IntentID: "i1", Handle: "@h", Category: "QUERY",
				IntentRevision: 1, Args: "{}", Price: price, CreatedAt: *asked, DispatchedAt: out}
			inv.State, inv.FinishedAt = state, done
			if done != nil && state == store.InvSucceeded {
				inv.PartnerFeeMicro, inv.PlatformFeeMicro = 4_000, 100 // charged 5,100 with the reserve
			}
			if done != nil && state == store.InvFailed {
				inv.RefundedMicro = 1_000 // charged nothing
			}
			return inv
		}
		at := func(d time.Duration) *time.Time { t := now.Add(-d); return &t }
		rows := []*store.Invocation{
			call("ok-recent", parent, store.InvSucceeded, at(10*time.Minute), at(10*time.Minute), at(9*time.Minute)),               // 5,100 in both
			call("ok-old", parent, store.InvSucceeded, at(5*time.Hour), at(5*time.Hour), at(5*time.Hour)),                          // 5,100 in the day only
			call("asked-then-out", child, store.InvSucceeded, at(2*time.Hour+time.Minute), at(30*time.Minute), at(29*time.Minute)), // from when it went out: both
			call("flying", child, store.InvDispatching, at(time.Minute), at(time.Minute), nil),                                     // its worst, 11,100, in both
			call("quote", parent, store.InvAwaitingConfirmation, at(time.Minute), nil, nil),                                        // nothing
			call("failed", parent, store.InvFailed, at(time.Minute), at(time.Minute), at(time.Minute)),                             // nothing
			call("declined", parent, store.InvDeclined, at(time.Minute), nil, at(time.Minute)),                                     // nothing
		}
		for _, inv := range rows {
			if err := st.CreateInvocation(ctx, inv, "test"); err != nil {
				t.Fatal(err)
			}
		}
		sp := spending.New(st)
		since := []time.Time{now.Add(-time.Hour), now.Add(-24 * time.Hour)}
		got, err := sp.Spent(ctx, "a1", "", since)
		if err != nil {
			t.Fatal(err)
		}
		if got[0] != 5_100+5_100+11_100 || got[1] != 5_100+5_100+5_100+11_100 {
			t.Fatalf("account: spent %v, want [21300 26400]", got)
		}
		if got, err = sp.Spent(ctx, "a1", child, since); err != nil || got[0] != 5_100+11_100 || got[1] != 5_100+11_100 {
			t.Fatalf("the child key's subtree: spent %v %v, want [16200 16200]", got, err)
		}
		if held, err := sp.Held(ctx, "a1", ""); err != nil || held != 11_100 {
			t.Fatalf("held %d %v, want the call in flight's worst, 11100", held, err)
		}
		if held, err := sp.Held(ctx, "a1", parent); err != nil || held != 11_100 {
			t.Fatalf("held under the root key %d %v, want its descendant's call, 11100", held, err)
		}

		all := func(*spending.Policy) []time.Time { return since }
		// No policy: the view holds nothing to judge and reads no sums.
		v, err := sp.View(ctx, "a1", []string{parent, child}, "i1", all)
		if err != nil || len(v.Policies) != 0 || len(v.Spent) != 0 || v.CalledBefore {
			t.Fatalf("view without a policy: %+v %v", v, err)
		}
		// The account's and the child's policies: each with its own sums, the account's first.
		err = st.InTx(ctx, func(ctx context.Context, q *store.Q) error {
			for _, k := range []string{child, ""} {
				if old, err := spending.PolicyForUpdate(ctx, q, "a1", k); err != nil || old != nil {
					t.Fatalf("policy of %q before any: %v %v", k, old, err)
				}
				if err := spending.PutPolicy(ctx, q, &spending.Policy{AccountID: "a1", KeyID: k, Body: `{"perCallMaxUsd":"1"}`, UpdatedAt: now, UpdatedBy: "test"}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		err = st.InTx(ctx, func(ctx context.Context, q *store.Q) error {
			v, err = spending.ViewIn(ctx, q, "a1", []string{parent, child}, "i1", all)
			return err
		})
		if err != nil || len(v.Policies) != 2 || v.Policies[0].KeyID != "" || v.Policies[1].KeyID != child ||
			v.Spent[""][0] != 21_300 || v.Spent[child][1] != 16_200 || !v.CalledBefore {
			t.Fatalf("view: %+v %v", v, err)
		}
		if v, err = sp.View(ctx, "a1", []string{parent}, "i2", all); err != nil || len(v.Policies) != 1 || v.CalledBefore {
			t.Fatalf("the root key's view of another intent: %+v %v", v, err)
		}
		// A policy that needs no sums gets none; each of the others, its own windows.
		some := func(p *spending.Policy) []time.Time {
			if p.KeyID == child {
				return nil
			}
			return since[:1]
		}
		if v, err = sp.View(ctx, "a1", []string{parent, child}, "", some); err != nil || len(v.Spent) != 1 || len(v.Spent[""]) != 1 || v.Spent[""][0] != 21_300 {
			t.Fatalf("the view with the child's policy needing no sums: %+v %v", v, err)
		}
		// A key's policy needs its key in the account; an empty body removes a policy.
		err = st.InTx(ctx, func(ctx context.Context, q *store.Q) error {
			if _, err := spending.PolicyForUpdate(ctx, q, "a1", "k-nobody"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("policy of an unknown key: %v, want ErrNotFound", err)
			}
			return spending.PutPolicy(ctx, q, &spending.Policy{AccountID: "a1", KeyID: child, UpdatedAt: now, UpdatedBy: "test"})
		})
		if err != nil {
			t.Fatal(err)
		}
		if ps, err := sp.Policies(ctx, "a1", parent, child); err != nil || len(ps) != 1 || ps[0].KeyID != "" {
			t.Fatalf("policies after the child's was removed: %v %v", ps, err)
		}
	})
}

// TestApprovalIsDecidedOnce: a pending approval is listed, decided once (a second decision and
// one after its expiry change nothing), and read as expired once its time has passed.
func TestApprovalIsDecidedOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Second)
		storetest.Account(t, st, "a1")
		sp := spending.New(st)
		ask := func(id string, expires time.Time) *spending.Approval {
			return &spending.Approval{RequestID: id, AccountID: "a1", KeyID: "k-a1", Handle: "@h", Category: "QUERY", Rule: "approval.aboveUsd",
				Charge: `{"maxChargeUsd":"1"}`, WorstMicro: 1_000_000, State: spending.ApprovalPending, CreatedAt: now, ExpiresAt: expires}
		}
		err := st.InTx(ctx, func(ctx context.Context, q *store.Q) error {
			if err := spending.InsertApproval(ctx, q, ask("r1", now.Add(time.Hour))); err != nil {
				return err
			}
			return spending.InsertApproval(ctx, q, ask("r2", now.Add(time.Minute)))
		})
		if err != nil {
			t.Fatal(err)
		}
		if as, err := sp.Approvals(ctx, "a1", nil, true, now, 10); err != nil || len(as) != 2 {
			t.Fatalf("pending: %v %v", as, err)
		}
		if as, err := sp.Approvals(ctx, "a1", []string{}, false, now, 10); err != nil || len(as) != 0 {
			t.Fatalf("no keys: %v %v, want none", as, err)
		}
		decide := func(id string, at time.Time) bool {
			var ok bool
			err := st.InTx(ctx, func(ctx context.Context, q *store.Q) (err error) {
				ok, err = spending.DecideApproval(ctx, q, "a1", id, spending.ApprovalApproved, "portal", at)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		if !decide("r1", now) || decide("r1", now) {
			t.Fatal("an approval was not decided exactly once")
		}
		later := now.Add(2 * time.Minute)
		if decide("r2", later) {
			t.Fatal("an expired approval was decided")
		}
		a, err := sp.Approval(ctx, "a1", "r2")
		if err != nil || a.State != spending.ApprovalPending || a.StateAt(later) != spending.ApprovalExpired {
			t.Fatalf("r2: %+v %v, want pending, read as expired", a, err)
		}
		err = st.InTx(ctx, func(ctx context.Context, q *store.Q) error {
			a, err := spending.ApprovalIn(ctx, q, "a1", "r1")
			if err == nil && (a.State != spending.ApprovalApproved || a.DecidedBy != "portal") {
				t.Fatalf("r1: %+v", a)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sp.Approval(ctx, "a2", "r1"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("another account's approval: %v, want ErrNotFound", err)
		}
	})
}

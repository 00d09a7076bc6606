package policies_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/partners"
	"github.com/switchboard-hq/switchboard/store/spending"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/keys"
	"github.com/switchboard-hq/switchboard/tools/policies"
	"github.com/switchboard-hq/switchboard/tools/service"
)

// tree is an account whose key "parent" minted "child" and "sibling", with a second account
// ("acct2", key k-acct2) beside it, and the policy tools on a kernel.
type tree struct {
	st     *store.Store
	svc    *policies.Service
	kernel *tools.Kernel
}

func newTree(t *testing.T, st *store.Store) *tree {
	t.Helper()
	ctx := context.Background()
	storetest.Account(t, st, "acct")
	storetest.Account(t, st, "acct2")
	now := time.Now().UTC()
	for _, k := range []struct{ id, parent string }{{"parent", "k-acct"}, {"child", "parent"}, {"sibling", "parent"}} {
		parent := k.parent
		if err := accounts.New(st).MintKey(ctx, &accounts.APIKey{ID: k.id, AccountID: "acct", Name: k.id, Prefix: k.id, Hash: "h-" + k.id, Scopes: []string{"read"},
			SpendLimitMicro: 1, RateLimitPerMinute: 1, CreatedAt: now, ParentID: &parent}, keys.MaxLiveKeys); err != nil {
			t.Fatal(err)
		}
	}
	d := service.Deps{Store: st}
	ks := keys.NewService(keys.Config{Env: "test"}, d)
	bill := billing.NewService(billing.DefaultConfig(), d, billing.Recording{})
	svc := policies.NewService(d, bill, ks, policies.NewApprovals(d, nil))
	k, err := tools.NewKernel(keys.NewAuthenticator(d, nil), tools.NewRateLimiter(time.Now), nil, slog.New(slog.NewTextHandler(io.Discard, nil)), time.Now, svc.Tools()...)
	if err != nil {
		t.Fatal(err)
	}
	return &tree{st: st, svc: svc, kernel: k}
}

func asKey(id string) *tools.Principal {
	return &tools.Principal{AccountID: "acct", Method: tools.AuthAPIKey, KeyID: id, Scopes: []string{"read"}, RateLimitPerMinute: 1000}
}

var owner = &tools.Principal{AccountID: "acct", Method: tools.AuthSession, SessionID: "the owner's", RateLimitPerMinute: 1000}

// call runs a tool as p and returns its JSON answer.
func (w *tree) call(t *testing.T, p *tools.Principal, tool string, args any) (map[string]any, *tools.Error) {
	t.Helper()
	raw, _ := json.Marshal(args)
	out, e := w.kernel.Call(context.Background(), tools.Request{Tool: tool, Args: raw, Principal: p})
	if e != nil {
		return nil, e
	}
	b, _ := json.Marshal(out)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m, nil
}

// A key reads the approvals of its own calls and of the keys minted under it, as
// api_key_list shows keys: never its parent's or a sibling's. The portal's session reads all.
func TestApprovalsFollowTheKeyTree(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		w := newTree(t, st)
		ctx, now := context.Background(), time.Now().UTC()
		ids := map[string]string{"parent": "0193b6c0-0000-7000-8000-00000000000a", "child": "0193b6c0-0000-7000-8000-00000000000b", "sibling": "0193b6c0-0000-7000-8000-00000000000c"}
		if err := st.InTx(ctx, func(ctx context.Context, q *store.Q) error {
			for key, rid := range ids {
				if err := spending.InsertApproval(ctx, q, &spending.Approval{RequestID: rid, AccountID: "acct", KeyID: key, Handle: "@h", Category: "QUERY",
					Rule: "approval.aboveUsd", Charge: `{"maxChargeUsd":"1"}`, WorstMicro: 1_000_000, State: spending.ApprovalPending,
					CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			p    *tools.Principal
			sees []string
		}{
			{asKey("child"), []string{"child"}},
			{asKey("sibling"), []string{"sibling"}},
			{asKey("parent"), []string{"child", "parent", "sibling"}},
			{&tools.Principal{AccountID: "acct", Method: tools.AuthOAuth, KeyID: "child", Scopes: []string{"read"}, RateLimitPerMinute: 1000}, []string{"child"}},
			{owner, []string{"child", "parent", "sibling"}},
		} {
			out, e := w.call(t, tc.p, "approval_list", map[string]any{})
			if e != nil {
				t.Fatalf("%s %s lists: %v", tc.p.Method, tc.p.KeyID, e)
			}
			var got []string
			for _, a := range out["approvals"].([]any) {
				got = append(got, a.(map[string]any)["keyId"].(string))
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.sees) {
				t.Errorf("%s %s lists the approvals of %v, want %v", tc.p.Method, tc.p.KeyID, got, tc.sees)
			}
			for key, rid := range ids {
				_, e := w.call(t, tc.p, "approval_get", map[string]any{"requestId": rid})
				if want := slices.Contains(tc.sees, key); (e == nil) != want || (e != nil && e.Code != tools.CodeNotFound) {
					t.Errorf("%s %s reads %s's approval: %v (want it: %v)", tc.p.Method, tc.p.KeyID, key, e, want)
				}
			}
		}
	})
}

// A key sets policies on itself and the keys minted under it only: a sibling, its parent
// and a key of another account are NOT_FOUND (as in api_key_list), and the account's policy
// is the owner's (FORBIDDEN to a key, even through Put).
func TestKeySetsItsSubtreeOnly(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		w := newTree(t, st)
		pol := map[string]any{"perCallMaxUsd": "1"}
		for _, target := range []string{"sibling", "parent", "k-acct", "k-acct2"} {
			if _, e := w.call(t, asKey("child"), "policy_set", map[string]any{"keyId": target, "policy": pol}); e == nil || e.Code != tools.CodeNotFound {
				t.Errorf("child sets %s's policy: %v", target, e)
			}
		}
		if _, e := w.call(t, asKey("parent"), "policy_set", map[string]any{"keyId": "child", "policy": pol}); e != nil {
			t.Fatalf("parent sets its child's policy: %v", e)
		}
		if _, e := w.call(t, asKey("child"), "policy_get", map[string]any{"keyId": "parent"}); e == nil || e.Code != tools.CodeNotFound {
			t.Errorf("child reads its parent's policy: %v", e)
		}
		var te *tools.Error
		err := w.svc.Put(context.Background(), "acct", "", &billing.Policy{PerCallMaxUsd: "1"}, "key child", true)
		if !errors.As(err, &te) || te.Code != tools.CodeForbidden {
			t.Errorf("a key sets the account's policy: %v", err)
		}
		if _, err := w.svc.SetAs(context.Background(), "acct", "k-acct2", &billing.Policy{PerCallMaxUsd: "1"}, "admin"); !errors.As(err, &te) || te.Code != tools.CodeNotFound {
			t.Errorf("the operator sets a policy on acct's behalf for another account's key: %v", err)
		}
		if rows, err := spending.New(st).Policies(context.Background(), "acct2", "k-acct2"); err != nil || len(rows) != 0 {
			t.Errorf("acct2's policies: %v %v", rows, err)
		}
	})
}

// A key's narrowing is checked against the policy it replaces: while the owner tightens the
// key's policy (the transaction holds it), the key's own write waits, then sees the tighter
// policy and is refused, instead of writing over it what was checked against the older one.
func TestKeyWriteWaitsForTheOwners(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		w := newTree(t, st)
		ctx := context.Background()
		if _, err := w.svc.SetAs(ctx, "acct", "child", &billing.Policy{PerCallMaxUsd: "5"}, "portal"); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		if err := st.InTx(ctx, func(ctx context.Context, q *store.Q) error {
			if _, err := spending.PolicyForUpdate(ctx, q, "acct", "child"); err != nil {
				return err
			}
			if err := spending.PutPolicy(ctx, q, &spending.Policy{AccountID: "acct", KeyID: "child", Body: `{"perCallMaxUsd":"1"}`, UpdatedAt: time.Now().UTC(), UpdatedBy: "portal"}); err != nil {
				return err
			}
			go func() {
				done <- w.svc.Put(context.Background(), "acct", "child", &billing.Policy{PerCallMaxUsd: "3"}, "key child", true)
			}()
			time.Sleep(200 * time.Millisecond) // time for the key's write to read what it would check against
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		var te *tools.Error
		if err := <-done; !errors.As(err, &te) || te.Code != tools.CodeForbidden || te.Details["rule"] != "perCallMaxUsd" {
			t.Fatalf("the key loosens what the owner set meanwhile: %v", err)
		}
		rows, err := spending.New(st).Policies(ctx, "acct", "child")
		if err != nil || len(rows) != 1 || rows[0].Body != `{"perCallMaxUsd":"1"}` {
			t.Fatalf("the policy in force: %v %v", rows, err)
		}
	})
}

// What policy_get shows of deny-by-default agrees with billing.Judge: the account allows a
// handle, the key a category; a call of that handle in that category goes through (Judge
// asks each policy whether any list names it), and policy_get shows both lists, each for its
// policy, instead of one list combined kind by kind (which would name nothing).
func TestAllowOnlyAgreesWithJudge(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		w := newTree(t, st)
		ctx, now := context.Background(), time.Now().UTC()
		if _, err := partners.New(st).Publish(ctx, "acct", []*partners.Intent{storetest.IntentRow("i1", "@x", now)}, now); err != nil {
			t.Fatal(err)
		}
		if _, err := w.svc.SetAs(ctx, "acct", "", &billing.Policy{DenyByDefault: true, Allow: billing.Lists{Handles: []string{"@x"}}}, "portal"); err != nil {
			t.Fatal(err)
		}
		if _, err := w.svc.SetAs(ctx, "acct", "child", &billing.Policy{DenyByDefault: true, Allow: billing.Lists{Categories: []string{"QUERY"}}}, "portal"); err != nil {
			t.Fatal(err)
		}
		out, e := w.call(t, asKey("child"), "policy_get", map[string]any{})
		if e != nil {
			t.Fatal(e)
		}
		shown, _ := json.Marshal(map[string]any{"allowOnly": out["allowOnly"], "allow": out["effective"].(map[string]any)["allow"]})
		if want := `{"allow":{},"allowOnly":[{"allow":{"handles":["@x"]},"policy":"account"},{"allow":{"categories":["QUERY"]},"policy":"key child"}]}`; string(shown) != want {
			t.Fatalf("policy_get shows %s, want %s", shown, want)
		}
		p := &tools.Principal{AccountID: "acct", Method: tools.AuthAPIKey, KeyID: "child", Ancestors: []tools.Ancestor{{KeyID: "parent"}, {KeyID: "k-acct"}}}
		v, err := spending.New(st).View(ctx, "acct", []string{"k-acct", "parent", "child"}, "", func(*spending.Policy) []time.Time { return make([]time.Time, len(billing.Windows)) })
		if err != nil {
			t.Fatal(err)
		}
		if err := billing.Judge(p, v, billing.Spend{Handle: "@x", Category: "QUERY"}, false); err != nil {
			t.Errorf("a call both lists name: %v", err)
		}
		if err := billing.Judge(p, v, billing.Spend{Handle: "@y", Category: "QUERY"}, false); err == nil {
			t.Errorf("a call the account's list does not name went through")
		}
	})
}

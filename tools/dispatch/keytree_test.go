package dispatch_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/keys"
)

// A key limited to 0.02 USD mints three children of 0.02 USD each; the four, calling a priced
// intent at once until refused, spend at most 0.02 USD together (issue 35: each key had a
// limit of its own, and the four spent 0.072). The calls draw on budget leases, one per key,
// all holding from the parent's spend row.
func TestKeyTreeSpendsOneLimit(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newWorld(t, dialect, nil)
			// Worst case 3000 (infra 1000, the quoted fee 1000, platform floor 1000); the
			// partner reports providerCostMicro 1500, capped at 1000: each call costs 3000.
			w.publish(t, "@costly", "/cost", nil)
			const limit = 20_000
			status, parent := w.env.REST(t, "POST", "/v1/keys", w.caller, map[string]any{"name": "tree", "scopes": []string{"partner", "read"}, "spendLimitUsd": 0.02})
			if status != 201 {
				t.Fatalf("mint the parent: %d %v", status, parent)
			}
			secrets := []string{parent["secret"].(string)}
			for range 3 {
				status, child := w.env.REST(t, "POST", "/v1/keys", secrets[0], map[string]any{"name": "child", "scopes": []string{"partner"}, "spendLimitUsd": 0.02})
				if status != 201 || child["parentId"] != parent["id"] || child["spendLimitUsd"] != 0.02 {
					t.Fatalf("mint a child: %d %v", status, child)
				}
				secrets = append(secrets, child["secret"].(string))
			}

			var (
				mu    sync.Mutex
				total int64
				calls int
				wg    sync.WaitGroup
			)
			for _, key := range secrets {
				wg.Go(func() {
					for range 20 {
						status, out := w.invoke(t, key, map[string]any{"message": "@costly what is the answer"})
						if status != 200 {
							if errCode(out) != "SPEND_LIMIT" {
								t.Errorf("a call refused otherwise than SPEND_LIMIT: %d %v", status, out)
							}
							return
						}
						mu.Lock()
						total += int64(charge(out)["totalMicro"].(float64))
						calls++
						mu.Unlock()
					}
					t.Error("a key of the tree was never refused")
				})
			}
			wg.Wait()
			if total > limit || calls == 0 {
				t.Fatalf("the four keys spent %d micro-USD in %d calls; the parent's limit is %d", total, calls, limit)
			}
			st := w.settledStore(t)
			parentSpend, err := st.KeySpendOf(context.Background(), parent["id"].(string))
			if err != nil {
				t.Fatal(err)
			}
			if parentSpend.SpentMicro != total {
				t.Fatalf("the parent's spend row says %d, the calls were charged %d", parentSpend.SpentMicro, total)
			}
			if got := w.hits("/cost"); got != calls {
				t.Fatalf("the partner served %d calls, %d were answered", got, calls)
			}
			t.Logf("%s: %d calls, %d micro-USD spent by the tree of four under a %d limit", dialect, calls, total, limit)
			w.ledgerOK(t)

			// Revoking the parent revokes its children: none calls again.
			if status, out := w.env.REST(t, "DELETE", "/v1/keys/"+parent["id"].(string), w.caller, nil); status != 200 {
				t.Fatalf("revoke the parent: %d %v", status, out)
			}
			for _, key := range secrets[1:] {
				if status, out := w.invoke(t, key, map[string]any{"message": "@costly again"}); status != 401 || errCode(out) != string(tools.CodeUnauthenticated) {
					t.Fatalf("a child of a revoked key: %d %v", status, out)
				}
			}
		})
	}
}

// BenchmarkInvokeUnderAncestors is BenchmarkInvoke's call made by a root key and by a key two
// levels under it, whose spend and rate count against three keys: what a key tree adds to a
// call (its chain is resolved at authentication and cached with the key).
func BenchmarkInvokeUnderAncestors(b *testing.B) {
	for _, d := range storetest.Dialects() {
		b.Run(d, func(b *testing.B) {
			w := benchWorld(b, d)
			key := w.caller
			for range 2 {
				status, k := w.env.REST(b, "POST", "/v1/keys", key, map[string]any{"name": "under", "scopes": []string{"partner"}})
				if status != 201 {
					b.Fatalf("mint: %d %v", status, k)
				}
				key = k["secret"].(string)
			}
			body := invokeBody()
			client := &http.Client{}
			for _, c := range []struct{ name, key string }{{"root", w.caller}, {"depth2", key}} {
				b.Run(c.name, func(b *testing.B) {
					for b.Loop() {
						if err := post(client, w.env.URL+"/v1/invoke", c.key, body); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}

// A child key's reservation abandoned by a crash is refunded by the sweeper, which knows
// nothing of the principal, on the key's spend row and on every ancestor's: the reservation
// records its key's chain.
func TestSweeperRefundsAChildKeysHoldOnEveryAncestor(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newWorld(t, dialect, nil)
			ctx := context.Background()
			key, chain := w.caller, []string{}
			for range 2 {
				status, k := w.env.REST(t, "POST", "/v1/keys", key, map[string]any{"name": "under", "scopes": []string{"partner"}})
				if status != 201 {
					t.Fatalf("mint: %d %v", status, k)
				}
				key, chain = k["secret"].(string), append(chain, k["id"].(string))
			}
			st := w.settledStore(t)
			k, err := accounts.New(st).KeyByHash(ctx, tools.HashKey(key))
			if err != nil {
				t.Fatal(err)
			}
			p, err := keys.ResolveKey(ctx, st, k)
			if err != nil || len(p.Ancestors) != 2 || p.Ancestors[0].KeyID != chain[0] { // nearest first
				t.Fatalf("the grandchild's principal: %+v %v", p, err)
			}
			chain = append(chain, p.Ancestors[1].KeyID) // the primary key
			q, err := w.env.App.Billing.For(p, billing.Spend{}).Quote(ctx, billing.Terms{FeeUnit: billing.FeeUSDPerCall, FeeRate: decimal.RequireFromString("0.001")})
			if err != nil {
				t.Fatal(err)
			}
			noRecord := func(context.Context, *store.Q, *billing.Hold) error { return nil }
			if _, err := w.env.App.Billing.Hold(ctx, p, billing.Plan{RequestID: signing.NewRequestID(), Quote: q, Runs: 30 * time.Second}, noRecord); err != nil {
				t.Fatal(err)
			}
			held := func() []int64 {
				var out []int64
				for _, id := range chain {
					ks, err := st.KeySpendOf(ctx, id)
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, ks.HeldMicro)
				}
				return out
			}
			if h := held(); h[0] != q.WorstMicro() || h[1] != q.WorstMicro() || h[2] != q.WorstMicro() {
				t.Fatalf("held by the child, the middle key and the primary key: %v, want %d each", h, q.WorstMicro())
			}
			w.ledgerOK(t)
			w.env.Clock.Advance(61 * time.Second)
			if n, err := w.env.App.Billing.Sweep(ctx); n != 1 || err != nil {
				t.Fatalf("sweep: %d %v", n, err)
			}
			if h := held(); h[0] != 0 || h[1] != 0 || h[2] != 0 {
				t.Fatalf("held after the sweep: %v", h)
			}
			w.ledgerOK(t)
		})
	}
}

package dispatch_test

import (
	"context"
	"sync"
	"testing"

	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
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

package app_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools/keys"
)

// mint mints a key with key over REST and returns it (its secret included).
func mint(t *testing.T, env *apptest.Env, key string, body map[string]any) map[string]any {
	t.Helper()
	status, out := env.REST(t, "POST", "/v1/keys", key, body)
	if status != 201 {
		t.Fatalf("mint %v: %d %v", body, status, out)
	}
	return out
}

// keyList is what api_key_list shows key.
func keyList(t *testing.T, env *apptest.Env, key string) []map[string]any {
	t.Helper()
	status, out := env.REST(t, "GET", "/v1/keys", key, nil)
	if status != 200 {
		t.Fatalf("list: %d %v", status, out)
	}
	var ks []map[string]any
	for _, k := range out["keys"].([]any) {
		ks = append(ks, k.(map[string]any))
	}
	return ks
}

// listed are the ids api_key_list shows key, sorted.
func listed(t *testing.T, env *apptest.Env, key string) []string {
	t.Helper()
	var ids []string
	for _, k := range keyList(t, env, key) {
		ids = append(ids, k["id"].(string))
	}
	slices.Sort(ids)
	return ids
}

func sorted(ids ...string) []string {
	slices.Sort(ids)
	return ids
}

// Keys form a tree (issue 35): a key acts on itself and the keys minted under it, never above
// or beside itself; revoking a key revokes its subtree; a subtree's calls count against every
// ancestor's rate limit; an account holds at most keys.MaxLiveKeys live keys. Over REST and
// the go-sdk MCP client, on both databases.
func TestKeyTree(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			// The primary key's own rate limit is out of the way: every call below counts against it.
			env := apptest.Start(t, apptest.Options{Dialect: dialect, Config: func(c *apptest.Config) { c.DefaultRateLimit = 1000 }})
			acct := env.Onboard(t, "tree@example.com")
			primary := acct["apiKey"].(string)
			primaryID := listed(t, env, primary)[0]

			// A read-only key cannot revoke the full-scope primary key, over either door.
			reader := mint(t, env, primary, map[string]any{"name": "reader", "scopes": []string{"read"}})
			if reader["parentId"] != primaryID {
				t.Fatalf("the reader's parent: %v, want %s", reader["parentId"], primaryID)
			}
			if status, out := env.REST(t, "DELETE", "/v1/keys/"+primaryID, reader["secret"].(string), nil); status != 403 || !strings.Contains(fmt.Sprint(out), "minted under it") {
				t.Fatalf("a read key revoking the primary key over REST: %d %v", status, out)
			}
			cs := env.MCP(t, reader["secret"].(string))
			if _, e := apptest.CallTool(t, cs, "api_key_revoke", map[string]any{"keyId": primaryID}); e == nil || e.Code != "FORBIDDEN" {
				t.Fatalf("a read key revoking the primary key over MCP: %v", e)
			}
			if status, _ := env.REST(t, "GET", "/v1/account", primary, nil); status != 200 {
				t.Fatalf("the primary key after the attempts: %d", status)
			}
			// It lists itself alone; the primary key lists its whole tree.
			if got := listed(t, env, reader["secret"].(string)); !slices.Equal(got, []string{reader["id"].(string)}) {
				t.Fatalf("the reader lists %v", got)
			}
			out, e := apptest.CallTool(t, cs, "account_get", nil)
			if e != nil || len(out["keys"].([]any)) != 1 {
				t.Fatalf("account_get of the reader shows %v %v", out["keys"], e)
			}

			// A middle key: it sees and revokes its own subtree, nothing above or beside it.
			mid := mint(t, env, primary, map[string]any{"name": "mid", "scopes": []string{"read", "publish"}})
			midKey := mid["secret"].(string)
			child := mint(t, env, midKey, map[string]any{"name": "child", "scopes": []string{"read"}})
			grand := mint(t, env, child["secret"].(string), map[string]any{"name": "grandchild", "scopes": []string{"read"}})
			if grand["parentId"] != child["id"] || child["parentId"] != mid["id"] {
				t.Fatalf("parents: grandchild %v, child %v", grand["parentId"], child["parentId"])
			}
			if got, want := listed(t, env, midKey), sorted(mid["id"].(string), child["id"].(string), grand["id"].(string)); !slices.Equal(got, want) {
				t.Fatalf("the middle key lists %v, want %v", got, want)
			}
			if got, want := listed(t, env, primary), sorted(primaryID, reader["id"].(string), mid["id"].(string), child["id"].(string), grand["id"].(string)); !slices.Equal(got, want) {
				t.Fatalf("the primary key lists %v, want %v", got, want)
			}
			for _, id := range []string{primaryID, reader["id"].(string)} {
				if status, out := env.REST(t, "DELETE", "/v1/keys/"+id, midKey, nil); status != 403 {
					t.Fatalf("the middle key revoking %s (above or beside it): %d %v", id, status, out)
				}
			}
			if status, _ := env.REST(t, "DELETE", "/v1/keys/no-such-key", midKey, nil); status != 404 {
				t.Fatalf("an unknown key id: %d", status)
			}
			// The grandchild cannot revoke its parent; the middle key revokes the child, and the
			// grandchild goes with it.
			if status, _ := env.REST(t, "DELETE", "/v1/keys/"+child["id"].(string), grand["secret"].(string), nil); status != 403 {
				t.Fatalf("the grandchild revoking its parent: %d", status)
			}
			if status, out := env.REST(t, "DELETE", "/v1/keys/"+child["id"].(string), midKey, nil); status != 200 {
				t.Fatalf("the middle key revoking its child: %d %v", status, out)
			}
			for _, k := range []map[string]any{child, grand} {
				if status, out := env.REST(t, "GET", "/v1/account", k["secret"].(string), nil); status != 401 {
					t.Fatalf("%s after its subtree was revoked: %d %v", k["name"], status, out)
				}
			}
			if status, _ := env.REST(t, "GET", "/v1/account", midKey, nil); status != 200 {
				t.Fatalf("the middle key after revoking its child: %d", status)
			}
			// A key revokes itself.
			if status, _ := env.REST(t, "DELETE", "/v1/keys/"+mid["id"].(string), midKey, nil); status != 200 {
				t.Fatalf("a key revoking itself: %d", status)
			}

			// Rate: a key of 5 a minute mints three children of 5 a minute; the four together
			// make 5 calls in the minute (the clock stands still), not 20.
			rated := mint(t, env, primary, map[string]any{"name": "rated", "scopes": []string{"read"}, "rateLimitPerMinute": 5})
			tree := []string{rated["secret"].(string)}
			for range 3 {
				tree = append(tree, mint(t, env, tree[0], map[string]any{"name": "rated child", "scopes": []string{"read"}, "rateLimitPerMinute": 5})["secret"].(string))
			}
			env.Clock.Advance(time.Minute) // the buckets fill again after the mints
			ok, refusedByParent := 0, 0
			for range 5 {
				for _, k := range tree {
					status, out := env.REST(t, "GET", "/v1/account", k, nil)
					switch {
					case status == 200:
						ok++
					case status == 429 && strings.Contains(fmt.Sprint(out), "minted under"):
						refusedByParent++
					case status != 429:
						t.Fatalf("a call of the rated tree: %d %v", status, out)
					}
				}
			}
			if ok != 5 || refusedByParent == 0 {
				t.Fatalf("the rated tree made %d calls in a minute (want 5: the parent allows 5 a minute), %d refused naming the parent", ok, refusedByParent)
			}

			// The cap on live keys: mint up to it, be refused past it, revoke one, mint again.
			live := 0
			for _, k := range keyList(t, env, primary) {
				if k["revokedAt"] == nil {
					live++
				}
			}
			for ; live < keys.MaxLiveKeys; live++ {
				mint(t, env, primary, map[string]any{"name": fmt.Sprintf("filler %d", live), "scopes": []string{"read"}})
			}
			status, over := env.REST(t, "POST", "/v1/keys", primary, map[string]any{"name": "one too many", "scopes": []string{"read"}})
			if msg := fmt.Sprint(over); status != 409 || !strings.Contains(msg, fmt.Sprint(keys.MaxLiveKeys)) || !strings.Contains(msg, "revoke") {
				t.Fatalf("past the cap: %d %v", status, over)
			}
			if status, _ := env.REST(t, "DELETE", "/v1/keys/"+reader["id"].(string), primary, nil); status != 200 {
				t.Fatalf("revoke the reader: %d", status)
			}
			mint(t, env, primary, map[string]any{"name": "after a revocation", "scopes": []string{"read"}})
		})
	}
}

package app_test

import (
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools/ratelimit/redistest"
)

// Two replicas on one database and one real Redis: a key's rate limit holds in total, not
// once per replica. With Redis gone, a call that writes is refused with UNAVAILABLE (never let
// through unlimited) while a read passes; with Redis back, writes work again.
func TestReplicasShareRateLimits(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			redis := redistest.Start(t)
			st := storetest.Open(t, dialect)
			replica := func() *apptest.Env {
				return apptest.Start(t, apptest.Options{Store: st, Config: func(c *app.Config) {
					c.RedisURL = redis.URL
					// Replicas share their secrets (wallet keys and the service key are sealed with the master key).
					c.MasterKey, c.ServerSecret = sharedSecret, sharedSecret
				}})
			}
			a, b := replica(), replica()
			key := a.Onboard(t, "agent@example.com")["apiKey"].(string) // 30 requests a minute
			allowed, limited := 0, 0
			began := time.Now()
			for i := range 40 {
				env := []*apptest.Env{a, b}[i%2]
				switch status, out := env.REST(t, "GET", "/v1/account", key, nil); status {
				case 200:
					allowed++
				case 429:
					limited++
				default:
					t.Fatalf("call %d: %d %v", i, status, out)
				}
			}
			// The shared bucket refills one call every 2 s (Redis's clock): a slow run may earn one
			// or two more, never the 40 two unshared limiters would allow.
			refills := int(time.Since(began) / (2 * time.Second))
			if allowed < 30 || allowed > 30+refills || allowed+limited != 40 {
				t.Fatalf("across two replicas: %d allowed, %d limited in %s; want 30 (+%d refilled) and the rest limited (the key's 30 a minute in total)",
					allowed, limited, time.Since(began).Round(time.Millisecond), refills)
			}

			other := b.Onboard(t, "other@example.com")["apiKey"].(string)
			redis.Stop()
			if status, out := a.REST(t, "GET", "/v1/discover?query=weather", other, nil); status != 200 {
				t.Fatalf("a read with Redis down: %d %v", status, out)
			}
			status, out := b.REST(t, "POST", "/v1/keys", other, map[string]any{"name": "second", "scopes": []string{"read"}})
			if status != 503 || out["error"].(map[string]any)["code"] != "UNAVAILABLE" {
				t.Fatalf("a write with Redis down: %d %v", status, out)
			}
			redis.Restart()
			status, out = b.REST(t, "POST", "/v1/keys", other, map[string]any{"name": "second", "scopes": []string{"read"}})
			if status != 201 && status != 200 {
				t.Fatalf("a write with Redis back: %d %v", status, out)
			}
		})
	}
}

// sharedSecret is the replicas' common base64 32-byte master key and server secret.
const sharedSecret = "c3dpdGNoYm9hcmQgcmVwbGljYXMgc2hhcmUgdGhpcyE="

// A key revoked through one replica is refused by another within a second, although that
// other replica had the key in its cache (its clock never moves, so the cache would serve the
// key for ever without the push). On PostgreSQL the replicas have separate connection pools,
// as separate processes do, and hear of the revocation through NOTIFY.
func TestRevocationReachesEveryReplica(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			dsn := storetest.DSN(t, dialect)
			stA := storetest.OpenURL(t, dsn)
			stB := stA
			if dialect == "postgres" {
				stB = storetest.OpenURL(t, dsn)
			}
			replica := func(st *store.Store) *apptest.Env {
				return apptest.Start(t, apptest.Options{Store: st, Config: func(c *app.Config) {
					c.MasterKey, c.ServerSecret = sharedSecret, sharedSecret
				}})
			}
			a, b := replica(stA), replica(stB)
			key := a.Onboard(t, "agent@example.com")["apiKey"].(string)
			status, minted := a.REST(t, "POST", "/v1/keys", key, map[string]any{"name": "doomed", "scopes": []string{"read"}})
			if status != 201 {
				t.Fatalf("mint: %d %v", status, minted)
			}
			doomed := minted["secret"].(string)
			for range 3 { // b now serves the key from its cache
				if status, out := b.REST(t, "GET", "/v1/account", doomed, nil); status != 200 {
					t.Fatalf("before revocation: %d %v", status, out)
				}
			}
			if status, out := a.REST(t, "DELETE", "/v1/keys/"+minted["id"].(string), key, nil); status != 200 {
				t.Fatalf("revoke on a: %d %v", status, out)
			}
			deadline := time.Now().Add(time.Second)
			for {
				status, out := b.REST(t, "GET", "/v1/account", doomed, nil)
				if status == 401 {
					break
				}
				if status != 200 || time.Now().After(deadline) {
					t.Fatalf("b still answers the revoked key a second later: %d %v", status, out)
				}
				time.Sleep(50 * time.Millisecond)
			}
			if status, out := b.REST(t, "GET", "/v1/account", key, nil); status != 200 {
				t.Fatalf("the account's other key on b: %d %v", status, out)
			}
		})
	}
}

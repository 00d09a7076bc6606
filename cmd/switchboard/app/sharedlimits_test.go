package app_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools/ratelimit/redistest"
)

// Issue 35 item 7: client registrations and portal sign-in steps are limited through the
// limiter every other limit uses, so two replicas sharing a Redis hold one address to 20 a
// minute in total, not 20 each. With Redis gone a registration (it writes) is refused with
// 503, never let through unlimited.
func TestReplicasShareSignInAndRegistrationLimits(t *testing.T) {
	redis := redistest.Start(t)
	st := storetest.Open(t, "sqlite")
	replica := func() *apptest.Env {
		return apptest.Start(t, apptest.Options{Store: st, Config: func(c *app.Config) {
			c.RedisURL = redis.URL
			c.MasterKey, c.ServerSecret = sharedSecret, sharedSecret
		}})
	}
	replicas := []*apptest.Env{replica(), replica()}
	client := from("127.0.0.61")

	allowed, limited := 0, 0
	for i := range 30 {
		env := replicas[i%2]
		status, h, out := post(t, client, env.URL+"/oauth/register", map[string]any{"client_name": "Host", "redirect_uris": []string{"https://host.example/cb"}})
		switch {
		case status == 201:
			allowed++
		case status == 429 && out["error"] == "slow_down" && h.Get("Retry-After") != "":
			limited++
		default:
			t.Fatalf("registration %d: %d %v", i, status, out)
		}
	}
	if allowed != 20 || limited != 10 {
		t.Fatalf("registrations across two replicas: %d allowed, %d limited; want 20 and 10 (20 a minute per address in total)", allowed, limited)
	}

	allowed, limited = 0, 0
	for i := range 30 {
		env := replicas[i%2]
		resp, err := client.PostForm(env.URL+"/developer/sign-in", url.Values{"email": {fmt.Sprintf("human%d@example.com", i)}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		switch {
		case resp.StatusCode == 200:
			allowed++
		case resp.StatusCode == 429 && resp.Header.Get("Retry-After") != "":
			limited++
		default:
			t.Fatalf("sign-in %d: %d", i, resp.StatusCode)
		}
	}
	if allowed != 20 || limited != 10 {
		t.Fatalf("sign-in steps across two replicas: %d allowed, %d limited; want 20 and 10 (20 a minute per address in total)", allowed, limited)
	}

	redis.Stop()
	status, _, out := post(t, from("127.0.0.62"), replicas[0].URL+"/oauth/register", map[string]any{"client_name": "Host", "redirect_uris": []string{"https://host.example/cb"}})
	if status != 503 || !strings.Contains(fmt.Sprint(out), "temporarily_unavailable") {
		t.Fatalf("a registration with Redis down: %d %v", status, out)
	}
}

package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

// from is an HTTP client whose requests come from ip (a loopback address), so the service
// sees another client.
func from(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

func post(t *testing.T, c *http.Client, url string, body any) (int, http.Header, map[string]any) {
	t.Helper()
	raw, _ := json.Marshal(body)
	resp, err := c.Post(url, "application/json", bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, resp.Header, out
}

// The attack the probe found: 5 signups and 5 wrong verifies, with no access to the inbox,
// used to keep the owner out for an hour. Now the attacker's guesses lock out only the
// attacker, and the owner gets a working code within minutes; every limit message is true.
func TestAttackerCannotLockTheOwnerOut(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	const victim = "victim@example.com"
	attacker, owner := from("127.0.0.2"), from("127.0.0.1")
	signup, verify := env.URL+"/v1/agents/signup", env.URL+"/v1/agents/verify"

	// One attacker address: 5 signups (spaced as the limits allow) and 5 wrong guesses.
	sent := 0
	for i := 0; i < 5; i++ {
		status, h, out := post(t, attacker, signup, map[string]any{"email": victim})
		if status == 429 {
			ra, _ := strconv.Atoi(h.Get("Retry-After"))
			if ra < 1 || ra > 300 {
				t.Fatalf("signup spacing Retry-After %d s: %v", ra, out)
			}
			env.Clock.Advance(time.Duration(ra) * time.Second)
			i--
			continue
		}
		if status != 200 {
			t.Fatalf("attacker signup %d: %d %v", i, status, out)
		}
		sent++
	}
	code := env.Inbox.Code(t, victim, sent)
	for i := 0; i < 5; i++ {
		if status, _, out := post(t, attacker, verify, map[string]any{"email": victim, "code": wrongCode(code)}); status != 401 {
			t.Fatalf("attacker guess %d: %d %v", i, status, out)
		}
	}
	// The attacker is out of guesses at this code (even the right one is refused to it)...
	if status, _, out := post(t, attacker, verify, map[string]any{"email": victim, "code": code}); status != 401 || !strings.Contains(fmt.Sprint(out), "this client has used its 5 attempts") {
		t.Fatalf("attacker's 6th guess: %d %v", status, out)
	}
	// ...and its sixth signup for the address is refused, saying so truthfully.
	status, h, out := post(t, attacker, signup, map[string]any{"email": victim})
	if status != 429 || !strings.Contains(fmt.Sprint(out), "this client requested 5 codes for this address") || !strings.Contains(fmt.Sprint(out), "latest code e-mailed is valid until") {
		t.Fatalf("attacker's 6th signup: %d %v %v", status, h, out)
	}
	// The owner's code still works for the owner.
	if status, _, out := post(t, owner, verify, map[string]any{"email": victim, "code": code}); status != 200 {
		t.Fatalf("owner with the latest code after the attack: %d %v", status, out)
	}

	// Many attacker addresses can void a code (10 wrong guesses in all) and keep asking for
	// codes; the owner still gets a new code within MaxSendGap (5 minutes) and signs in.
	for i := 0; i < 5; i++ {
		post(t, from(fmt.Sprintf("127.0.1.%d", i+1)), signup, map[string]any{"email": victim})
		env.Clock.Advance(5 * time.Minute)
	}
	latest := env.Inbox.Code(t, victim, len(env.Inbox.Messages()))
	for i := 0; i < 10; i++ {
		post(t, from(fmt.Sprintf("127.0.2.%d", i/5+1)), verify, map[string]any{"email": victim, "code": wrongCode(latest)})
	}
	status, h, out = post(t, owner, signup, map[string]any{"email": victim})
	if status == 429 {
		ra, _ := strconv.Atoi(h.Get("Retry-After"))
		if ra > 300 || strings.Contains(fmt.Sprint(out), "valid until") {
			t.Fatalf("owner kept out: %d s, %v (the voided code must not be called valid)", ra, out)
		}
		env.Clock.Advance(time.Duration(ra) * time.Second)
		status, _, out = post(t, owner, signup, map[string]any{"email": victim})
	}
	if status != 200 {
		t.Fatalf("owner's signup after the rotating attack: %d %v", status, out)
	}
	fresh := env.Inbox.Code(t, victim, len(env.Inbox.Messages()))
	if status, _, out := post(t, owner, verify, map[string]any{"email": victim, "code": fresh}); status != 200 {
		t.Fatalf("owner with the fresh code: %d %v", status, out)
	}
}

// Parallel guesses race with the code being voided or used: every losing guess is 401 (never
// 404 or 500), and neither counter ever passes its cap.
func TestParallelVerifiesNeverPassTheCaps(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			env := apptest.Start(t, apptest.Options{Dialect: dialect})
			const email = "race@example.com"
			post(t, http.DefaultClient, env.URL+"/v1/agents/signup", map[string]any{"email": email})
			code := env.Inbox.Code(t, email, 1)
			statuses := make([]int, 50)
			var wg sync.WaitGroup
			for i := range 50 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					guess := wrongCode(code)
					if i == 25 {
						guess = code // one right guess among them
					}
					statuses[i], _, _ = post(t, from(fmt.Sprintf("127.0.3.%d", i%4+1)), env.URL+"/v1/agents/verify", map[string]any{"email": email, "code": guess})
				}()
			}
			wg.Wait()
			for i, st := range statuses {
				if st != 401 && !(i == 25 && st == 200) {
					t.Errorf("guess %d: %d, want 401", i, st)
				}
			}
			if rec, err := env.App.Store.CodeByEmail(context.Background(), email); err == nil && rec.Attempts > 10 {
				t.Fatalf("%d attempts counted on one code, cap 10", rec.Attempts)
			}
			var over int
			env.App.Store.DB().NewRaw("SELECT COUNT(*) FROM email_code_attempts WHERE attempts > 5").Scan(context.Background(), &over)
			if over != 0 {
				t.Fatalf("%d clients passed 5 attempts", over)
			}
		})
	}
}

package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
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

// from is an HTTP client whose requests come from ip (a loopback address: Linux routes all of
// 127/8 to lo), so the service sees another client at its real TCP peer address.
func from(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

func post(t *testing.T, c *http.Client, url string, body any) (int, http.Header, map[string]any) {
	t.Helper()
	raw, _ := json.Marshal(body)
	resp, err := c.Post(url, "application/json", bytes.NewReader(raw))
	if err != nil {
		t.Error(err) // Error, not Fatal: attackers post from their own goroutines
		return 0, nil, nil
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, resp.Header, out
}

// codesTo is the code of every e-mail sent to `to` so far.
func codesTo(t *testing.T, env *apptest.Env, to string) []string {
	t.Helper()
	var n int
	for _, m := range env.Inbox.Messages() {
		for _, rcpt := range m.To {
			if strings.EqualFold(rcpt, to) {
				n++
			}
		}
	}
	codes := make([]string, n)
	for i := range n {
		codes[i] = env.Inbox.Code(t, to, i+1)
	}
	return codes
}

// sameCode fails unless every e-mail in codes carries one code, and returns it.
func sameCode(t *testing.T, codes []string) string {
	t.Helper()
	if len(codes) == 0 {
		t.Fatal("no code e-mailed")
	}
	for i, c := range codes {
		if c != codes[0] {
			t.Fatalf("e-mail %d carries code %s, e-mail 1 %s: a live code was replaced (all: %v)", i+1, c, codes[0], codes)
		}
	}
	return codes[0]
}

// The attack the first probe found: repeated signups and wrong guesses from one address,
// without the inbox. A repeat signup re-sends the same code (never a new one); the attacker's
// guesses use up only its own 5, then it gets 429 with Retry-After; its signups stop at its own
// limit; the owner's code keeps working for the owner.
func TestAttackerCannotLockTheOwnerOut(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			env := apptest.Start(t, apptest.Options{Dialect: dialect})
			const victim = "victim@example.com"
			attacker, owner := from("127.0.0.2"), from("127.0.0.1")
			signup, verify := env.URL+"/v1/agents/signup", env.URL+"/v1/agents/verify"

			// Signups every 45 s: each answers {ok:true} and re-sends the live code when the
			// spacing allows, until the attacker's own limit (5 e-mails for this address).
			var oks int
			for {
				status, h, out := post(t, attacker, signup, map[string]any{"email": victim})
				if status == 429 {
					ra, _ := strconv.Atoi(h.Get("Retry-After"))
					if msg := fmt.Sprint(out); !strings.Contains(msg, "this client requested 5 codes for this address") || !strings.Contains(msg, "valid until") || ra < 1 {
						t.Fatalf("attacker's signup past its limit: %v %v", h, out)
					}
					break
				}
				if status != 200 || out["ok"] != true {
					t.Fatalf("attacker signup %d: %d %v", oks+1, status, out)
				}
				oks++
				env.Clock.Advance(45 * time.Second)
			}
			codes := codesTo(t, env, victim)
			code := sameCode(t, codes)
			if oks != 6 || len(codes) != 5 {
				t.Fatalf("%d signups answered ok, %d e-mails sent; want 6 and 5 (one spaced out)", oks, len(codes))
			}
			for i := 1; i <= 5; i++ {
				if status, _, out := post(t, attacker, verify, map[string]any{"email": victim, "code": wrongCode(code)}); status != 401 {
					t.Fatalf("attacker guess %d: %d %v", i, status, out)
				}
			}
			// The attacker is out of guesses at this code (even the right one is refused to it).
			status, h, out := post(t, attacker, verify, map[string]any{"email": victim, "code": code})
			if ra, _ := strconv.Atoi(h.Get("Retry-After")); status != 429 || ra < 1 || ra > 600 || !strings.Contains(fmt.Sprint(out), "used its 5 guesses") {
				t.Fatalf("attacker's 6th guess: %d %v %v", status, h, out)
			}
			// The owner's code still works for the owner.
			if status, _, out := post(t, owner, verify, map[string]any{"email": victim, "code": code}); status != 200 {
				t.Fatalf("owner with the code after the attack: %d %v", status, out)
			}
		})
	}
}

// attack hammers email from addr: rounds requests, every 10th a signup, the others wrong
// guesses. It returns the statuses of each kind; a 429 without a sane Retry-After is an error.
func attack(t *testing.T, env *apptest.Env, addr, email, right string, rounds int) (verifies, signups map[int]int) {
	c := from(addr)
	verifies, signups = map[int]int{}, map[int]int{}
	for i := range rounds {
		url, body, tally := env.URL+"/v1/agents/verify", map[string]any{"email": email}, verifies
		if i%10 == 9 {
			url, tally = env.URL+"/v1/agents/signup", signups
		} else {
			guess := right
			for guess == right {
				guess = fmt.Sprintf("%08d", rand.IntN(100_000_000))
			}
			body["code"] = guess
		}
		status, h, out := post(t, c, url, body)
		tally[status]++
		if ra, _ := strconv.Atoi(h.Get("Retry-After")); status == 429 && (ra < 1 || ra > 3600) {
			t.Errorf("%s: 429 with Retry-After %q: %v", addr, h.Get("Retry-After"), out)
		}
	}
	return verifies, signups
}

// Issue 24: strangers on many addresses, each within its own limits, cannot void or block the
// owner's code. Five attacker addresses hammer the victim's e-mail with wrong guesses and
// signups; the code survives them all and the victim signs up, verifies and later recovers the
// account from its own address. Every attacker guess is 401 or 429, never 5xx, and each
// address had exactly its 5 guesses at each code.
func TestStrangersCannotVoidOrBlockACode(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			env := apptest.Start(t, apptest.Options{Dialect: dialect})
			const victim = "target@example.com"
			const attackers, rounds = 5, 50
			owner := from("127.0.0.1")
			signup, verify := env.URL+"/v1/agents/signup", env.URL+"/v1/agents/verify"
			hammer := func(right string) (verifies, signups map[int]int) {
				verifies, signups = map[int]int{}, map[int]int{}
				var mu sync.Mutex
				var wg sync.WaitGroup
				for i := range attackers {
					wg.Go(func() {
						v, s := attack(t, env, fmt.Sprintf("127.0.0.%d", 11+i), victim, right, rounds)
						mu.Lock()
						defer mu.Unlock()
						for st, n := range v {
							verifies[st] += n
						}
						for st, n := range s {
							signups[st] += n
						}
					})
				}
				wg.Wait()
				return verifies, signups
			}

			// Signup: the victim asks, five addresses hammer, the code survives.
			if status, _, out := post(t, owner, signup, map[string]any{"email": victim}); status != 200 {
				t.Fatalf("victim signup: %d %v", status, out)
			}
			code := sameCode(t, codesTo(t, env, victim))
			verifies, signups := hammer(code)
			t.Logf("%s: %d guesses from %d addresses: %v; %d signups: %v", dialect, rounds*9/10*attackers, attackers, verifies, rounds/10*attackers, signups)
			if len(verifies) != 2 || verifies[401] != 5*attackers || verifies[429] != (rounds*9/10-5)*attackers {
				t.Fatalf("attacker guesses answered %v; want 5 x 401 per address, the rest 429", verifies)
			}
			if signups[200]+signups[429] != rounds/10*attackers {
				t.Fatalf("attacker signups answered %v; want 200 or 429 only", signups)
			}
			sameCode(t, codesTo(t, env, victim)) // the attackers' signups re-sent the same code
			status, _, acct := post(t, owner, verify, map[string]any{"email": victim, "code": code})
			if status != 200 || acct["userId"] == nil {
				t.Fatalf("victim verify after the attack: %d %v", status, acct)
			}

			// Recovery, with the attack running at the same time: the victim's signup and
			// verify from its own address succeed whatever the interleaving.
			sentBefore := len(codesTo(t, env, victim))
			done := make(chan struct{})
			go func() {
				defer close(done)
				verifies, signups = hammer("")
			}()
			var recovered map[string]any
			for range 3 {
				status, h, out := post(t, owner, signup, map[string]any{"email": victim})
				if status == 429 {
					// Sends to one address are spaced (at most 5 minutes), whoever asked.
					ra, _ := strconv.Atoi(h.Get("Retry-After"))
					if ra < 1 || ra > 300 {
						t.Fatalf("victim's recovery signup: 429 for %d s: %v", ra, out)
					}
					env.Clock.Advance(time.Duration(ra) * time.Second)
					continue
				}
				if status != 200 {
					t.Fatalf("victim's recovery signup: %d %v", status, out)
				}
				// The code is e-mailed by whichever signup issued it (perhaps an attacker's).
				env.Inbox.Code(t, victim, sentBefore+1)
				fresh := sameCode(t, codesTo(t, env, victim)[sentBefore:])
				if fresh == code {
					t.Fatal("a used code was sent again")
				}
				var status2 int
				if status2, _, recovered = post(t, owner, verify, map[string]any{"email": victim, "code": fresh}); status2 != 200 {
					t.Fatalf("victim's recovery verify under attack: %d %v", status2, recovered)
				}
				break
			}
			<-done
			t.Logf("%s: recovery with the attack running: guesses %v, signups %v", dialect, verifies, signups)
			if recovered == nil || recovered["userId"] != acct["userId"] {
				t.Fatalf("recovery: %v, want userId %v", recovered, acct["userId"])
			}
			for st := range verifies {
				if st != 401 && st != 429 {
					t.Fatalf("attacker guesses during recovery answered %v; want 401 or 429 only", verifies)
				}
			}
			for st := range signups {
				if st != 200 && st != 429 {
					t.Fatalf("attacker signups during recovery answered %v; want 200 or 429 only", signups)
				}
			}
			checkGuessCaps(t, env)
		})
	}
}

// checkGuessCaps fails if any source passed its 5 guesses at a code or 20 in a window.
func checkGuessCaps(t *testing.T, env *apptest.Env) {
	t.Helper()
	var overPair, overSource int
	env.App.Store.DB().NewRaw("SELECT COUNT(*) FROM email_code_attempts WHERE attempts > 5").Scan(context.Background(), &overPair)
	env.App.Store.DB().NewRaw("SELECT COUNT(*) FROM email_code_sources WHERE guesses > 20").Scan(context.Background(), &overSource)
	if overPair != 0 || overSource != 0 {
		t.Fatalf("%d sources passed 5 guesses at a code, %d passed 20 in a window", overPair, overSource)
	}
}

// Parallel guesses race with each other and with the right one: every guess is 401 or 429
// (never 404 or 500), no counter ever passes its cap, and the code is used at most once; if
// the right guess lost to its own address's budget, the owner still signs in with it.
func TestParallelVerifiesNeverPassTheCaps(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			env := apptest.Start(t, apptest.Options{Dialect: dialect})
			const email = "race@example.com"
			post(t, http.DefaultClient, env.URL+"/v1/agents/signup", map[string]any{"email": email})
			code := env.Inbox.Code(t, email, 1)
			clients := make([]*http.Client, 4)
			for i := range clients {
				clients[i] = from(fmt.Sprintf("127.0.3.%d", i+1))
			}
			statuses, messages := make([]int, 50), make([]string, 50)
			var wg sync.WaitGroup
			for i := range 50 {
				wg.Go(func() {
					guess := wrongCode(code)
					if i == 25 {
						guess = code // one right guess among them
					}
					var out map[string]any
					statuses[i], _, out = post(t, clients[i%4], env.URL+"/v1/agents/verify", map[string]any{"email": email, "code": guess})
					messages[i] = fmt.Sprint(out)
				})
			}
			wg.Wait()
			wrong := make([]int, 4) // guesses compared with the code and found wrong, per address
			for i, st := range statuses {
				if st != 401 && st != 429 && !(i == 25 && st == 200) {
					t.Errorf("guess %d: %d, want 401 or 429", i, st)
				}
				if st == 401 && strings.Contains(messages[i], "wrong code") {
					wrong[i%4]++
				}
			}
			// Each address had at most its 5 guesses at the code; exactly 5 when the code
			// stayed live throughout (after it is used, guesses find no code: 401 too).
			for a, n := range wrong {
				if n > 5 || (statuses[25] != 200 && n != 5) {
					t.Errorf("address %d: %d wrong guesses compared (right guess %d): %v", a+1, n, statuses[25], wrong)
				}
			}
			checkGuessCaps(t, env)
			if statuses[25] != 200 {
				if status, _, out := post(t, from("127.0.0.1"), env.URL+"/v1/agents/verify", map[string]any{"email": email, "code": code}); status != 200 {
					t.Fatalf("owner after the race: %d %v", status, out)
				}
			}
		})
	}
}

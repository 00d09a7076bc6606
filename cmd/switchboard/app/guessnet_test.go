package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
)

// Issue 35 item 5: an attacker holding a whole IPv6 /48 (65,536 /64s) gets the /48's 25 guesses
// at a code, not 5 per /64: many addresses of one /64 share its 5, and /64 after /64 of the /48
// is refused once the /48's 25 are spent (even the right code). The victim, elsewhere, still
// verifies with the code: no stranger voids or blocks it.
//
// The loopback interface holds only ::1, so the IPv6 sources are given to the kernel as the
// client address the HTTP front would have set from the TCP peer (tools.Request.ClientAddr).
func TestAnIPv6NetworkSharesOneGuessBudget(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			env := apptest.Start(t, apptest.Options{Dialect: dialect})
			const victim = "v6target@example.com"
			owner := from("127.0.0.1")
			if status, _, out := post(t, owner, env.URL+"/v1/agents/signup", map[string]any{"email": victim}); status != 200 {
				t.Fatalf("victim signup: %d %v", status, out)
			}
			code := env.Inbox.Code(t, victim, 1)
			n, _ := strconv.Atoi(code)
			guesses := 0
			guess := func(addr, c string) *tools.Error {
				if c == "" {
					guesses++
					c = fmt.Sprintf("%08d", (n+guesses)%100_000_000) // distinct wrong codes
				}
				args, _ := json.Marshal(map[string]string{"email": victim, "code": c})
				_, e := env.App.Kernel.Call(context.Background(), tools.Request{Tool: "agent_verify", Args: args, ClientAddr: addr})
				if e == nil {
					t.Fatalf("guess %s from %s verified", c, addr)
				}
				return e
			}
			compared := map[string]int{} // wrong guesses compared with the code (401), per /64
			tally := func(net64, addr string) {
				switch e := guess(addr, ""); e.Code {
				case tools.CodeUnauthenticated:
					compared[net64]++
					// "guesses left" names the budget with fewer left: the /64's 5, the /48's 25.
					total := 0
					for _, c := range compared {
						total += c
					}
					want := "from this client address"
					if 25-total < 5-compared[net64] {
						want = "from this client's network"
					}
					if strings.Contains(e.Message, "guesses left") && !strings.Contains(e.Message, want) {
						t.Fatalf("after %d guesses at the /48, %d at this /64: %q, want it to say %q", total, compared[net64], e.Message, want)
					}
				case tools.CodeRateLimited:
					if e.RetryAfter <= 0 {
						t.Fatalf("429 without Retry-After: %v", e)
					}
				default:
					t.Fatalf("guess from %s: %v", addr, e)
				}
			}
			// 40 addresses of one /64, 5 guesses each: the /64 gets its 5 in all.
			for host := range 40 {
				for range 5 {
					tally("1", fmt.Sprintf("2001:db8:1:1::%x", host+1))
				}
			}
			if compared["1"] != 5 {
				t.Fatalf("40 addresses of one /64 had %d wrong guesses compared; want the /64's 5", compared["1"])
			}
			// 40 more /64s of the same /48, 5 guesses each: the /48 gets its 25 in all.
			for net := range 40 {
				for range 5 {
					tally(strconv.Itoa(net+2), fmt.Sprintf("2001:db8:1:%x::1", net+2))
				}
			}
			total := 0
			for _, c := range compared {
				total += c
			}
			if total != 25 {
				t.Fatalf("41 /64s of one /48 had %d wrong guesses compared (%v); want the /48's 25", total, compared)
			}
			// Past the /48's budget even the right code is refused to it, from a fresh /64.
			if e := guess("2001:db8:1:ffff::1", code); e.Code != tools.CodeRateLimited || e.RetryAfter <= 0 {
				t.Fatalf("the right code from the spent /48: %v", e)
			}
			checkNetCaps(t, env)
			// The code was neither voided nor blocked: the victim verifies from its own address.
			status, _, acct := post(t, owner, env.URL+"/v1/agents/verify", map[string]any{"email": victim, "code": code})
			if status != 200 || acct["userId"] == nil {
				t.Fatalf("victim verify after the /48's attack: %d %v", status, acct)
			}
		})
	}
}

// The victim in another /48 (or another /64 of IPv4) is untouched by a spent /48: its own
// budgets answer its guesses.
func TestASpentNetworkLeavesOtherNetworksTheirCode(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	const victim = "v6owner@example.com"
	post(t, from("127.0.0.1"), env.URL+"/v1/agents/signup", map[string]any{"email": victim})
	code := env.Inbox.Code(t, victim, 1)
	call := func(addr, c string) *tools.Error {
		args, _ := json.Marshal(map[string]string{"email": victim, "code": c})
		_, e := env.App.Kernel.Call(context.Background(), tools.Request{Tool: "agent_verify", Args: args, ClientAddr: addr})
		return e
	}
	for net := range 10 {
		for range 5 {
			call(fmt.Sprintf("2001:db8:7:%x::1", net), wrongCode(code))
		}
	}
	if e := call("2001:db8:7:aaaa::1", code); e == nil || e.Code != tools.CodeRateLimited {
		t.Fatalf("the spent /48 with the right code: %v", e)
	}
	if e := call("2001:db8:8:1::1", code); e != nil {
		t.Fatalf("the victim in another /48 with the right code: %v", e)
	}
}

// checkNetCaps fails if any /48 passed its 25 guesses at a code or 100 in a window.
func checkNetCaps(t *testing.T, env *apptest.Env) {
	t.Helper()
	var overPair, overSource int
	env.App.Store.DB().NewRaw("SELECT COUNT(*) FROM email_code_attempts WHERE client_addr LIKE '%/48' AND attempts > 25").Scan(context.Background(), &overPair)
	env.App.Store.DB().NewRaw("SELECT COUNT(*) FROM email_code_sources WHERE source LIKE '%/48' AND guesses > 100").Scan(context.Background(), &overSource)
	if overPair != 0 || overSource != 0 {
		t.Fatalf("%d networks passed 25 guesses at a code, %d passed 100 in a window", overPair, overSource)
	}
}

package onboarding_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/keys"
	"github.com/switchboard-hq/switchboard/tools/onboarding"
	"github.com/switchboard-hq/switchboard/tools/service"
	"github.com/switchboard-hq/switchboard/tools/wallets"
)

// Issue 46 item 5: 125 wrong guesses from 10 IPv6 /48s (12 or 13 each, within every budget of
// theirs) once left the code working for the next guesser. Now the code takes 100 guesses
// from all sources together: past them every address it was not sent to is refused, even with
// the right code, and nothing it sends is compared. The owner who asked for it still signs in
// with it; an owner entering it elsewhere has it re-sent there and signs in; and the owner's
// next code works from anywhere.
func TestACodeTakesAHundredGuessesFromStrangers(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
		now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
		clock := func() time.Time { return now }
		d := service.Deps{Store: s, Now: clock, Log: quiet}
		sealer, err := wallets.NewSealer(bytes.Repeat([]byte{3}, 32))
		if err != nil {
			t.Fatal(err)
		}
		ks := keys.NewService(keys.Config{Env: "test", Defaults: keys.Limits{SpendMicro: 10_000_000, RatePerMinute: 60}}, d)
		mail := &inbox{}
		cfg := onboarding.DefaultConfig([]byte("code secret"))
		ob := onboarding.NewService(cfg, d, mail, ks, sealer)
		k, err := tools.NewKernel(keys.NewAuthenticator(d, nil), tools.NewRateLimiter(clock), nil, quiet, clock, ob.Tools()...)
		if err != nil {
			t.Fatal(err)
		}
		call := func(from, tool string, args map[string]string) *tools.Error {
			raw, _ := json.Marshal(args)
			_, e := k.Call(ctx, tools.Request{Tool: tool, Args: raw, ClientAddr: from})
			return e
		}
		const victim, owner = "victim@example.com", "203.0.113.9"
		if e := call(owner, "agent_signup", map[string]string{"email": victim}); e != nil {
			t.Fatal(e)
		}
		code := mail.code(t)
		n := 0
		wrong := func() string {
			n++
			return fmt.Sprintf("%08d", (atoi(code)+n)%100_000_000)
		}

		compared, refused := 0, 0
		for i := range 125 {
			net48, net64 := i%10, i/10%3 // 10 /48s, 3 /64s in each: at most 5 guesses per /64, 13 per /48
			from := fmt.Sprintf("2001:db8:%x:%x::1", 0x100+net48, net64)
			switch e := call(from, "agent_verify", map[string]string{"email": victim, "code": wrong()}); {
			case e == nil:
				t.Fatal("a wrong code verified")
			case e.Code == tools.CodeUnauthenticated:
				compared++
			case e.Code == tools.CodeRateLimited && strings.Contains(e.Message, "takes guesses only from") && e.RetryAfter > 0:
				refused++
			default:
				t.Fatalf("guess %d from %s: %v", i+1, from, e)
			}
		}
		if compared != cfg.GuessesPerCodeAll || refused != 125-cfg.GuessesPerCodeAll {
			t.Fatalf("of 125 wrong guesses from 10 /48s, %d were compared and %d refused; want %d compared", compared, refused, cfg.GuessesPerCodeAll)
		}
		// Past the ceiling the right code is refused from any address it was not sent to.
		for _, from := range []string{"2001:db8:200::1", "198.51.100.7"} {
			if e := call(from, "agent_verify", map[string]string{"email": victim, "code": code}); e == nil || e.Code != tools.CodeRateLimited {
				t.Fatalf("the right code from %s, a stranger, past the ceiling: %v; want RATE_LIMITED", from, e)
			}
		}
		// The owner, who asked for it, still signs in with it.
		if e := call(owner, "agent_verify", map[string]string{"email": victim, "code": code}); e != nil {
			t.Fatalf("the owner's code past the ceiling: %v", e)
		}

		// The owner's next code works, from anywhere: it starts from zero.
		now = now.Add(time.Minute)
		if e := call(owner, "agent_signup", map[string]string{"email": victim}); e != nil {
			t.Fatal(e)
		}
		next := mail.code(t)
		if next == code {
			t.Fatal("the next code is the used one")
		}
		if e := call("198.51.100.7", "agent_verify", map[string]string{"email": victim, "code": next}); e != nil {
			t.Fatalf("the owner's next code, entered elsewhere: %v", e)
		}

		// An owner who asked from one address and enters the code at another, after strangers
		// spent the ceiling: asking again from there re-sends the same code, which then works.
		now = now.Add(time.Minute)
		if e := call(owner, "agent_signup", map[string]string{"email": victim}); e != nil {
			t.Fatal(e)
		}
		third := mail.code(t)
		for i := range cfg.GuessesPerCodeAll {
			call(fmt.Sprintf("2001:db8:%x:%x::1", 0x300+i/20, i/5%4), "agent_verify", map[string]string{"email": victim, "code": wrong()})
		}
		const elsewhere = "192.0.2.44"
		if e := call(elsewhere, "agent_verify", map[string]string{"email": victim, "code": third}); e == nil || e.Code != tools.CodeRateLimited {
			t.Fatalf("the right code from an address it was not sent to, past the ceiling: %v", e)
		}
		now = now.Add(5 * time.Minute) // past the spacing of sends to the address
		if e := call(elsewhere, "agent_signup", map[string]string{"email": victim}); e != nil {
			t.Fatal(e)
		}
		if again := mail.code(t); again != third {
			t.Fatalf("signup while the code lives sent %s, not the live code %s", again, third)
		}
		if e := call(elsewhere, "agent_verify", map[string]string{"email": victim, "code": third}); e != nil {
			t.Fatalf("the code re-sent to the address that enters it: %v", e)
		}
	})
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

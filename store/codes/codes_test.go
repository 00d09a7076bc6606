package codes_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/codes"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

// budget is one address's guess budget in these tests: 2 at a code, 3 per window.
func budget(addr string) []codes.GuessBudget {
	return []codes.GuessBudget{{Source: addr, PerCode: 2, PerWindow: 3}}
}

func TestCodeGuessesAndSingleUse(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := codes.New(st)
		ctx := context.Background()
		now := time.Now().UTC()
		code := &codes.EmailCode{Email: "a@example.com", CodeHash: "c1", Seed: "s1", ExpiresAt: now.Add(10 * time.Minute), CreatedAt: now}
		if got, issued, err := s.IssueCode(ctx, code, now); err != nil || !issued || got.CodeHash != "c1" {
			t.Fatalf("first code: %+v %v %v", got, issued, err)
		}
		// While it is live, nothing replaces it.
		other := &codes.EmailCode{Email: "a@example.com", CodeHash: "c2", Seed: "s2", ExpiresAt: now.Add(10 * time.Minute), CreatedAt: now}
		if got, issued, err := s.IssueCode(ctx, other, now.Add(time.Minute)); err != nil || issued || got.CodeHash != "c1" || got.Seed != "s1" {
			t.Fatalf("second code while the first is live: %+v %v %v", got, issued, err)
		}
		for want := 1; want <= 2; want++ {
			g, err := s.TakeGuess(ctx, "a@example.com", codes.CodeGuess{Hash: "c1"}, budget("1.2.3.4"), 10*time.Minute, now)
			if err != nil || g.Pair != want || g.Source != want {
				t.Fatalf("guess %d: got %+v, %v", want, g, err)
			}
		}
		// This source is done with this code, and the refusal counted nothing; other sources
		// are not touched by it.
		if _, err := s.TakeGuess(ctx, "a@example.com", codes.CodeGuess{Hash: "c1"}, budget("1.2.3.4"), 10*time.Minute, now); !errors.Is(err, codes.ErrPairGuesses) {
			t.Fatalf("third guess from one source: %v", err)
		}
		if g, err := s.TakeGuess(ctx, "a@example.com", codes.CodeGuess{Hash: "c1"}, budget("5.6.7.8"), 10*time.Minute, now); err != nil || g.Pair != 1 || g.Source != 1 {
			t.Fatalf("another source: %+v %v", g, err)
		}
		// The source's window across e-mails: its third guess is its last in the window.
		if g, err := s.TakeGuess(ctx, "b@example.com", codes.CodeGuess{Hash: ""}, budget("1.2.3.4"), 10*time.Minute, now.Add(time.Minute)); err != nil || g.Source != 3 {
			t.Fatalf("a guess at an e-mail without a code: %+v %v", g, err)
		}
		g, err := s.TakeGuess(ctx, "c@example.com", codes.CodeGuess{Hash: "x"}, budget("1.2.3.4"), 10*time.Minute, now.Add(2*time.Minute))
		if !errors.Is(err, codes.ErrSourceGuesses) || !g.SourceWindow.Equal(now.Truncate(time.Microsecond)) {
			t.Fatalf("past the source's window: %+v %v", g, err)
		}
		if err := s.ReturnGuess(ctx, "1.2.3.4"); err != nil {
			t.Fatal(err)
		}
		if g, err := s.TakeGuess(ctx, "c@example.com", codes.CodeGuess{Hash: "x"}, budget("1.2.3.4"), 10*time.Minute, now.Add(2*time.Minute)); err != nil || g.Source != 3 {
			t.Fatalf("after a returned guess: %+v %v", g, err)
		}
		// The window ends 10 minutes after it started.
		if g, err := s.TakeGuess(ctx, "d@example.com", codes.CodeGuess{Hash: ""}, budget("1.2.3.4"), 10*time.Minute, now.Add(10*time.Minute)); err != nil || g.Source != 1 {
			t.Fatalf("a new window: %+v %v", g, err)
		}
		// An expired code is replaced, with fresh counts.
		later := now.Add(10 * time.Minute)
		other.ExpiresAt = later.Add(10 * time.Minute)
		if got, issued, err := s.IssueCode(ctx, other, later); err != nil || !issued || got.CodeHash != "c2" {
			t.Fatalf("a code after expiry: %+v %v %v", got, issued, err)
		}
		if g, err := s.TakeGuess(ctx, "a@example.com", codes.CodeGuess{Hash: "c2"}, budget("5.6.7.8"), 10*time.Minute, later); err != nil || g.Pair != 1 {
			t.Fatalf("a guess at the new code: %+v %v", g, err)
		}
		for i, send := range []*codes.EmailSend{{ID: "s1", EmailHash: "eh", ClientAddr: "1.2.3.4", SentAt: now}, {ID: "s2", EmailHash: "eh", ClientAddr: "1.2.3.4", SentAt: later}} {
			if err := s.RecordSend(ctx, send, now.Add(-time.Hour)); err != nil {
				t.Fatalf("send %d: %v", i, err)
			}
		}
		sends, err := s.Sends(ctx, "eh", "1.2.3.4", now.Add(-time.Minute))
		if err != nil || sends.ToEmail != 2 || sends.FromClient != 2 || sends.Pair != 2 {
			t.Fatalf("sends: %+v %v", sends, err)
		}
		if ok, err := s.DeleteCode(ctx, "a@example.com", "c1"); err != nil || ok {
			t.Fatalf("deleting a replaced code: %v %v", ok, err)
		}
		if ok, err := s.DeleteCode(ctx, "a@example.com", "c2"); err != nil || !ok {
			t.Fatalf("deleting the live code: %v %v", ok, err)
		}
		if ok, _ := s.DeleteCode(ctx, "a@example.com", "c2"); ok {
			t.Fatal("a code was consumed twice")
		}
	})
}

// A guess counts under every budget of its client (an IPv6 /64 and its /48): a network's budget
// bounds all its addresses together, a budget that refuses leaves the others untouched, and
// another source's budgets are not touched at all.
func TestGuessBudgetsNest(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := codes.New(st)
		ctx := context.Background()
		now := time.Now().UTC()
		in := func(net64 string) []codes.GuessBudget {
			return []codes.GuessBudget{{Source: net64, PerCode: 2, PerWindow: 10}, {Source: "2001:db8:1::/48", PerCode: 3, PerWindow: 4}}
		}
		g, err := s.TakeGuess(ctx, "a@example.com", codes.CodeGuess{Hash: "c1"}, in("2001:db8:1:1::/64"), 10*time.Minute, now)
		if err != nil || g.Pair != 1 || g.LeftAtCode != 1 || g.Refused != -1 {
			t.Fatalf("first guess: %+v %v", g, err)
		}
		if g, err = s.TakeGuess(ctx, "a@example.com", codes.CodeGuess{Hash: "c1"}, in("2001:db8:1:2::/64"), 10*time.Minute, now); err != nil || g.Pair != 1 || g.LeftAtCode != 1 {
			t.Fatalf("a second /64 of the /48: %+v %v", g, err)
		}
		if g, err = s.TakeGuess(ctx, "a@example.com", codes.CodeGuess{Hash: "c1"}, in("2001:db8:1:3::/64"), 10*time.Minute, now); err != nil || g.LeftAtCode != 0 {
			t.Fatalf("the /48's last guess at the code: %+v %v", g, err)
		}
		// A fresh /64 of the same /48 is refused by the /48, and its own count is not taken.
		if g, err = s.TakeGuess(ctx, "a@example.com", codes.CodeGuess{Hash: "c1"}, in("2001:db8:1:4::/64"), 10*time.Minute, now); !errors.Is(err, codes.ErrPairGuesses) || g.Refused != 1 {
			t.Fatalf("a fourth /64 of the /48: %+v %v", g, err)
		}
		var n int
		if err := st.DB().NewRaw("SELECT COUNT(*) FROM email_code_attempts WHERE client_addr = '2001:db8:1:4::/64'").Scan(ctx, &n); err != nil || n != 0 {
			t.Fatalf("a refused guess was counted under the /64: %d %v", n, err)
		}
		// The /48's window: one guess left (4), then refused for any e-mail.
		if _, err = s.TakeGuess(ctx, "b@example.com", codes.CodeGuess{Hash: ""}, in("2001:db8:1:5::/64"), 10*time.Minute, now); err != nil {
			t.Fatal(err)
		}
		if g, err = s.TakeGuess(ctx, "c@example.com", codes.CodeGuess{Hash: ""}, in("2001:db8:1:6::/64"), 10*time.Minute, now); !errors.Is(err, codes.ErrSourceGuesses) || g.Refused != 1 {
			t.Fatalf("past the /48's window: %+v %v", g, err)
		}
		// Another network and an IPv4 address are untouched.
		other := []codes.GuessBudget{{Source: "2001:db8:2:1::/64", PerCode: 2, PerWindow: 10}, {Source: "2001:db8:2::/48", PerCode: 3, PerWindow: 4}}
		if g, err = s.TakeGuess(ctx, "a@example.com", codes.CodeGuess{Hash: "c1"}, other, 10*time.Minute, now); err != nil || g.LeftAtCode != 1 {
			t.Fatalf("another /48: %+v %v", g, err)
		}
		if g, err = s.TakeGuess(ctx, "a@example.com", codes.CodeGuess{Hash: "c1"}, budget("192.0.2.1"), 10*time.Minute, now); err != nil || g.Pair != 1 {
			t.Fatalf("an IPv4 address: %+v %v", g, err)
		}
		// A right code gives the guess back to every budget it was counted under.
		if err := s.ReturnGuess(ctx, "2001:db8:1:5::/64", "2001:db8:1::/48"); err != nil {
			t.Fatal(err)
		}
		if _, err = s.TakeGuess(ctx, "c@example.com", codes.CodeGuess{Hash: ""}, in("2001:db8:1:6::/64"), 10*time.Minute, now); err != nil {
			t.Fatalf("after a returned guess: %v", err)
		}
	})
}

// Issue 46 item 5: a code takes at most its ceiling of guesses from all sources together,
// whatever their number; past it only a source the code was sent for is counted (within its
// own budgets), a refused guess counts nothing, and the next code starts from zero.
func TestACodeTakesItsCeilingFromStrangers(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := codes.New(st)
		ctx := context.Background()
		now := time.Now().UTC()
		code := &codes.EmailCode{Email: "a@example.com", CodeHash: "c1", Seed: "s1", ExpiresAt: now.Add(10 * time.Minute), CreatedAt: now}
		if _, issued, err := s.IssueCode(ctx, code, now); err != nil || !issued {
			t.Fatalf("issue: %v %v", issued, err)
		}
		stranger := codes.CodeGuess{Hash: "c1", Ceiling: 5}
		for i := range 5 {
			g, err := s.TakeGuess(ctx, "a@example.com", stranger, budget(fmt.Sprintf("198.51.100.%d", i/2)), 10*time.Minute, now)
			if err != nil || g.AtCode != i+1 {
				t.Fatalf("guess %d at the code: %+v %v", i+1, g, err)
			}
			if i == 4 && (g.LeftAtCode != 0 || !g.LeftAtCeiling) { // its source has one left, the code none
				t.Fatalf("the ceiling's last guess: %+v", g)
			}
		}
		// A sixth source with its budgets whole is refused, and nothing is counted for it.
		g, err := s.TakeGuess(ctx, "a@example.com", stranger, budget("198.51.100.9"), 10*time.Minute, now)
		if !errors.Is(err, codes.ErrCodeGuesses) || g.Refused != -1 {
			t.Fatalf("past the ceiling: %+v %v", g, err)
		}
		if g, err := s.TakeGuess(ctx, "b@example.com", codes.CodeGuess{}, budget("198.51.100.9"), 10*time.Minute, now); err != nil || g.Source != 1 {
			t.Fatalf("the refused source's window after the refusal: %+v %v", g, err)
		}
		// The source the code was sent for still guesses, within its own budget at the code.
		owner := codes.CodeGuess{Hash: "c1", Ceiling: 5, Requester: true}
		for want := 6; want <= 7; want++ {
			if g, err := s.TakeGuess(ctx, "a@example.com", owner, budget("203.0.113.1"), 10*time.Minute, now); err != nil || g.AtCode != want || g.LeftAtCeiling {
				t.Fatalf("the requester past the ceiling: %+v %v", g, err)
			}
		}
		if _, err := s.TakeGuess(ctx, "a@example.com", owner, budget("203.0.113.1"), 10*time.Minute, now); !errors.Is(err, codes.ErrPairGuesses) {
			t.Fatalf("the requester past its own budget: %v", err)
		}
		// The next code starts from zero.
		later := now.Add(11 * time.Minute)
		next := &codes.EmailCode{Email: "a@example.com", CodeHash: "c2", Seed: "s2", ExpiresAt: later.Add(10 * time.Minute), CreatedAt: later}
		if _, issued, err := s.IssueCode(ctx, next, later); err != nil || !issued {
			t.Fatalf("next code: %v %v", issued, err)
		}
		if g, err := s.TakeGuess(ctx, "a@example.com", codes.CodeGuess{Hash: "c2", Ceiling: 5}, budget("198.51.100.8"), 10*time.Minute, later); err != nil || g.AtCode != 1 {
			t.Fatalf("a guess at the next code: %+v %v", g, err)
		}
	})
}

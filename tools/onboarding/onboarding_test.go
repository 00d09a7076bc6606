package onboarding_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/keys"
	"github.com/switchboard-hq/switchboard/tools/onboarding"
	"github.com/switchboard-hq/switchboard/tools/service"
	"github.com/switchboard-hq/switchboard/tools/wallets"
)

// inbox keeps what was sent, as a real inbox would.
type inbox struct {
	mu   sync.Mutex
	sent []onboarding.Message
}

func (b *inbox) Send(_ context.Context, m onboarding.Message) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sent = append(b.sent, m)
	return nil
}

var codeRe = regexp.MustCompile(`\b[0-9]{8}\b`)

func (b *inbox) code(t *testing.T) string {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.sent) == 0 {
		t.Fatal("no e-mail was sent")
	}
	c := codeRe.FindString(b.sent[len(b.sent)-1].Text)
	if c == "" {
		t.Fatalf("no code in %q", b.sent[len(b.sent)-1].Text)
	}
	return c
}

// An agent signs up with agent_signup and agent_verify through the kernel: the code e-mailed
// to the inbox creates the account with both wallets and a working key; a wrong code is
// refused; signing up again with the same e-mail recovers the same account with a new key.
func TestSignupVerifyRecover(t *testing.T) {
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
		ob := onboarding.NewService(onboarding.DefaultConfig([]byte("code secret")), d, mail, ks, sealer)
		k, err := tools.NewKernel(keys.NewAuthenticator(d, nil), tools.NewRateLimiter(clock), nil, quiet, clock, ob.Tools()...)
		if err != nil {
			t.Fatal(err)
		}
		call := func(tool string, args any) (any, *tools.Error) {
			raw, _ := json.Marshal(args)
			return k.Call(ctx, tools.Request{Tool: tool, Args: raw, ClientAddr: "203.0.113.9"})
		}

		if _, e := call("agent_signup", map[string]string{"email": "Agent@Example.com"}); e != nil {
			t.Fatal(e)
		}
		if to := mail.sent[0].To; to != "agent@example.com" {
			t.Fatalf("code sent to %q", to)
		}
		code := mail.code(t)
		wrong := "00000000"
		if code == wrong {
			wrong = "00000001"
		}
		if _, e := call("agent_verify", map[string]string{"email": "agent@example.com", "code": wrong}); e == nil {
			t.Fatal("a wrong code was accepted")
		}
		out, e := call("agent_verify", map[string]string{"email": "agent@example.com", "code": code})
		if e != nil {
			t.Fatal(e)
		}
		acct := out.(onboarding.Account)
		if acct.UserID == "" || acct.Wallets.EVM == "" || acct.Wallets.SVM == "" || acct.SpendLimitUsd.Micro() != 10_000_000 {
			t.Fatalf("account %+v", acct)
		}
		p, err := keys.NewAuthenticator(d, nil).Authenticate(ctx, acct.APIKey)
		if err != nil || p.AccountID != acct.UserID {
			t.Fatalf("the new key does not authenticate as the account: %+v %v", p, err)
		}
		// A used code is spent.
		if _, e := call("agent_verify", map[string]string{"email": "agent@example.com", "code": code}); e == nil {
			t.Fatal("a used code was accepted again")
		}

		now = now.Add(time.Hour)
		if _, e := call("agent_signup", map[string]string{"email": "agent@example.com"}); e != nil {
			t.Fatal(e)
		}
		out, e = call("agent_verify", map[string]string{"email": "agent@example.com", "code": mail.code(t)})
		if e != nil {
			t.Fatal(e)
		}
		again := out.(onboarding.Account)
		if again.UserID != acct.UserID || again.Wallets != acct.Wallets || again.APIKey == acct.APIKey {
			t.Fatalf("recovery: %+v, first %+v", again, acct)
		}
		if ks, _ := accounts.New(s).Keys(ctx, acct.UserID); len(ks) != 2 {
			t.Fatalf("%d keys after recovery, want 2", len(ks))
		}
	})
}

// Package onboarding lets an agent create or recover an account with an e-mail one-time code:
// agent_signup and agent_verify.
package onboarding

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/codes"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/keys"
	"github.com/switchboard-hq/switchboard/tools/service"
	"github.com/switchboard-hq/switchboard/tools/wallets"
	"github.com/switchboard-hq/switchboard/tools/webhooks"
)

// Config holds the onboarding limits. They are counted so that someone who cannot read the
// inbox can neither void the owner's code nor keep the owner from using it: nothing ends a live
// code but its use or its expiry, and every guess limit counts the guessing address's own
// guesses only (docs/decisions.md, "E-mail codes", has the arithmetic behind the figures).
// Over all sources, a code takes GuessesPerCodeAll guesses; past them only the sources it was
// sent for (whoever asked for it: agent_signup's or the sign-in page's client) still guess,
// each within its own budgets, so however many networks a stranger holds it can neither guess
// more nor close the code to the owner who asked for it (docs/decisions.md, "A ceiling on
// e-mail code guesses").
type Config struct {
	CodeSecret       []byte        // HMAC key for stored code hashes and for deriving codes from their seeds
	CodeTTL          time.Duration // 10 minutes
	GuessesPerCode   int           // guesses one source (an IPv4 address, an IPv6 /64) may make at one e-mail's code: 5
	GuessesPerSource int           // guesses one source may make at any codes per GuessWindow: 20
	// An IPv6 /48 (one site's allocation: 65,536 /64s) shares one more budget, so holding many
	// /64s buys no more guesses than this.
	GuessesPerCodeNet   int           // guesses one IPv6 /48 may make at one e-mail's code: 25
	GuessesPerSourceNet int           // guesses one IPv6 /48 may make at any codes per GuessWindow: 100
	GuessesPerCodeAll   int           // guesses one code takes from all sources together, past which only the sources it was sent for guess: 100
	GuessWindow         time.Duration // 10 minutes
	SendsPerPair        int           // code e-mails to one address from one client per SendWindow: 5
	SendsPerClient      int           // code e-mails from one client address per SendWindow: 20
	FreeSends           int           // sends to one address per SendWindow before spacing applies: 3
	MaxSendGap          time.Duration // the longest spacing between sends to one address: 5 minutes
	SendWindow          time.Duration // 1 hour
	ServiceName         string
	OnCreate            accounts.CreateOption // runs in the account-creating transaction (billing's starting credit); nil: nothing
}

// codeDigits is the length of a code: 10^8 codes, so that 1,000 IPv4 addresses and a /48 of
// IPv6 (5 guesses each address, 25 the /48) find a live code with probability at most
// 5,025/10^8 ≈ 5e-5 (docs/limits.md). VerifyInput's pattern says the same.
const codeDigits = 8

// DefaultConfig returns the documented limits.
func DefaultConfig(codeSecret []byte) Config {
	return Config{CodeSecret: codeSecret, CodeTTL: 10 * time.Minute, GuessesPerCode: 5, GuessesPerSource: 20,
		GuessesPerCodeNet: 25, GuessesPerSourceNet: 100, GuessesPerCodeAll: 100, GuessWindow: 10 * time.Minute, SendsPerPair: 5, SendsPerClient: 20, FreeSends: 3, MaxSendGap: 5 * time.Minute,
		SendWindow: time.Hour, ServiceName: "Switchboard"}
}

// Service runs signup and verify.
type Service struct {
	cfg      Config
	accounts accounts.Accounts
	codes    codes.Codes
	now      func() time.Time
	mailer   Mailer
	keys     *keys.Service
	sealer   *wallets.Sealer
}

// NewService wires the onboarding tools.
func NewService(cfg Config, d service.Deps, mailer Mailer, ks *keys.Service, sealer *wallets.Sealer) *Service {
	d = d.WithDefaults()
	return &Service{cfg: cfg, accounts: accounts.New(d.Store), codes: codes.New(d.Store), now: d.Now, mailer: mailer, keys: ks, sealer: sealer}
}

// SignupInput is agent_signup's input.
type SignupInput struct {
	Email string `json:"email" jsonschema:"format=email,minLength=3,maxLength=254" jsonschema_description:"an e-mail inbox the agent can read; the code is sent there"`
}

// SignupOutput is always {ok:true}: it does not say whether the e-mail has an account.
type SignupOutput struct {
	OK bool `json:"ok"`
}

// VerifyInput is agent_verify's input.
type VerifyInput struct {
	Email string `json:"email" jsonschema:"format=email,minLength=3,maxLength=254" jsonschema_description:"the e-mail given to agent_signup"`
	Code  string `json:"code" jsonschema:"pattern=^[0-9]{8}$" jsonschema_description:"the 8-digit code from the e-mail"`
}

// Wallets are an account's embedded wallet addresses.
type Wallets struct {
	EVM string `json:"evm" jsonschema_description:"EVM address (EIP-55)"`
	SVM string `json:"svm" jsonschema_description:"Solana address (base58)"`
}

// Account is the spec's Account, returned by verify.
type Account struct {
	UserID             string    `json:"userId"`
	Wallets            Wallets   `json:"wallets"`
	APIKey             string    `json:"apiKey" jsonschema_description:"the API key; shown only now, store it"`
	Scopes             []string  `json:"scopes"`
	SpendLimitUsd      tools.USD `json:"spendLimitUsd"`
	RateLimitPerMinute int       `json:"rateLimitPerMinute"`
}

// Tools returns agent_signup and agent_verify.
func (s *Service) Tools() []*tools.Tool {
	return []*tools.Tool{
		tools.New(tools.Def{
			Name:  "agent_signup",
			Title: "Sign up by e-mail",
			Description: "Start onboarding: e-mails an 8-digit one-time code (valid 10 minutes) to an inbox you can read, " +
				"then call agent_verify with it. Always answers {ok:true}. Use it also to recover an account. " +
				"Calling it again while a code is valid re-sends that same code (spaced out), never a new one. " +
				"If you cannot read an inbox, do not retry: ask a human for an API key instead.",
			Access:      tools.Public,
			Annotations: tools.Annotations{ReadOnly: tools.Bool(false), Destructive: tools.Bool(false), OpenWorld: tools.Bool(true)},
		}, s.signup),
		tools.New(tools.Def{
			Name:  "agent_verify",
			Title: "Verify e-mail code",
			Description: "Finish onboarding with the code from agent_signup's e-mail. Creates the account (EVM and Solana wallets, " +
				"a first API key with every scope) or, for an existing account, issues a fresh key for it. " +
				"The apiKey is shown once: store it and send it as x-api-key.",
			Access:      tools.Public,
			Annotations: tools.Annotations{ReadOnly: tools.Bool(false), Destructive: tools.Bool(false), OpenWorld: tools.Bool(false)},
		}, s.verify),
	}
}

type enterAtKey struct{}

const (
	atSignInPage = iota + 1
	atWalletExport
)

// FromSignInPage marks a code request a human made on the portal's sign-in page: the e-mail
// tells them to enter the code there, not to call agent_verify.
func FromSignInPage(ctx context.Context) context.Context {
	return context.WithValue(ctx, enterAtKey{}, atSignInPage)
}

// ForWalletExport marks a code request that unlocks the export of the wallets' keys.
func ForWalletExport(ctx context.Context) context.Context {
	return context.WithValue(ctx, enterAtKey{}, atWalletExport)
}

func enterAt(ctx context.Context) int { v, _ := ctx.Value(enterAtKey{}).(int); return v }

func normalizeEmail(e string) string { return strings.ToLower(strings.TrimSpace(e)) }

func (s *Service) hash(parts ...string) string {
	m := hmac.New(sha256.New, s.cfg.CodeSecret)
	m.Write([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(m.Sum(nil))
}

func (s *Service) signup(ctx context.Context, c *tools.Caller, in SignupInput) (SignupOutput, error) {
	email := normalizeEmail(in.Email)
	now := s.now().UTC()
	src := Source(c.ClientAddr)
	emailHash := s.hash("send", email)
	since := now.Add(-s.cfg.SendWindow)
	st, err := s.codes.Sends(ctx, emailHash, src, since)
	if err != nil {
		return SignupOutput{}, err
	}
	rec, err := s.codes.CodeByEmail(ctx, email)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return SignupOutput{}, err
	}
	live := err == nil && now.Before(rec.ExpiresAt) && rec.Seed != ""
	if e := s.clientLimit(st, live, rec, now); e != nil {
		return SignupOutput{}, e
	}
	wait := st.LastToEmail.Add(s.sendGap(st.ToEmail)).Sub(now)
	switch {
	case live && wait > 0:
		// Idempotent: the code in the inbox is this very code, so there is nothing to send yet.
		return SignupOutput{OK: true}, nil
	case wait > 0:
		wait = max(wait.Round(time.Second), time.Second)
		e := tools.Errorf(tools.CodeRateLimited, "a code was sent to this address %d s ago and has since been used or expired; a new code can be requested in %d s",
			int(now.Sub(st.LastToEmail).Seconds()), int(wait.Seconds()))
		e.RetryAfter = wait
		return SignupOutput{}, e
	case !live:
		seed, err := newSeed()
		if err != nil {
			return SignupOutput{}, err
		}
		fresh := &codes.EmailCode{Email: email, CodeHash: s.hash("code", email, s.codeOf(email, seed)), Seed: seed,
			ExpiresAt: now.Add(s.cfg.CodeTTL), CreatedAt: now}
		// A code issued by a concurrent signup in between wins: it is the one (re-)sent.
		if rec, _, err = s.codes.IssueCode(ctx, fresh, now); err != nil {
			return SignupOutput{}, err
		}
	}
	code := s.codeOf(email, rec.Seed)
	where := "Enter it with POST /v1/agents/verify (REST) or the agent_verify tool (MCP)."
	switch enterAt(ctx) {
	case atSignInPage:
		where = "Enter it on the " + s.cfg.ServiceName + " sign-in page where you asked for it."
	case atWalletExport:
		where = "Enter it on the wallet export page: it reveals your wallets' private keys. Never give it to anyone."
	}
	msg := Message{
		To:      email,
		Subject: fmt.Sprintf("Your %s code: %s", s.cfg.ServiceName, code),
		Text: fmt.Sprintf("Your %s verification code is %s.\n\n"+
			"It signs you in to %s (creating your account if you have none) and expires in %d minutes, at %s.\n"+
			"%s If you did not ask for it, ignore this e-mail.\n",
			s.cfg.ServiceName, code, s.cfg.ServiceName, int(math.Ceil(rec.ExpiresAt.Sub(now).Minutes())), rec.ExpiresAt.Format("15:04 MST"), where),
	}
	if err := s.mailer.Send(ctx, msg); err != nil {
		// The code stays: the next signup re-sends it (an unsent e-mail is not counted).
		return SignupOutput{}, tools.Errorf(tools.CodeUnavailable, "the code e-mail could not be sent; try again shortly").Wrap(err)
	}
	send := &codes.EmailSend{ID: uuid.NewString(), EmailHash: emailHash, ClientAddr: src, SentAt: now}
	if err := s.codes.RecordSend(ctx, send, since); err != nil {
		return SignupOutput{}, err
	}
	return SignupOutput{OK: true}, nil
}

// sendGap is the spacing the next send to an address needs after n sends in the window:
// none for the first FreeSends, then 30 s doubling, never more than MaxSendGap.
func (s *Service) sendGap(n int) time.Duration {
	if n < s.cfg.FreeSends {
		return 0
	}
	gap := 30 * time.Second
	for i := s.cfg.FreeSends; i < n && gap < s.cfg.MaxSendGap; i++ {
		gap *= 2
	}
	return min(gap, s.cfg.MaxSendGap)
}

// clientLimit refuses a client past its own send limits with RATE_LIMITED, a true message and
// Retry-After. Only the client's own sends count here, so no one else can bring it to them.
func (s *Service) clientLimit(st codes.SendStats, live bool, rec *codes.EmailCode, now time.Time) *tools.Error {
	var wait time.Duration
	var why string
	switch {
	case st.FromClient >= s.cfg.SendsPerClient:
		wait, why = st.OldestFromClient.Add(s.cfg.SendWindow).Sub(now), fmt.Sprintf("this client requested %d codes in the last hour (all addresses)", st.FromClient)
	case st.Pair >= s.cfg.SendsPerPair:
		wait, why = st.OldestPair.Add(s.cfg.SendWindow).Sub(now), fmt.Sprintf("this client requested %d codes for this address in the last hour", st.Pair)
	default:
		return nil
	}
	wait = max(wait.Round(time.Second), time.Second)
	valid := ""
	if live {
		valid = fmt.Sprintf("; the code already e-mailed is valid until %s", rec.ExpiresAt.Format("15:04:05 MST"))
	}
	e := tools.Errorf(tools.CodeRateLimited, "%s; another can be requested in %d s%s", why, int(wait.Seconds()), valid)
	e.RetryAfter = wait
	return e
}

// newSeed is a code's random seed: 256 bits from crypto/rand.
func newSeed() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate code seed: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// codeOf derives the e-mail's code from its seed under the secret: re-sending a live code
// needs no stored code, and a stolen database alone cannot compute one. 64 bits of HMAC
// reduced mod 10^8 are uniform to within 10^8/2^64 (about 5e-12).
func (s *Service) codeOf(email, seed string) string {
	m := hmac.New(sha256.New, s.cfg.CodeSecret)
	m.Write([]byte("code seed\x00" + email + "\x00" + seed))
	n := binary.BigEndian.Uint64(m.Sum(nil)) % codeSpace
	return fmt.Sprintf("%0*d", codeDigits, n)
}

// codeSpace is 10^codeDigits.
const codeSpace = 100_000_000

// Source is the address guesses and sends are counted for: an IPv4 address, or the /64 of an
// IPv6 address (one host is commonly given a whole /64, so counting single IPv6 addresses
// would hand it 2^64 budgets). Anything else (stdio) counts as itself.
func Source(clientAddr string) string {
	ip, err := netip.ParseAddr(clientAddr)
	if err != nil {
		return clientAddr
	}
	ip = ip.Unmap()
	if ip.Is4() {
		return ip.String()
	}
	p, err := ip.WithZone("").Prefix(64)
	if err != nil {
		return clientAddr
	}
	return p.String()
}

// guessBudgets are the budgets a guess from clientAddr counts under: its source (Source), and
// for IPv6 also its /48, so the 65,536 /64s of one site share one budget between them.
func (s *Service) guessBudgets(clientAddr string) []codes.GuessBudget {
	out := []codes.GuessBudget{{Source: Source(clientAddr), PerCode: s.cfg.GuessesPerCode, PerWindow: s.cfg.GuessesPerSource}}
	if ip, err := netip.ParseAddr(clientAddr); err == nil && ip.Unmap().Is6() {
		if p, err := ip.Unmap().WithZone("").Prefix(48); err == nil {
			out = append(out, codes.GuessBudget{Source: p.String(), PerCode: s.cfg.GuessesPerCodeNet, PerWindow: s.cfg.GuessesPerSourceNet})
		}
	}
	return out
}

// guesser names budget i of guessBudgets in a refusal (-1: the code's ceiling).
func guesser(i int) string {
	switch i {
	case -1:
		return "the addresses this code was not sent to (all together)"
	case 0:
		return "this client address"
	}
	return "this client's network (its IPv6 /48)"
}

// sentHere reports whether a send of rec was recorded for clientAddr's source: that source
// asked for this very code (a send a second before it was made counts too: the clocks of
// the code and its first send are one reading, stored at each database's precision).
func (s *Service) sentHere(ctx context.Context, email string, rec *codes.EmailCode, clientAddr string) (bool, error) {
	st, err := s.codes.Sends(ctx, s.hash("send", email), Source(clientAddr), rec.CreatedAt.Add(-time.Second))
	return st.Pair > 0, err
}

func (s *Service) verify(ctx context.Context, c *tools.Caller, in VerifyInput) (Account, error) {
	email := normalizeEmail(in.Email)
	if err := s.consumeCode(ctx, email, in.Code, c.ClientAddr); err != nil {
		return Account{}, err
	}
	acct, err := s.accounts.ByEmail(ctx, email)
	switch {
	case err == nil:
		return s.recover(ctx, acct)
	case errors.Is(err, store.ErrNotFound):
		return s.create(ctx, email, s.now().UTC(), true)
	default:
		return Account{}, err
	}
}

// SignIn is the portal's e-mail sign-in: the same code, attempt caps and send limits as
// agent_verify, and the same account for the same e-mail (created, with its wallets, when
// there is none), but no key: the human issues keys on the portal.
func (s *Service) SignIn(ctx context.Context, email, code, clientAddr string) (accountID string, err error) {
	email = normalizeEmail(email)
	if err := s.consumeCode(ctx, email, code, clientAddr); err != nil {
		return "", err
	}
	return s.AccountForEmail(ctx, email)
}

// AccountForEmail returns the account of a verified e-mail (an identity provider vouched for
// it, or a code was consumed), creating it with its wallets, and no key, when there is none.
func (s *Service) AccountForEmail(ctx context.Context, email string) (string, error) {
	email = normalizeEmail(email)
	acct, err := s.accounts.ByEmail(ctx, email)
	switch {
	case err == nil:
		return acct.ID, nil
	case errors.Is(err, store.ErrNotFound):
		created, err := s.create(ctx, email, s.now().UTC(), false)
		if errors.Is(err, store.ErrConflict) { // created by a concurrent sign-in
			if acct, err := s.accounts.ByEmail(ctx, email); err == nil {
				return acct.ID, nil
			}
		}
		return created.UserID, err
	default:
		return "", err
	}
}

// consumeCode checks a guess at the e-mail's live code and consumes the code when it is right.
// A guess is counted against the guessing source address's own budgets before it is compared;
// a wrong guess never voids the code, so strangers cannot take it from its owner.
func (s *Service) consumeCode(ctx context.Context, email, code, clientAddr string) error {
	now := s.now().UTC()
	budgets := s.guessBudgets(clientAddr)
	rec, err := s.codes.CodeByEmail(ctx, email)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	live := err == nil && now.Before(rec.ExpiresAt)
	at := codes.CodeGuess{Ceiling: s.cfg.GuessesPerCodeAll}
	if live {
		at.Hash = rec.CodeHash
		if at.Requester, err = s.sentHere(ctx, email, rec, clientAddr); err != nil {
			return err
		}
	}
	// Guesses at e-mails without a live code count for the source too: spraying is bounded.
	g, err := s.codes.TakeGuess(ctx, email, at, budgets, s.cfg.GuessWindow, now)
	switch {
	case errors.Is(err, codes.ErrSourceGuesses):
		wait := max(g.SourceWindow.Add(s.cfg.GuessWindow).Sub(now).Round(time.Second), time.Second)
		e := tools.Errorf(tools.CodeRateLimited, "%s made %d code guesses (all e-mails) in the last %d minutes; retry in %d s",
			guesser(g.Refused), budgets[g.Refused].PerWindow, int(s.cfg.GuessWindow.Minutes()), int(wait.Seconds()))
		e.RetryAfter = wait
		return e
	case errors.Is(err, codes.ErrPairGuesses):
		wait := max(rec.ExpiresAt.Sub(now).Round(time.Second), time.Second)
		e := tools.Errorf(tools.CodeRateLimited, "%s has used its %d guesses at this e-mail's current code; the code stays valid for whoever reads the inbox until %s. "+
			"After that, agent_signup e-mails a new code (retry in %d s)", guesser(g.Refused), budgets[g.Refused].PerCode, rec.ExpiresAt.Format("15:04:05 MST"), int(wait.Seconds()))
		e.RetryAfter = wait
		return e
	case errors.Is(err, codes.ErrCodeGuesses):
		wait := max(rec.ExpiresAt.Sub(now).Round(time.Second), time.Second)
		e := tools.Errorf(tools.CodeRateLimited, "this e-mail's current code has taken its %d guesses from addresses it was not sent to, so it now takes guesses only from "+
			"the client addresses that asked for it. If you read the inbox, call agent_signup (or the sign-in page) from this address: it re-sends the same code here "+
			"when the spacing of sends allows, and this address may then enter it; or after %s agent_signup e-mails a new code (retry in %d s)",
			at.Ceiling, rec.ExpiresAt.Format("15:04:05 MST"), int(wait.Seconds()))
		e.RetryAfter = wait
		return e
	case err != nil:
		return err
	}
	if !live {
		if rec != nil {
			return tools.Errorf(tools.CodeUnauthenticated, "this code expired (codes last %d minutes); call agent_signup for a new one", int(s.cfg.CodeTTL.Minutes()))
		}
		return tools.Errorf(tools.CodeUnauthenticated, "no live code for this e-mail (never requested, already used or expired); call agent_signup for a new one")
	}
	if !hmac.Equal([]byte(s.hash("code", email, code)), []byte(rec.CodeHash)) {
		if g.LeftAtCode > 0 {
			who := guesser(0)
			switch {
			case g.LeftAtCeiling:
				who = guesser(-1)
			case g.LeftAtCode < budgets[0].PerCode-g.Pair: // the network's budget is the smaller
				who = guesser(1)
			}
			return tools.Errorf(tools.CodeUnauthenticated, "wrong code; %d guesses left from %s. Check the latest e-mail", g.LeftAtCode, who)
		}
		if g.LeftAtCeiling {
			return tools.Errorf(tools.CodeUnauthenticated, "wrong code, and that was the last of the %d guesses this code takes from addresses it was not sent to; it stays valid until %s "+
				"for the addresses that asked for it (agent_signup from this address re-sends it here), then agent_signup e-mails a new one", at.Ceiling, rec.ExpiresAt.Format("15:04:05 MST"))
		}
		who, of := guesser(0), budgets[0].PerCode
		if g.Pair < of { // the network's budget ran out first
			who, of = guesser(1), budgets[1].PerCode
		}
		return tools.Errorf(tools.CodeUnauthenticated, "wrong code, and that was the last of %d guesses %s may make at this code; it stays valid until %s, then agent_signup e-mails a new one",
			of, who, rec.ExpiresAt.Format("15:04:05 MST"))
	}
	// Consuming the code is the race's single winner: a second verify with it finds nothing.
	won, err := s.codes.DeleteCode(ctx, email, rec.CodeHash)
	if err != nil {
		return err
	}
	if !won {
		return tools.Errorf(tools.CodeUnauthenticated, "this code was just used; call agent_signup for a new one")
	}
	// Best effort: the code is consumed, so this sign-in must go on whatever happens here.
	sources := make([]string, len(budgets))
	for i, b := range budgets {
		sources[i] = b.Source
	}
	_ = s.codes.ReturnGuess(ctx, sources...)
	return nil
}

// firstKey mints the key verify hands out: every scope, the agent defaults.
func (s *Service) firstKey(accountID string) (*accounts.APIKey, string) {
	return s.keys.New(accountID, "agent (e-mail verification)", tools.ScopeNames(), s.keys.Defaults())
}

func (s *Service) create(ctx context.Context, email string, now time.Time, withKey bool) (Account, error) {
	acct := &accounts.Account{ID: uuid.NewString(), Email: email, CreatedAt: now}
	evm, err := wallets.NewEVM()
	if err != nil {
		return Account{}, err
	}
	svm, err := wallets.NewSolana()
	if err != nil {
		return Account{}, err
	}
	var ws []*accounts.Wallet
	for _, w := range []struct {
		family string
		kp     wallets.KeyPair
	}{{accounts.FamilyEVM, evm}, {accounts.FamilySVM, svm}} {
		sealed, keyID := s.sealer.Seal(w.kp.Private, []byte(w.kp.Address))
		clear(w.kp.Private)
		ws = append(ws, &accounts.Wallet{ID: uuid.NewString(), AccountID: acct.ID, Family: w.family,
			Address: w.kp.Address, SealedKey: sealed, MasterKeyID: keyID, CreatedAt: now})
	}
	var key *accounts.APIKey
	var secret string
	if withKey {
		key, secret = s.firstKey(acct.ID)
	}
	if err := s.accounts.Create(ctx, acct, ws, key, s.cfg.OnCreate); err != nil {
		return Account{}, fmt.Errorf("create account: %w", err)
	}
	if key == nil {
		return Account{UserID: acct.ID, Wallets: Wallets{EVM: evm.Address, SVM: svm.Address}}, nil
	}
	return account(acct.ID, Wallets{EVM: evm.Address, SVM: svm.Address}, key, secret), nil
}

func (s *Service) recover(ctx context.Context, acct *accounts.Account) (Account, error) {
	ws, err := s.accounts.Wallets(ctx, acct.ID)
	if err != nil {
		return Account{}, err
	}
	key, secret := s.firstKey(acct.ID)
	ev, err := webhooks.KeyCreatedEvent(key) // a recovery key: the owner's backend hears of it
	if err != nil {
		return Account{}, err
	}
	if err := s.accounts.CreateKey(ctx, key, ev); err != nil {
		return Account{}, fmt.Errorf("store recovery key: %w", err)
	}
	return account(acct.ID, AddressesOf(ws), key, secret), nil
}

// AddressesOf picks the EVM and Solana addresses out of an account's wallets.
func AddressesOf(ws []*accounts.Wallet) Wallets {
	var out Wallets
	for _, w := range ws {
		switch w.Family {
		case accounts.FamilyEVM:
			out.EVM = w.Address
		case accounts.FamilySVM:
			out.SVM = w.Address
		}
	}
	return out
}

func account(userID string, w Wallets, key *accounts.APIKey, secret string) Account {
	return Account{UserID: userID, Wallets: w, APIKey: secret, Scopes: key.Scopes,
		SpendLimitUsd: tools.USD(key.SpendLimitMicro), RateLimitPerMinute: key.RateLimitPerMinute}
}

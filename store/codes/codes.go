// Package codes keeps the one-time codes e-mailed for sign-in and sign-up: their sends, and
// the guess budgets that bound wrong codes per address and per e-mail.
package codes

import (
	"context"
	"errors"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/dberr"
	"github.com/uptrace/bun"
)

// Codes are the queries of one-time codes.
type Codes interface {
	// IssueCode stores code as the e-mail's code unless a live one (unexpired at now, with a
	// seed) is there already, and returns the live code: the new one (issued true) or the one
	// found. A new code starts with fresh guess counts.
	IssueCode(ctx context.Context, code *EmailCode, now time.Time) (live *EmailCode, issued bool, err error)
	// RecordSend records a code e-mail sent and prunes send records older than pruneBefore.
	RecordSend(ctx context.Context, send *EmailSend, pruneBefore time.Time) error
	// CodeByEmail returns the e-mail's code (live or expired), or ErrNotFound.
	CodeByEmail(ctx context.Context, email string) (*EmailCode, error)
	// TakeGuess counts one guess before it is compared, under each budget: for the source across
	// e-mails (PerWindow in a window starting at its first guess and lasting window) and, when
	// code.Hash is not empty, for the source at that e-mail's code (PerCode) and at the code
	// from all sources together (code.Ceiling, which a source the code was sent for passes).
	// Each is a conditional increment in one transaction, so parallel guesses can never pass a
	// cap, and a guess refused by any budget counts under none. Only the guessing client's own
	// sources, and the code's overall count, are touched: no stranger can spend the budgets of
	// the sources the code was sent for.
	TakeGuess(ctx context.Context, email string, code CodeGuess, budgets []GuessBudget, window time.Duration, now time.Time) (Guesses, error)
	// ReturnGuess gives each source back the guess a right code took from its window, so signing
	// in does not use up an address or network shared by many people.
	ReturnGuess(ctx context.Context, sources ...string) error
	// Sends counts code e-mails sent since `since` to emailHash, from clientAddr and both.
	Sends(ctx context.Context, emailHash, clientAddr string, since time.Time) (SendStats, error)
	// DeleteCode removes the e-mail's code if it still has codeHash. It reports whether a row was
	// deleted, so of two concurrent verifications with the same code only one wins.
	DeleteCode(ctx context.Context, email, codeHash string) (bool, error)
}

// New returns the codes queries of st.
func New(st *store.Store) Codes { return &queries{st: st, db: st.DB(), postgres: st.Postgres()} }

// queries is Codes on the store's database.
type queries struct {
	st       *store.Store
	db       *bun.DB
	postgres bool
}

// EmailCode is the live one-time code for an e-mail address. Nothing replaces it while it is
// live: only its use or its expiry ends it.
type EmailCode struct {
	bun.BaseModel `bun:"table:email_codes,alias:email_codes"`

	Email     string    `bun:"email,pk"`
	CodeHash  string    `bun:"code_hash,notnull"`
	Seed      string    `bun:"code_seed,notnull"` // the code is derived from it under the server secret, to re-send it
	Attempts  int       `bun:"attempts,notnull"`  // guesses at this code from all sources (CodeGuess.Ceiling)
	ExpiresAt time.Time `bun:"expires_at,notnull"`
	CreatedAt time.Time `bun:"created_at,notnull"`
}

// EmailSend records one code e-mail sent, for the per-address and per-client send limits.
type EmailSend struct {
	bun.BaseModel `bun:"table:email_sends"`

	ID         string    `bun:"id,pk"`
	EmailHash  string    `bun:"email_hash,notnull"`
	ClientAddr string    `bun:"client_addr,notnull"`
	SentAt     time.Time `bun:"sent_at,notnull"`
}

func (s *queries) IssueCode(ctx context.Context, code *EmailCode, now time.Time) (live *EmailCode, issued bool, err error) {
	for range 3 { // a live code found can be consumed before it is read: look again
		err = s.st.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
			issued = false
			res, err := tx.NewInsert().Model(code).
				On("CONFLICT (email) DO UPDATE").
				Set("code_hash = EXCLUDED.code_hash").
				Set("code_seed = EXCLUDED.code_seed").
				Set("attempts = 0").
				Set("expires_at = EXCLUDED.expires_at").
				Set("created_at = EXCLUDED.created_at").
				Where("email_codes.expires_at <= ? OR email_codes.code_seed = ''", now).
				Exec(ctx)
			if err != nil {
				return err
			}
			n, err := res.RowsAffected()
			if err != nil {
				return err
			}
			if n == 1 {
				issued = true
				_, err := tx.NewDelete().Model((*EmailCodeAttempts)(nil)).Where("email = ?", code.Email).Exec(ctx)
				return err
			}
			live = new(EmailCode)
			return tx.NewSelect().Model(live).Where("email = ?", code.Email).Scan(ctx)
		})
		switch {
		case err == nil && issued:
			return code, true, nil
		case err == nil:
			return live, false, nil
		case !errors.Is(err, store.ErrNotFound):
			return nil, false, err
		}
	}
	return nil, false, err
}

func (s *queries) RecordSend(ctx context.Context, send *EmailSend, pruneBefore time.Time) error {
	return s.st.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewInsert().Model(send).Exec(ctx); err != nil {
			return err
		}
		if _, err := tx.NewDelete().Model((*EmailCodeSource)(nil)).Where("window_start < ?", pruneBefore).Exec(ctx); err != nil {
			return err
		}
		_, err := tx.NewDelete().Model((*EmailSend)(nil)).Where("sent_at < ?", pruneBefore).Exec(ctx)
		return err
	})
}

func (s *queries) CodeByEmail(ctx context.Context, email string) (*EmailCode, error) {
	code := new(EmailCode)
	if err := s.db.NewSelect().Model(code).Where("email = ?", email).Scan(ctx); err != nil {
		return nil, dberr.Normalize(err)
	}
	return code, nil
}

// EmailCodeAttempts counts one source address's guesses at one e-mail's current code.
type EmailCodeAttempts struct {
	bun.BaseModel `bun:"table:email_code_attempts"`

	Email      string `bun:"email,pk"`
	ClientAddr string `bun:"client_addr,pk"` // the source address the guesses are counted for
	CodeHash   string `bun:"code_hash,notnull"`
	Attempts   int    `bun:"attempts,notnull"`
}

// EmailCodeSource counts one source address's guesses at any e-mail's code in a fixed window.
type EmailCodeSource struct {
	bun.BaseModel `bun:"table:email_code_sources,alias:email_code_sources"`

	Source      string    `bun:"source,pk"`
	WindowStart time.Time `bun:"window_start,notnull"`
	Guesses     int       `bun:"guesses,notnull"`
}

// Refusals of TakeGuess. Nothing is counted for a refused guess.
var (
	ErrPairGuesses   = errors.New("this source used all its guesses at this code")
	ErrSourceGuesses = errors.New("this source used all its guesses in this window")
	ErrCodeGuesses   = errors.New("this code took all the guesses it takes from sources it was not sent for")
)

// CodeGuess is the code a guess is at: its hash ("" when the e-mail has no live code: the
// guess counts for its source only), the guesses it takes from all sources together
// (Ceiling; 0: no ceiling), and whether the guessing source is one the code was sent for
// (Requester), whose guesses the ceiling does not stop: no stranger can close the code to the
// owner who asked for it.
type CodeGuess struct {
	Hash      string
	Ceiling   int
	Requester bool
}

// GuessBudget is what one source may guess: an address, or a network holding many (an IPv6
// /64 or /48). A guess is counted under every budget of its client at once.
type GuessBudget struct {
	Source    string // the key guesses are counted under, e.g. "203.0.113.7" or "2001:db8:1::/48"
	PerCode   int    // guesses at one e-mail's code
	PerWindow int    // guesses at any codes in one window
}

// Guesses are the counts after a guess TakeGuess allowed. Pair and Source are the first
// budget's counts; AtCode is the code's count from all sources; LeftAtCode is the fewest
// guesses any budget has left at this code, the ceiling's included when it applies to the
// guesser (LeftAtCeiling says that one is the fewest). After a refusal, Refused is the index of
// the budget that refused it (-1 for the ceiling, ErrCodeGuesses) and, after ErrSourceGuesses,
// SourceWindow is when that budget's full window started.
type Guesses struct {
	Pair, Source  int
	AtCode        int
	LeftAtCode    int
	LeftAtCeiling bool
	Refused       int
	SourceWindow  time.Time
}

func (s *queries) TakeGuess(ctx context.Context, email string, code CodeGuess, budgets []GuessBudget, window time.Duration, now time.Time) (Guesses, error) {
	var g Guesses
	err := s.st.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		g = Guesses{LeftAtCode: -1}
		for i, b := range budgets {
			g.Refused = i
			c, err := takeGuess(ctx, tx, email, code.Hash, b, window, now)
			if err != nil {
				g.SourceWindow = c.windowStart
				return err
			}
			if i == 0 {
				g.Pair, g.Source = c.pair, c.source
			}
			if code.Hash != "" && (g.LeftAtCode < 0 || b.PerCode-c.pair < g.LeftAtCode) {
				g.LeftAtCode = b.PerCode - c.pair
			}
		}
		g.Refused = -1
		if code.Hash == "" {
			return nil
		}
		n, err := countAtCode(ctx, tx, email, code)
		if err != nil {
			return err
		}
		g.AtCode = n
		if left := code.Ceiling - n; code.Ceiling > 0 && !code.Requester && left < g.LeftAtCode {
			g.LeftAtCode, g.LeftAtCeiling = left, true
		}
		return nil
	})
	return g, err
}

// countAtCode counts a guess at the e-mail's code from all sources, in tx: refused with
// ErrCodeGuesses once it has code.Ceiling unless the guesser is one it was sent for. A code
// gone meanwhile (used by a concurrent verify) counts nothing: the comparison finds it used.
func countAtCode(ctx context.Context, tx bun.Tx, email string, code CodeGuess) (int, error) {
	var counts []int
	q := tx.NewUpdate().Model((*EmailCode)(nil)).Set("attempts = attempts + 1").
		Where("email = ?", email).Where("code_hash = ?", code.Hash)
	if code.Ceiling > 0 && !code.Requester {
		q = q.Where("attempts < ?", code.Ceiling)
	}
	if _, err := q.Returning("attempts").Exec(ctx, &counts); err != nil {
		return 0, err
	}
	if len(counts) == 1 {
		return counts[0], nil
	}
	live, err := tx.NewSelect().Model((*EmailCode)(nil)).Where("email = ?", email).Where("code_hash = ?", code.Hash).Exists(ctx)
	switch {
	case err != nil:
		return 0, err
	case live:
		return code.Ceiling, ErrCodeGuesses
	}
	return 0, nil
}

type guessCounts struct {
	pair, source int
	windowStart  time.Time // after ErrSourceGuesses
}

// takeGuess counts one guess under one budget, in tx.
func takeGuess(ctx context.Context, tx bun.Tx, email, codeHash string, b GuessBudget, window time.Duration, now time.Time) (guessCounts, error) {
	var c guessCounts
	cutoff := now.Add(-window)
	var counts []int
	if _, err := tx.NewInsert().Model(&EmailCodeSource{Source: b.Source, WindowStart: now, Guesses: 1}).
		On("CONFLICT (source) DO UPDATE").
		Set("guesses = CASE WHEN email_code_sources.window_start <= ? THEN 1 ELSE email_code_sources.guesses + 1 END", cutoff).
		Set("window_start = CASE WHEN email_code_sources.window_start <= ? THEN EXCLUDED.window_start ELSE email_code_sources.window_start END", cutoff).
		Where("email_code_sources.window_start <= ? OR email_code_sources.guesses < ?", cutoff, b.PerWindow).
		Returning("guesses").Exec(ctx, &counts); err != nil {
		return c, err
	}
	if len(counts) == 0 {
		var src EmailCodeSource
		if err := tx.NewSelect().Model(&src).Where("source = ?", b.Source).Scan(ctx); err != nil {
			return c, err
		}
		c.windowStart = src.WindowStart
		return c, ErrSourceGuesses
	}
	c.source = counts[0]
	if codeHash == "" {
		return c, nil
	}
	counts = counts[:0]
	if _, err := tx.NewInsert().Model(&EmailCodeAttempts{Email: email, ClientAddr: b.Source, CodeHash: codeHash, Attempts: 1}).
		On("CONFLICT (email, client_addr) DO UPDATE").
		Set("attempts = CASE WHEN email_code_attempts.code_hash = EXCLUDED.code_hash THEN email_code_attempts.attempts + 1 ELSE 1 END").
		Set("code_hash = EXCLUDED.code_hash").
		Where("email_code_attempts.code_hash <> EXCLUDED.code_hash OR email_code_attempts.attempts < ?", b.PerCode).
		Returning("attempts").Exec(ctx, &counts); err != nil {
		return c, err
	}
	if len(counts) == 0 {
		return c, ErrPairGuesses
	}
	c.pair = counts[0]
	return c, nil
}

func (s *queries) ReturnGuess(ctx context.Context, sources ...string) error {
	_, err := s.db.NewUpdate().Model((*EmailCodeSource)(nil)).Set("guesses = guesses - 1").
		Where("source IN (?) AND guesses > 0", bun.List(sources)).Exec(ctx)
	return dberr.Normalize(err)
}

// SendStats are the code e-mails sent since a moment, for signup's limits.
type SendStats struct {
	ToEmail, FromClient, Pair int       // to the address, from the client, both
	LastToEmail               time.Time // the newest to the address (zero when none)
	OldestFromClient          time.Time // the oldest from the client in the window
	OldestPair                time.Time // the oldest to the address from the client
}

func (s *queries) Sends(ctx context.Context, emailHash, clientAddr string, since time.Time) (SendStats, error) {
	var rows []EmailSend
	err := s.db.NewSelect().Model(&rows).
		Where("(email_hash = ? OR client_addr = ?) AND sent_at > ?", emailHash, clientAddr, since).
		OrderExpr("sent_at ASC").Scan(ctx)
	var st SendStats
	for _, r := range rows {
		if r.EmailHash == emailHash {
			st.ToEmail++
			st.LastToEmail = r.SentAt
		}
		if r.ClientAddr == clientAddr {
			if st.FromClient == 0 {
				st.OldestFromClient = r.SentAt
			}
			st.FromClient++
		}
		if r.EmailHash == emailHash && r.ClientAddr == clientAddr {
			if st.Pair == 0 {
				st.OldestPair = r.SentAt
			}
			st.Pair++
		}
	}
	return st, dberr.Normalize(err)
}

func (s *queries) DeleteCode(ctx context.Context, email, codeHash string) (bool, error) {
	res, err := s.db.NewDelete().Model((*EmailCode)(nil)).
		Where("email = ? AND code_hash = ?", email, codeHash).Exec(ctx)
	if err != nil {
		return false, dberr.Normalize(err)
	}
	n, err := res.RowsAffected()
	return n == 1, dberr.Normalize(err)
}

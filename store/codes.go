package store

import (
	"context"
	"errors"
	"time"

	"github.com/uptrace/bun"
)

// EmailCode is the live one-time code for an e-mail address; a new signup replaces it.
type EmailCode struct {
	bun.BaseModel `bun:"table:email_codes"`

	Email     string    `bun:"email,pk"`
	CodeHash  string    `bun:"code_hash,notnull"`
	Attempts  int       `bun:"attempts,notnull"`
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

// PutCode replaces the e-mail's live code and records the send, in one transaction, and
// prunes send records older than pruneBefore.
func (s *Store) PutCode(ctx context.Context, code *EmailCode, send *EmailSend, pruneBefore time.Time) error {
	return s.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewInsert().Model(code).
			On("CONFLICT (email) DO UPDATE").
			Set("code_hash = EXCLUDED.code_hash").
			Set("attempts = 0").
			Set("expires_at = EXCLUDED.expires_at").
			Set("created_at = EXCLUDED.created_at").
			Exec(ctx); err != nil {
			return err
		}
		if _, err := tx.NewInsert().Model(send).Exec(ctx); err != nil {
			return err
		}
		if _, err := tx.NewDelete().Model((*EmailCodeAttempts)(nil)).Where("email = ?", code.Email).Exec(ctx); err != nil {
			return err
		}
		_, err := tx.NewDelete().Model((*EmailSend)(nil)).Where("sent_at < ?", pruneBefore).Exec(ctx)
		return err
	})
}

// CodeByEmail returns the e-mail's live code, or ErrNotFound.
func (s *Store) CodeByEmail(ctx context.Context, email string) (*EmailCode, error) {
	code := new(EmailCode)
	if err := s.db.NewSelect().Model(code).Where("email = ?", email).Scan(ctx); err != nil {
		return nil, normalize(err)
	}
	return code, nil
}

// EmailCodeAttempts counts one client's guesses at one e-mail's current code.
type EmailCodeAttempts struct {
	bun.BaseModel `bun:"table:email_code_attempts"`

	Email      string `bun:"email,pk"`
	ClientAddr string `bun:"client_addr,pk"`
	CodeHash   string `bun:"code_hash,notnull"`
	Attempts   int    `bun:"attempts,notnull"`
}

// Refusals of TakeAttempt.
var (
	ErrCodeNotLive    = errors.New("no live code (used, voided, replaced or expired)")
	ErrClientAttempts = errors.New("this client used all its attempts at this code")
)

// TakeAttempt counts one guess at the e-mail's code codeHash before it is compared, for the
// client and in total, each with a conditional increment in one transaction, so parallel
// guesses can never pass the caps: ErrClientAttempts when the client already made perClient
// guesses at this code, ErrCodeNotLive when the code is gone or reached total (nothing is
// counted then). It returns the counts after this guess.
func (s *Store) TakeAttempt(ctx context.Context, email, codeHash, clientAddr string, perClient, total int) (byClient, overall int, err error) {
	err = s.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var mine []int
		if _, err := tx.NewInsert().Model(&EmailCodeAttempts{Email: email, ClientAddr: clientAddr, CodeHash: codeHash, Attempts: 1}).
			On("CONFLICT (email, client_addr) DO UPDATE").
			Set("attempts = CASE WHEN email_code_attempts.code_hash = EXCLUDED.code_hash THEN email_code_attempts.attempts + 1 ELSE 1 END").
			Set("code_hash = EXCLUDED.code_hash").
			Where("email_code_attempts.code_hash <> EXCLUDED.code_hash OR email_code_attempts.attempts < ?", perClient).
			Returning("attempts").Exec(ctx, &mine); err != nil {
			return err
		}
		if len(mine) == 0 {
			return ErrClientAttempts
		}
		var all []int
		if _, err := tx.NewUpdate().Model((*EmailCode)(nil)).Set("attempts = attempts + 1").
			Where("email = ? AND code_hash = ? AND attempts < ?", email, codeHash, total).
			Returning("attempts").Exec(ctx, &all); err != nil {
			return err
		}
		if len(all) == 0 {
			return ErrCodeNotLive
		}
		byClient, overall = mine[0], all[0]
		return nil
	})
	return byClient, overall, err
}

// SendStats are the code e-mails sent since a moment, for signup's limits.
type SendStats struct {
	ToEmail, FromClient, Pair int       // to the address, from the client, both
	LastToEmail               time.Time // the newest to the address (zero when none)
	OldestFromClient          time.Time // the oldest from the client in the window
	OldestPair                time.Time // the oldest to the address from the client
}

// Sends counts code e-mails sent since `since` to emailHash, from clientAddr and both.
func (s *Store) Sends(ctx context.Context, emailHash, clientAddr string, since time.Time) (SendStats, error) {
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
	return st, normalize(err)
}

// DeleteCode removes the e-mail's code if it still has codeHash. It reports whether a row was
// deleted, so of two concurrent verifications with the same code only one wins.
func (s *Store) DeleteCode(ctx context.Context, email, codeHash string) (bool, error) {
	res, err := s.db.NewDelete().Model((*EmailCode)(nil)).
		Where("email = ? AND code_hash = ?", email, codeHash).Exec(ctx)
	if err != nil {
		return false, normalize(err)
	}
	n, err := res.RowsAffected()
	return n == 1, normalize(err)
}

package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// Ledger books. Amounts are signed micro-USD: positive grows the book. Every ledger
// transaction's rows sum to zero.
const (
	BookGrants        = "external:grants"
	BookPlatformFees  = "platform:fees"
	BookPlatformInfra = "platform:infra"
)

// UserAvailable and UserReserved name an account's two credit books.
func UserAvailable(accountID string) string { return "user:" + accountID + ":available" }
func UserReserved(accountID string) string  { return "user:" + accountID + ":reserved" }

// PartnerPayable names what is owed to a partner at one payout address.
func PartnerPayable(partnerID, payout string) string { return "partner:" + partnerID + ":" + payout }

// CreditAccount is an account's running balance. Held is not money: it is the worst case of
// the account's invocations in flight, so concurrent calls cannot together overspend.
type CreditAccount struct {
	bun.BaseModel `bun:"table:credit_accounts"`

	AccountID      string    `bun:"account_id,pk"`
	AvailableMicro int64     `bun:"available_micro,notnull"`
	ReservedMicro  int64     `bun:"reserved_micro,notnull"`
	HeldMicro      int64     `bun:"held_micro,notnull"`
	UpdatedAt      time.Time `bun:"updated_at,notnull"`
}

// KeySpend is what a key has spent in total, and the worst case it has in flight.
type KeySpend struct {
	bun.BaseModel `bun:"table:key_spend"`

	KeyID      string `bun:"key_id,pk"`
	SpentMicro int64  `bun:"spent_micro,notnull"`
	HeldMicro  int64  `bun:"held_micro,notnull"`
}

// Reservation states.
const (
	ReservationOpen     = "open"
	ReservationSettled  = "settled"
	ReservationRefunded = "refunded"
)

// Reservation is the start-of-turn reservation of one invocation.
type Reservation struct {
	bun.BaseModel `bun:"table:reservations"`

	RequestID     string     `bun:"request_id,pk"`
	AccountID     string     `bun:"account_id,notnull"`
	KeyID         string     `bun:"key_id,notnull"`
	ReservedMicro int64      `bun:"reserved_micro,notnull"`
	WorstMicro    int64      `bun:"worst_micro,notnull"`
	State         string     `bun:"state,notnull"`
	ExpiresAt     time.Time  `bun:"expires_at,notnull"`
	CreatedAt     time.Time  `bun:"created_at,notnull"`
	ClosedAt      *time.Time `bun:"closed_at"`
}

// LedgerEntry is one row of a balanced ledger transaction.
type LedgerEntry struct {
	bun.BaseModel `bun:"table:ledger_entries"`

	ID          string    `bun:"id,pk"`
	TxnID       string    `bun:"txn_id,notnull"`
	RequestID   *string   `bun:"request_id"`
	Book        string    `bun:"book,notnull"`
	AmountMicro int64     `bun:"amount_micro,notnull"`
	Kind        string    `bun:"kind,notnull"`
	Memo        string    `bun:"memo,notnull"`
	CreatedAt   time.Time `bun:"created_at,notnull"`
}

// Refusals of Reserve.
var (
	ErrInsufficientCredits = errors.New("insufficient credits")
	ErrSpendLimit          = errors.New("spend limit reached")
)

// Posting is one leg of a ledger transaction.
type Posting struct {
	Book  string
	Micro int64
}

// post writes a balanced ledger transaction.
func post(ctx context.Context, tx bun.Tx, requestID, kind, memo string, now time.Time, legs ...Posting) error {
	var sum int64
	for _, l := range legs {
		sum += l.Micro
	}
	if sum != 0 {
		return fmt.Errorf("unbalanced %s transaction: legs sum to %d", kind, sum)
	}
	txn := uuid.NewString()
	var rid *string
	if requestID != "" {
		rid = &requestID
	}
	rows := make([]LedgerEntry, 0, len(legs))
	for _, l := range legs {
		if l.Micro == 0 {
			continue
		}
		rows = append(rows, LedgerEntry{ID: uuid.NewString(), TxnID: txn, RequestID: rid, Book: l.Book,
			AmountMicro: l.Micro, Kind: kind, Memo: memo, CreatedAt: now})
	}
	if len(rows) == 0 {
		return nil
	}
	_, err := tx.NewInsert().Model(&rows).Exec(ctx)
	return err
}

// lockCredit reads (creating when absent) and locks an account's balance row.
func (s *Store) lockCredit(ctx context.Context, tx bun.Tx, accountID string, now time.Time) (*CreditAccount, error) {
	if _, err := tx.NewInsert().Model(&CreditAccount{AccountID: accountID, UpdatedAt: now}).
		On("CONFLICT (account_id) DO NOTHING").Exec(ctx); err != nil {
		return nil, err
	}
	ca := new(CreditAccount)
	q := tx.NewSelect().Model(ca).Where("account_id = ?", accountID)
	if s.postgres {
		q = q.For("UPDATE")
	}
	return ca, q.Scan(ctx)
}

func (s *Store) lockKeySpend(ctx context.Context, tx bun.Tx, keyID string) (*KeySpend, error) {
	if _, err := tx.NewInsert().Model(&KeySpend{KeyID: keyID}).On("CONFLICT (key_id) DO NOTHING").Exec(ctx); err != nil {
		return nil, err
	}
	ks := new(KeySpend)
	q := tx.NewSelect().Model(ks).Where("key_id = ?", keyID)
	if s.postgres {
		q = q.For("UPDATE")
	}
	return ks, q.Scan(ctx)
}

// ErrBalanceCap refuses a grant that would lift an account's balance over its cap.
var ErrBalanceCap = errors.New("the balance would exceed its cap")

// Grant adds credit to an account, refusing (ErrBalanceCap, nothing written) when available
// plus reserved credit would pass maxBalance.
func (s *Store) Grant(ctx context.Context, accountID string, micro, maxBalance int64, memo string, now time.Time) error {
	if micro <= 0 || micro > maxBalance {
		return fmt.Errorf("grant must be positive and at most %d, got %d", maxBalance, micro)
	}
	return s.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		return s.grantTx(ctx, tx, accountID, micro, maxBalance, memo, now)
	})
}

func (s *Store) grantTx(ctx context.Context, tx bun.Tx, accountID string, micro, maxBalance int64, memo string, now time.Time) error {
	ca, err := s.lockCredit(ctx, tx, accountID, now)
	if err != nil {
		return err
	}
	// Checked under the balance lock, in integers that cannot overflow (both terms are
	// bounded by maxBalance), before anything is written.
	if ca.AvailableMicro+ca.ReservedMicro > maxBalance-micro {
		return fmt.Errorf("%w: %d + %d > %d", ErrBalanceCap, ca.AvailableMicro+ca.ReservedMicro, micro, maxBalance)
	}
	if _, err := tx.NewUpdate().Model((*CreditAccount)(nil)).
		Set("available_micro = available_micro + ?", micro).Set("updated_at = ?", now).
		Where("account_id = ?", accountID).Exec(ctx); err != nil {
		return err
	}
	return post(ctx, tx, "", "grant", memo, now, Posting{BookGrants, -micro}, Posting{UserAvailable(accountID), micro})
}

// Credit returns an account's balance (zero when it never had credit).
func (s *Store) Credit(ctx context.Context, accountID string) (*CreditAccount, error) {
	ca := new(CreditAccount)
	err := s.db.NewSelect().Model(ca).Where("account_id = ?", accountID).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return &CreditAccount{AccountID: accountID}, nil
	}
	return ca, normalize(err)
}

// Spent returns what a key has spent in total.
func (s *Store) Spent(ctx context.Context, keyID string) (int64, error) {
	ks := new(KeySpend)
	err := s.db.NewSelect().Model(ks).Where("key_id = ?", keyID).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return ks.SpentMicro, normalize(err)
}

// Reserve starts an invocation's billing: it refuses (ErrInsufficientCredits, ErrSpendLimit)
// when the worst case would not fit in the account's credit or the key's spend limit, counting
// what other invocations in flight may still take; otherwise it moves r.ReservedMicro from
// available to reserved and holds the worst case. Nothing is written on refusal.
func (s *Store) Reserve(ctx context.Context, r *Reservation, keySpendLimit int64) error {
	return s.Tx(ctx, func(ctx context.Context, tx bun.Tx) error { return s.reserveTx(ctx, tx, r, keySpendLimit) })
}

func (s *Store) reserveTx(ctx context.Context, tx bun.Tx, r *Reservation, keySpendLimit int64) error {
	ca, err := s.lockCredit(ctx, tx, r.AccountID, r.CreatedAt)
	if err != nil {
		return err
	}
	ks, err := s.lockKeySpend(ctx, tx, r.KeyID)
	if err != nil {
		return err
	}
	if ca.AvailableMicro-ca.HeldMicro < r.WorstMicro {
		return fmt.Errorf("%w: available %d, held by calls in flight %d, this call may cost %d",
			ErrInsufficientCredits, ca.AvailableMicro, ca.HeldMicro, r.WorstMicro)
	}
	if ks.SpentMicro+ks.HeldMicro+r.WorstMicro > keySpendLimit {
		return fmt.Errorf("%w: spent %d, held %d, this call may cost %d, limit %d",
			ErrSpendLimit, ks.SpentMicro, ks.HeldMicro, r.WorstMicro, keySpendLimit)
	}
	r.State = ReservationOpen
	if _, err := tx.NewInsert().Model(r).Exec(ctx); err != nil {
		return err
	}
	if _, err := tx.NewUpdate().Model((*CreditAccount)(nil)).
		Set("available_micro = available_micro - ?", r.ReservedMicro).
		Set("reserved_micro = reserved_micro + ?", r.ReservedMicro).
		Set("held_micro = held_micro + ?", r.WorstMicro-r.ReservedMicro).
		Set("updated_at = ?", r.CreatedAt).
		Where("account_id = ?", r.AccountID).Exec(ctx); err != nil {
		return err
	}
	if _, err := tx.NewUpdate().Model((*KeySpend)(nil)).Set("held_micro = held_micro + ?", r.WorstMicro).
		Where("key_id = ?", r.KeyID).Exec(ctx); err != nil {
		return err
	}
	return post(ctx, tx, r.RequestID, "reserve", "", r.CreatedAt,
		Posting{UserAvailable(r.AccountID), -r.ReservedMicro}, Posting{UserReserved(r.AccountID), r.ReservedMicro})
}

// Settlement is how an invocation that succeeded is charged.
type Settlement struct {
	PartnerFeeMicro  int64
	PlatformFeeMicro int64
	PartnerBook      string // PartnerPayable(partnerID, payout); "" when no partner fee
}

// lockOpenReservation loads the reservation for update; ok is false when it is already closed.
func (s *Store) lockOpenReservation(ctx context.Context, tx bun.Tx, requestID string) (*Reservation, bool, error) {
	r := new(Reservation)
	q := tx.NewSelect().Model(r).Where("request_id = ?", requestID)
	if s.postgres {
		q = q.For("UPDATE")
	}
	if err := q.Scan(ctx); err != nil {
		return nil, false, err
	}
	return r, r.State == ReservationOpen, nil
}

// release closes a reservation: drops its hold and its reserved amount from the balances.
func (s *Store) release(ctx context.Context, tx bun.Tx, r *Reservation, state string, now time.Time) error {
	if _, err := tx.NewUpdate().Model((*Reservation)(nil)).Set("state = ?", state).Set("closed_at = ?", now).
		Where("request_id = ?", r.RequestID).Exec(ctx); err != nil {
		return err
	}
	if _, err := s.lockCredit(ctx, tx, r.AccountID, now); err != nil {
		return err
	}
	if _, err := s.lockKeySpend(ctx, tx, r.KeyID); err != nil {
		return err
	}
	_, err := tx.NewUpdate().Model((*KeySpend)(nil)).Set("held_micro = held_micro - ?", r.WorstMicro).
		Where("key_id = ?", r.KeyID).Exec(ctx)
	return err
}

// Settle charges a successful invocation: the reservation is consumed as the infrastructure
// cost, and the partner and platform fees are charged from available credit. It reports false
// when the reservation was already closed (settled or refunded), changing nothing.
func (s *Store) Settle(ctx context.Context, requestID string, st Settlement, now time.Time) (bool, error) {
	var done bool
	err := s.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var err error
		done, err = s.settleTx(ctx, tx, requestID, st, now)
		return err
	})
	return done, err
}

func (s *Store) settleTx(ctx context.Context, tx bun.Tx, requestID string, st Settlement, now time.Time) (done bool, _ error) {
	err := func() error {
		r, open, err := s.lockOpenReservation(ctx, tx, requestID)
		if err != nil || !open {
			return err
		}
		if err := s.release(ctx, tx, r, ReservationSettled, now); err != nil {
			return err
		}
		fees := st.PartnerFeeMicro + st.PlatformFeeMicro
		if fees > r.WorstMicro-r.ReservedMicro {
			return fmt.Errorf("fees %d exceed the worst case %d held for %s", fees, r.WorstMicro-r.ReservedMicro, requestID)
		}
		if _, err := tx.NewUpdate().Model((*CreditAccount)(nil)).
			Set("reserved_micro = reserved_micro - ?", r.ReservedMicro).
			Set("available_micro = available_micro - ?", fees).
			Set("held_micro = held_micro - ?", r.WorstMicro-r.ReservedMicro).
			Set("updated_at = ?", now).
			Where("account_id = ?", r.AccountID).Exec(ctx); err != nil {
			return err
		}
		if _, err := tx.NewUpdate().Model((*KeySpend)(nil)).Set("spent_micro = spent_micro + ?", r.ReservedMicro+fees).
			Where("key_id = ?", r.KeyID).Exec(ctx); err != nil {
			return err
		}
		if err := post(ctx, tx, requestID, "consume", "infrastructure", now,
			Posting{UserReserved(r.AccountID), -r.ReservedMicro}, Posting{BookPlatformInfra, r.ReservedMicro}); err != nil {
			return err
		}
		if st.PartnerFeeMicro > 0 {
			if st.PartnerBook == "" {
				return fmt.Errorf("partner fee without a payout book for %s", requestID)
			}
			if err := post(ctx, tx, requestID, "partner_fee", "", now,
				Posting{UserAvailable(r.AccountID), -st.PartnerFeeMicro}, Posting{st.PartnerBook, st.PartnerFeeMicro}); err != nil {
				return err
			}
		}
		if err := post(ctx, tx, requestID, "platform_fee", "", now,
			Posting{UserAvailable(r.AccountID), -st.PlatformFeeMicro}, Posting{BookPlatformFees, st.PlatformFeeMicro}); err != nil {
			return err
		}
		done = true
		return nil
	}()
	return done, err
}

// Refund returns an invocation's reservation to available credit. It reports false when the
// reservation was already closed.
func (s *Store) Refund(ctx context.Context, requestID, reason string, now time.Time) (bool, error) {
	var done bool
	err := s.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var err error
		done, err = s.refundTx(ctx, tx, requestID, reason, now)
		return err
	})
	return done, err
}

func (s *Store) refundTx(ctx context.Context, tx bun.Tx, requestID, reason string, now time.Time) (done bool, _ error) {
	err := func() error {
		r, open, err := s.lockOpenReservation(ctx, tx, requestID)
		if err != nil || !open {
			return err
		}
		if err := s.release(ctx, tx, r, ReservationRefunded, now); err != nil {
			return err
		}
		if _, err := tx.NewUpdate().Model((*CreditAccount)(nil)).
			Set("reserved_micro = reserved_micro - ?", r.ReservedMicro).
			Set("available_micro = available_micro + ?", r.ReservedMicro).
			Set("held_micro = held_micro - ?", r.WorstMicro-r.ReservedMicro).
			Set("updated_at = ?", now).
			Where("account_id = ?", r.AccountID).Exec(ctx); err != nil {
			return err
		}
		done = true
		return post(ctx, tx, requestID, "refund", reason, now,
			Posting{UserReserved(r.AccountID), -r.ReservedMicro}, Posting{UserAvailable(r.AccountID), r.ReservedMicro})
	}()
	return done, err
}

// ExpiredReservations lists open reservations whose deadline passed, except those of an
// invocation still dispatching: those are finished with their invocation (StuckInvocations),
// so the record and the money end together.
func (s *Store) ExpiredReservations(ctx context.Context, now time.Time, limit int) ([]string, error) {
	var ids []string
	err := s.db.NewSelect().Model((*Reservation)(nil)).Column("request_id").
		Where("state = ? AND expires_at < ?", ReservationOpen, now).
		Where("NOT EXISTS (SELECT 1 FROM invocations i WHERE i.request_id = reservation.request_id AND i.state = ?)", InvDispatching).
		OrderExpr("expires_at ASC").Limit(int64(limit)).
		Scan(ctx, &ids)
	return ids, normalize(err)
}

// LedgerEntries returns the ledger rows of one invocation.
func (s *Store) LedgerEntries(ctx context.Context, requestID string) ([]LedgerEntry, error) {
	var rows []LedgerEntry
	err := s.db.NewSelect().Model(&rows).Where("request_id = ?", requestID).OrderExpr("created_at, id").Scan(ctx)
	return rows, normalize(err)
}

// LedgerCheck verifies the ledger's invariants: every transaction sums to zero, and every
// account's available and reserved balances equal the sums of its books. It returns the
// first violation found.
func (s *Store) LedgerCheck(ctx context.Context) error {
	var bad []struct {
		TxnID string `bun:"txn_id"`
		Sum   int64  `bun:"s"`
	}
	if err := s.db.NewSelect().Model((*LedgerEntry)(nil)).ColumnExpr("txn_id, SUM(amount_micro) AS s").
		Group("txn_id").Having("SUM(amount_micro) <> 0").Limit(5).Scan(ctx, &bad); err != nil {
		return normalize(err)
	}
	if len(bad) > 0 {
		return fmt.Errorf("ledger transaction %s sums to %d, not 0", bad[0].TxnID, bad[0].Sum)
	}
	var total int64
	if err := s.db.NewSelect().Model((*LedgerEntry)(nil)).ColumnExpr("COALESCE(SUM(amount_micro), 0)").Scan(ctx, &total); err != nil {
		return normalize(err)
	}
	if total != 0 {
		return fmt.Errorf("the ledger sums to %d, not 0", total)
	}
	var accounts []CreditAccount
	if err := s.db.NewSelect().Model(&accounts).Scan(ctx); err != nil {
		return normalize(err)
	}
	for _, ca := range accounts {
		for book, want := range map[string]int64{UserAvailable(ca.AccountID): ca.AvailableMicro, UserReserved(ca.AccountID): ca.ReservedMicro} {
			var got int64
			if err := s.db.NewSelect().Model((*LedgerEntry)(nil)).ColumnExpr("COALESCE(SUM(amount_micro), 0)").
				Where("book = ?", book).Scan(ctx, &got); err != nil {
				return normalize(err)
			}
			if got != want {
				return fmt.Errorf("book %s sums to %d but the balance says %d", book, got, want)
			}
		}
		if ca.HeldMicro < 0 || ca.ReservedMicro < 0 {
			return fmt.Errorf("account %s has negative held %d or reserved %d", ca.AccountID, ca.HeldMicro, ca.ReservedMicro)
		}
	}
	var open int64
	if err := s.db.NewSelect().Model((*Reservation)(nil)).ColumnExpr("COALESCE(SUM(reserved_micro), 0)").
		Where("state = ?", ReservationOpen).Scan(ctx, &open); err != nil {
		return normalize(err)
	}
	var reserved int64
	if err := s.db.NewSelect().Model((*CreditAccount)(nil)).ColumnExpr("COALESCE(SUM(reserved_micro), 0)").Scan(ctx, &reserved); err != nil {
		return normalize(err)
	}
	if open != reserved {
		return fmt.Errorf("open reservations total %d but reserved balances total %d", open, reserved)
	}
	return nil
}

package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// The balances the ledger's books sum to, kept as rows so a call reads and locks one: an
// account's credit, a key's spend, a budget lease's reservation. The ledger itself (its rows,
// its postings, its check) is store/ledger's.

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
	KeyChain      string     `bun:"key_chain,notnull"` // the key's ancestors, nearest first, comma-separated
	ReservedMicro int64      `bun:"reserved_micro,notnull"`
	WorstMicro    int64      `bun:"worst_micro,notnull"`
	State         string     `bun:"state,notnull"`
	ExpiresAt     time.Time  `bun:"expires_at,notnull"`
	CreatedAt     time.Time  `bun:"created_at,notnull"`
	ClosedAt      *time.Time `bun:"closed_at"`
}

// LeasePrefix begins the request id of every budget lease's reservation ("lease:<uuid>").
const LeasePrefix = "lease:"

// LeaseTxn is the ledger transaction of the calls drawn on the lease leaseID, named by their
// rows from their records on and posted when the lease is settled: its id without LeasePrefix.
func LeaseTxn(leaseID string) string { return strings.TrimPrefix(leaseID, LeasePrefix) }

// SpendKeys are the keys whose spend rows r moves: its key, then the key's ancestors.
func (r *Reservation) SpendKeys() []string {
	if r.KeyChain == "" {
		return []string{r.KeyID}
	}
	return append([]string{r.KeyID}, strings.Split(r.KeyChain, ",")...)
}

// LockCredit reads (creating when absent) and locks an account's balance row.
func (q *Q) LockCredit(ctx context.Context, accountID string, now time.Time) (*CreditAccount, error) {
	tx, err := q.now(ctx)
	if err != nil {
		return nil, err
	}
	ca := &CreditAccount{AccountID: accountID, UpdatedAt: now}
	if q.store.postgres {
		// One round trip: the upsert locks the row, existing or new, and returns it.
		return ca, tx.NewInsert().Model(ca).On("CONFLICT (account_id) DO UPDATE").Set("account_id = EXCLUDED.account_id").
			Returning("*").Scan(ctx)
	}
	if _, err := tx.NewInsert().Model(ca).On("CONFLICT (account_id) DO NOTHING").Exec(ctx); err != nil {
		return nil, err
	}
	return ca, tx.NewSelect().Model(ca).Where("account_id = ?", accountID).Scan(ctx)
}

// LockKeySpend reads (creating when absent) and locks a key's spend row.
func (q *Q) LockKeySpend(ctx context.Context, keyID string) (*KeySpend, error) {
	ks, err := q.LockKeySpends(ctx, []string{keyID})
	if err != nil {
		return nil, err
	}
	return ks[0], nil
}

// LockKeySpends reads (creating when absent) and locks the spend rows of keys (a key and its
// ancestors), in one round trip, returned in the order of keys.
func (q *Q) LockKeySpends(ctx context.Context, keys []string) ([]*KeySpend, error) {
	tx, err := q.now(ctx)
	if err != nil {
		return nil, err
	}
	rows := make([]KeySpend, len(keys))
	for i, id := range keys {
		rows[i].KeyID = id
	}
	if q.store.postgres {
		err = tx.NewInsert().Model(&rows).On("CONFLICT (key_id) DO UPDATE").Set("key_id = EXCLUDED.key_id").
			Returning("*").Scan(ctx)
	} else if _, err = tx.NewInsert().Model(&rows).On("CONFLICT (key_id) DO NOTHING").Exec(ctx); err == nil {
		rows = rows[:0]
		err = tx.NewSelect().Model(&rows).Where("key_id IN (?)", bun.List(keys)).Scan(ctx)
	}
	if err != nil {
		return nil, err
	}
	by := make(map[string]*KeySpend, len(rows))
	for i := range rows {
		by[rows[i].KeyID] = &rows[i]
	}
	out := make([]*KeySpend, len(keys))
	for i, id := range keys {
		if out[i] = by[id]; out[i] == nil {
			return nil, fmt.Errorf("key spend row %s: %w", id, ErrNotFound)
		}
	}
	return out, nil
}

// CreditDelta changes an account's balance row; each field is added.
type CreditDelta struct{ Available, Reserved, Held int64 }

// AdjustCredit adds d to a locked balance row.
func (q *Q) AdjustCredit(ctx context.Context, accountID string, d CreditDelta, now time.Time) error {
	if q.rec != nil {
		q.rec.AdjustCredit(accountID, d, now)
		return nil
	}
	return q.write(ctx, q.creditStmt(accountID, d, now))
}

// creditStmt is AdjustCredit's statement (CreditUpdate).
func (q *Q) creditStmt(accountID string, d CreditDelta, now time.Time) statement {
	text, args := CreditUpdate(accountID, d, now)
	return q.tx.NewRaw(text, args...)
}

// CreditUpdate, KeySpendUpdate and ReservationDraw are the SQL, with its arguments, of the
// change of one balance row, one key spend row and one lease row: Q runs them, and a commit
// engine merging many jobs' writes (store/commit) sends them for a run of one row.
func CreditUpdate(accountID string, d CreditDelta, now time.Time) (string, []any) {
	return `UPDATE credit_accounts SET available_micro = available_micro + ?, reserved_micro = reserved_micro + ?,
		held_micro = held_micro + ?, updated_at = ? WHERE account_id = ?`, []any{d.Available, d.Reserved, d.Held, now, accountID}
}

// KeySpendUpdate is the SQL of the change of one key spend row (see CreditUpdate).
func KeySpendUpdate(keyID string, spent, held int64) (string, []any) {
	return `UPDATE key_spend SET spent_micro = spent_micro + ?, held_micro = held_micro + ? WHERE key_id = ?`,
		[]any{spent, held, keyID}
}

// ReservationDraw is the SQL of a draw from one lease (see CreditUpdate): it changes no
// row when the lease is closed or holds less.
func ReservationDraw(requestID string, worst int64) (string, []any) {
	return `UPDATE reservations SET worst_micro = worst_micro - ? WHERE request_id = ? AND state = ? AND worst_micro >= ?`,
		[]any{worst, requestID, ReservationOpen, worst}
}

// AdjustKeySpend adds to a locked key spend row.
func (q *Q) AdjustKeySpend(ctx context.Context, keyID string, spent, held int64) error {
	return q.AdjustKeySpends(ctx, []string{keyID}, spent, held)
}

// AdjustKeySpends adds the same amounts to each of keys' locked spend rows (a key and its
// ancestors).
func (q *Q) AdjustKeySpends(ctx context.Context, keys []string, spent, held int64) error {
	for _, id := range keys {
		if q.rec != nil {
			q.rec.AdjustKeySpend(id, spent, held)
			continue
		}
		if err := q.write(ctx, q.keySpendStmt(id, spent, held)); err != nil {
			return err
		}
	}
	return nil
}

// keySpendStmt is the statement of one key's change of AdjustKeySpends (KeySpendUpdate).
func (q *Q) keySpendStmt(keyID string, spent, held int64) statement {
	text, args := KeySpendUpdate(keyID, spent, held)
	return q.tx.NewRaw(text, args...)
}

// InsertReservation writes a new reservation in state open.
func (q *Q) InsertReservation(ctx context.Context, r *Reservation) error {
	r.State = ReservationOpen
	return q.write(ctx, q.insertStmt(r))
}

// DrawReservation moves worst micro-USD of holding out of an open reservation (a budget
// lease) for a call's own reservation; ok is false, changing nothing, when the reservation
// is closed or holds less.
//
// A recorded draw reports true: its recorder checks it when it writes it (a commit engine's
// merge: a miss undoes the merge and runs its jobs alone).
func (q *Q) DrawReservation(ctx context.Context, requestID string, worst int64) (ok bool, _ error) {
	if q.rec != nil {
		q.rec.DrawReservation(requestID, worst)
		return true, nil
	}
	text, args := ReservationDraw(requestID, worst)
	return q.affectsOne(ctx, q.tx.NewRaw(text, args...))
}

// OpenReservations reports which of ids are open reservations, as committed: a plain read
// that waits for no row lock.
func (q *Q) OpenReservations(ctx context.Context, ids []string) (map[string]bool, error) {
	tx, err := q.now(ctx)
	if err != nil {
		return nil, err
	}
	var open []string
	if err := tx.NewSelect().Model((*Reservation)(nil)).Column("request_id").
		Where("request_id IN (?) AND state = ?", bun.List(ids), ReservationOpen).Scan(ctx, &open); err != nil {
		return nil, normalize(err)
	}
	out := make(map[string]bool, len(open))
	for _, id := range open {
		out[id] = true
	}
	return out, nil
}

// LockReservation loads a reservation for update.
func (q *Q) LockReservation(ctx context.Context, requestID string) (*Reservation, error) {
	tx, err := q.now(ctx)
	if err != nil {
		return nil, err
	}
	r := new(Reservation)
	if err := q.forUpdate(tx.NewSelect().Model(r).Where("request_id = ?", requestID)).Scan(ctx); err != nil {
		return nil, normalize(err)
	}
	return r, nil
}

// CloseReservation moves a reservation to its final state.
func (q *Q) CloseReservation(ctx context.Context, requestID, state string, now time.Time) error {
	return q.write(ctx, q.closeStmt(requestID, state, now))
}

// closeStmt is CloseReservation's statement.
func (q *Q) closeStmt(requestID, state string, now time.Time) statement {
	return q.tx.NewUpdate().Model((*Reservation)(nil)).Set("state = ?", state).Set("closed_at = ?", now).
		Where("request_id = ?", requestID)
}

// Move is one move of a reservation's money, as its caller decided it (tools/billing): the
// balance row of AccountID moved by Credit, each of Keys' spend rows by Spent and Held
// (unless both are zero), and the ledger's rows (a pointer to store/ledger's; nil: none)
// inserted beside them.
type Move struct {
	AccountID   string
	Credit      CreditDelta
	Keys        []string
	Spent, Held int64
	Ledger      any
}

// Closing is how a reservation's hold ends: closed in State, its money moved by Move.
type Closing struct {
	State string
	Move
}

// OpenReservation writes the new reservation r, open, and its money's move m (at now) inside
// q's transaction, after the caller's locks and checks.
func (q *Q) OpenReservation(ctx context.Context, r *Reservation, m Move, now time.Time) error {
	if q.rec != nil {
		return notRecorded("a reservation")
	}
	r.State = ReservationOpen
	stmts := append([]statement{q.insertStmt(r)}, q.moveStmts(m, now)...)
	return q.writeAll(ctx, stmts...)
}

// OpenClosed writes the new reservation r with its move m (at r.CreatedAt), as
// OpenReservation does, and at once its closing h (at now), as CloseHold does, inside q's
// transaction: a hold opened and closed in one write (a call whose budget lease closed before
// it was recorded).
func (q *Q) OpenClosed(ctx context.Context, r *Reservation, m Move, h Closing, now time.Time) error {
	if q.rec != nil {
		return notRecorded("a reservation")
	}
	r.State = ReservationOpen
	stmts := append(append([]statement{q.insertStmt(r)}, q.moveStmts(m, r.CreatedAt)...), q.closingStmts(r.RequestID, h, now)...)
	return q.writeAll(ctx, stmts...)
}

// CloseHold writes closing h of the locked reservation requestID inside q's transaction.
func (q *Q) CloseHold(ctx context.Context, requestID string, h Closing, now time.Time) error {
	if q.rec != nil {
		return notRecorded("a hold's close")
	}
	stmts := q.closingStmts(requestID, h, now)
	return q.writeAll(ctx, stmts...)
}

// closingStmts are h's statements, in the order every writer takes the rows: the
// reservation, then its move's.
func (q *Q) closingStmts(requestID string, h Closing, now time.Time) []statement {
	return append([]statement{q.closeStmt(requestID, h.State, now)}, q.moveStmts(h.Move, now)...)
}

// moveStmts are m's statements: the balance row, the key rows, the ledger.
func (q *Q) moveStmts(m Move, now time.Time) []statement {
	stmts := []statement{q.creditStmt(m.AccountID, m.Credit, now)}
	if m.Spent != 0 || m.Held != 0 {
		for _, k := range m.Keys {
			stmts = append(stmts, q.keySpendStmt(k, m.Spent, m.Held))
		}
	}
	if m.Ledger != nil {
		stmts = append(stmts, q.insertStmt(m.Ledger))
	}
	return stmts
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

// KeySpends returns what each of keys has spent and holds (zero when it never spent), in
// the order of keys.
func (s *Store) KeySpends(ctx context.Context, keys []string) ([]*KeySpend, error) {
	var rows []KeySpend
	if err := s.db.NewSelect().Model(&rows).Where("key_id IN (?)", bun.List(keys)).Scan(ctx); err != nil {
		return nil, normalize(err)
	}
	out := make([]*KeySpend, len(keys))
	for i, id := range keys {
		out[i] = &KeySpend{KeyID: id}
		for j := range rows {
			if rows[j].KeyID == id {
				out[i] = &rows[j]
			}
		}
	}
	return out, nil
}

// KeySpendOf returns what a key has spent and holds (zero when it never spent).
func (s *Store) KeySpendOf(ctx context.Context, keyID string) (*KeySpend, error) {
	ks := new(KeySpend)
	err := s.db.NewSelect().Model(ks).Where("key_id = ?", keyID).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return &KeySpend{KeyID: keyID}, nil
	}
	return ks, normalize(err)
}

// ExpiredReservations lists open reservations whose deadline passed, except those of an
// invocation still dispatching: those are finished with their invocation
// (invocations.Invocations.Stuck), so the record and the money end together.
func (s *Store) ExpiredReservations(ctx context.Context, now time.Time, limit int) ([]string, error) {
	var ids []string
	err := s.db.NewSelect().Model((*Reservation)(nil)).Column("request_id").
		Where("state = ? AND expires_at < ?", ReservationOpen, now).
		Where("NOT EXISTS (SELECT 1 FROM invocations i WHERE i.request_id = reservation.request_id AND i.state = ?)", InvDispatching).
		OrderExpr("expires_at ASC").Limit(int64(limit)).
		Scan(ctx, &ids)
	return ids, normalize(err)
}

// RowID names a row of a table written on every call (ledger entries, invocation events): a
// time-ordered UUID (version 7), so rows written together sit together in the primary key's
// index and an insert lands on its last pages instead of a random one. A commit engine
// names the rows it writes for many calls with it too (store/commit).
func RowID() string { return uuid.Must(uuid.NewV7()).String() }

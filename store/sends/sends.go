// Package sends keeps a wallet's on-chain sends and the nonces they take: a send is recorded
// with its signed transaction before it is broadcast, so whoever retries it (the caller, the
// follower, another replica after a crash) re-sends those same bytes and never signs twice.
package sends

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/dberr"
)

// A send's statuses.
const (
	Prepared  = "prepared"  // recorded and signed; maybe not broadcast yet
	Submitted = "submitted" // a node took it
	Confirmed = "confirmed" // mined and succeeded
	Failed    = "failed"    // mined and reverted, or refused by the node
	Dropped   = "dropped"   // its nonce was used by another transaction: it can never land
)

// KindProposed is a send a partner proposed (issue 49 item 2): its transaction is the
// partner's, signed as proposed, never re-made.
const KindProposed = "proposed"

// ErrNotOpen is a conclusion of a send that is already concluded (or unknown).
var ErrNotOpen = errors.New("the send is not open")

// Send is one on-chain send of a wallet.
type Send struct {
	bun.BaseModel `bun:"table:chain_sends"`

	RequestID   string    `bun:"request_id,pk"`
	AccountID   string    `bun:"account_id,notnull"`
	Chain       string    `bun:"chain,notnull"`
	From        string    `bun:"from_address,notnull"`
	To          string    `bun:"to_address,notnull"`
	Token       string    `bun:"token,notnull"`  // a token's address or mint; "native" for the chain's coin
	Amount      string    `bun:"amount,notnull"` // token units, an integer
	Kind        string    `bun:"kind,notnull"`   // "" a wallet's own transfer; KindProposed
	Data        string    `bun:"data,notnull"`   // proposed: the EVM calldata (0x hex) or the Solana message (base64)
	Nonce       *int64    `bun:"nonce"`          // EVM; nil on Solana
	Raw         []byte    `bun:"raw_tx,notnull"`
	TxHash      string    `bun:"tx_hash,notnull"`
	ValidUntil  int64     `bun:"valid_until,notnull"` // Solana: the last block height it can land at
	Status      string    `bun:"status,notnull"`
	Reason      string    `bun:"reason,notnull"`
	Fee         string    `bun:"fee,notnull"` // what it paid, native units; "" until mined
	BlockNumber int64     `bun:"block_number,notnull"`
	CreatedAt   time.Time `bun:"created_at,notnull"`
	UpdatedAt   time.Time `bun:"updated_at,notnull"`
}

// Open reports a send still to be followed to its end.
func (s *Send) Open() bool { return s.Status == Prepared || s.Status == Submitted }

// nonce is the next nonce Switchboard gives (chain, address).
type nonce struct {
	bun.BaseModel `bun:"table:chain_nonces"`

	Chain     string    `bun:"chain,pk"`
	Address   string    `bun:"address,pk"`
	Next      int64     `bun:"next,notnull"`
	UpdatedAt time.Time `bun:"updated_at,notnull"`
}

// Sign makes the signed transaction of a send at nonce: its raw bytes and hash.
type Sign func(nonce uint64) (raw []byte, hash string, err error)

// Sends are the queries of a wallet's sends.
type Sends interface {
	// Prepare records s (its Raw and TxHash from sign) at the next nonce of (s.Chain, s.From),
	// at least chainNext (what the node counts, pending included), under a lock that holds
	// across replicas. When s.RequestID is recorded already, it answers that send and created
	// false, and sign is not called: a request is signed once.
	Prepare(ctx context.Context, s *Send, chainNext uint64, sign Sign) (got *Send, created bool, err error)
	// Record records s as it is (a send without nonces: Solana) unless its request id is
	// recorded already: then that send, created false.
	Record(ctx context.Context, s *Send) (got *Send, created bool, err error)
	// Unsigned records s as never signed (Failed with reason, no transaction), so that no
	// later call signs it, unless its request id is recorded already: then that send, created
	// false. One insert decides between it and a Prepare or Record of the same request.
	Unsigned(ctx context.Context, s *Send, reason string) (got *Send, created bool, err error)
	// Get is the send of requestID, or ErrNotFound.
	Get(ctx context.Context, requestID string) (*Send, error)
	// Submitted marks a prepared send submitted (a submitted one stays so).
	Submitted(ctx context.Context, requestID string, at time.Time) error
	// Conclude ends an open send with status (Confirmed, Failed or Dropped); ErrNotOpen when
	// it is not open.
	Conclude(ctx context.Context, requestID, status, reason, fee string, block int64, at time.Time) error
	// Refused ends a send the node refused outright as Failed, and gives its nonce back when
	// no later send has taken one (a refused transaction is in no pool, and a gap would hold
	// up every later send of the address).
	Refused(ctx context.Context, requestID, reason string, at time.Time) error
	// Resigned replaces an open send's transaction oldHash (Solana, once it provably can no
	// longer land) and marks it prepared again; ErrNotOpen when the send is no longer open on
	// oldHash (another replica re-signed it first: these bytes must not be sent).
	Resigned(ctx context.Context, requestID, oldHash string, raw []byte, hash string, validUntil int64, at time.Time) error
	// Due lists open sends last touched before `before`, oldest first, at most limit.
	Due(ctx context.Context, before time.Time, limit int) ([]*Send, error)
}

// New returns the send queries of st.
func New(st *store.Store) Sends { return &queries{st: st, db: st.DB(), postgres: st.Postgres()} }

type queries struct {
	st       *store.Store
	db       *bun.DB
	postgres bool
}

func ts(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

func (q *queries) Prepare(ctx context.Context, s *Send, chainNext uint64, sign Sign) (*Send, bool, error) {
	var got *Send
	created := false
	err := q.st.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		got, created = nil, false
		// The nonce row first: every send of the address queues here, a retry of the same
		// request id (the same account, so the same address) included, and then sees the row
		// the first one committed.
		n, err := q.lockNonce(ctx, tx, s.Chain, s.From, s.CreatedAt)
		if err != nil {
			return err
		}
		prior := new(Send)
		switch err := tx.NewSelect().Model(prior).Where("request_id = ?", s.RequestID).Scan(ctx); {
		case err == nil:
			got = prior
			return nil
		case !errors.Is(dberr.Normalize(err), dberr.ErrNotFound):
			return err
		}
		next := n.Next
		if chainNext > uint64(next) {
			next = int64(chainNext)
		}
		raw, hash, err := sign(uint64(next))
		if err != nil {
			return fmt.Errorf("sign: %w", err)
		}
		rec := *s
		rec.Nonce, rec.Raw, rec.TxHash, rec.Status = &next, raw, hash, Prepared
		rec.CreatedAt, rec.UpdatedAt = ts(s.CreatedAt), ts(s.CreatedAt)
		if _, err := tx.NewInsert().Model(&rec).Exec(ctx); err != nil {
			return fmt.Errorf("record send: %w", err)
		}
		if _, err := tx.NewUpdate().Model((*nonce)(nil)).Set("next = ?", next+1).Set("updated_at = ?", rec.CreatedAt).
			Where("chain = ? AND address = ?", s.Chain, s.From).Exec(ctx); err != nil {
			return fmt.Errorf("advance nonce: %w", err)
		}
		got, created = &rec, true
		return nil
	})
	if err != nil {
		return nil, false, dberr.Normalize(err)
	}
	return got, created, nil
}

// lockNonce is (chain, address)'s nonce row, created at 0 when missing, locked for the
// transaction on PostgreSQL (SQLite: the store's single writer holds it).
func (q *queries) lockNonce(ctx context.Context, tx bun.Tx, chain, address string, now time.Time) (*nonce, error) {
	fresh := &nonce{Chain: chain, Address: address, UpdatedAt: ts(now)}
	if _, err := tx.NewInsert().Model(fresh).On("CONFLICT (chain, address) DO NOTHING").Exec(ctx); err != nil {
		return nil, fmt.Errorf("create nonce: %w", err)
	}
	n := new(nonce)
	sel := tx.NewSelect().Model(n).Where("chain = ? AND address = ?", chain, address)
	if q.postgres {
		sel = sel.For("UPDATE")
	}
	if err := sel.Scan(ctx); err != nil {
		return nil, fmt.Errorf("lock nonce: %w", err)
	}
	return n, nil
}

func (q *queries) Record(ctx context.Context, s *Send) (*Send, bool, error) {
	rec := *s
	rec.Status = Prepared
	return q.insert(ctx, &rec)
}

// insert inserts rec unless its request id is recorded: then that send, created false.
func (q *queries) insert(ctx context.Context, rec *Send) (*Send, bool, error) {
	rec.CreatedAt, rec.UpdatedAt = ts(rec.CreatedAt), ts(rec.CreatedAt)
	res, err := q.db.NewInsert().Model(rec).On("CONFLICT (request_id) DO NOTHING").Exec(ctx)
	if err != nil {
		return nil, false, dberr.Normalize(err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return rec, true, nil
	}
	got, err := q.Get(ctx, rec.RequestID)
	return got, false, err
}

func (q *queries) Unsigned(ctx context.Context, s *Send, reason string) (*Send, bool, error) {
	rec := *s
	rec.Status, rec.Reason, rec.Raw, rec.TxHash, rec.Nonce = Failed, reason, []byte{}, "", nil
	return q.insert(ctx, &rec)
}

func (q *queries) Get(ctx context.Context, requestID string) (*Send, error) {
	s := new(Send)
	if err := q.db.NewSelect().Model(s).Where("request_id = ?", requestID).Scan(ctx); err != nil {
		return nil, dberr.Normalize(err)
	}
	return s, nil
}

func (q *queries) Submitted(ctx context.Context, requestID string, at time.Time) error {
	_, err := q.db.NewUpdate().Model((*Send)(nil)).Set("status = ?", Submitted).Set("updated_at = ?", ts(at)).
		Where("request_id = ? AND status IN (?)", requestID, bun.List([]string{Prepared, Submitted})).Exec(ctx)
	return dberr.Normalize(err)
}

func (q *queries) Conclude(ctx context.Context, requestID, status, reason, fee string, block int64, at time.Time) error {
	if status != Confirmed && status != Failed && status != Dropped {
		return fmt.Errorf("%q is not an end of a send", status)
	}
	return q.conclude(ctx, q.db, requestID, status, reason, fee, block, at)
}

func (q *queries) conclude(ctx context.Context, db bun.IDB, requestID, status, reason, fee string, block int64, at time.Time) error {
	res, err := db.NewUpdate().Model((*Send)(nil)).Set("status = ?", status).Set("reason = ?", reason).
		Set("fee = ?", fee).Set("block_number = ?", block).Set("updated_at = ?", ts(at)).
		Where("request_id = ? AND status IN (?)", requestID, bun.List([]string{Prepared, Submitted})).Exec(ctx)
	if err != nil {
		return dberr.Normalize(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotOpen
	}
	return nil
}

func (q *queries) Refused(ctx context.Context, requestID, reason string, at time.Time) error {
	return dberr.Normalize(q.st.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		s := new(Send)
		if err := tx.NewSelect().Model(s).Where("request_id = ?", requestID).Scan(ctx); err != nil {
			return err
		}
		if !s.Open() {
			return ErrNotOpen
		}
		if s.Nonce != nil {
			if _, err := q.lockNonce(ctx, tx, s.Chain, s.From, at); err != nil {
				return err
			}
			if _, err := tx.NewUpdate().Model((*nonce)(nil)).Set("next = ?", *s.Nonce).Set("updated_at = ?", ts(at)).
				Where("chain = ? AND address = ? AND next = ?", s.Chain, s.From, *s.Nonce+1).Exec(ctx); err != nil {
				return fmt.Errorf("give the nonce back: %w", err)
			}
			// The refused send lets go of its nonce, so a later send may take it.
			if _, err := tx.NewUpdate().Model((*Send)(nil)).Set("nonce = NULL").Where("request_id = ?", requestID).Exec(ctx); err != nil {
				return err
			}
		}
		return q.conclude(ctx, tx, requestID, Failed, reason, "", 0, at)
	}))
}

func (q *queries) Resigned(ctx context.Context, requestID, oldHash string, raw []byte, hash string, validUntil int64, at time.Time) error {
	res, err := q.db.NewUpdate().Model((*Send)(nil)).Set("raw_tx = ?", raw).Set("tx_hash = ?", hash).
		Set("valid_until = ?", validUntil).Set("status = ?", Prepared).Set("updated_at = ?", ts(at)).
		Where("request_id = ? AND tx_hash = ? AND status IN (?)", requestID, oldHash, bun.List([]string{Prepared, Submitted})).Exec(ctx)
	if err != nil {
		return dberr.Normalize(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotOpen
	}
	return nil
}

func (q *queries) Due(ctx context.Context, before time.Time, limit int) ([]*Send, error) {
	out := []*Send{}
	err := q.db.NewSelect().Model(&out).Where("status IN (?) AND updated_at < ?", bun.List([]string{Prepared, Submitted}), ts(before)).
		OrderExpr("updated_at ASC, request_id ASC").Limit(int64(limit)).Scan(ctx)
	return out, dberr.Normalize(err)
}

package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/uptrace/bun"
)

// SpendPolicy is an owner's policy on an account's spending (KeyID "") or on one key's and its
// descendants'. Body is the policy's JSON, checked by billing before it is written.
type SpendPolicy struct {
	bun.BaseModel `bun:"table:spend_policies"`

	AccountID string    `bun:"account_id,pk"`
	KeyID     string    `bun:"key_id,pk"`
	Body      string    `bun:"body,notnull"`
	UpdatedAt time.Time `bun:"updated_at,notnull"`
	UpdatedBy string    `bun:"updated_by,notnull"`
}

// Approval states. A pending approval past its expiry is expired (it is read so; nothing
// rewrites it).
const (
	ApprovalPending  = "pending"
	ApprovalApproved = "approved"
	ApprovalDeclined = "declined"
	ApprovalExpired  = "expired"
)

// Approval is a call its owner's policy sent to a human: the call's record waits in state
// awaiting_approval until it is decided.
type Approval struct {
	bun.BaseModel `bun:"table:approvals"`

	RequestID  string     `bun:"request_id,pk"`
	AccountID  string     `bun:"account_id,notnull"`
	KeyID      string     `bun:"key_id,notnull"`
	Handle     string     `bun:"handle,notnull"`
	Category   string     `bun:"category,notnull"`
	Rule       string     `bun:"rule,notnull"`
	Charge     string     `bun:"charge,notnull"` // JSON: the itemized most the call can cost
	WorstMicro int64      `bun:"worst_micro,notnull"`
	State      string     `bun:"state,notnull"`
	CreatedAt  time.Time  `bun:"created_at,notnull"`
	ExpiresAt  time.Time  `bun:"expires_at,notnull"`
	DecidedAt  *time.Time `bun:"decided_at"`
	DecidedBy  string     `bun:"decided_by,notnull"`
}

// StateAt is the approval's state at now: a pending one past its expiry is expired.
func (a *Approval) StateAt(now time.Time) string {
	if a.State == ApprovalPending && !now.Before(a.ExpiresAt) {
		return ApprovalExpired
	}
	return a.State
}

// Policies reads the policies of an account that apply to a call of keyIDs' (the key and its
// ancestors; none: the account's alone), the account's first.
func (s *Store) Policies(ctx context.Context, accountID string, keyIDs ...string) ([]*SpendPolicy, error) {
	var ps []*SpendPolicy
	err := s.db.NewSelect().Model(&ps).Where("account_id = ? AND key_id IN (?)", accountID, inKeys(keyIDs)).
		OrderExpr("key_id ASC").Scan(ctx)
	return ps, normalize(err)
}

func inKeys(keyIDs []string) any {
	return bun.List(append([]string{""}, keyIDs...))
}

// PolicyForUpdate reads a policy (nil: none) inside q's transaction and keeps another writer
// of it waiting until the transaction ends, so a write checked against it (a key may only
// narrow) replaces what was checked. A key's policy is guarded by its key's row, which exists
// before the policy does (NotFound: no such key in the account).
func (q *Q) PolicyForUpdate(ctx context.Context, accountID, keyID string) (*SpendPolicy, error) {
	tx, err := q.now(ctx)
	if err != nil {
		return nil, err
	}
	if keyID != "" {
		var id string
		if err := q.forUpdate(tx.NewSelect().Model((*APIKey)(nil)).Column("id").Where("id = ? AND account_id = ?", keyID, accountID)).
			Scan(ctx, &id); err != nil {
			return nil, normalize(err)
		}
	}
	p := new(SpendPolicy)
	err = q.forUpdate(tx.NewSelect().Model(p).Where("account_id = ? AND key_id = ?", accountID, keyID)).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, normalize(err)
	}
	return p, nil
}

// PutPolicyIn writes (or, with an empty body, removes) a policy inside q's transaction.
func (q *Q) PutPolicyIn(ctx context.Context, p *SpendPolicy) error {
	if p.Body == "" {
		return q.write(ctx, q.tx.NewDelete().Model((*SpendPolicy)(nil)).Where("account_id = ? AND key_id = ?", p.AccountID, p.KeyID))
	}
	return q.write(ctx, q.tx.NewInsert().Model(p).On("CONFLICT (account_id, key_id) DO UPDATE").
		Set("body = EXCLUDED.body, updated_at = EXCLUDED.updated_at, updated_by = EXCLUDED.updated_by"))
}

// SpendLag bounds how long after it was asked for a call may first hold or pay money (a quote
// confirmed, a flat fee paid, a call its owner approved): dispatch refuses one later than
// that, and the spend windows look that much further back for the calls they count.
const SpendLag = 2 * time.Hour

// Spent is what an account's calls cost within each window (money moved since each of since),
// the spending a policy's caps bound: a finished call at what it was charged and a call in
// flight at the most it can cost, counted from when it went out (held its credit), and a flat
// fee paid on chain (or being paid) at its amount, from when its payment last moved. With
// keyID, only that key's calls and its descendants'.
func (s *Store) Spent(ctx context.Context, accountID, keyID string, since []time.Time) ([]int64, error) {
	out, err := spent(ctx, s.db, accountID, keyID, since)
	return out, normalize(err)
}

func spent(ctx context.Context, db bun.IDB, accountID, keyID string, since []time.Time) ([]int64, error) {
	out := make([]int64, len(since))
	if len(since) == 0 {
		return out, nil
	}
	oldest := since[0]
	for _, t := range since {
		if t.Before(oldest) {
			oldest = t
		}
	}
	const credit = `CASE WHEN i.finished_at IS NOT NULL AND i.state <> 'declined'
			THEN i.reserve_micro - i.refunded_micro + i.partner_fee_micro + i.platform_fee_micro + i.gas_micro
		WHEN i.state = 'dispatching'
			THEN i.reserve_micro + i.max_partner_fee_micro + i.max_platform_fee_micro + i.max_gas_micro
		ELSE 0 END`
	// A call that never went out (a quote, an approval declined) has no dispatched_at and
	// costs nothing; an old call dispatched late counts from then, not from when it was asked.
	sel := db.NewSelect().TableExpr("invocations AS i").
		Join("LEFT JOIN flat_payments AS p ON p.request_id = i.request_id AND p.state IN ('submitted', 'held', 'settled')")
	for _, t := range since {
		sel = sel.ColumnExpr("COALESCE(SUM(CASE WHEN COALESCE(i.dispatched_at, i.created_at) >= ? THEN "+credit+" ELSE 0 END), 0)"+
			" + COALESCE(SUM(CASE WHEN p.updated_at >= ? THEN p.amount_atomic ELSE 0 END), 0)", t, t)
	}
	from := oldest.Add(-SpendLag)
	if from.Year() < 1 { // "since the beginning": no earlier time is a valid timestamp
		from = time.Time{}
	}
	sel = sel.Where("i.account_id = ? AND i.created_at >= ?", accountID, from)
	if keyID != "" {
		sel = sel.WithRecursive("sub", db.NewRaw("SELECT CAST(? AS TEXT) AS id UNION ALL SELECT k.id FROM api_keys k JOIN sub ON k.parent_id = sub.id", keyID)).
			Where("i.key_id IN (SELECT id FROM sub)")
	}
	dest := make([]any, len(out))
	for i := range out {
		dest[i] = &out[i]
	}
	return out, sel.Scan(ctx, dest...)
}

// PolicyView is what the policies governing a call decide it with, read at once.
type PolicyView struct {
	// Policies are the account's policy and its key chain's (those that exist).
	Policies []*SpendPolicy
	// Spent is, by policy (its KeyID; "" the account's), what the calls it covers spent in
	// each window (Spent's sums, in the order of since).
	Spent map[string][]int64
	// CalledBefore: the account has dispatched a call of the intent asked about before.
	CalledBefore bool
}

// ReadPolicyView reads the view of a call by a key whose chain (its ancestors from the root,
// then itself) is chain, of intentID ("": CalledBefore is not read).
func (s *Store) ReadPolicyView(ctx context.Context, accountID string, chain []string, intentID string, since []time.Time) (*PolicyView, error) {
	v, err := policyView(ctx, s.db, accountID, chain, intentID, since)
	return v, normalize(err)
}

// PolicyViewIn is ReadPolicyView inside q's transaction: after the account's credit row is
// locked, calls judged one after another see each other.
func (q *Q) PolicyViewIn(ctx context.Context, accountID string, chain []string, intentID string, since []time.Time) (*PolicyView, error) {
	tx, err := q.now(ctx)
	if err != nil {
		return nil, err
	}
	return policyView(ctx, tx, accountID, chain, intentID, since)
}

func policyView(ctx context.Context, db bun.IDB, accountID string, chain []string, intentID string, since []time.Time) (*PolicyView, error) {
	v := &PolicyView{Spent: map[string][]int64{}}
	if err := db.NewSelect().Model(&v.Policies).Where("account_id = ? AND key_id IN (?)", accountID, inKeys(chain)).
		OrderExpr("key_id ASC").Scan(ctx); err != nil || len(v.Policies) == 0 {
		return v, err
	}
	for _, p := range v.Policies {
		sums, err := spent(ctx, db, accountID, p.KeyID, since)
		if err != nil {
			return nil, err
		}
		v.Spent[p.KeyID] = sums
	}
	if intentID != "" {
		var err error
		v.CalledBefore, err = db.NewSelect().Model((*Invocation)(nil)).
			Where("account_id = ? AND intent_id = ? AND dispatched_at IS NOT NULL", accountID, intentID).Exists(ctx)
		if err != nil {
			return nil, err
		}
	}
	return v, nil
}

// InsertApproval writes a call's approval request inside q's transaction.
func (q *Q) InsertApproval(ctx context.Context, a *Approval) error {
	return q.write(ctx, q.tx.NewInsert().Model(a))
}

// Approval reads one of an account's approvals.
func (s *Store) Approval(ctx context.Context, accountID, requestID string) (*Approval, error) {
	a := new(Approval)
	err := s.db.NewSelect().Model(a).Where("request_id = ? AND account_id = ?", requestID, accountID).Scan(ctx)
	if err != nil {
		return nil, normalize(err)
	}
	return a, nil
}

// ApprovalIn is Approval read inside q's transaction.
func (q *Q) ApprovalIn(ctx context.Context, accountID, requestID string) (*Approval, error) {
	tx, err := q.now(ctx)
	if err != nil {
		return nil, err
	}
	a := new(Approval)
	if err := tx.NewSelect().Model(a).Where("request_id = ? AND account_id = ?", requestID, accountID).Scan(ctx); err != nil {
		return nil, normalize(err)
	}
	return a, nil
}

// Approvals lists an account's approvals, newest first; pending ones only with pending; only
// those of keyIDs' calls unless keyIDs is nil (none at all when it is empty).
func (s *Store) Approvals(ctx context.Context, accountID string, keyIDs []string, pending bool, now time.Time, limit int) ([]*Approval, error) {
	var as []*Approval
	if keyIDs != nil && len(keyIDs) == 0 {
		return as, nil
	}
	sel := s.db.NewSelect().Model(&as).Where("account_id = ?", accountID)
	if keyIDs != nil {
		sel = sel.Where("key_id IN (?)", bun.List(keyIDs))
	}
	if pending {
		sel = sel.Where("state = ? AND expires_at > ?", ApprovalPending, now)
	}
	err := sel.OrderExpr("created_at DESC").Limit(int64(limit)).Scan(ctx)
	return as, normalize(err)
}

// DecideApprovalIn moves a pending, unexpired approval to state inside q's transaction,
// reporting false (changing nothing) when it was decided already or has expired.
func (q *Q) DecideApprovalIn(ctx context.Context, accountID, requestID, state, by string, now time.Time) (bool, error) {
	return q.affectsOne(ctx, q.tx.NewUpdate().Model((*Approval)(nil)).
		Set("state = ?, decided_at = ?, decided_by = ?", state, now, by).
		Where("request_id = ? AND account_id = ? AND state = ? AND expires_at > ?", requestID, accountID, ApprovalPending, now))
}

// PartnerExists reports whether a publisher (a partner profile) exists.
func (s *Store) PartnerExists(ctx context.Context, partnerID string) (bool, error) {
	ok, err := s.db.NewSelect().Model((*Partner)(nil)).Where("id = ?", partnerID).Exists(ctx)
	return ok, normalize(err)
}

// Held is the most the calls in flight of an account (with keyID: of that key and its
// descendants) can still cost.
func (s *Store) Held(ctx context.Context, accountID, keyID string) (int64, error) {
	var held int64
	sel := s.db.NewSelect().TableExpr("invocations AS i").
		ColumnExpr("COALESCE(SUM(i.reserve_micro + i.max_partner_fee_micro + i.max_platform_fee_micro + i.max_gas_micro), 0)").
		Where("i.account_id = ? AND i.state = ?", accountID, InvDispatching)
	if keyID != "" {
		sel = sel.WithRecursive("sub", s.db.NewRaw("SELECT CAST(? AS TEXT) AS id UNION ALL SELECT k.id FROM api_keys k JOIN sub ON k.parent_id = sub.id", keyID)).
			Where("i.key_id IN (SELECT id FROM sub)")
	}
	err := sel.Scan(ctx, &held)
	return held, normalize(err)
}

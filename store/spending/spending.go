// Package spending keeps what governs an account's spending: its owner's spend policies, the
// approvals a policy asks of a human, and the sums the policies' caps are checked against
// (what the account's calls spent in each window, what its calls in flight hold). billing
// decides with them (billing.Judge); tools/policies sets and shows them.
package spending

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/dberr"
	"github.com/switchboard-hq/switchboard/store/partners"
	"github.com/uptrace/bun"
)

// Policy is an owner's policy on an account's spending (KeyID "") or on one key's and its
// descendants'. Body is the policy's JSON, checked by billing before it is written.
type Policy struct {
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

// Lag bounds how long after it was asked for a call may first hold or pay money (a quote
// confirmed, a flat fee paid, a call its owner approved): dispatch refuses one later than
// that, and the spend windows look that much further back for the calls they count.
const Lag = 2 * time.Hour

// View is what the policies governing a call decide it with, read at once.
type View struct {
	// Policies are the account's policy and its key chain's (those that exist).
	Policies []*Policy
	// Spent is, by policy (its KeyID; "" the account's), what the calls it covers spent in
	// each window (Spent's sums, in the order of the view's since for it; none for a policy
	// that needs no sums).
	Spent map[string][]int64
	// CalledBefore: the account has dispatched a call of the intent asked about before.
	CalledBefore bool
}

// Queries are the spending queries outside a transaction; what a transaction does is the
// package's functions of a *store.Q.
type Queries interface {
	// Policies reads the policies of an account that apply to a call of keyIDs' (the key and
	// its ancestors; none: the account's alone), the account's first.
	Policies(ctx context.Context, accountID string, keyIDs ...string) ([]*Policy, error)
	// Spent is what an account's calls cost within each window (money moved since each of
	// since), the spending a policy's caps bound: a finished call at what it was charged and
	// a call in flight at the most it can cost, counted from when it went out (held its
	// credit), and a flat fee paid on chain (or being paid) at its amount, from when its
	// payment last moved, and an on-chain movement (SpentParts) at its value. With keyID, only that key's calls and its descendants'.
	Spent(ctx context.Context, accountID, keyID string, since []time.Time) ([]int64, error)
	// SpentParts is Spent by part: credit (calls' charges and flat fees) and on chain (the
	// value of x402 payments, sends and proposed transactions from the embedded wallets);
	// Spent is their sum.
	SpentParts(ctx context.Context, accountID, keyID string, since []time.Time) (credit, onchain []int64, err error)
	// View reads the view of a call by a key whose chain (its ancestors from the root, then
	// itself) is chain, of intentID ("": CalledBefore is not read). since gives, for each
	// policy read, the starts of the windows whose spending it needs (Spent's since; none:
	// nothing is summed for it).
	View(ctx context.Context, accountID string, chain []string, intentID string, since func(*Policy) []time.Time) (*View, error)
	// Held is the most the calls in flight of an account (with keyID: of that key and its
	// descendants) can still cost, on-chain movements in flight at their value.
	Held(ctx context.Context, accountID, keyID string) (int64, error)
	// PartnerExists reports whether a publisher (a partner profile) exists.
	PartnerExists(ctx context.Context, partnerID string) (bool, error)
	// Approval reads one of an account's approvals (store.ErrNotFound: none).
	Approval(ctx context.Context, accountID, requestID string) (*Approval, error)
	// Approvals lists an account's approvals, newest first; pending ones only with pending;
	// only those of keyIDs' calls unless keyIDs is nil (none at all when it is empty).
	Approvals(ctx context.Context, accountID string, keyIDs []string, pending bool, now time.Time, limit int) ([]*Approval, error)
}

// New returns the spending queries of st.
func New(st *store.Store) Queries { return &queries{st: st} }

// queries is Queries on the store's database.
type queries struct{ st *store.Store }

func (s *queries) db() *bun.DB { return s.st.DB() }

func (s *queries) Policies(ctx context.Context, accountID string, keyIDs ...string) ([]*Policy, error) {
	var ps []*Policy
	err := s.db().NewSelect().Model(&ps).Where("account_id = ? AND key_id IN (?)", accountID, inKeys(keyIDs)).
		OrderExpr("key_id ASC").Scan(ctx)
	return ps, dberr.Normalize(err)
}

func inKeys(keyIDs []string) any {
	return bun.List(append([]string{""}, keyIDs...))
}

func (s *queries) Spent(ctx context.Context, accountID, keyID string, since []time.Time) ([]int64, error) {
	out, err := spent(ctx, s.db(), accountID, keyID, since)
	return out, dberr.Normalize(err)
}

func (s *queries) SpentParts(ctx context.Context, accountID, keyID string, since []time.Time) (credit, onchain []int64, err error) {
	credit, onchain, err = spentParts(ctx, s.db(), accountID, keyID, since)
	return credit, onchain, dberr.Normalize(err)
}

func (s *queries) View(ctx context.Context, accountID string, chain []string, intentID string, since func(*Policy) []time.Time) (*View, error) {
	v, err := policyView(ctx, s.db(), accountID, chain, intentID, since)
	return v, dberr.Normalize(err)
}

func (s *queries) PartnerExists(ctx context.Context, partnerID string) (bool, error) {
	ok, err := s.db().NewSelect().Model((*partners.Partner)(nil)).Where("id = ?", partnerID).Exists(ctx)
	return ok, dberr.Normalize(err)
}

func (s *queries) Approval(ctx context.Context, accountID, requestID string) (*Approval, error) {
	return approval(ctx, s.db(), accountID, requestID)
}

func approval(ctx context.Context, db bun.IDB, accountID, requestID string) (*Approval, error) {
	a := new(Approval)
	if err := db.NewSelect().Model(a).Where("request_id = ? AND account_id = ?", requestID, accountID).Scan(ctx); err != nil {
		return nil, dberr.Normalize(err)
	}
	return a, nil
}

func (s *queries) Approvals(ctx context.Context, accountID string, keyIDs []string, pending bool, now time.Time, limit int) ([]*Approval, error) {
	var as []*Approval
	if keyIDs != nil && len(keyIDs) == 0 {
		return as, nil
	}
	sel := s.db().NewSelect().Model(&as).Where("account_id = ?", accountID)
	if keyIDs != nil {
		sel = sel.Where("key_id IN (?)", bun.List(keyIDs))
	}
	if pending {
		sel = sel.Where("state = ? AND expires_at > ?", ApprovalPending, now)
	}
	err := sel.OrderExpr("created_at DESC").Limit(int64(limit)).Scan(ctx)
	return as, dberr.Normalize(err)
}

func (s *queries) Held(ctx context.Context, accountID, keyID string) (int64, error) {
	var held int64
	sel := s.db().NewSelect().TableExpr("invocations AS i").
		ColumnExpr("COALESCE(SUM(i.reserve_micro + i.max_partner_fee_micro + i.max_platform_fee_micro + i.max_gas_micro"+
			" + CASE WHEN i.kind IN (?) THEN i.value_micro ELSE 0 END), 0)", onchainKinds).
		Where("i.account_id = ? AND i.state = ? AND i.kind <> ?", accountID, store.InvDispatching, store.KindTopup)
	if keyID != "" {
		sel = sel.WithRecursive("sub", s.db().NewRaw("SELECT CAST(? AS TEXT) AS id UNION ALL SELECT k.id FROM api_keys k JOIN sub ON k.parent_id = sub.id", keyID)).
			Where("i.key_id IN (SELECT id FROM sub)")
	}
	err := sel.Scan(ctx, &held)
	return held, dberr.Normalize(err)
}

func spent(ctx context.Context, db bun.IDB, accountID, keyID string, since []time.Time) ([]int64, error) {
	credit, onchain, err := spentParts(ctx, db, accountID, keyID, since)
	for i := range credit {
		credit[i] += onchain[i]
	}
	return credit, err
}

// onchainKinds are the kinds of movement whose value leaves the embedded wallets on chain and
// counts as spending (a top-up brings money in: it is not spending).
var onchainKinds = bun.List([]string{store.KindX402, store.KindSend, store.KindProposed})

// spentParts is spent by part: what credit calls cost (their fees, flat fees paid on chain)
// and what on-chain movements from the embedded wallets moved (their value: sent or in flight,
// and one whose outcome is unknown, which may have moved; a failed one moved nothing).
func spentParts(ctx context.Context, db bun.IDB, accountID, keyID string, since []time.Time) (credit, onchain []int64, err error) {
	credit, onchain = make([]int64, len(since)), make([]int64, len(since))
	if len(since) == 0 {
		return credit, onchain, nil
	}
	oldest := since[0]
	for _, t := range since {
		if t.Before(oldest) {
			oldest = t
		}
	}
	const charged = `CASE WHEN i.finished_at IS NOT NULL AND i.state <> 'declined'
			THEN i.reserve_micro - i.refunded_micro + i.partner_fee_micro + i.platform_fee_micro + i.gas_micro
		WHEN i.state = 'dispatching'
			THEN i.reserve_micro + i.max_partner_fee_micro + i.max_platform_fee_micro + i.max_gas_micro
		ELSE 0 END`
	const moved = `CASE WHEN i.kind IN (?) AND i.state IN ('dispatching', 'succeeded', 'outcome_unknown') THEN i.value_micro ELSE 0 END`
	// A call that never went out (a quote, an approval declined) has no dispatched_at and
	// costs nothing; an old call dispatched late counts from then, not from when it was asked.
	sel := db.NewSelect().TableExpr("invocations AS i").
		Join("LEFT JOIN flat_payments AS p ON p.request_id = i.request_id AND p.state IN ('submitted', 'held', 'settled')")
	for _, t := range since {
		sel = sel.ColumnExpr("COALESCE(SUM(CASE WHEN COALESCE(i.dispatched_at, i.created_at) >= ? THEN "+charged+" ELSE 0 END), 0)"+
			" + COALESCE(SUM(CASE WHEN p.updated_at >= ? THEN p.amount_atomic ELSE 0 END), 0)", t, t)
		sel = sel.ColumnExpr("COALESCE(SUM(CASE WHEN COALESCE(i.dispatched_at, i.created_at) >= ? THEN "+moved+" ELSE 0 END), 0)", t, onchainKinds)
	}
	from := oldest.Add(-Lag)
	if from.Year() < 1 { // "since the beginning": no earlier time is a valid timestamp
		from = time.Time{}
	}
	// Top-ups are money in, never spending (DESIGN "Money in and out").
	sel = sel.Where("i.account_id = ? AND i.created_at >= ? AND i.kind <> ?", accountID, from, store.KindTopup)
	if keyID != "" {
		sel = sel.WithRecursive("sub", db.NewRaw("SELECT CAST(? AS TEXT) AS id UNION ALL SELECT k.id FROM api_keys k JOIN sub ON k.parent_id = sub.id", keyID)).
			Where("i.key_id IN (SELECT id FROM sub)")
	}
	dest := make([]any, 0, 2*len(since))
	for i := range since {
		dest = append(dest, &credit[i], &onchain[i])
	}
	return credit, onchain, sel.Scan(ctx, dest...)
}

func policyView(ctx context.Context, db bun.IDB, accountID string, chain []string, intentID string, since func(*Policy) []time.Time) (*View, error) {
	v := &View{Spent: map[string][]int64{}}
	if err := db.NewSelect().Model(&v.Policies).Where("account_id = ? AND key_id IN (?)", accountID, inKeys(chain)).
		OrderExpr("key_id ASC").Scan(ctx); err != nil || len(v.Policies) == 0 {
		return v, err
	}
	for _, p := range v.Policies {
		windows := since(p)
		if len(windows) == 0 {
			continue // it caps no window: nothing of the account's history is read for it
		}
		sums, err := spent(ctx, db, accountID, p.KeyID, windows)
		if err != nil {
			return nil, err
		}
		v.Spent[p.KeyID] = sums
	}
	if intentID != "" {
		var err error
		v.CalledBefore, err = db.NewSelect().Model((*store.Invocation)(nil)).
			Where("account_id = ? AND intent_id = ? AND dispatched_at IS NOT NULL", accountID, intentID).Exists(ctx)
		if err != nil {
			return nil, err
		}
	}
	return v, nil
}

// ViewIn is Queries.View inside q's transaction: after the account's credit row is locked,
// calls judged one after another see each other.
func ViewIn(ctx context.Context, q *store.Q, accountID string, chain []string, intentID string, since func(*Policy) []time.Time) (*View, error) {
	tx, err := q.Tx(ctx)
	if err != nil {
		return nil, err
	}
	v, err := policyView(ctx, tx, accountID, chain, intentID, since)
	return v, dberr.Normalize(err)
}

// PolicyForUpdate reads a policy (nil: none) inside q's transaction and keeps another writer
// of it waiting until the transaction ends, so a write checked against it (a key may only
// narrow) replaces what was checked. A key's policy is guarded by its key's row, which exists
// before the policy does (NotFound: no such key in the account).
func PolicyForUpdate(ctx context.Context, q *store.Q, accountID, keyID string) (*Policy, error) {
	tx, err := q.Tx(ctx)
	if err != nil {
		return nil, err
	}
	if keyID != "" {
		var id string
		if err := q.ForUpdate(tx.NewSelect().Model((*accounts.APIKey)(nil)).Column("id").Where("id = ? AND account_id = ?", keyID, accountID)).
			Scan(ctx, &id); err != nil {
			return nil, dberr.Normalize(err)
		}
	}
	p := new(Policy)
	err = q.ForUpdate(tx.NewSelect().Model(p).Where("account_id = ? AND key_id = ?", accountID, keyID)).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, dberr.Normalize(err)
	}
	return p, nil
}

// PutPolicy writes (or, with an empty body, removes) a policy inside q's transaction.
func PutPolicy(ctx context.Context, q *store.Q, p *Policy) error {
	tx, err := q.Tx(ctx)
	if err != nil {
		return err
	}
	if p.Body == "" {
		_, err = tx.NewDelete().Model((*Policy)(nil)).Where("account_id = ? AND key_id = ?", p.AccountID, p.KeyID).Exec(ctx)
	} else {
		_, err = tx.NewInsert().Model(p).On("CONFLICT (account_id, key_id) DO UPDATE").
			Set("body = EXCLUDED.body, updated_at = EXCLUDED.updated_at, updated_by = EXCLUDED.updated_by").Exec(ctx)
	}
	return dberr.Normalize(err)
}

// InsertApproval writes a call's approval request inside q's transaction.
func InsertApproval(ctx context.Context, q *store.Q, a *Approval) error {
	tx, err := q.Tx(ctx)
	if err != nil {
		return err
	}
	_, err = tx.NewInsert().Model(a).Exec(ctx)
	return dberr.Normalize(err)
}

// ApprovalIn is Queries.Approval read inside q's transaction.
func ApprovalIn(ctx context.Context, q *store.Q, accountID, requestID string) (*Approval, error) {
	tx, err := q.Tx(ctx)
	if err != nil {
		return nil, err
	}
	return approval(ctx, tx, accountID, requestID)
}

// DecideApproval moves a pending, unexpired approval to state inside q's transaction,
// reporting false (changing nothing) when it was decided already or has expired.
func DecideApproval(ctx context.Context, q *store.Q, accountID, requestID, state, by string, now time.Time) (bool, error) {
	tx, err := q.Tx(ctx)
	if err != nil {
		return false, err
	}
	res, err := tx.NewUpdate().Model((*Approval)(nil)).
		Set("state = ?, decided_at = ?, decided_by = ?", state, now, by).
		Where("request_id = ? AND account_id = ? AND state = ? AND expires_at > ?", requestID, accountID, ApprovalPending, now).Exec(ctx)
	if err != nil {
		return false, dberr.Normalize(err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

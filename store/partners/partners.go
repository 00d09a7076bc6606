// Package partners keeps the partners (partners: the publisher profile of an account) and
// the intents they publish (partner_intents). Its tables' models and statements are its own;
// what runs inside a caller's transaction (Lock, PublishedSince, InsertIntents, AccountOf)
// takes the caller's *store.Q. Processes cache intents by handle: every write announces the
// handles it changed on the store's change watch.
package partners

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/dberr"
	"github.com/switchboard-hq/switchboard/store/watch"
)

// Partner is the publisher profile of an account, created on its first publish. It is
// read-only to the partner.
type Partner struct {
	bun.BaseModel `bun:"table:partners"`

	ID        string    `bun:"id,pk"`
	AccountID string    `bun:"account_id,notnull"`
	CreatedAt time.Time `bun:"created_at,notnull"`
}

// Intent is one published partner intent (the spec's "partner intent row"). The JSON
// Schemas are kept as the exact JSON text the partner published; FeeRate is a decimal string.
// Its alias is the one bun derived from the type's name when it was store.PartnerIntent, so
// that every statement reads as it did (FROM "partner_intents" AS "partner_intent").
type Intent struct {
	bun.BaseModel `bun:"table:partner_intents,alias:partner_intent"`

	ID                 string            `bun:"id,pk"`
	PartnerID          string            `bun:"partner_id,notnull"`
	OwnerID            string            `bun:"owner_id,notnull"`
	PublicIdentifier   string            `bun:"public_identifier,notnull"` // the @handle
	Name               string            `bun:"name,notnull"`
	Description        string            `bun:"description,notnull"`
	Category           string            `bun:"category,notnull"`
	Capabilities       []string          `bun:"capabilities,notnull,type:text"`
	BindingType        string            `bun:"binding_type,notnull"`
	ToolEndpoint       string            `bun:"tool_endpoint,notnull"`
	TimeoutMs          int               `bun:"timeout_ms,notnull"`
	ParametersSchema   string            `bun:"parameters_schema,notnull"`
	OutputSchema       *string           `bun:"output_schema"`
	FeeRate            string            `bun:"fee_rate,notnull"`
	FeeRateUnit        string            `bun:"fee_rate_unit,notnull"`
	PayoutAddresses    map[string]string `bun:"payout_addresses,type:text,nullzero"`
	Tier               string            `bun:"tier,notnull"`
	PricingShape       *string           `bun:"pricing_shape"` // JSON object text, nil for one-shot intents
	SampleQueries      []string          `bun:"sample_queries,notnull,type:text"`
	IsActive           bool              `bun:"is_active,notnull"`
	IsCoreIntent       bool              `bun:"is_core_intent,notnull"`
	VerificationStatus string            `bun:"verification_status,notnull"`
	Revision           int               `bun:"revision,notnull"` // bumped by every update
	NextProbeAt        *time.Time        `bun:"next_probe_at"`
	LastProbeAt        *time.Time        `bun:"last_probe_at"`
	LastProbeResult    string            `bun:"last_probe_result,notnull"`
	ProbeFailures      int               `bun:"probe_failures,notnull"`
	DeactivatedReason  string            `bun:"deactivated_reason,notnull"`
	ArchivedAt         *time.Time        `bun:"archived_at"`
	CreatedAt          time.Time         `bun:"created_at,notnull"`
	UpdatedAt          time.Time         `bun:"updated_at,notnull"`
}

// HandlesTakenError lists the handles of a publish that already exist (archived ones
// included: handles are never reused).
type HandlesTakenError struct {
	Handles []string
}

func (e *HandlesTakenError) Error() string {
	return "handles already taken: " + strings.Join(e.Handles, ", ")
}

// Is makes a HandlesTakenError an ErrConflict.
func (e *HandlesTakenError) Is(target error) bool { return target == dberr.ErrConflict }

// ErrStale is returned by UpdateIntent when the row changed since it was read; read it
// again and retry. It is an ErrConflict.
var ErrStale = fmt.Errorf("%w: the intent changed since it was read", dberr.ErrConflict)

// SystemAccountID owns the core intents (Switchboard's built-in capabilities).
const SystemAccountID = "system"

// Partners are the queries of partners and their intents outside a caller's transaction.
type Partners interface {
	// Publish creates rows in one transaction, all or none, owned by accountID, creating
	// the account's Partner on its first publish: an operator's insertion and tests'
	// fixtures, which no publishing quota applies to (the publish tools go through
	// tools/partners, which applies it: Lock, PublishedSince, InsertIntents).
	Publish(ctx context.Context, accountID string, rows []*Intent, now time.Time) (*Partner, error)
	// ByAccount returns the account's Partner, store.ErrNotFound before its first publish.
	ByAccount(ctx context.Context, accountID string) (*Partner, error)
	// Intent returns an intent whoever owns it, archived or not.
	Intent(ctx context.Context, id string) (*Intent, error)
	// IntentByHandle returns the intent with the @handle, archived or not.
	IntentByHandle(ctx context.Context, handle string) (*Intent, error)
	// OwnedIntent returns ownerID's intent id; another account's intent is store.ErrNotFound.
	OwnedIntent(ctx context.Context, ownerID, id string) (*Intent, error)
	// IntentsByOwner lists ownerID's intents, oldest first; archived ones only when asked.
	IntentsByOwner(ctx context.Context, ownerID string, includeArchived bool) ([]*Intent, error)
	// UpdateIntent writes the mutable columns of in (name, description, tool_endpoint,
	// timeout_ms, fee_rate, sample_queries, is_active, verification_status, is_core_intent,
	// archived_at, updated_at) if the stored row still has revision in.Revision, and bumps the
	// revision. A row changed meanwhile is ErrStale; a missing row is store.ErrNotFound. in is
	// a row read from the store: its handle names the change to caches. The events the change
	// causes (the webhook outbox) are written in its transaction, only if the row was written.
	UpdateIntent(ctx context.Context, in *Intent, events ...*store.WebhookEvent) error
	// ClaimProbe takes an active intent's next probe: it moves next_probe_at to next when the
	// probe was due at now, and reports whether this caller won it (replicas race for the
	// same rows).
	ClaimProbe(ctx context.Context, id string, now, next time.Time) (bool, error)
	// DueProbes lists active intents whose probe is due, oldest first.
	DueProbes(ctx context.Context, now time.Time, limit int) ([]*Intent, error)
	// RecordProbe writes a probe's outcome (not an edit: the revision stays).
	RecordProbe(ctx context.Context, id, result string, failures int, at time.Time) error
	// EnsureCoreIntents creates or refreshes the core intents, owned by the system account
	// and active, in one transaction. Their handles are reserved, so no partner can hold one.
	EnsureCoreIntents(ctx context.Context, rows []*Intent, now time.Time) error
}

// New is the partners of st.
func New(st *store.Store) Partners { return partners{st: st, db: st.DB()} }

type partners struct {
	st *store.Store
	db *bun.DB
}

func (s partners) Publish(ctx context.Context, accountID string, rows []*Intent, now time.Time) (*Partner, error) {
	var p *Partner
	err := s.st.InTx(ctx, func(ctx context.Context, q *store.Q) error {
		var err error
		if p, err = Lock(ctx, q, accountID, now); err != nil {
			return err
		}
		return InsertIntents(ctx, q, p, rows)
	})
	return p, err
}

// Lock returns the account's Partner, creating it on its first publish, locked for the rest
// of q's transaction (on PostgreSQL; SQLite's immediate transactions serialize writers
// already), so that concurrent publishes of one Partner are counted one after the other.
func Lock(ctx context.Context, q *store.Q, accountID string, now time.Time) (*Partner, error) {
	tx, err := q.Tx(ctx)
	if err != nil {
		return nil, err
	}
	return lock(ctx, tx, q.ForUpdate, accountID, now)
}

// PublishedSince returns when each of the Partner's rows created after since was created,
// oldest first, inside the caller's transaction q.
func PublishedSince(ctx context.Context, q *store.Q, partnerID string, since time.Time) ([]time.Time, error) {
	tx, err := q.Tx(ctx)
	if err != nil {
		return nil, err
	}
	var times []time.Time
	if err := tx.NewSelect().Model((*Intent)(nil)).Column("created_at").
		Where("partner_id = ? AND created_at > ?", partnerID, since).
		OrderExpr("created_at ASC").Scan(ctx, &times); err != nil {
		return nil, fmt.Errorf("count recent publishes: %w", dberr.Normalize(err))
	}
	return times, nil
}

// InsertIntents inserts rows for Partner p inside the caller's transaction q, filling in
// their PartnerID and OwnerID; a handle that exists (archived ones included: handles are
// never reused) refuses them all with *HandlesTakenError. Caches learn of the handles once
// the transaction commits.
func InsertIntents(ctx context.Context, q *store.Q, p *Partner, rows []*Intent) error {
	tx, err := q.Tx(ctx)
	if err != nil {
		return err
	}
	handles := make([]string, len(rows))
	for i, r := range rows {
		handles[i] = r.PublicIdentifier
	}
	var taken []string
	if err := tx.NewSelect().Model((*Intent)(nil)).Column("public_identifier").
		Where("public_identifier IN (?)", bun.List(handles)).Scan(ctx, &taken); err != nil {
		return fmt.Errorf("check handles: %w", dberr.Normalize(err))
	}
	if len(taken) > 0 {
		sort.Strings(taken)
		return &HandlesTakenError{Handles: taken}
	}
	for i, r := range rows {
		r.PartnerID, r.OwnerID = p.ID, p.AccountID
		if _, err := tx.NewInsert().Model(r).Exec(ctx); err != nil {
			return fmt.Errorf("insert intent %d (%s): %w", i, r.PublicIdentifier, dberr.Normalize(err))
		}
	}
	return q.Announce(ctx, watch.IntentChange, handles...) // caches may hold "no such handle"
}

// AccountOf reads the account a partner belongs to, inside q's transaction ("" when there is
// no such partner).
func AccountOf(ctx context.Context, q *store.Q, partnerID string) (string, error) {
	tx, err := q.Tx(ctx)
	if err != nil {
		return "", err
	}
	var ids []string
	err = tx.NewSelect().Model((*Partner)(nil)).Column("account_id").Where("id = ?", partnerID).Limit(1).Scan(ctx, &ids)
	if err != nil || len(ids) == 0 {
		return "", err
	}
	return ids[0], nil
}

// lock returns the account's Partner, creating it if needed, locked for the rest of the
// transaction on PostgreSQL (forUpdate).
func lock(ctx context.Context, tx bun.Tx, forUpdate func(*bun.SelectQuery) *bun.SelectQuery, accountID string, now time.Time) (*Partner, error) {
	fresh := &Partner{ID: uuid.NewString(), AccountID: accountID, CreatedAt: now.UTC()}
	if _, err := tx.NewInsert().Model(fresh).On("CONFLICT (account_id) DO NOTHING").Exec(ctx); err != nil {
		return nil, fmt.Errorf("create partner: %w", dberr.Normalize(err))
	}
	p := new(Partner)
	if err := forUpdate(tx.NewSelect().Model(p).Where("account_id = ?", accountID)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("lock partner: %w", dberr.Normalize(err))
	}
	return p, nil
}

// forUpdate locks the rows sq reads on PostgreSQL, for a transaction of the store's own
// (store.Tx) that has no Q to ask (q.ForUpdate).
func (s partners) forUpdate(sq *bun.SelectQuery) *bun.SelectQuery {
	if s.st.Postgres() {
		return sq.For("UPDATE")
	}
	return sq
}

func (s partners) ByAccount(ctx context.Context, accountID string) (*Partner, error) {
	p := new(Partner)
	if err := s.db.NewSelect().Model(p).Where("account_id = ?", accountID).Scan(ctx); err != nil {
		return nil, dberr.Normalize(err)
	}
	return p, nil
}

func (s partners) Intent(ctx context.Context, id string) (*Intent, error) {
	in := new(Intent)
	if err := s.db.NewSelect().Model(in).Where("id = ?", id).Scan(ctx); err != nil {
		return nil, dberr.Normalize(err)
	}
	return in, nil
}

func (s partners) IntentByHandle(ctx context.Context, handle string) (*Intent, error) {
	in := new(Intent)
	if err := s.db.NewSelect().Model(in).Where("public_identifier = ?", handle).Scan(ctx); err != nil {
		return nil, dberr.Normalize(err)
	}
	return in, nil
}

func (s partners) OwnedIntent(ctx context.Context, ownerID, id string) (*Intent, error) {
	in := new(Intent)
	if err := s.db.NewSelect().Model(in).Where("id = ? AND owner_id = ?", id, ownerID).Scan(ctx); err != nil {
		return nil, dberr.Normalize(err)
	}
	return in, nil
}

func (s partners) IntentsByOwner(ctx context.Context, ownerID string, includeArchived bool) ([]*Intent, error) {
	var out []*Intent
	q := s.db.NewSelect().Model(&out).Where("owner_id = ?", ownerID)
	if !includeArchived {
		q = q.Where("archived_at IS NULL")
	}
	err := q.OrderExpr("created_at ASC, public_identifier ASC").Scan(ctx)
	return out, dberr.Normalize(err)
}

func (s partners) UpdateIntent(ctx context.Context, in *Intent, events ...*store.WebhookEvent) error {
	handle := in.PublicIdentifier // "" (a row not read whole): caches drop every intent
	var n int64
	err := s.st.InTx(ctx, func(ctx context.Context, q *store.Q) error {
		tx, err := q.Tx(ctx)
		if err != nil {
			return err
		}
		res, err := tx.NewUpdate().Model(in).
			Column("name", "description", "tool_endpoint", "timeout_ms", "fee_rate", "sample_queries",
				"is_active", "verification_status", "is_core_intent", "archived_at", "updated_at", "deactivated_reason").
			Set("revision = revision + 1").
			Where("id = ? AND revision = ?", in.ID, in.Revision).
			Exec(ctx)
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		if err := store.InsertWebhookEvents(ctx, tx, events); err != nil {
			return err
		}
		return q.Announce(ctx, watch.IntentChange, handle)
	})
	if err != nil {
		return dberr.Normalize(err)
	}
	if n == 0 {
		if _, err := s.Intent(ctx, in.ID); err != nil {
			return err
		}
		return ErrStale
	}
	in.Revision++
	return nil
}

func (s partners) ClaimProbe(ctx context.Context, id string, now, next time.Time) (bool, error) {
	n, err := s.updateIntentByID(ctx, id, func(q *bun.UpdateQuery) *bun.UpdateQuery {
		return q.Set("next_probe_at = ?", next).Where("is_active AND (next_probe_at IS NULL OR next_probe_at <= ?)", now)
	})
	return n == 1, err
}

// updateIntentByID runs an UPDATE of the intent id (set by fn), announcing the change to
// caches when a row changed, and returns how many did.
func (s partners) updateIntentByID(ctx context.Context, id string, fn func(*bun.UpdateQuery) *bun.UpdateQuery) (int, error) {
	var handles []string
	err := s.st.InTx(ctx, func(ctx context.Context, q *store.Q) error {
		handles = nil
		tx, err := q.Tx(ctx)
		if err != nil {
			return err
		}
		if err := fn(tx.NewUpdate().Model((*Intent)(nil)).Where("id = ?", id)).Returning("public_identifier").Scan(ctx, &handles); err != nil {
			return err
		}
		return q.Announce(ctx, watch.IntentChange, handles...)
	})
	if err != nil {
		return 0, dberr.Normalize(err)
	}
	return len(handles), nil
}

func (s partners) DueProbes(ctx context.Context, now time.Time, limit int) ([]*Intent, error) {
	var out []*Intent
	err := s.db.NewSelect().Model(&out).Where("is_active AND archived_at IS NULL AND is_core_intent = ?", false).
		Where("next_probe_at IS NULL OR next_probe_at <= ?", now).OrderExpr("next_probe_at ASC NULLS FIRST").Limit(int64(limit)).Scan(ctx)
	return out, dberr.Normalize(err)
}

func (s partners) RecordProbe(ctx context.Context, id, result string, failures int, at time.Time) error {
	_, err := s.updateIntentByID(ctx, id, func(q *bun.UpdateQuery) *bun.UpdateQuery {
		return q.Set("last_probe_at = ?", at).Set("last_probe_result = ?", result).Set("probe_failures = ?", failures)
	})
	return err
}

func (s partners) EnsureCoreIntents(ctx context.Context, rows []*Intent, now time.Time) error {
	return s.st.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewInsert().Model(&accounts.Account{ID: SystemAccountID, Email: "system@switchboard.invalid", CreatedAt: now}).
			On("CONFLICT (id) DO NOTHING").Exec(ctx); err != nil {
			return err
		}
		p, err := lock(ctx, tx, s.forUpdate, SystemAccountID, now)
		if err != nil {
			return err
		}
		for _, r := range rows {
			r.PartnerID, r.OwnerID, r.IsCoreIntent, r.IsActive = p.ID, SystemAccountID, true, true
			r.CreatedAt, r.UpdatedAt = now, now
			if _, err := tx.NewInsert().Model(r).
				On("CONFLICT (public_identifier) DO UPDATE").
				Set("name = EXCLUDED.name").Set("description = EXCLUDED.description").
				Set("category = EXCLUDED.category").Set("sample_queries = EXCLUDED.sample_queries").
				Set("parameters_schema = EXCLUDED.parameters_schema").Set("tool_endpoint = EXCLUDED.tool_endpoint").
				Set("verification_status = EXCLUDED.verification_status").Set("is_active = TRUE").
				Set("updated_at = EXCLUDED.updated_at").Exec(ctx); err != nil {
				return fmt.Errorf("core intent %s: %w", r.PublicIdentifier, err)
			}
		}
		return nil
	})
}

package store

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

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

// PartnerIntent is one published partner intent (the spec's "partner intent row"). The JSON
// Schemas are kept as the exact JSON text the partner published; FeeRate is a decimal string.
type PartnerIntent struct {
	bun.BaseModel `bun:"table:partner_intents"`

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
func (e *HandlesTakenError) Is(target error) bool { return target == ErrConflict }

// PublishIntents creates rows in one transaction, all or none, owned by accountID, creating
// the account's Partner on its first publish: an operator's insertion and tests' fixtures,
// which no publishing quota applies to (the publish tools go through partners, which applies
// it: Q.LockPartner, Q.PublishedSince, Q.InsertIntents).
func (s *Store) PublishIntents(ctx context.Context, accountID string, rows []*PartnerIntent, now time.Time) (*Partner, error) {
	var p *Partner
	err := s.InTx(ctx, func(ctx context.Context, q *Q) error {
		var err error
		if p, err = q.LockPartner(ctx, accountID, now); err != nil {
			return err
		}
		return q.InsertIntents(ctx, p, rows)
	})
	return p, err
}

// LockPartner returns the account's Partner, creating it on its first publish, locked for the
// rest of the transaction (on PostgreSQL; SQLite's immediate transactions serialize writers
// already), so that concurrent publishes of one Partner are counted one after the other.
func (q *Q) LockPartner(ctx context.Context, accountID string, now time.Time) (*Partner, error) {
	if err := q.flush(ctx); err != nil {
		return nil, err
	}
	return q.store.lockPartner(ctx, q.tx, accountID, now)
}

// PublishedSince returns when each of the Partner's rows created after since was created,
// oldest first.
func (q *Q) PublishedSince(ctx context.Context, partnerID string, since time.Time) ([]time.Time, error) {
	if err := q.flush(ctx); err != nil {
		return nil, err
	}
	var times []time.Time
	if err := q.tx.NewSelect().Model((*PartnerIntent)(nil)).Column("created_at").
		Where("partner_id = ? AND created_at > ?", partnerID, since).
		OrderExpr("created_at ASC").Scan(ctx, &times); err != nil {
		return nil, fmt.Errorf("count recent publishes: %w", normalize(err))
	}
	return times, nil
}

// InsertIntents inserts rows for Partner p, filling in their PartnerID and OwnerID; a handle
// that exists (archived ones included: handles are never reused) refuses them all with
// *HandlesTakenError. Caches learn of the handles once the transaction commits.
func (q *Q) InsertIntents(ctx context.Context, p *Partner, rows []*PartnerIntent) error {
	if err := q.flush(ctx); err != nil {
		return err
	}
	handles := make([]string, len(rows))
	for i, r := range rows {
		handles[i] = r.PublicIdentifier
	}
	var taken []string
	if err := q.tx.NewSelect().Model((*PartnerIntent)(nil)).Column("public_identifier").
		Where("public_identifier IN (?)", bun.List(handles)).Scan(ctx, &taken); err != nil {
		return fmt.Errorf("check handles: %w", normalize(err))
	}
	if len(taken) > 0 {
		sort.Strings(taken)
		return &HandlesTakenError{Handles: taken}
	}
	for i, r := range rows {
		r.PartnerID, r.OwnerID = p.ID, p.AccountID
		if _, err := q.tx.NewInsert().Model(r).Exec(ctx); err != nil {
			return fmt.Errorf("insert intent %d (%s): %w", i, r.PublicIdentifier, normalize(err))
		}
		q.changed = append(q.changed, watch.Change{Kind: watch.IntentChange, ID: r.PublicIdentifier})
	}
	return q.store.watch.Announce(ctx, q.tx, watch.IntentChange, handles...) // caches may hold "no such handle"
}

// lockPartner returns the account's Partner, creating it if needed, locked for the rest of
// the transaction on PostgreSQL.
func (s *Store) lockPartner(ctx context.Context, tx bun.Tx, accountID string, now time.Time) (*Partner, error) {
	fresh := &Partner{ID: uuid.NewString(), AccountID: accountID, CreatedAt: now.UTC()}
	if _, err := tx.NewInsert().Model(fresh).On("CONFLICT (account_id) DO NOTHING").Exec(ctx); err != nil {
		return nil, fmt.Errorf("create partner: %w", normalize(err))
	}
	p := new(Partner)
	q := tx.NewSelect().Model(p).Where("account_id = ?", accountID)
	if s.postgres {
		q = q.For("UPDATE")
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("lock partner: %w", normalize(err))
	}
	return p, nil
}

// PartnerByAccount returns the account's Partner, ErrNotFound before its first publish.
func (s *Store) PartnerByAccount(ctx context.Context, accountID string) (*Partner, error) {
	p := new(Partner)
	if err := s.db.NewSelect().Model(p).Where("account_id = ?", accountID).Scan(ctx); err != nil {
		return nil, normalize(err)
	}
	return p, nil
}

// IntentByID returns an intent whoever owns it, archived or not.
func (s *Store) IntentByID(ctx context.Context, id string) (*PartnerIntent, error) {
	in := new(PartnerIntent)
	if err := s.db.NewSelect().Model(in).Where("id = ?", id).Scan(ctx); err != nil {
		return nil, normalize(err)
	}
	return in, nil
}

// IntentByHandle returns the intent with the @handle, archived or not.
func (s *Store) IntentByHandle(ctx context.Context, handle string) (*PartnerIntent, error) {
	in := new(PartnerIntent)
	if err := s.db.NewSelect().Model(in).Where("public_identifier = ?", handle).Scan(ctx); err != nil {
		return nil, normalize(err)
	}
	return in, nil
}

// OwnedIntent returns ownerID's intent id; another account's intent is ErrNotFound.
func (s *Store) OwnedIntent(ctx context.Context, ownerID, id string) (*PartnerIntent, error) {
	in := new(PartnerIntent)
	if err := s.db.NewSelect().Model(in).Where("id = ? AND owner_id = ?", id, ownerID).Scan(ctx); err != nil {
		return nil, normalize(err)
	}
	return in, nil
}

// IntentsByOwner lists ownerID's intents, oldest first; archived ones only when asked.
func (s *Store) IntentsByOwner(ctx context.Context, ownerID string, includeArchived bool) ([]*PartnerIntent, error) {
	var out []*PartnerIntent
	q := s.db.NewSelect().Model(&out).Where("owner_id = ?", ownerID)
	if !includeArchived {
		q = q.Where("archived_at IS NULL")
	}
	err := q.OrderExpr("created_at ASC, public_identifier ASC").Scan(ctx)
	return out, normalize(err)
}

// ErrStale is returned by UpdateIntent when the row changed since it was read; read it
// again and retry. It is an ErrConflict.
var ErrStale = fmt.Errorf("%w: the intent changed since it was read", ErrConflict)

// UpdateIntent writes the mutable columns of in (name, description, tool_endpoint,
// timeout_ms, fee_rate, sample_queries, is_active, verification_status, is_core_intent,
// archived_at, updated_at) if the stored row still has revision in.Revision, and bumps the
// revision. A row changed meanwhile is ErrStale; a missing row is ErrNotFound. in is a row
// read from the store: its handle names the change to caches. The events the change causes
// (the webhook outbox) are written in its transaction, only if the row was written.
func (s *Store) UpdateIntent(ctx context.Context, in *PartnerIntent, events ...*WebhookEvent) error {
	handle := in.PublicIdentifier // "" (a row not read whole): caches drop every intent
	var n int64
	err := s.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
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
		if err := InsertWebhookEvents(ctx, tx, events); err != nil {
			return err
		}
		return s.watch.Announce(ctx, tx, watch.IntentChange, handle)
	})
	if err != nil {
		return normalize(err)
	}
	if n == 0 {
		if _, err := s.IntentByID(ctx, in.ID); err != nil {
			return err
		}
		return ErrStale
	}
	s.changed(watch.IntentChange, handle)
	in.Revision++
	return nil
}

// ClaimProbe takes an active intent's next probe: it moves next_probe_at to next when the probe
// was due at now, and reports whether this caller won it (replicas race for the same rows).
func (s *Store) ClaimProbe(ctx context.Context, id string, now, next time.Time) (bool, error) {
	n, err := s.updateIntentByID(ctx, id, func(q *bun.UpdateQuery) *bun.UpdateQuery {
		return q.Set("next_probe_at = ?", next).Where("is_active AND (next_probe_at IS NULL OR next_probe_at <= ?)", now)
	})
	return n == 1, err
}

// updateIntentByID runs an UPDATE of the intent id (set by fn), announcing the change to
// caches when a row changed, and returns how many did.
func (s *Store) updateIntentByID(ctx context.Context, id string, fn func(*bun.UpdateQuery) *bun.UpdateQuery) (int, error) {
	var handles []string
	err := s.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		handles = nil
		q := fn(tx.NewUpdate().Model((*PartnerIntent)(nil)).Where("id = ?", id)).Returning("public_identifier")
		if err := q.Scan(ctx, &handles); err != nil {
			return err
		}
		return s.watch.Announce(ctx, tx, watch.IntentChange, handles...)
	})
	if err != nil {
		return 0, normalize(err)
	}
	s.changed(watch.IntentChange, handles...)
	return len(handles), nil
}

// DueProbes lists active intents whose probe is due, oldest first.
func (s *Store) DueProbes(ctx context.Context, now time.Time, limit int) ([]*PartnerIntent, error) {
	var out []*PartnerIntent
	err := s.db.NewSelect().Model(&out).Where("is_active AND archived_at IS NULL AND is_core_intent = ?", false).
		Where("next_probe_at IS NULL OR next_probe_at <= ?", now).OrderExpr("next_probe_at ASC NULLS FIRST").Limit(int64(limit)).Scan(ctx)
	return out, normalize(err)
}

// RecordProbe writes a probe's outcome (not an edit: the revision stays).
func (s *Store) RecordProbe(ctx context.Context, id, result string, failures int, at time.Time) error {
	_, err := s.updateIntentByID(ctx, id, func(q *bun.UpdateQuery) *bun.UpdateQuery {
		return q.Set("last_probe_at = ?", at).Set("last_probe_result = ?", result).Set("probe_failures = ?", failures)
	})
	return err
}

// SystemAccountID owns the core intents (Switchboard's built-in capabilities).
const SystemAccountID = "system"

// EnsureCoreIntents creates or refreshes the core intents, owned by the system account and
// active, in one transaction. Their handles are reserved, so no partner can hold one.
func (s *Store) EnsureCoreIntents(ctx context.Context, rows []*PartnerIntent, now time.Time) error {
	return s.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewInsert().Model(&Account{ID: SystemAccountID, Email: "system@switchboard.invalid", CreatedAt: now}).
			On("CONFLICT (id) DO NOTHING").Exec(ctx); err != nil {
			return err
		}
		p, err := s.lockPartner(ctx, tx, SystemAccountID, now)
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

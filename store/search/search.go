// Package search keeps the queries discover answers from: full-text search and browsing of
// partner intents, their quality over recent calls, and the core intents every deployment has.
package search

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/dberr"
	"github.com/switchboard-hq/switchboard/store/partners"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
)

// Search is the search of partner intents.
type Search interface {
	// SearchIntents ranks the intents a caller may invoke by full-text relevance over handle,
	// name, category, description and sample queries, boosted by verification status. Words are
	// ORed: an intent matching more of them, or in heavier fields, ranks higher. One round trip:
	// the ranking picks ids and relevance, and only those rows are read in full.
	SearchIntents(ctx context.Context, q SearchQuery) ([]SearchHit, error)
	// BrowseIntents lists the intents a search with no words would find: every one the caller
	// may invoke that passes the filters, with the verification boost alone as its relevance
	// (the same boost SearchIntents applies), best first, at most q.Limit.
	BrowseIntents(ctx context.Context, q SearchQuery) ([]SearchHit, error)
	// IntentQuality gathers the finished calls of intents since `since` (at most 500 per intent,
	// newest first).
	IntentQuality(ctx context.Context, ids []string, since time.Time) (map[string]*Quality, error)
	// PublisherIntents lists a partner's listed intents (active, not archived), by handle, at
	// most limit.
	PublisherIntents(ctx context.Context, partnerID string, limit int) ([]*partners.Intent, error)
}

// New returns the search queries of st.
func New(st *store.Store) Search { return &queries{st: st, db: st.DB(), postgres: st.Postgres()} }

// queries is Search on the store's database.
type queries struct {
	st       *store.Store
	db       *bun.DB
	postgres bool
}

// SearchQuery asks for intents matching words.
type SearchQuery struct {
	Words     []string // lower-case search words, stop words removed
	Category  string   // "" for any
	AccountID string   // the caller: their own inactive intents are included
	Limit     int
	// FeeUnits, when not empty, keeps only intents priced in one of these units.
	FeeUnits []string
	// Verification, when set, keeps only intents of this verification status.
	Verification string
}

// filter applies the conditions every search and browse shares: never archived, active
// unless the caller's own, and the caller's filters. feeUnitOf is the fee unit's column
// expression (SQLite's narrow search table has none: it looks the intent up).
func (q SearchQuery) filter(sel *bun.SelectQuery, feeUnitOf string) *bun.SelectQuery {
	sel = sel.Where("pi.archived_at IS NULL").
		Where("(pi.is_active = ? OR pi.owner_id = ?)", true, q.AccountID)
	if q.Category != "" {
		sel = sel.Where("pi.category = ?", q.Category)
	}
	if len(q.FeeUnits) > 0 {
		sel = sel.Where(feeUnitOf+" IN (?)", bun.List(q.FeeUnits))
	}
	if q.Verification != "" {
		sel = sel.Where("pi.verification_status = ?", q.Verification)
	}
	return sel
}

// SearchHit is an intent and its relevance (higher is better; comparable within one query).
// Intent carries only searchColumns: what a search result shows, not an intent to edit.
type SearchHit struct {
	Intent    *partners.Intent
	Relevance float64
}

// searchColumns are the intent columns a search returns; the others (endpoint, payout
// addresses, JSON lists) are neither shown nor worth decoding for every result.
var searchColumns = []string{"id", "owner_id", "public_identifier", "name", "description", "category",
	"parameters_schema", "fee_rate", "fee_rate_unit", "is_active", "is_core_intent", "verification_status",
	"last_probe_at", "last_probe_result", "probe_failures"}

// verificationBoost makes verification a ranking input: at equal text relevance PREMIUM
// ranks above VERIFIED above UNVERIFIED, and a much better text match still wins.
const verificationBoost = `CASE pi.verification_status WHEN 'PREMIUM' THEN 1.3 WHEN 'VERIFIED' THEN 1.15 ELSE 1.0 END`

func (s *queries) SearchIntents(ctx context.Context, q SearchQuery) ([]SearchHit, error) {
	if len(q.Words) == 0 {
		return nil, nil
	}
	var rank *bun.SelectQuery
	handle := "pi.public_identifier"
	if s.postgres {
		// Relevance is first how many of the words an intent matches, then the weighted rank
		// (handle and name 1.0, category and description 0.6, samples 0.3), which stays below 1.
		tsq := strings.Join(q.Words, " | ")
		coverage := make([]string, len(q.Words))
		args := make([]any, 0, len(q.Words)+1)
		for i, w := range q.Words {
			coverage[i] = "(pi.search_doc @@ to_tsquery('english', ?))::int"
			args = append(args, w)
		}
		args = append(args, tsq)
		rank = s.db.NewSelect().TableExpr("partner_intents AS pi").
			ColumnExpr("pi.id").
			ColumnExpr("("+strings.Join(coverage, " + ")+" + ts_rank('{0.1, 0.3, 0.6, 1.0}', pi.search_doc, to_tsquery('english', ?), 1)) * "+verificationBoost+" AS rel", args...).
			Where("pi.search_doc @@ to_tsquery('english', ?)", tsq)
	} else {
		terms := make([]string, len(q.Words))
		for i, w := range q.Words {
			terms[i] = `"` + w + `"`
		}
		// bm25 is negative, lower is better; the column weights mirror PostgreSQL's A/B/C. Each
		// match joins intent_search (narrow, keyed by the FTS rowid), not partner_intents by
		// text id, which cost more than the search (migration discover_speed). Aliased pi, it
		// has the columns the filters below read; handle is public_identifier.
		handle = "pi.handle"
		rank = s.db.NewSelect().TableExpr("intent_fts AS f").
			Join("JOIN intent_search AS pi ON pi.doc = f.rowid").
			ColumnExpr("pi.intent_id AS id").
			ColumnExpr("-bm25(intent_fts, 10.0, 10.0, 4.0, 4.0, 2.0) * "+verificationBoost+" AS rel").
			Where("intent_fts MATCH ?", strings.Join(terms, " OR "))
	}
	feeUnit := "pi.fee_rate_unit"
	if !s.postgres {
		feeUnit = "(SELECT fu.fee_rate_unit FROM partner_intents AS fu WHERE fu.id = pi.intent_id)"
	}
	rank = q.filter(rank, feeUnit).OrderExpr("rel DESC, " + handle + " ASC").Limit(int64(q.Limit))
	var rows []struct {
		partners.Intent `bun:",extend"`
		Rel             float64 `bun:"rel,scanonly"`
	}
	err := s.db.NewSelect().Model(&rows).Column(searchColumns...).ColumnExpr("r.rel").
		Join("JOIN (?) AS r ON r.id = ?TableAlias.id", rank).
		OrderExpr("r.rel DESC, ?TableAlias.public_identifier ASC").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("search intents: %w", dberr.Normalize(err))
	}
	hits := make([]SearchHit, len(rows))
	for i := range rows {
		hits[i] = SearchHit{Intent: &rows[i].Intent, Relevance: rows[i].Rel}
	}
	return hits, nil
}

func (s *queries) BrowseIntents(ctx context.Context, q SearchQuery) ([]SearchHit, error) {
	var rows []struct {
		partners.Intent `bun:",extend"`
		Rel             float64 `bun:"rel,scanonly"`
	}
	sel := s.db.NewSelect().Model(&rows).ModelTableExpr("partner_intents AS pi")
	for _, c := range searchColumns {
		sel = sel.ColumnExpr("pi." + c)
	}
	sel = sel.ColumnExpr(verificationBoost + " AS rel")
	err := q.filter(sel, "pi.fee_rate_unit").OrderExpr("rel DESC, pi.public_identifier ASC").Limit(int64(q.Limit)).Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("browse intents: %w", dberr.Normalize(err))
	}
	hits := make([]SearchHit, len(rows))
	for i := range rows {
		hits[i] = SearchHit{Intent: &rows[i].Intent, Relevance: rows[i].Rel}
	}
	return hits, nil
}

// Quality is what real traffic and probes say of an intent over a window.
type Quality struct {
	Calls         int     // finished calls
	Succeeded     int     // of which the partner succeeded
	SchemaChecked int     // results checked against an outputSchema
	SchemaValid   int     // of which matched
	LatenciesMs   []int64 // of the calls that got an answer
}

func (s *queries) IntentQuality(ctx context.Context, ids []string, since time.Time) (map[string]*Quality, error) {
	const qualityCalls = 500
	out := make(map[string]*Quality, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var rows []struct {
		IntentID string `bun:"intent_id"`
		State    string `bun:"state"`
		Latency  *int64 `bun:"latency_ms"`
		Valid    *bool  `bun:"output_schema_valid"`
	}
	// Each intent's own latest calls, so that a busy intent does not crowd the others out.
	var query *bun.RawQuery
	if s.postgres {
		// One index walk (invocations_intent_idx, backwards) per intent.
		query = s.db.NewRaw(`SELECT r.intent_id, r.state, r.latency_ms, r.output_schema_valid
			FROM unnest(?::text[]) AS ids(id) CROSS JOIN LATERAL (
				SELECT intent_id, state, latency_ms, output_schema_valid FROM invocations
				WHERE intent_id = ids.id AND created_at >= ? AND finished_at IS NOT NULL
				ORDER BY created_at DESC LIMIT ?) AS r`, pgdialect.Array(ids), since, qualityCalls)
	} else {
		query = s.db.NewRaw(`SELECT intent_id, state, latency_ms, output_schema_valid FROM (
				SELECT intent_id, state, latency_ms, output_schema_valid,
					ROW_NUMBER() OVER (PARTITION BY intent_id ORDER BY created_at DESC) AS n
				FROM invocations WHERE intent_id IN (?) AND created_at >= ? AND finished_at IS NOT NULL)
			WHERE n <= ?`, bun.List(ids), since, qualityCalls)
	}
	if err := query.Scan(ctx, &rows); err != nil {
		return nil, dberr.Normalize(err)
	}
	for _, r := range rows {
		q := out[r.IntentID]
		if q == nil {
			q = &Quality{}
			out[r.IntentID] = q
		}
		q.Calls++
		if r.State == store.InvSucceeded {
			q.Succeeded++
		}
		if r.Valid != nil {
			q.SchemaChecked++
			if *r.Valid {
				q.SchemaValid++
			}
		}
		if r.Latency != nil {
			q.LatenciesMs = append(q.LatenciesMs, *r.Latency)
		}
	}
	return out, nil
}

func (s *queries) PublisherIntents(ctx context.Context, partnerID string, limit int) ([]*partners.Intent, error) {
	var out []*partners.Intent
	sel := s.db.NewSelect().Model(&out)
	for _, c := range searchColumns {
		sel = sel.ColumnExpr("?TableAlias.?", bun.Ident(c))
	}
	err := sel.Where("partner_id = ? AND is_active = ? AND archived_at IS NULL", partnerID, true).
		OrderExpr("public_identifier ASC").Limit(int64(limit)).Scan(ctx)
	return out, dberr.Normalize(err)
}

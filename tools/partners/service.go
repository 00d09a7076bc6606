// Package partners is the partner intent lifecycle: publish (one or a bundle), update,
// test, activate/deactivate, list and archive, as the partner_* tools; plus what dispatch
// builds on (intent lookup by handle, who may invoke an intent, the outbound client, the
// probe, the pseudonymous userId). One validator, one publishing rate limit and one Partner
// auto-creation flow serve every door: MCP, REST, the operator CLI and the portal.
package partners

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	partnerstore "github.com/switchboard-hq/switchboard/store/partners"
	"github.com/switchboard-hq/switchboard/store/reports"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/partners/outbound"
	"github.com/switchboard-hq/switchboard/tools/service"
)

// Config configures the partner service.
type Config struct {
	// Env is "test" or "production"; production refuses the publish tools.
	Env string
	// PublishLimit rows per PublishWindow per Partner (5 per hour).
	PublishLimit  int
	PublishWindow time.Duration
	// ProbeTimeout caps each negative-auth probe request (the intent's timeoutMs applies
	// when shorter). Default 10 s.
	ProbeTimeout time.Duration
	// PseudonymSecret keys the pairwise userId partners see (signing.Pseudonym). Required;
	// it must be stable across restarts and replicas.
	PseudonymSecret []byte
	// ReprobeFailures is how many re-probes in a row may fail (timeouts, 5xx) before an intent
	// is deactivated as unhealthy. Default 3.
	ReprobeFailures int
	// Notify tells a publisher (by account) what happened to an intent; nil: nobody is told.
	Notify func(ctx context.Context, accountID, subject, text string) error
}

// Service runs the partner tools.
type Service struct {
	cfg       Config
	store     *store.Store
	rows      partnerstore.Partners // the partners and their intents
	accounts  accounts.Accounts
	reports   reports.Reports
	clock     func() time.Time
	log       *slog.Logger
	out       *outbound.Client
	validator *Validator
}

// NewService builds the partner service on d's store, calling partners through out.
func NewService(cfg Config, d service.Deps, out *outbound.Client) (*Service, error) {
	if len(cfg.PseudonymSecret) == 0 {
		return nil, errors.New("partners: PseudonymSecret is required")
	}
	if cfg.PublishLimit <= 0 {
		cfg.PublishLimit = 5
	}
	if cfg.PublishWindow <= 0 {
		cfg.PublishWindow = time.Hour
	}
	if cfg.ProbeTimeout <= 0 {
		cfg.ProbeTimeout = 10 * time.Second
	}
	d = d.WithDefaults()
	return &Service{cfg: cfg, store: d.Store, accounts: accounts.New(d.Store), rows: partnerstore.New(d.Store), reports: reports.New(d.Store), clock: d.Now, log: d.Log, out: out, validator: NewValidator(out.Guard())}, nil
}

func (s *Service) now() time.Time { return s.clock().UTC().Truncate(time.Microsecond) }

// UserID is the opaque pseudonymous userId the partner partnerID sees for accountID.
func (s *Service) UserID(accountID, partnerID string) string {
	return signing.Pseudonym(s.cfg.PseudonymSecret, accountID, partnerID)
}

// Target is how to call an intent's endpoint: its URL, binding, tool name (the handle)
// and timeout.
func Target(row *partnerstore.Intent) outbound.Target {
	return outbound.Target{Endpoint: row.ToolEndpoint, Binding: signing.Binding(row.BindingType),
		ToolName: row.PublicIdentifier, Timeout: time.Duration(row.TimeoutMs) * time.Millisecond}
}

// CanInvoke says whether accountID may invoke row: an archived intent never; an inactive
// one only from its publisher's own account (to test it before activation). The error is
// NOT_FOUND, so that inactive intents of others stay invisible.
func CanInvoke(row *partnerstore.Intent, accountID string) error {
	switch {
	case row.ArchivedAt != nil:
		return tools.Errorf(tools.CodeNotFound, "%s is archived and can no longer be invoked", row.PublicIdentifier)
	case !row.IsActive && row.OwnerID != accountID:
		return tools.Errorf(tools.CodeNotFound, "no active intent %s; discover lists what can be invoked", row.PublicIdentifier)
	}
	return nil
}

// ProbeArgs are the args the probe and the endpoint test send when none are given: for a
// flat-fee intent {query} with the first sample query; otherwise sample args made from the
// parametersSchema (its required fields), or {} when none can be made. The source says
// which.
func ProbeArgs(row *partnerstore.Intent) (args []byte, source string) {
	if IsFlatFee(row.FeeRateUnit) {
		q := "test"
		if len(row.SampleQueries) > 0 {
			q = row.SampleQueries[0]
		}
		raw, _ := json.Marshal(map[string]string{"query": q})
		return raw, ArgsFlatFeeQuery
	}
	if a := SampleArgs(row.ParametersSchema); a != nil {
		return a, ArgsSample
	}
	return []byte("{}"), ArgsEmpty
}

// Probe runs the negative-auth probe against row's endpoint.
func (s *Service) Probe(ctx context.Context, row *partnerstore.Intent) *outbound.ProbeReport {
	t := Target(row)
	t.Timeout = min(t.Timeout, s.cfg.ProbeTimeout)
	args, _ := ProbeArgs(row)
	return s.out.Probe(ctx, t, signing.CallFields{IntentDefinitionID: row.ID, UserID: s.UserID(row.OwnerID, row.PartnerID), Args: args})
}

// Publish validates and creates intents for accountID in one transaction (all or none),
// creating its Partner on the first publish, within the publishing rate limit. It is the
// one publishing path of every door. In production it refuses.
func (s *Service) Publish(ctx context.Context, accountID string, ins []IntentInput) ([]Intent, error) {
	if s.cfg.Env == "production" {
		return nil, tools.Errorf(tools.CodeForbidden, "publishing is live on the test environment, not on production: publish, test and activate your intent there; production listings are inserted by the operator after verification (security review, controlled domain, source organisation)")
	}
	bundle := len(ins) > 1
	if len(ins) > MaxBundle {
		return nil, tools.Errorf(tools.CodeBadInput, "a bundle holds at most %d intents (the hourly publishing limit); split it and publish the rest later", MaxBundle)
	}
	rows, err := s.validate(ctx, ins)
	if err != nil {
		return nil, err
	}
	now := s.now()
	for _, r := range rows {
		r.CreatedAt, r.UpdatedAt = now, now
	}
	p, err := s.publishRows(ctx, accountID, rows, s.cfg.PublishLimit, now)
	if err != nil {
		return nil, s.publishError(err, ins, bundle, now)
	}
	out := make([]Intent, len(rows))
	for i, r := range rows {
		r.PartnerID = p.ID
		out[i] = IntentOf(r)
	}
	return out, nil
}

// validate checks every intent and the handles across the bundle.
func (s *Service) validate(ctx context.Context, ins []IntentInput) ([]*partnerstore.Intent, error) {
	bundle := len(ins) > 1
	rows := make([]*partnerstore.Intent, len(ins))
	seen := map[string]int{}
	for i := range ins {
		row, ps := s.validator.Intent(ctx, &ins[i])
		if j, dup := seen[ins[i].PublicIdentifier]; dup {
			ps = append(ps, Problem{"publicIdentifier", fmt.Sprintf("repeats the handle of intents[%d]", j)})
		}
		seen[ins[i].PublicIdentifier] = i
		if len(ps) > 0 {
			if !bundle {
				return nil, problemsError("the intent is invalid", ps, nil)
			}
			return nil, problemsError(fmt.Sprintf("intents[%d] (%s) is invalid, so nothing was published (a bundle is all or nothing)", i, ins[i].PublicIdentifier),
				ps, map[string]any{"index": i, "publicIdentifier": ins[i].PublicIdentifier})
		}
		rows[i] = row
	}
	return rows, nil
}

// publishRows creates rows for accountID's Partner in one transaction, all or none, within
// the publishing quota: at most limit rows created in any PublishWindow per Partner (0: no
// quota, the operator's insertion). The Partner's row is locked first, so that concurrent
// publishes of one Partner are counted one after the other.
func (s *Service) publishRows(ctx context.Context, accountID string, rows []*partnerstore.Intent, limit int, now time.Time) (*partnerstore.Partner, error) {
	var p *partnerstore.Partner
	err := s.store.InTx(ctx, func(ctx context.Context, q *store.Q) error {
		var err error
		if p, err = partnerstore.Lock(ctx, q, accountID, now); err != nil {
			return err
		}
		if limit > 0 {
			times, err := partnerstore.PublishedSince(ctx, q, p.ID, now.Add(-s.cfg.PublishWindow))
			if err != nil {
				return err
			}
			if over := len(times) + len(rows) - limit; over > 0 {
				// The request fits once the over-th oldest row in the window has left it.
				next := now.Add(s.cfg.PublishWindow)
				if over <= len(times) {
					next = times[over-1].Add(s.cfg.PublishWindow)
				}
				return &quotaError{Used: len(times), Limit: limit, Requested: len(rows), NextSlot: next.UTC()}
			}
		}
		return partnerstore.InsertIntents(ctx, q, p, rows)
	})
	return p, err
}

// quotaError says a publish would exceed the quota: Used rows were created in the window,
// and enough slots for the request open at NextSlot.
type quotaError struct {
	Used, Limit, Requested int
	NextSlot               time.Time
}

func (e *quotaError) Error() string {
	return fmt.Sprintf("publish quota: %d of %d used, %d requested, next slot at %s", e.Used, e.Limit, e.Requested, e.NextSlot.Format(time.RFC3339))
}

func (s *Service) publishError(err error, ins []IntentInput, bundle bool, now time.Time) error {
	nothing := ""
	if bundle {
		nothing = " The bundle was refused whole: nothing was published."
	}
	var he *partnerstore.HandlesTakenError
	var q *quotaError
	if errors.As(err, &q) {
		wait := q.NextSlot.Sub(now)
		secs := int((wait + time.Second - 1) / time.Second)
		e := tools.Errorf(tools.CodeRateLimited,
			"publishing is limited to %d intents per hour per Partner: %d were published in the last hour and this request adds %d.%s The next slot opens at %s (in %d s); retry then, or publish fewer intents",
			q.Limit, q.Used, q.Requested, nothing, q.NextSlot.Format(time.RFC3339), secs)
		e.RetryAfter = time.Duration(max(secs, 1)) * time.Second
		return e.WithDetails(map[string]any{"limit": q.Limit, "used": q.Used, "requested": q.Requested, "nextSlotAt": q.NextSlot.Format(time.RFC3339)})
	}
	if errors.As(err, &he) {
		var idx []int
		for i, in := range ins {
			for _, h := range he.Handles {
				if in.PublicIdentifier == h {
					idx = append(idx, i)
				}
			}
		}
		return tools.Errorf(tools.CodeConflict, "handle %s is already taken (handles are unique forever, archived ones included); choose another.%s",
			strings.Join(he.Handles, ", "), nothing).WithDetails(map[string]any{"handles": he.Handles, "indexes": idx})
	}
	if errors.Is(err, store.ErrConflict) {
		return tools.Errorf(tools.CodeConflict, "a handle was taken at the same moment; retry with another handle.%s", nothing).Wrap(err)
	}
	return err
}

// Insert is the operator's production insertion: one intent for ownerID through the same
// validator and Partner creation, without the publishing limit or the production refusal,
// with the given verification status and core flag. The row starts inactive.
func (s *Service) Insert(ctx context.Context, ownerID string, in IntentInput, status string, core bool) (Intent, error) {
	if !slices.Contains(VerificationStatuses, status) {
		return Intent{}, tools.Errorf(tools.CodeBadInput, "verificationStatus must be one of %v", VerificationStatuses)
	}
	if _, err := s.accounts.ByID(ctx, ownerID); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return Intent{}, tools.Errorf(tools.CodeNotFound, "no account %q in this database; the partner signs up here first", ownerID)
		}
		return Intent{}, err
	}
	rows, err := s.validate(ctx, []IntentInput{in})
	if err != nil {
		return Intent{}, err
	}
	row := rows[0]
	now := s.now()
	row.CreatedAt, row.UpdatedAt, row.VerificationStatus, row.IsCoreIntent = now, now, status, core
	p, err := s.publishRows(ctx, ownerID, rows, 0, now)
	if err != nil {
		return Intent{}, s.publishError(err, []IntentInput{in}, false, now)
	}
	row.PartnerID = p.ID
	return IntentOf(row), nil
}

// Lookup finds an intent by id or @handle, whoever owns it (operator commands).
func (s *Service) Lookup(ctx context.Context, ref string) (*partnerstore.Intent, error) {
	var row *partnerstore.Intent
	var err error
	if strings.HasPrefix(ref, "@") {
		row, err = s.rows.IntentByHandle(ctx, ref)
	} else {
		row, err = s.rows.Intent(ctx, ref)
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil, tools.Errorf(tools.CodeNotFound, "no intent %q", ref)
	}
	return row, err
}

// owned returns accountID's intent id; another account's intent is NOT_FOUND.
func (s *Service) owned(ctx context.Context, accountID, id string) (*partnerstore.Intent, error) {
	row, err := s.rows.OwnedIntent(ctx, accountID, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, tools.Errorf(tools.CodeNotFound, "no intent %q among yours; partner_list_intents shows your intent ids", id)
	}
	return row, err
}

// SetVerificationStatus is the operator's command to set an intent's verificationStatus.
func (s *Service) SetVerificationStatus(ctx context.Context, ref, status string) (Intent, error) {
	if !slices.Contains(VerificationStatuses, status) {
		return Intent{}, tools.Errorf(tools.CodeBadInput, "verificationStatus must be one of %v", VerificationStatuses)
	}
	return s.mutate(ctx, byOwner, func(ctx context.Context) (*partnerstore.Intent, error) { return s.Lookup(ctx, ref) },
		func(row *partnerstore.Intent) (bool, error) {
			changed := row.VerificationStatus != status
			row.VerificationStatus = status
			return changed, nil
		})
}

package partners

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/switchboard-hq/switchboard/store"
	partnerstore "github.com/switchboard-hq/switchboard/store/partners"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/partners/outbound"
	"github.com/switchboard-hq/switchboard/tools/webhooks"
)

// List returns accountID's Partner (nil before the first publish) and intents.
func (s *Service) List(ctx context.Context, accountID string, includeArchived bool) (ListOutput, error) {
	out := ListOutput{Intents: []Intent{}}
	p, err := s.rows.ByAccount(ctx, accountID)
	switch {
	case err == nil:
		out.Partner = PartnerOf(p)
	case !errors.Is(err, store.ErrNotFound):
		return out, err
	}
	rows, err := s.rows.IntentsByOwner(ctx, accountID, includeArchived)
	if err != nil {
		return out, err
	}
	for _, r := range rows {
		out.Intents = append(out.Intents, IntentOf(r))
	}
	return out, nil
}

// Archive soft-deletes accountID's intent id.
func (s *Service) Archive(ctx context.Context, accountID, id string) (Intent, error) {
	return s.mutate(ctx, byOwner, func(ctx context.Context) (*partnerstore.Intent, error) { return s.owned(ctx, accountID, id) },
		func(row *partnerstore.Intent) (bool, error) {
			if row.ArchivedAt != nil {
				return false, nil
			}
			now := s.now()
			row.ArchivedAt, row.IsActive = &now, false
			return true, nil
		})
}

// SetActive activates row (after the probe passes) or deactivates it. The activation is
// written only if the row still has the endpoint that was probed.
func (s *Service) SetActive(ctx context.Context, row *partnerstore.Intent, active bool) (SetActiveOutput, error) {
	if !active {
		in, err := s.mutate(ctx, byOwner, func(ctx context.Context) (*partnerstore.Intent, error) { return s.rows.Intent(ctx, row.ID) },
			func(r *partnerstore.Intent) (bool, error) {
				changed := r.IsActive
				r.IsActive = false
				return changed, nil
			})
		return SetActiveOutput{Intent: in}, err
	}
	for range 3 {
		if row.ArchivedAt != nil {
			return SetActiveOutput{}, tools.Errorf(tools.CodeConflict, "%s is archived and cannot be activated; publish a new intent", row.PublicIdentifier)
		}
		if row.IsActive {
			return SetActiveOutput{Intent: IntentOf(row)}, nil
		}
		rep := s.Probe(ctx, row)
		switch rep.Verdict {
		case outbound.ProbeFail:
			return SetActiveOutput{}, tools.Errorf(tools.CodeConflict, "activation refused: %s. The intent stays inactive; fix the endpoint, check it with partner_test_endpoint, then retry", rep.Reason).
				WithDetails(map[string]any{"probe": rep})
		case outbound.ProbeInconclusive:
			return SetActiveOutput{}, tools.Errorf(tools.CodeUnavailable, "activation inconclusive, retry: %s. The intent stays inactive", strings.TrimPrefix(rep.Reason, "inconclusive, retry: ")).
				WithDetails(map[string]any{"probe": rep})
		}
		probed := row.ToolEndpoint
		row.IsActive, row.UpdatedAt, row.DeactivatedReason = true, s.now(), ""
		err := s.update(ctx, row, false, byOwner)
		if errors.Is(err, partnerstore.ErrStale) {
			fresh, err := s.rows.Intent(ctx, row.ID)
			if err != nil {
				return SetActiveOutput{}, err
			}
			if fresh.ToolEndpoint == probed && fresh.ArchivedAt == nil && !fresh.IsActive {
				fresh.IsActive, fresh.UpdatedAt, fresh.DeactivatedReason = true, s.now(), ""
				if err := s.update(ctx, fresh, false, byOwner); err == nil {
					s.rows.RecordProbe(ctx, fresh.ID, "probe PASS (activation)", 0, s.now())
					return SetActiveOutput{Intent: IntentOf(fresh), Probe: rep}, nil
				} else if !errors.Is(err, partnerstore.ErrStale) {
					return SetActiveOutput{}, err
				}
				fresh, err = s.rows.Intent(ctx, row.ID)
				if err != nil {
					return SetActiveOutput{}, err
				}
			}
			row = fresh
			continue
		}
		if err != nil {
			return SetActiveOutput{}, err
		}
		if err := s.rows.RecordProbe(ctx, row.ID, "probe PASS (activation)", 0, s.now()); err != nil {
			return SetActiveOutput{}, err
		}
		row.ProbeFailures, row.LastProbeResult = 0, "probe PASS (activation)"
		return SetActiveOutput{Intent: IntentOf(row), Probe: rep}, nil
	}
	return SetActiveOutput{}, tools.Errorf(tools.CodeConflict, "the intent kept changing during activation; retry")
}

// Update applies the editable fields of in to accountID's intent: the fields are checked once,
// then applied to the current row (again when another writer got there first).
func (s *Service) Update(ctx context.Context, accountID string, in UpdateInput) (UpdateOutput, error) {
	e, err := s.checkUpdate(ctx, in)
	if err != nil {
		return UpdateOutput{}, err
	}
	var out UpdateOutput
	intent, err := s.mutate(ctx, byUpdate, func(ctx context.Context) (*partnerstore.Intent, error) { return s.owned(ctx, accountID, in.IntentID) },
		func(row *partnerstore.Intent) (bool, error) {
			out = UpdateOutput{}
			return true, s.applyUpdate(ctx, row, e, &out)
		})
	if err != nil {
		return UpdateOutput{}, err
	}
	out.Intent = intent
	out.Notice = strings.TrimSpace(out.Notice)
	return out, nil
}

// edits are an update's checked values.
type edits struct {
	in      UpdateInput
	name    string
	desc    string
	queries []string
}

// checkUpdate refuses immutable fields, an empty update, and invalid values, before any row is
// read.
func (s *Service) checkUpdate(ctx context.Context, in UpdateInput) (edits, error) {
	e := edits{in: in}
	if names := in.immutables(); len(names) > 0 {
		return e, tools.Errorf(tools.CodeBadInput, "%s cannot be changed after publish (immutable); the editable fields are name, description, toolEndpoint, timeoutMs, feeRate and sampleQueries. To change %s, publish a new intent (and archive this one)%s",
			strings.Join(names, ", "), strings.Join(names, ", "), activeHint(names)).WithDetails(map[string]any{"immutableFields": names})
	}
	if in.Name == nil && in.Description == nil && in.ToolEndpoint == nil && in.TimeoutMs == nil && in.FeeRate == nil && in.SampleQueries == nil {
		return e, tools.Errorf(tools.CodeBadInput, "nothing to update: give at least one of name, description, toolEndpoint, timeoutMs, feeRate, sampleQueries")
	}
	var ps []Problem
	add := func(p *Problem) {
		if p != nil {
			ps = append(ps, *p)
		}
	}
	var p *Problem
	if in.Name != nil {
		e.name, p = text("name", *in.Name, MaxNameLen, false)
		add(p)
	}
	if in.Description != nil {
		e.desc, p = text("description", *in.Description, MaxDescriptionLen, true)
		add(p)
	}
	if in.ToolEndpoint != nil {
		add(s.validator.Endpoint(ctx, *in.ToolEndpoint))
	}
	if in.TimeoutMs != nil {
		add(Timeout(*in.TimeoutMs))
	}
	if in.SampleQueries != nil {
		e.queries, p = SampleQueries(*in.SampleQueries)
		add(p)
	}
	if len(ps) > 0 {
		return e, problemsError("the update is invalid", ps, nil)
	}
	return e, nil
}

// applyUpdate applies checked edits to row, with the rules that depend on the row: an archived
// intent is frozen, a fee needs payout addresses and fits the unit, a new host loses its
// verification, and an active intent's new endpoint must pass the probe or is deactivated.
func (s *Service) applyUpdate(ctx context.Context, row *partnerstore.Intent, e edits, out *UpdateOutput) error {
	in := e.in
	if row.ArchivedAt != nil {
		return tools.Errorf(tools.CodeConflict, "%s is archived and cannot be updated", row.PublicIdentifier)
	}
	if in.FeeRate != nil {
		if p := Fee(in.FeeRate.Decimal, row.FeeRateUnit); p != nil {
			return problemsError("the update is invalid", []Problem{*p}, nil)
		}
		if in.FeeRate.IsPositive() && len(row.PayoutAddresses) == 0 {
			return problemsError("the update is invalid", []Problem{{"feeRate", "this intent has no payoutAddresses, so it can only be free (0); publish a new intent with payout addresses to charge"}}, nil)
		}
		row.FeeRate = in.FeeRate.String()
	}
	if in.Name != nil {
		row.Name = e.name
	}
	if in.Description != nil {
		row.Description = e.desc
	}
	if in.TimeoutMs != nil {
		row.TimeoutMs = *in.TimeoutMs
	}
	if in.SampleQueries != nil {
		row.SampleQueries = e.queries
	}
	if in.ToolEndpoint == nil || *in.ToolEndpoint == row.ToolEndpoint {
		return nil
	}
	if hostOf(*in.ToolEndpoint) != hostOf(row.ToolEndpoint) && row.VerificationStatus != StatusUnverified {
		out.Notice = fmt.Sprintf("the endpoint moved to another host, so verificationStatus went from %s to UNVERIFIED (verification vouches for a host); ask the operator to verify the new one. ", row.VerificationStatus)
		row.VerificationStatus = StatusUnverified
	}
	row.ToolEndpoint = *in.ToolEndpoint
	if row.IsActive {
		out.Probe = s.Probe(ctx, row)
		if !out.Probe.Passed() {
			row.IsActive, out.Deactivated = false, true
			out.Notice += "The new endpoint did not pass the negative-auth probe, so the intent was deactivated: " + out.Probe.Reason +
				". Fix the endpoint, then activate it again with partner_set_active."
		}
	}
	return nil
}

func activeHint(names []string) string {
	var hints []string
	if slices.Contains(names, "isActive") {
		hints = append(hints, "isActive is changed with partner_set_active")
	}
	if slices.Contains(names, "verificationStatus") {
		hints = append(hints, "verificationStatus is set by the operator")
	}
	if len(hints) == 0 {
		return ""
	}
	return "; " + strings.Join(hints, "; ")
}

func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return strings.ToLower(u.Hostname())
}

// What turned an intent on or off, as intent.* events name it.
const (
	byOwner   = "owner"   // partner_set_active, the portal, archiving
	byUpdate  = "update"  // a new endpoint failed the negative-auth probe
	byReprobe = "reprobe" // the periodic re-probe failed
)

// update writes row (UpdateIntent) with, when its activity changed from wasActive, the
// intent.activated or intent.deactivated event for its owner in the same transaction.
func (s *Service) update(ctx context.Context, row *partnerstore.Intent, wasActive bool, by string) error {
	if row.IsActive == wasActive {
		return s.rows.UpdateIntent(ctx, row)
	}
	typ, data := webhooks.IntentActivated, webhooks.IntentData{IntentID: row.ID, Handle: row.PublicIdentifier, By: by}
	if !row.IsActive {
		typ, data.Reason = webhooks.IntentDeactivated, row.DeactivatedReason
		switch {
		case row.ArchivedAt != nil:
			data.Reason = "archived"
		case data.Reason == "" && by == byUpdate:
			data.Reason = "the new endpoint did not pass the negative-auth probe"
		}
	}
	ev, err := webhooks.New(typ, row.OwnerID, s.now(), data)
	if err != nil {
		return err
	}
	return s.rows.UpdateIntent(ctx, row, ev)
}

// mutate reads a row, applies change (which reports whether anything changed) and writes
// it, re-reading and re-applying when another writer got there first; by names what changed
// it in an intent.* event.
func (s *Service) mutate(ctx context.Context, by string, load func(context.Context) (*partnerstore.Intent, error), change func(*partnerstore.Intent) (bool, error)) (Intent, error) {
	for range 3 {
		row, err := load(ctx)
		if err != nil {
			return Intent{}, err
		}
		wasActive := row.IsActive
		changed, err := change(row)
		if err != nil {
			return Intent{}, err
		}
		if !changed {
			return IntentOf(row), nil
		}
		row.UpdatedAt = s.now()
		err = s.update(ctx, row, wasActive, by)
		if errors.Is(err, partnerstore.ErrStale) {
			continue
		}
		if err != nil {
			return Intent{}, err
		}
		return IntentOf(row), nil
	}
	return Intent{}, tools.Errorf(tools.CodeConflict, "the intent is being changed by another request; retry")
}

package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/partners/outbound"
)

// RecoveryHorizon is how long after its dispatch an idempotent call is sent again to learn
// its outcome; later, a fresh answer would say nothing about the original call.
const RecoveryHorizon = 10 * time.Minute

// Recover concludes every invocation left dispatching past its deadline by a process that
// crashed or lost its database. An idempotent call is sent again with the same requestId
// (the partner dedupes on it; being idempotent, running again is harmless) and its real
// outcome settled or refunded as a normal call's would be. A write is never sent again: it
// ends outcome_unknown, refunded, with an answer that says the partner may have acted. Several
// replicas may run Recover at once: each invocation is concluded by exactly one of them.
func (s *Service) Recover(ctx context.Context) (n int, err error) {
	// What this replica's journal holds lands first: those writes have known outcomes.
	replayed, err := s.billing.ReplayJournal(ctx)
	if err != nil {
		return replayed, fmt.Errorf("replay the journal: %w", err)
	}
	stuck, err := s.invocations.Stuck(ctx, s.now().UTC(), 100)
	if err != nil {
		return 0, err
	}
	n = replayed
	defer func() { // tasks whose calls concluded without them, these included
		if _, terr := s.RecoverTasks(ctx); terr != nil && err == nil {
			err = terr
		}
	}()
	for _, inv := range stuck {
		err := s.recoverOne(ctx, inv)
		switch {
		case err == nil:
			n++
		case errors.Is(err, billing.ErrAlreadyFinished):
			// another replica concluded it
		default:
			return n, fmt.Errorf("recover %s: %w", inv.RequestID, err)
		}
	}
	return n, nil
}

func (s *Service) recoverOne(ctx context.Context, inv *store.Invocation) error {
	intent, err := s.partners.Intent(ctx, inv.IntentID)
	if err != nil {
		return err
	}
	cl := s.plan(intent, inv.AccountID)
	cl.args, cl.quote = []byte(inv.Args), billing.QuoteOf(inv.Price)
	cl.bill = s.billing.Reopen(inv, cl.money.Durability)
	age := s.now().UTC().Sub(*inv.DispatchedAt)
	// A task's call is never sent again: a long job run a second time by the sweeper would
	// hold it for as long again; its replica died, so it is refunded.
	task, terr := s.tasks.ByRequest(ctx, inv.RequestID)
	if terr != nil && !errors.Is(terr, store.ErrNotFound) {
		return terr
	}
	if terr == nil {
		cl.taskID = task.ID
	}
	if cl.write || age > RecoveryHorizon || terr == nil {
		return s.unknown(ctx, inv, cl, age)
	}
	fields := signing.CallFields{
		RequestID: inv.RequestID, IntentDefinitionID: intent.ID,
		UserID: cl.userID,
		Args:   json.RawMessage(inv.Args),
	}
	answer, callErr := s.client.Call(ctx, cl.target, fields)
	attempts := []store.Attempt{{Detail: "recovery: sent again with the same requestId; " + attemptDetail(answer, callErr), At: s.now().UTC()}}
	if callErr != nil && !outbound.IsBlocked(callErr) {
		// Still no answer: the outcome stays unknown rather than guessed.
		return s.unknown(ctx, inv, cl, age, attempts...)
	}
	_, err = s.conclude(ctx, inv, cl, answer, callErr, attempts)
	var te *tools.Error
	if errors.As(err, &te) { // a failure, recorded and refunded
		return nil
	}
	return err
}

// unknown ends inv as outcome_unknown, refunding its reservation, with an answer that tells
// the caller the truth.
func (s *Service) unknown(ctx context.Context, inv *store.Invocation, cl *call, age time.Duration, attempts ...store.Attempt) error {
	h := cl.intent.PublicIdentifier
	e := tools.Errorf(tools.CodeUpstream,
		"outcome unknown: %s may have executed request %s (it dedupes on that requestId), but Switchboard holds no record of its answer; nothing was charged. Check with the partner before trying again",
		h, inv.RequestID).
		WithDetails(map[string]any{"handle": h, "requestId": inv.RequestID, "outcome": "unknown",
			"charge": cl.quote.Refunded()})
	why := "write category: never sent again"
	switch {
	case cl.taskID != "":
		why = "a task whose replica stopped: never sent again"
	case !cl.write:
		why = fmt.Sprintf("no answer on recovery (%s after dispatch)", age.Round(time.Second))
	}
	err := s.fail(ctx, inv, cl, store.InvOutcomeUnknown, nil, attempts, e,
		"abandoned dispatch concluded by the sweeper: outcome unknown ("+why+"); reservation refunded")
	var te *tools.Error
	if errors.As(err, &te) {
		return nil
	}
	return err
}

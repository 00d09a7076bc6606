package billing

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/switchboard-hq/switchboard/store"
)

// durable is the recorder of a write or a paid call: its hold and start committed before
// dispatch (Open), its outcome committed before its caller is answered, through the journal
// while the database refuses it. A paid call's escrow is concluded here, by the outcome that
// committed: every paid call is durable (recorderOf).
type durable struct{}

func (durable) conclude(ctx context.Context, t *Ticket, e Ending) error {
	err := t.svc.commitDurable(ctx, t, e)
	if t.escrow == nil {
		return err
	}
	s, id := t.svc, t.record.RequestID
	// A paid call's escrow is concluded by its recorded outcome: e's when it committed, the
	// record's when another process concluded the call first; otherwise the outcome is not
	// recorded yet, and the payment sweeper concludes the escrow once it is.
	success := e.Outcome.State == store.InvSucceeded
	switch {
	case err == nil:
	case errors.Is(err, ErrAlreadyFinished):
		inv, rerr := s.invocations.ByID(ctx, id)
		if rerr != nil {
			return err
		}
		success = inv.State == store.InvSucceeded
	default:
		return err
	}
	s.concludeEscrow(ctx, t.escrow, id, success)
	return err
}

func (durable) kept(err error) string {
	if errors.Is(err, errJournaled) {
		return "it is kept in this replica's journal and recorded (and charged, if it succeeded) as soon as the database is back"
	}
	return sweeperKeeps
}

// errJournaled marks an outcome the database did not take that waits in the journal.
var errJournaled = errors.New("kept in the journal")

// journaled is a durable call's outcome on its way to the database. Its JSON is the journal's
// file format: replicas of the previous release read it (and ignore what they do not know;
// an entry written by one of them tells the caller alone of its call, as a paid call's
// conclusion of its own would).
type journaled struct {
	Invocation   store.Invocation
	Attempts     []store.Attempt
	Settlement   *Settlement
	RefundReason string
	Detail       string
	// What the call's events are built from again when it is replayed.
	Partner Partner `json:",omitzero"`
	Paid    bool    `json:",omitempty"`
	Swept   bool    `json:",omitempty"`
}

// events are the webhook events of a journaled outcome, built again when it is replayed (for
// the accounts listens says listen, as when it was concluded).
func (e journaled) events(listens func(string) bool) ([]*store.WebhookEvent, error) {
	inv := e.Invocation
	return callEvents(&inv, Ending{Settlement: e.Settlement, Partner: e.Partner, Paid: e.Paid}, e.Swept, listens)
}

// commitDurable commits t's ending e (a transaction of outcomeIn's, one for each attempt)
// before its caller is answered. When the database cannot take it, the outcome (as its
// journaled entry) goes to the journal (fsynced) before anything else, so neither the outage
// nor a crash during it loses what the partner answered: the entry stays while the database
// is away, for ReplayJournal, and leaves once the database has the outcome (or another
// process's conclusion). The database is retried for up to recordWait before the caller is
// told it is not recorded yet. (A crash between the partner's answer and the first commit
// attempt loses the answer, as one before the journal's fsync would: its caller was told
// nothing, and the sweeper concludes the call outcome_unknown.)
func (s *Service) commitDurable(ctx context.Context, t *Ticket, e Ending) error {
	inv, events, err := t.end(ctx, e)
	if err != nil {
		return err
	}
	id, journal := inv.RequestID, s.rec.Journal
	entry := journaled{Invocation: inv, Attempts: e.Attempts, Settlement: e.Settlement, RefundReason: e.Detail,
		Detail: e.Detail, Partner: e.Partner, Paid: e.Paid, Swept: t.hold == nil}
	deadline := time.Now().Add(recordWait)
	inJournal := false
	for attempt := 1; ; attempt++ {
		row := inv // each attempt writes from the record as it was concluded
		outcome := s.outcomeIn(&row, e.Attempts, e.Settlement, e.Detail, events)
		err := s.store.InTx(ctx, outcome)
		if !store.IsUnavailable(err) {
			if inJournal {
				if derr := journal.Delete(id); derr != nil {
					s.log.ErrorContext(ctx, "journal: remove a recorded outcome", "request_id", id, "err", derr)
				}
			}
			return err
		}
		if !inJournal && journal != nil {
			if jerr := journal.Put(id, entry); jerr != nil {
				s.log.ErrorContext(ctx, "journal a write's outcome", "request_id", id, "err", jerr)
			} else {
				inJournal = true
			}
		}
		if time.Now().After(deadline) {
			if inJournal {
				return fmt.Errorf("%w: %w", errJournaled, err)
			}
			return err
		}
		time.Sleep(min(time.Duration(attempt)*100*time.Millisecond, time.Second))
	}
}

// ReplayJournal commits the outcomes this replica's journal holds (durable calls answered by
// their partners whose records did not reach the database: an outage, a crash) and reports
// how many landed. The sweeper runs it first, so a call the journal holds is never concluded
// as outcome unknown by this replica.
func (s *Service) ReplayJournal(ctx context.Context) (int, error) {
	if s.rec.Journal == nil {
		return 0, nil
	}
	ids, err := s.rec.Journal.IDs()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range ids {
		ok, err := s.replayOne(ctx, id)
		if err != nil {
			return n, err
		}
		if ok {
			n++
		}
	}
	return n, nil
}

// replayOne commits journal entry id; ok when its outcome is now the recorded one.
func (s *Service) replayOne(ctx context.Context, id string) (ok bool, err error) {
	journal := s.rec.Journal
	var e journaled
	if err := journal.Get(id, &e); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil // another process replayed it
		}
		// Unreadable (a damaged disk): set aside for the operator, so that it does not stop
		// every later sweep; the sweeper concludes the invocation as for a lost journal.
		s.log.ErrorContext(ctx, "journal: an entry cannot be read; set aside", "request_id", id, "err", err)
		return false, journal.SetAside(id)
	}
	inv := e.Invocation
	events, err := e.events(s.listens(ctx))
	if err != nil {
		return false, err
	}
	err = s.store.InTx(ctx, s.outcomeIn(&inv, e.Attempts, e.Settlement, e.Detail, events))
	switch {
	case store.IsUnavailable(err):
		return false, err
	case errors.Is(err, ErrAlreadyFinished):
		s.log.WarnContext(ctx, "journal: the invocation was concluded elsewhere first; its recorded outcome stands", "request_id", id)
	case err != nil:
		s.log.ErrorContext(ctx, "journal: replay an outcome", "request_id", id, "err", err)
	default:
		s.log.InfoContext(ctx, "journal: outcome recorded", "request_id", id, "state", inv.State)
		ok = true
	}
	return ok, journal.Delete(id)
}

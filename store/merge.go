package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"
)

// A batch's write-only jobs (a call recorded on a budget lease: inserts, balance deltas and a
// draw from the lease) are merged: their rows go in one INSERT per table, their deltas in one
// UPDATE per balance row, their draws in one checked UPDATE. A batch of N such jobs then
// costs a few statements and two round trips instead of several of each per job, which is
// what bounds an invocation's database cost under load.

// errNotMerged is a merged job reaching for something a merge cannot hold (a read, a
// conditional write, any other statement): the job runs alone instead.
var errNotMerged = errors.New("this write cannot be merged with others")

// merged gathers the writes of write-only jobs.
type merged struct {
	invocations  []Invocation
	reservations []Reservation
	ledger       []LedgerEntry
	events       []eventRow
	credit       map[string]creditChange
	keys         map[string]keyChange
	draws        map[string]int64 // reservation (lease) -> worst micro-USD drawn out of it
}

type creditChange struct {
	d  CreditDelta
	at time.Time
}

type keyChange struct{ spent, held int64 }

func newMerged() *merged {
	return &merged{credit: map[string]creditChange{}, keys: map[string]keyChange{}, draws: map[string]int64{}}
}

// add folds o (one job's writes) into m.
func (m *merged) add(o *merged) {
	m.invocations = append(m.invocations, o.invocations...)
	m.reservations = append(m.reservations, o.reservations...)
	m.ledger = append(m.ledger, o.ledger...)
	m.events = append(m.events, o.events...)
	for id, c := range o.credit {
		m.adjustCredit(id, c.d, c.at)
	}
	for id, k := range o.keys {
		m.adjustKey(id, k.spent, k.held)
	}
	for id, w := range o.draws {
		m.draws[id] += w
	}
}

func (m *merged) adjustCredit(accountID string, d CreditDelta, at time.Time) {
	c := m.credit[accountID]
	c.d.Available, c.d.Reserved, c.d.Held = c.d.Available+d.Available, c.d.Reserved+d.Reserved, c.d.Held+d.Held
	if at.After(c.at) {
		c.at = at
	}
	m.credit[accountID] = c
}

func (m *merged) adjustKey(keyID string, spent, held int64) {
	k := m.keys[keyID]
	k.spent, k.held = k.spent+spent, k.held+held
	m.keys[keyID] = k
}

// statements renders m: draws is the checked UPDATE of the leases (empty when there are
// none), which must change exactly len(m.draws) rows; writes are the rest, in the order
// every writer locks rows (balance rows by account, then key rows by key).
func (m *merged) statements(s *Store, tx bun.Tx) (draws string, writes []string, err error) {
	render := func(q bun.Query) (string, error) {
		text, err := q.AppendQuery(s.db.QueryGen(), nil)
		return string(text), err
	}
	if len(m.draws) > 0 {
		ids := slices.Sorted(maps.Keys(m.draws))
		rows := make([]string, len(ids))
		args := make([]any, 0, 2*len(ids))
		for i, id := range ids {
			rows[i] = "SELECT ? AS id, CAST(? AS BIGINT) AS d"
			args = append(args, id, m.draws[id])
		}
		args = append(args, ReservationOpen)
		draws, err = render(tx.NewRaw(`UPDATE reservations SET worst_micro = worst_micro - v.d
			FROM (`+strings.Join(rows, " UNION ALL ")+`) AS v
			WHERE reservations.request_id = v.id AND reservations.state = ? AND reservations.worst_micro >= v.d`, args...))
		if err != nil {
			return "", nil, err
		}
	}
	add := func(q bun.Query) {
		if err != nil {
			return
		}
		var text string
		if text, err = render(q); err == nil {
			writes = append(writes, text)
		}
	}
	if len(m.reservations) > 0 {
		add(tx.NewInsert().Model(&m.reservations).Returning("NULL"))
	}
	if len(m.invocations) > 0 {
		add(tx.NewInsert().Model(&m.invocations).Returning("NULL"))
	}
	for _, id := range slices.Sorted(maps.Keys(m.credit)) {
		c := m.credit[id]
		add(adjustCredit(tx, id, c.d, c.at))
	}
	for _, id := range slices.Sorted(maps.Keys(m.keys)) {
		if k := m.keys[id]; k.spent != 0 || k.held != 0 {
			add(adjustKeySpend(tx, id, k.spent, k.held))
		}
	}
	if len(m.ledger) > 0 {
		add(tx.NewInsert().Model(&m.ledger).Returning("NULL"))
	}
	if len(m.events) > 0 {
		add(insertEvents(tx, m.events))
	}
	return draws, writes, err
}

// errDrawsMissed is a merged draw that found its lease closed or short: the merge is undone
// and its jobs run alone, each taking its own way around.
var errDrawsMissed = errors.New("a merged draw missed its lease")

// writeMerged writes m under savepoint sp, undoing all of it when any part fails: a draw
// missed its lease (errDrawsMissed) or a statement failed.
func (s *Store) writeMerged(ctx context.Context, tx bun.Tx, m *merged, sp string) error {
	draws, writes, err := m.statements(s, tx)
	if err != nil {
		return err
	}
	undo := func(cause error) error {
		if IsUnavailable(cause) {
			return cause
		}
		if _, err := tx.ExecContext(ctx, "ROLLBACK TO "+sp); err != nil {
			return err
		}
		return cause
	}
	// On PostgreSQL each step is one round trip (its result is its last statement's).
	exec := func(stmts ...string) (sql.Result, error) {
		if s.postgres {
			return tx.ExecContext(ctx, strings.Join(stmts, ";\n"))
		}
		var res sql.Result
		for _, st := range stmts {
			var err error
			if res, err = tx.ExecContext(ctx, st); err != nil {
				return nil, err
			}
		}
		return res, nil
	}
	first := []string{"SAVEPOINT " + sp}
	if draws != "" {
		first = append(first, draws)
	}
	res, err := exec(first...)
	if err != nil {
		return undo(err)
	}
	if draws != "" {
		if n, err := res.RowsAffected(); err != nil || n != int64(len(m.draws)) {
			return undo(errors.Join(errDrawsMissed, err))
		}
	}
	if _, err := exec(append(writes, "RELEASE "+sp)...); err != nil {
		return undo(err)
	}
	return nil
}

// notMerged is what a Q method that cannot merge returns while its Q merges.
func notMerged(what string) error {
	return fmt.Errorf("%w: %s", errNotMerged, what)
}

package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/ledger"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

// recorder is a store.Recorder that keeps what it is handed.
type recorder struct {
	credit map[string]store.CreditDelta
	draws  map[string]int64
	events []string
}

func (r *recorder) Invocation(store.Invocation)         {}
func (r *recorder) WebhookEvent(ev store.WebhookEvent)  { r.events = append(r.events, ev.ID) }
func (r *recorder) LedgerRows(...ledger.Entry)          {}
func (r *recorder) AdjustKeySpend(string, int64, int64) {}
func (r *recorder) AdjustCredit(id string, d store.CreditDelta, _ time.Time) {
	r.credit[id] = d
}
func (r *recorder) DrawReservation(id string, worst int64) { r.draws[id] += worst }

// A recording Q hands a write-only job's writes to its recorder and writes nothing; a read is
// refused with ErrNotRecorded, so the job can run in a transaction instead.
func TestRecordingTakesWritesAndRefusesReads(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Now().UTC()
		billingAccount(t, s, "r1")
		r := &recorder{credit: map[string]store.CreditDelta{}, draws: map[string]int64{}}
		q := s.Recording(r)
		if err := q.AdjustCredit(ctx, "r1", store.CreditDelta{Available: -7}, now); err != nil {
			t.Fatal(err)
		}
		if ok, err := q.DrawReservation(ctx, "lease", 5); !ok || err != nil {
			t.Fatalf("recorded draw: %v %v", ok, err)
		}
		// A call's webhook event goes with its record (merged, not a reason to run alone).
		if err := q.InsertWebhookEvent(ctx, &store.WebhookEvent{ID: "msg_1", AccountID: "r1", Type: "call.succeeded", Body: "{}", CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
		if r.credit["r1"].Available != -7 || r.draws["lease"] != 5 || len(r.events) != 1 {
			t.Fatalf("recorded %+v %+v %v", r.credit, r.draws, r.events)
		}
		if ca, err := s.Credit(ctx, "r1"); err != nil || ca.AvailableMicro != 0 {
			t.Fatalf("a recording Q wrote: %+v %v", ca, err)
		}
		if _, err := q.LockCredit(ctx, "r1", now); !errors.Is(err, store.ErrNotRecorded) {
			t.Fatalf("read on a recording Q: %v, want ErrNotRecorded", err)
		}
		if _, err := q.OpenReservations(ctx, []string{"lease"}); !errors.Is(err, store.ErrNotRecorded) {
			t.Fatalf("read on a recording Q: %v, want ErrNotRecorded", err)
		}
	})
}

// Savepoint runs jobs in one transaction, each under its own savepoint: a job that fails
// rolls back its own writes alone and the transaction commits the others'.
func TestSavepointRollsBackAFailedJobAlone(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Now().UTC()
		billingAccount(t, s, "s1")
		credit := func(micro int64, fail error) func(context.Context, *store.Q) error {
			return func(ctx context.Context, q *store.Q) error {
				if _, err := q.LockCredit(ctx, "s1", now); err != nil {
					return err
				}
				if err := q.AdjustCredit(ctx, "s1", store.CreditDelta{Available: micro}, now); err != nil {
					return err
				}
				return fail
			}
		}
		bad := errors.New("job refused")
		var errs []error
		err := s.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
			errs = nil
			for i, job := range []func(context.Context, *store.Q) error{credit(10, nil), credit(100, bad), credit(1, nil)} {
				jobErr, err := s.Savepoint(ctx, tx, "job"+string(rune('0'+i)), job)
				if err != nil {
					return err
				}
				errs = append(errs, jobErr)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if errs[0] != nil || !errors.Is(errs[1], bad) || errs[2] != nil {
			t.Fatalf("job errors %v", errs)
		}
		if ca, err := s.Credit(ctx, "s1"); err != nil || ca.AvailableMicro != 11 {
			t.Fatalf("balance %+v %v, want 11 (the failed job's 100 rolled back alone)", ca, err)
		}
	})
}

package idempotency_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/idempotency"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

func row(run string, now time.Time) *idempotency.Key {
	return &idempotency.Key{Scope: "acct/key", Tool: "t", IdemKey: "k", RequestHash: "h", CallID: "call-" + run, RunID: run,
		State: idempotency.InFlight, CreatedAt: now, StartedAt: now, ExpiresAt: now.Add(24 * time.Hour)}
}

// TestOneHolderPerKey: of concurrent Begins one inserts and the others read its row; of two
// take-overs of one run one wins; a run that lost its row records nothing; an expired row is
// replaced.
func TestOneHolderPerKey(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		keys := idempotency.New(st)
		now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
		var inserted atomic.Int32
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Go(func() {
				held, ins, err := keys.Begin(ctx, row(fmt.Sprint(i), now))
				if err != nil {
					t.Error(err)
					return
				}
				if ins {
					inserted.Add(1)
				} else if held.RunID == fmt.Sprint(i) {
					t.Errorf("run %d read back as the holder without inserting", i)
				}
			})
		}
		wg.Wait()
		if inserted.Load() != 1 {
			t.Fatalf("%d Begins inserted, want 1", inserted.Load())
		}
		held, _, err := keys.Begin(ctx, row("late", now))
		if err != nil {
			t.Fatal(err)
		}
		a, b := row("a", now.Add(time.Minute)), row("b", now.Add(time.Minute))
		okA, errA := keys.TakeOver(ctx, held, a)
		okB, errB := keys.TakeOver(ctx, held, b)
		if errA != nil || errB != nil || !okA || okB {
			t.Fatalf("take-overs: %v %v, %v %v; want the first only", okA, errA, okB, errB)
		}
		if err := keys.Finish(ctx, held, "", []byte("stale"), "mk1"); err != nil { // the run taken over
			t.Fatal(err)
		}
		if err := keys.Finish(ctx, a, "NOT_FOUND", []byte("answer"), "mk1"); err != nil {
			t.Fatal(err)
		}
		got, ins, err := keys.Begin(ctx, row("again", now.Add(time.Hour)))
		if err != nil || ins || got.State != idempotency.Done || got.Code != "NOT_FOUND" || string(got.Answer) != "answer" || got.MasterKeyID != "mk1" || got.CallID != "call-a" {
			t.Fatalf("after finishing: %+v inserted %v %v", got, ins, err)
		}
		if got, ins, err := keys.Begin(ctx, row("next day", now.Add(24*time.Hour))); err != nil || !ins || got.RunID != "next day" {
			t.Fatalf("a day later: %+v inserted %v %v; want the expired row replaced", got, ins, err)
		}
		if n, err := keys.Sweep(ctx, now.Add(48*time.Hour)); err != nil || n != 1 {
			t.Fatalf("sweep: %d %v", n, err)
		}
	})
}

// TestResealQueries: the answers under another master key are listed in key order, a page
// after another, expired and unanswered rows left out; a re-seal changes a row once, and not
// one a new run or another re-seal changed since it was read; the count follows.
func TestResealQueries(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		keys := idempotency.New(st)
		now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
		mk := map[string]string{"a": "old", "b": "", "c": "old", "d": "new", "e": "old"}
		for _, name := range []string{"e", "a", "d", "c", "b", "f", "x"} {
			k := row(name, now)
			k.IdemKey, k.Tool = "key-"+name, "tool-"+name
			if name == "x" { // expired by the time of the re-seal
				k.ExpiresAt = now.Add(time.Minute)
			}
			if _, _, err := keys.Begin(ctx, k); err != nil {
				t.Fatal(err)
			}
			if name == "f" { // in flight: no answer yet
				continue
			}
			if err := keys.Finish(ctx, k, "", []byte("sealed "+name), mk[name]); err != nil {
				t.Fatal(err)
			}
		}
		later := now.Add(time.Hour)
		var got []string
		var after *idempotency.Key
		for {
			page, err := keys.SealedElsewhere(ctx, "new", later, after, 2)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			for _, k := range page {
				got = append(got, k.RunID+"@"+k.MasterKeyID)
			}
			after = page[len(page)-1]
		}
		if fmt.Sprint(got) != "[a@old b@ c@old e@old]" {
			t.Fatalf("answers under another key, in key order: %v", got)
		}
		if n, err := keys.CountSealedElsewhere(ctx, "new", later); err != nil || n != 4 {
			t.Fatalf("count: %d %v", n, err)
		}
		page, _ := keys.SealedElsewhere(ctx, "new", later, nil, 1)
		a := page[0]
		if ok, err := keys.Reseal(ctx, a, []byte("sealed a again"), "new"); err != nil || !ok {
			t.Fatalf("reseal: %v %v", ok, err)
		}
		if ok, err := keys.Reseal(ctx, a, []byte("sealed a twice"), "new"); err != nil || ok {
			t.Fatalf("a second reseal of the row as first read: %v %v; want no change", ok, err)
		}
		held, _, _ := keys.Begin(ctx, &idempotency.Key{Scope: a.Scope, Tool: a.Tool, IdemKey: a.IdemKey, CreatedAt: later})
		if string(held.Answer) != "sealed a again" || held.MasterKeyID != "new" {
			t.Fatalf("after the reseal: %q under %q", held.Answer, held.MasterKeyID)
		}
		if n, _ := keys.CountSealedElsewhere(ctx, "new", later); n != 3 {
			t.Fatalf("count after one reseal: %d, want 3", n)
		}
	})
}

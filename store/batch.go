package store

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/uptrace/bun"
)

// Batcher commits writes from many goroutines together (group commit): whatever arrives while
// one batch commits goes into the next, in one transaction with one commit, so a burst of N
// writes costs one durable commit instead of N. Each job runs under a savepoint of its own: a
// job that fails rolls back alone and the batch commits the rest. Jobs must be safe to run
// again (a batch is retried whole when the database is unavailable or its commit fails).
//
// A job belongs to a key (an account): Pending and Wait let a reader see its own writes.
type Batcher struct {
	store *Store
	max   int
	log   *slog.Logger
	jobs  chan batchJob

	mu      sync.Mutex
	pending map[string]int // jobs queued or committing, by key
	flushed chan struct{}  // closed and replaced after every batch
	stopped bool           // Run has returned: Add commits at once
}

type batchJob struct {
	key  string
	fn   func(ctx context.Context, q *Q) error
	done func(err error) // the job's own outcome, after its batch committed (or not)
}

// NewBatcher returns a batcher that commits up to max jobs per transaction; Run it.
func (s *Store) NewBatcher(max int, log *slog.Logger) *Batcher {
	return &Batcher{store: s, max: max, log: log, jobs: make(chan batchJob, 4*max),
		pending: map[string]int{}, flushed: make(chan struct{})}
}

// Add queues fn for the next batch; done (may be nil) gets fn's error once its batch has
// committed, or the error that kept the batch from committing at shutdown.
func (b *Batcher) Add(key string, fn func(ctx context.Context, q *Q) error, done func(error)) {
	j := batchJob{key: key, fn: fn, done: done}
	b.mu.Lock()
	b.pending[key]++
	stopped, sent := b.stopped, false
	if !stopped { // queued under the lock: a drain that starts later still finds it
		select {
		case b.jobs <- j:
			sent = true
		default:
		}
	}
	b.mu.Unlock()
	switch {
	case stopped:
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		b.commit(ctx, []batchJob{j})
	case !sent:
		b.jobs <- j // the queue is full: wait for room
	}
}

// Wait returns when every job of key queued before the call has committed (or ctx ended).
func (b *Batcher) Wait(ctx context.Context, key string) error {
	for {
		b.mu.Lock()
		n, ch := b.pending[key], b.flushed
		b.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Idle returns when every job queued before the call has committed (or ctx ended).
func (b *Batcher) Idle(ctx context.Context) error {
	for {
		b.mu.Lock()
		n, ch := len(b.pending), b.flushed
		b.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Run commits batches until ctx ends, then commits what is still queued.
func (b *Batcher) Run(ctx context.Context) {
	for {
		var first batchJob
		select {
		case first = <-b.jobs:
		case <-ctx.Done():
			b.drain()
			return
		}
		b.commit(ctx, b.gather(first))
	}
}

// drain commits what was queued before shutdown, giving the database a few seconds.
func (b *Batcher) drain() {
	b.mu.Lock()
	b.stopped = true
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		select {
		case j := <-b.jobs:
			b.commit(ctx, b.gather(j))
		default:
			return
		}
	}
}

// gather takes first and whatever else is queued now, up to max.
func (b *Batcher) gather(first batchJob) []batchJob {
	batch := []batchJob{first}
	for len(batch) < b.max {
		select {
		case j := <-b.jobs:
			batch = append(batch, j)
		default:
			return batch
		}
	}
	return batch
}

// commit writes one batch, retrying while the database is unavailable (until ctx ends): a
// job's outcome is final only once its batch committed.
func (b *Batcher) commit(ctx context.Context, batch []batchJob) {
	// One order of locks for every batch on every replica: batches cannot deadlock each other.
	slices.SortStableFunc(batch, func(x, y batchJob) int { return strings.Compare(x.key, y.key) })
	errs := make([]error, len(batch))
	var err error
	for attempt := 0; ; attempt++ {
		err = b.store.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
			q := &Q{tx: tx, store: b.store}
			for i, j := range batch {
				sp := fmt.Sprintf("job%d", i)
				if _, err := tx.ExecContext(ctx, "SAVEPOINT "+sp); err != nil {
					return err
				}
				errs[i] = j.fn(ctx, q)
				if errs[i] != nil && IsUnavailable(errs[i]) {
					return errs[i] // the database, not the job: retry the batch
				}
				end := "RELEASE SAVEPOINT " + sp
				if errs[i] != nil {
					end = "ROLLBACK TO SAVEPOINT " + sp
				}
				if _, err := tx.ExecContext(ctx, end); err != nil {
					return err
				}
			}
			return nil
		})
		if err == nil || ctx.Err() != nil {
			break
		}
		b.log.WarnContext(ctx, "batch commit failed; retrying", "jobs", len(batch), "attempt", attempt+1, "err", err)
		sleep(ctx, min(time.Duration(attempt+1)*100*time.Millisecond, 2*time.Second))
	}
	for i, j := range batch {
		if err != nil {
			errs[i] = err
		}
		if j.done != nil {
			j.done(errs[i])
		}
	}
	b.mu.Lock()
	for _, j := range batch {
		if b.pending[j.key]--; b.pending[j.key] <= 0 {
			delete(b.pending, j.key)
		}
	}
	close(b.flushed)
	b.flushed = make(chan struct{})
	b.mu.Unlock()
}

// Package commit is how the service's writes reach the database off its callers' path: the
// batch writer (Batcher: group commit in lanes, write-only jobs merged per table) and the
// Journal that keeps an outcome on local disk while the database is away.
package commit

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/uptrace/bun"
)

// A lane commits writes from many goroutines together (group commit): whatever arrives while
// one batch commits goes into the next, in one transaction with one commit, so a burst of N
// writes costs one durable commit instead of N. Each job runs under a savepoint of its own: a
// job that fails rolls back alone and the batch commits the rest. Jobs must be safe to run
// again (a batch is retried whole when the database is unavailable or its commit fails).
//
// A lane's jobs commit in the order they were added, so Wait and Idle can tell a reader when
// what was queued before it has landed.
type lane struct {
	w    *writer
	max  int
	log  *slog.Logger
	wake chan struct{} // a job was queued
	// gather is how long the lane waits, after a batch of gatherAfter jobs or more (it is
	// under load), for more before it starts the next: fewer, fuller commits (SQLite).
	gather time.Duration

	mu        sync.Mutex
	queue     []*batchJob
	added     uint64            // sequence number of the last job queued
	committed uint64            // every job up to this one has committed (or failed for good)
	lastOf    map[string]uint64 // sequence number of each key's last job
	flushed   chan struct{}     // closed and replaced after every batch
	stopped   bool              // Run has returned: Add commits at once

	beforeCommit func() // nil, or the tests' failpoint (Batcher.BeforeCommit)
}

type batchJob struct {
	seq   uint64
	key   string
	fn    func(ctx context.Context, q *store.Q) error
	done  func(err error) // the job's own outcome, after its batch committed (or not)
	merge bool            // write-only: merged with its batch's other such jobs (merge.go)
}

// Batcher is a set of lanes, each a batch writer of its own over its own connection; a key's
// jobs always go to the same lane, so they commit in order, and lanes hold disjoint keys'
// rows (each key is an account), so their batches never wait for each other. PostgreSQL gets
// several lanes (round trips overlap), SQLite one (it has one writer).
type Batcher struct {
	lanes []*lane
}

// BeforeCommit sets fn to run in every batch's transaction after its writes, before its
// commit (the crash-consistency tests kill the process there); call it before Run.
func (b *Batcher) BeforeCommit(fn func()) {
	for _, l := range b.lanes {
		l.beforeCommit = fn
	}
}

// NewBatcher returns a batcher of st that commits up to max jobs per transaction in each
// lane; Run it.
func NewBatcher(st *store.Store, max int, log *slog.Logger) *Batcher {
	n := 1
	if st.Postgres() {
		n = batchLanes
	}
	b, w := &Batcher{}, &writer{store: st}
	for range n {
		l := &lane{w: w, max: max, log: log, wake: make(chan struct{}, 1), lastOf: map[string]uint64{}, flushed: make(chan struct{})}
		if !st.Postgres() {
			l.gather = sqliteGather
		}
		b.lanes = append(b.lanes, l)
	}
	return b
}

// batchLanes is how many lanes a batcher has on PostgreSQL. Each lane's batch is three round
// trips (begin, its writes, commit); more lanes overlap more of them, but each commit then
// carries fewer calls and PostgreSQL parses, plans and flushes more of them: on 2 cores
// shared with the server, 32 callers got 3,050 calls/s with 1 or 2 lanes, 2,750 with 4, 2,200
// with 8.
const batchLanes = 2

// SQLite's writer, after a batch of gatherAfter calls or more, waits sqliteGather for more
// before its next commit: each commit costs SQLite about 0.15 ms of CPU whatever it holds,
// CPU the callers' requests then have. Under 32 callers on 2 cores it committed 8,800
// batches in 5 s without the wait and 3,300 with it, and answered 4,440 calls/s instead of
// 3,950 (2 ms: 3,800; after every batch of 2 or more: 4,200 with 0.3 ms). A lone caller, or
// two, never waits: their batches hold one or two calls. On PostgreSQL, whose batches take
// three round trips and gather calls meanwhile, waiting gained nothing.
const (
	gatherAfter  = 4
	sqliteGather = time.Millisecond
)

func (b *Batcher) lane(key string) *lane {
	h := fnv.New32a()
	h.Write([]byte(key))
	return b.lanes[h.Sum32()%uint32(len(b.lanes))]
}

// Add queues fn for key's lane (see lane.Add).
func (b *Batcher) Add(key string, fn func(ctx context.Context, q *store.Q) error, done func(error)) {
	b.lane(key).Add(key, fn, done, false)
}

// AddWrites is Add for a job that only writes: inserts, balance and key deltas, ledger
// postings, first events and draws from a lease. Such jobs are merged with the others of
// their batch; one that reaches for anything else (a read, a conditional write) runs alone.
func (b *Batcher) AddWrites(key string, fn func(ctx context.Context, q *store.Q) error, done func(error)) {
	b.lane(key).Add(key, fn, done, true)
}

// Pending reports whether key has jobs queued or committing ("": any key).
func (b *Batcher) Pending(key string) bool {
	if key != "" {
		return b.lane(key).Pending(key)
	}
	for _, l := range b.lanes {
		if l.Pending("") {
			return true
		}
	}
	return false
}

// Wait returns when every job of key queued before the call has committed (or ctx ended).
func (b *Batcher) Wait(ctx context.Context, key string) error { return b.lane(key).Wait(ctx, key) }

// Idle returns when every job queued before the call has committed (or ctx ended).
func (b *Batcher) Idle(ctx context.Context) error {
	for _, l := range b.lanes {
		if err := l.Idle(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Run commits batches in every lane until ctx ends, then commits what is still queued.
func (b *Batcher) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, l := range b.lanes {
		wg.Go(func() { l.Run(ctx) })
	}
	wg.Wait()
}

// Add queues fn for the next batch; done (may be nil) gets fn's error once its batch has
// committed, or the error that kept the batch from committing at shutdown. key names whose
// write it is (an account), for Wait.
func (b *lane) Add(key string, fn func(ctx context.Context, q *store.Q) error, done func(error), merge bool) {
	b.mu.Lock()
	if len(b.queue) >= maxQueued && !b.stopped {
		b.mu.Unlock()
		b.backOff()
		b.mu.Lock()
	}
	b.added++
	j := &batchJob{seq: b.added, key: key, fn: fn, done: done, merge: merge}
	b.lastOf[key] = j.seq
	stopped := b.stopped
	if !stopped {
		b.queue = append(b.queue, j)
	}
	b.mu.Unlock()
	if stopped {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		b.commit(ctx, []*batchJob{j})
		return
	}
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// maxQueued is how many jobs may wait before Add holds its caller back (at most backOffFor):
// callers then go at the pace the database commits, instead of queueing without bound.
const (
	maxQueued  = 4096
	backOffFor = time.Second
)

// backOff waits until the queue is below maxQueued, or backOffFor has passed (the database
// is away: memory grows, but no caller hangs).
func (b *lane) backOff() {
	timeout := time.NewTimer(backOffFor)
	defer timeout.Stop()
	for {
		b.mu.Lock()
		full, ch := len(b.queue) >= maxQueued && !b.stopped, b.flushed
		b.mu.Unlock()
		if !full {
			return
		}
		select {
		case <-ch:
		case <-timeout.C:
			return
		}
	}
}

// Pending reports whether key has jobs queued or committing ("": any key).
func (b *lane) Pending(key string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if key == "" {
		return b.added > b.committed
	}
	return b.lastOf[key] > b.committed
}

// Wait returns when every job of key queued before the call has committed (or ctx ended).
func (b *lane) Wait(ctx context.Context, key string) error {
	b.mu.Lock()
	target := b.lastOf[key]
	b.mu.Unlock()
	return b.waitFor(ctx, target)
}

// Idle returns when every job queued before the call has committed (or ctx ended).
func (b *lane) Idle(ctx context.Context) error {
	b.mu.Lock()
	target := b.added
	b.mu.Unlock()
	return b.waitFor(ctx, target)
}

func (b *lane) waitFor(ctx context.Context, seq uint64) error {
	for {
		b.mu.Lock()
		done, ch := b.committed >= seq, b.flushed
		b.mu.Unlock()
		if done {
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
func (b *lane) Run(ctx context.Context) {
	for {
		batch := b.take()
		if len(batch) > 0 {
			b.commit(ctx, batch)
			if b.gather > 0 && len(batch) >= gatherAfter && len(batch) < b.max {
				sleep(ctx, b.gather)
			}
			continue
		}
		select {
		case <-b.wake:
		case <-ctx.Done():
			b.drain()
			return
		}
	}
}

// take removes up to max queued jobs, oldest first.
func (b *lane) take() []*batchJob {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := min(len(b.queue), b.max)
	batch := slices.Clone(b.queue[:n])
	b.queue = slices.Delete(b.queue, 0, n)
	return batch
}

// drain commits what was queued before shutdown, giving the database a few seconds.
func (b *lane) drain() {
	b.mu.Lock()
	b.stopped = true
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for batch := b.take(); len(batch) > 0; batch = b.take() {
		b.commit(ctx, batch)
	}
}

// commit writes one batch, retrying while the database is unavailable (until ctx ends): a
// job's outcome is final only once its batch committed.
func (b *lane) commit(ctx context.Context, batch []*batchJob) {
	// One order of locks for every batch on every replica: batches cannot deadlock each other.
	ordered := slices.Clone(batch)
	slices.SortStableFunc(ordered, func(x, y *batchJob) int { return strings.Compare(x.key, y.key) })
	errs := make([]error, len(ordered))
	// SQLite runs in the process, under its own writer lock and busy timeout: a batch begun
	// there is finished rather than interrupted (ctx still ends the retries), and its
	// statements skip the watcher goroutine the driver starts per statement on a context that
	// can end (modernc's interruptOnDone; database/sql's per transaction).
	txCtx := ctx
	if !b.w.store.Postgres() {
		txCtx = context.WithoutCancel(ctx)
	}
	var err error
	for attempt := 0; ; attempt++ {
		handled := false
		if b.w.store.Postgres() {
			handled, err = b.inOneTrip(ctx, ordered, errs)
		}
		if !handled {
			err = b.w.store.Tx(txCtx, func(ctx context.Context, tx bun.Tx) error {
				if err := b.runAll(ctx, tx, ordered, errs); err != nil {
					return err
				}
				if b.beforeCommit != nil {
					b.beforeCommit()
				}
				return nil
			})
		}
		if err == nil || ctx.Err() != nil {
			break
		}
		if !store.IsUnavailable(err) {
			// Not the database being away: retrying the same batch would fail the same way.
			// Each job gets a transaction of its own, so one bad job cannot sink the others.
			if len(batch) > 1 {
				b.log.ErrorContext(ctx, "batch failed; committing its jobs one by one", "jobs", len(batch), "err", err)
				for _, j := range ordered {
					b.commitAlone(ctx, j)
				}
				b.flushedUpTo(batch)
				return
			}
			b.log.ErrorContext(ctx, "batch job failed", "err", err)
			break
		}
		b.log.WarnContext(ctx, "batch commit failed; retrying", "jobs", len(batch), "attempt", attempt+1, "err", err)
		sleep(ctx, min(time.Duration(attempt+1)*100*time.Millisecond, 2*time.Second))
	}
	for i, j := range ordered {
		if err != nil {
			errs[i] = err
		}
		if j.done != nil {
			j.done(errs[i])
		}
	}
	b.flushedUpTo(batch)
}

// inOneTrip commits, on PostgreSQL, a batch of write-only jobs only (calls recorded on budget
// leases, the batch writer's common case) as one round trip: BEGIN, their merged draws
// (checked) and writes, COMMIT, sent together, where the general path takes three (BEGIN, the
// writes, COMMIT). handled is false, nothing written, when the batch needs the general path:
// a job that cannot be merged, a draw that missed its lease, a write that failed (the general
// path then finds which job's); err is the database being unavailable (handled: the caller
// retries). A job's own failure before it reaches the database is its errs entry.
func (b *lane) inOneTrip(ctx context.Context, ordered []*batchJob, errs []error) (handled bool, err error) {
	clear(errs)
	m := newMerged()
	for i, j := range ordered {
		// A recording Q is in no transaction: it refuses anything but the writes it records.
		jm, err := b.gatherWrites(ctx, j)
		switch {
		case err == nil:
			m.add(jm)
		case errors.Is(err, store.ErrNotRecorded):
			return false, nil
		default:
			errs[i] = err
		}
	}
	db := b.w.store.DB()
	draws, writes, err := m.statements(b.w, db)
	if err != nil {
		return false, nil
	}
	if len(draws) == 0 && len(writes) == 0 {
		return true, nil // every job failed before reaching the database
	}
	if b.beforeCommit != nil {
		b.beforeCommit()
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return true, err
	}
	defer conn.Close()
	all := append(append([]rowWrite{{text: "BEGIN"}}, checkedDraws(draws, len(m.draws))...), append(writes, rowWrite{text: "COMMIT"})...)
	if _, err := conn.ExecContext(ctx, joined(all)); err != nil {
		// The transaction, begun, is left failed: end it, or drop the connection.
		if _, rerr := conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK"); rerr != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		if store.IsUnavailable(err) {
			return true, err
		}
		if !isDrawsMissed(err) {
			b.log.WarnContext(ctx, "a batch's merged writes failed; running its jobs one by one", "jobs", len(ordered), "err", err)
		}
		return false, nil
	}
	return true, nil
}

// runAll runs a batch's jobs in order inside tx, recording each job's own failure in errs.
// Consecutive write-only jobs are gathered and written merged (merge.go); a merge that fails
// as a whole is undone and its jobs run alone, each under its own savepoint.
func (b *lane) runAll(ctx context.Context, tx bun.Tx, ordered []*batchJob, errs []error) error {
	clear(errs)     // a batch retried whole starts again
	var seg *merged // the segment's writes: its first job's own, the next ones added in
	var segJobs []int
	flush := func() error {
		if len(segJobs) == 0 {
			return nil
		}
		jobs := segJobs
		err := b.w.writeMerged(ctx, tx, seg, fmt.Sprintf("merged%d", jobs[0]))
		seg, segJobs = nil, nil
		if err == nil || store.IsUnavailable(err) {
			return err
		}
		if !errors.Is(err, errDrawsMissed) {
			b.log.WarnContext(ctx, "merged batch writes failed; writing their jobs one by one", "jobs", len(jobs), "err", err)
		}
		for _, i := range jobs {
			jobErr, dbErr := b.run(ctx, tx, i, ordered[i])
			if dbErr != nil {
				return dbErr
			}
			errs[i] = jobErr
		}
		return nil
	}
	for i, j := range ordered {
		switch m, err := b.gatherWrites(ctx, j); {
		case err == nil && seg == nil:
			seg, segJobs = m, append(segJobs, i)
			continue
		case err == nil:
			seg.add(m)
			segJobs = append(segJobs, i)
			continue
		case !errors.Is(err, store.ErrNotRecorded):
			errs[i] = err // it failed before reaching the database
			continue
		}
		if err := flush(); err != nil {
			return err
		}
		jobErr, dbErr := b.run(ctx, tx, i, j)
		if dbErr != nil {
			return dbErr
		}
		errs[i] = jobErr
	}
	return flush()
}

// gatherWrites runs write-only job j on a recording Q to gather its writes, to merge:
// store.ErrNotRecorded when j is not write-only or reached for something a merge cannot hold
// (it runs alone then), or j's own failure before it reached the database.
func (b *lane) gatherWrites(ctx context.Context, j *batchJob) (*merged, error) {
	if !j.merge {
		return nil, store.ErrNotRecorded
	}
	m := newMerged()
	if err := j.fn(ctx, b.w.store.Recording(m)); err != nil {
		return nil, err
	}
	return m, nil
}

// commitAlone commits one job in a transaction of its own (retried while the database is
// unavailable), reporting its outcome.
func (b *lane) commitAlone(ctx context.Context, j *batchJob) {
	if !b.w.store.Postgres() {
		ctx = context.WithoutCancel(ctx) // as commit's batch: SQLite finishes a transaction begun
	}
	var jobErr error
	err := b.w.store.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var dbErr error
		jobErr, dbErr = b.run(ctx, tx, 0, j)
		return dbErr
	})
	if err != nil {
		jobErr = err
	}
	if j.done != nil {
		j.done(jobErr)
	}
}

// flushedUpTo records that batch (a run of consecutive jobs) is done and wakes the waiters.
func (b *lane) flushedUpTo(batch []*batchJob) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.committed = max(b.committed, batch[len(batch)-1].seq)
	for _, j := range batch {
		if b.lastOf[j.key] == j.seq {
			delete(b.lastOf, j.key)
		}
	}
	close(b.flushed)
	b.flushed = make(chan struct{})
}

// run runs job j of a batch under its own savepoint: jobErr is the job's failure (rolled back
// alone), err a failure of the database that sinks the batch.
func (b *lane) run(ctx context.Context, tx bun.Tx, i int, j *batchJob) (jobErr, err error) {
	return b.w.store.Savepoint(ctx, tx, fmt.Sprintf("job%d", i), j.fn)
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

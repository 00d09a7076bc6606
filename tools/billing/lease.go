package billing

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/commit"
	"github.com/switchboard-hq/switchboard/store/ledger"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/tracing"
	"go.opentelemetry.io/otel/attribute"
)

// LeaseConfig sizes budget leases.
type LeaseConfig struct {
	// Calls is how many worst cases of the call that opens or renews a lease it holds, when a
	// quarter of the account's free credit and of the key's unspent limit allow.
	Calls int64
	// TTL is a lease's deadline in the database, moved on every renewal: past it the sweeper
	// of any replica refunds what is left (a replica that died with a lease open).
	TTL time.Duration
	// Renew is how long a replica draws on a lease before replacing it with a new one; well
	// under TTL: a call drawn on a lease is recorded when it ends, so a lease serves only the
	// calls that end before its deadline (Leases.outlasts).
	Renew time.Duration
	// Idle is how long a lease may go unused before its replica returns what is left.
	Idle time.Duration
}

// DefaultLeaseConfig: 64 calls, a 2-minute deadline renewed every 30 s, returned after 2 s idle.
func DefaultLeaseConfig() LeaseConfig {
	return LeaseConfig{Calls: 64, TTL: 2 * time.Minute, Renew: 30 * time.Second, Idle: 2 * time.Second}
}

// Leases serve calls' reservations from budget leases: a lease is a reservation (reserved 0,
// request id "lease:<uuid>") that holds a slice of an API key's spend limit and of its
// account's credit, written in one transaction and checked under the same locks as a call's
// own reservation. This replica then takes each call's worst case from the lease in memory,
// and the call's row, written by the batch writer, names the lease's ledger transaction: the
// lease row keeps holding the call's worst case, so every limit stays as conservative as
// with a reservation per call, until the lease is settled (settleLeaseIn), when what its
// calls charged, summed from their rows, is posted in one transaction and the rest of its
// hold released. A call that does not fit the lease renews it (one transaction, after the
// old lease's settlement); one that does not fit even alone is refused as reserveIn refuses
// it.
//
// A lease is settled when it is renewed, when it goes idle, when the account's holder reads
// its balance on this replica, and at shutdown; a dead replica's lease is settled by the
// sweeper after its deadline, from the rows of the calls it recorded before it died.
type Leases struct {
	svc   *Service
	batch *commit.Batcher
	cfg   LeaseConfig

	mu   sync.Mutex
	open map[string]map[string]*lease // by account, then key id
}

type lease struct {
	accountID string
	used      atomic.Int64 // unix nanoseconds of the last draw

	mu      sync.Mutex // a key's calls draw and renew one at a time
	id      string     // "" until the lease's first transaction commits
	left    int64      // worst case micro-USD this replica may still draw
	renewBy time.Time
	closed  bool // returned: callers take a new lease
	// inflight counts, by lease id, the calls drawn on it whose records are not queued yet;
	// deferred are leases given back while calls were in flight on them: each is returned
	// when its last call's record is queued.
	inflight map[string]int
	deferred map[string]bool
	// returning are this lease's predecessors, returned through the batch writer and perhaps
	// not yet committed, with what they held undrawn: never to be drawn again.
	returning map[string]int64
}

// recordSlack is what a lease's deadline keeps beyond the longest call drawn on it, for the
// call's record to reach the database through the batch writer.
const recordSlack = 30 * time.Second

// outlasts reports whether a call that may run for runs, drawn on a lease at any time before
// the lease is renewed, is recorded (its draw written) before the lease's deadline, when the
// sweeper may refund the lease under it. A longer call (timeoutMs × tries over 60 s with the
// defaults) reserves on its own, with a deadline of its own.
func (ls *Leases) outlasts(runs time.Duration) bool {
	return ls.cfg.Renew+runs+recordSlack <= ls.cfg.TTL
}

// draw takes h's worst case from p's key's lease in memory, opening or renewing the lease
// when it holds too little. Nothing is written until the call concludes (concludeOnLease):
// the lease's return waits for it. It refuses (SPEND_LIMIT, INSUFFICIENT_CREDITS) what
// reserveIn would refuse.
func (ls *Leases) draw(ctx context.Context, p *tools.Principal, h *Hold) (err error) {
	ctx, span := tracing.Child(ctx, "billing.reserve", attribute.Bool("switchboard.budget_lease", true))
	defer func() { tracing.End(span, err) }()
	for {
		l := ls.of(p)
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			continue
		}
		err := ls.take(ctx, l, p, h.r.WorstMicro)
		if err == nil {
			h.lease, h.leaseID = l, l.id
			if l.inflight == nil {
				l.inflight = map[string]int{}
			}
			l.inflight[l.id]++
		}
		l.mu.Unlock()
		return err
	}
}

// ConcludeOnLease queues the whole record of a call held on a lease to the batch writer, in
// one write-only job: record, given the ledger transaction the call's row names (its lease's,
// when it charged anything: its money is posted when the lease is settled; nil otherwise);
// done gets the commit's outcome. It reports false, doing nothing, for a hold not drawn from a lease (it
// was written by Hold: CloseIn concludes it).
func (h *Hold) ConcludeOnLease(ctx context.Context, c Conclusion, now time.Time, record func(ctx context.Context, q *store.Q, ledgerTxn *string) error, done func(error)) bool {
	if h.lease == nil {
		return false
	}
	h.svc.leases.concludeOnLease(ctx, h, c, now, record, done)
	h.lease = nil // concluded once
	return true
}

// concludeOnLease queues h's whole record to the batch writer in one write-only job (the
// check that its lease is still open, then record, naming the lease's ledger transaction
// when the call charged anything), and then, when h was the last call in flight on a lease
// given back meanwhile, that lease's return: a lease is settled only after every call drawn
// on it has been written.
func (ls *Leases) concludeOnLease(ctx context.Context, h *Hold, c Conclusion, now time.Time, record func(ctx context.Context, q *store.Q, ledgerTxn *string) error, done func(error)) {
	l, leaseID, r := h.lease, h.leaseID, h.r
	l.mu.Lock()
	defer l.mu.Unlock()
	ls.batch.AddWrites(r.AccountID, func(ctx context.Context, q *store.Q) error {
		txn, err := ls.svc.concludeOnLeaseIn(ctx, q, leaseID, r, h.limits, c, now)
		if err != nil {
			return err
		}
		return record(ctx, q, txn)
	}, tracing.Committed(ctx, "batch.commit", done))
	if l.inflight[leaseID]--; l.inflight[leaseID] > 0 {
		return
	}
	delete(l.inflight, leaseID)
	if l.deferred[leaseID] {
		delete(l.deferred, leaseID)
		ls.queueReturn(l.accountID, leaseID)
	}
}

func (ls *Leases) of(p *tools.Principal) *lease {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	keys := ls.open[p.AccountID]
	if keys == nil {
		keys = map[string]*lease{}
		ls.open[p.AccountID] = keys
	}
	l := keys[p.KeyID]
	if l == nil {
		l = &lease{accountID: p.AccountID}
		keys[p.KeyID] = l
	}
	return l
}

// take draws worst from l (locked), renewing it first when needed.
func (ls *Leases) take(ctx context.Context, l *lease, p *tools.Principal, worst int64) error {
	now := ls.svc.now()
	if l.id == "" || l.left < worst || !now.Before(l.renewBy) {
		if err := ls.renew(ctx, l, p, worst, now); err != nil {
			return err
		}
	}
	l.left -= worst
	l.used.Store(now.UnixNano())
	return nil
}

// renew replaces l's lease (locked) with a new one. The old lease is returned through the
// batch writer, after the draws queued on it; until that commits, what it still holds counts
// in the database, and the new lease's check leaves out exactly what this replica will never
// draw from the leases it returned (their undrawn parts), so that a key near its limit is
// refused only when the call itself does not fit. Whether a return has committed is read
// under the balance row's lock, which the return needs too: it is either visible or not yet
// begun.
//
// A renewal never locks a lease row that draws may be writing: a batch transaction holds a
// lease row and then takes the balance row, and a renewal holding the balance row while
// waiting for the lease row would deadlock with it.
func (ls *Leases) renew(ctx context.Context, l *lease, p *tools.Principal, worst int64, now time.Time) error {
	if l.id != "" {
		id := l.id
		ls.giveBack(l)
		if !l.deferred[id] {
			// Its settlement is queued behind the records drawn on it: let them commit first,
			// so that what those calls charged counts as spent, not as the old lease's hold.
			// A database slow to take it leaves the check below as conservative as that hold.
			wait, cancel := context.WithTimeout(ctx, recordWait)
			_ = ls.batch.Wait(wait, l.accountID)
			cancel()
		}
	}
	var closed []string // returns seen committed: forgotten once this renewal commits
	now = now.UTC()
	limits, chain := limitsOf(p)
	r := &store.Reservation{RequestID: store.LeasePrefix + uuid.NewString(), AccountID: p.AccountID, KeyID: p.KeyID, KeyChain: chain,
		ExpiresAt: now.Add(ls.cfg.TTL), CreatedAt: now}
	keys := r.SpendKeys()
	err := ls.svc.store.InTx(ctx, func(ctx context.Context, q *store.Q) error {
		closed = closed[:0]
		ca, err := q.LockCredit(ctx, p.AccountID, now)
		if err != nil {
			return err
		}
		ks, err := q.LockKeySpends(ctx, keys)
		if err != nil {
			return err
		}
		if len(l.returning) > 0 {
			open, err := q.OpenReservations(ctx, slices.Collect(maps.Keys(l.returning)))
			if err != nil {
				return err
			}
			c, k := *ca, make([]*store.KeySpend, len(ks))
			for i := range ks {
				row := *ks[i]
				k[i] = &row
			}
			for id, undrawn := range l.returning {
				if open[id] { // held by the account and by every key of the chain
					c.HeldMicro -= undrawn
					for _, row := range k {
						row.HeldMicro -= undrawn
					}
				} else {
					closed = append(closed, id)
				}
			}
			ca, ks = &c, k
		}
		r.WorstMicro = ls.size(ca, ks, worst, limits)
		if err := fits(ca, ks, r.WorstMicro, limits); err != nil {
			return err
		}
		if err := q.InsertReservation(ctx, r); err != nil {
			return err
		}
		if err := q.AdjustCredit(ctx, p.AccountID, store.CreditDelta{Held: r.WorstMicro}, now); err != nil {
			return err
		}
		return q.AdjustKeySpends(ctx, keys, 0, r.WorstMicro)
	})
	if err != nil {
		return err
	}
	for _, id := range closed {
		delete(l.returning, id)
	}
	l.id, l.left, l.renewBy = r.RequestID, r.WorstMicro, now.Add(ls.cfg.Renew)
	return nil
}

// size is what a lease holds: Calls worst cases, within a quarter of the account's free
// credit and of the unspent limit of the key and of each ancestor, and never less than worst
// (which fits then checks exactly as for a call's own reservation).
func (ls *Leases) size(ca *store.CreditAccount, spends []*store.KeySpend, worst int64, limits spendLimits) int64 {
	size := min(worst*ls.cfg.Calls, (ca.AvailableMicro-ca.HeldMicro)/4)
	for i, ks := range spends {
		size = min(size, (limits[i]-ks.SpentMicro-ks.HeldMicro)/4)
	}
	return max(size, worst)
}

// giveBack queues the return of l's lease (l locked) after the records of the calls drawn on
// it, now or, with calls still in flight, when the last of them concludes: the batch writer
// refunds what the lease row still holds then, exactly what no call took.
func (ls *Leases) giveBack(l *lease) {
	id := l.id
	if l.returning == nil {
		l.returning = map[string]int64{}
	}
	l.returning[id] = l.left
	l.id, l.left = "", 0
	if l.inflight[id] > 0 {
		if l.deferred == nil {
			l.deferred = map[string]bool{}
		}
		l.deferred[id] = true
		return
	}
	ls.queueReturn(l.accountID, id)
}

// queueReturn queues the refund of what the lease row id still holds.
func (ls *Leases) queueReturn(accountID, id string) {
	ls.batch.Add(accountID, func(ctx context.Context, q *store.Q) error {
		_, err := ls.svc.refundIn(ctx, q, id, "budget lease returned", ls.svc.now().UTC())
		return err
	}, func(err error) {
		if err != nil && !errors.Is(err, context.Canceled) {
			ls.svc.log.Error("return a budget lease; the sweeper will settle it after its deadline", "lease", id, "err", err)
		}
	})
}

// concludeOnLeaseIn writes inside q's transaction the money of a call drawn on the lease
// leaseID, and returns the ledger transaction its record names. While the lease is open
// nothing moves: the lease row holds the call's worst case, and a charged call names the
// lease's transaction (store.LeaseTxn), which settleLeaseIn posts for all of the lease's calls
// when the lease closes. The check takes the lease row's lock until the commit, so a
// settlement either sees the call's row or finds the lease closed first. A call whose lease
// closed under it (refunded by a sweeper) reserves on its own (reserveIn) and is concluded
// at once, with a transaction of its own. A refunded call holds nothing beyond the lease's
// hold, which its settlement returns: it writes no money at all.
func (s *Service) concludeOnLeaseIn(ctx context.Context, q *store.Q, leaseID string, r *store.Reservation, limits spendLimits, c Conclusion, now time.Time) (_ *string, err error) {
	ctx, span := tracing.Child(ctx, "billing.conclude")
	defer func() { tracing.End(span, err) }()
	if c.Settlement == nil {
		return nil, nil
	}
	if _, err := settleMove(r, *c.Settlement); err != nil { // refuses a charge beyond the worst case held
		return nil, err
	}
	open, err := q.DrawReservation(ctx, leaseID, 0)
	if err != nil {
		return nil, err
	}
	if open {
		txn := store.LeaseTxn(leaseID)
		return &txn, nil
	}
	s.log.WarnContext(ctx, "budget lease closed before its call was recorded; reserving the call on its own", "lease", leaseID, "request_id", r.RequestID)
	return nil, s.reserveSettledIn(ctx, q, r, limits, c, now)
}

// reserveSettledIn holds r on its own (as reserveIn would) and settles it by c at now, in one
// write inside q's transaction: a call whose lease closed before it was recorded.
func (s *Service) reserveSettledIn(ctx context.Context, q *store.Q, r *store.Reservation, limits spendLimits, c Conclusion, now time.Time) (err error) {
	ctx, span := tracing.Child(ctx, "billing.reserve")
	defer func() { tracing.End(span, err) }()
	if err := fitIn(ctx, q, r, limits, nil); err != nil {
		return err
	}
	open, err := written(r, reserveMove(r), r.CreatedAt)
	if err != nil {
		return err
	}
	r.State = store.ReservationOpen // as it is written
	h, err := closing(r, c, now)
	if err != nil {
		return err
	}
	return q.OpenClosed(ctx, r, open, *h, now)
}

// settleLeaseIn closes the lease r (locked, open) inside q's transaction: its hold is
// released, and what the calls recorded on it charged (the rows naming its transaction) is
// taken from the account's available credit, added to its keys' spend, and posted as one
// ledger transaction, one leg per book and kind.
func (s *Service) settleLeaseIn(ctx context.Context, q *store.Q, r *store.Reservation, now time.Time) error {
	txn := store.LeaseTxn(r.RequestID)
	sums, err := ledger.ChargesNaming(ctx, q, r.AccountID, txn)
	if err != nil {
		return err
	}
	m := move{credit: store.CreditDelta{Held: -r.WorstMicro}, held: -r.WorstMicro}
	var infra, platform, gas, total int64
	var legs []ledger.Posting
	for _, c := range sums {
		infra, platform, gas = infra+c.Reserve, platform+c.PlatformFee, gas+c.Gas
		total += c.Reserve + c.PartnerFee + c.PlatformFee + c.Gas
		if c.PartnerFee != 0 {
			legs = append(legs, ledger.Posting{Book: c.PayoutBook, Micro: c.PartnerFee, Kind: "partner_fee"})
		}
	}
	state := store.ReservationRefunded
	if total != 0 {
		state = store.ReservationSettled
		m.credit.Available, m.spent = -total, total
	}
	if err := q.CloseReservation(ctx, r.RequestID, state, now); err != nil {
		return err
	}
	if err := adjust(ctx, q, r, now, m); err != nil {
		return err
	}
	legs = append(legs,
		ledger.Posting{Book: ledger.UserAvailable(r.AccountID), Micro: -total, Kind: "charge"},
		ledger.Posting{Book: BookPlatformInfra, Micro: infra, Kind: "consume"},
		ledger.Posting{Book: BookPlatformFees, Micro: platform, Kind: "platform_fee"},
		ledger.Posting{Book: BookGas, Micro: gas, Kind: "gas"})
	return ledger.PostBatch(ctx, q, txn, now, ledger.Txn{Memo: "settlement of a budget lease's calls", Legs: legs})
}

// ReturnIdle returns the leases unused for the configured idle time.
func (ls *Leases) ReturnIdle() {
	cut := ls.svc.now().Add(-ls.cfg.Idle).UnixNano()
	ls.mu.Lock()
	var out []*lease
	for account, keys := range ls.open {
		for k, l := range keys {
			if l.used.Load() < cut {
				delete(keys, k)
				out = append(out, l)
			}
		}
		if len(keys) == 0 {
			delete(ls.open, account)
		}
	}
	ls.mu.Unlock()
	ls.close(out)
}

// Return returns the leases of accountID ("": all), so that a read of its balance sees no
// budget held for calls that are not running.
func (ls *Leases) Return(accountID string) {
	ls.mu.Lock()
	var out []*lease
	take := func(account string) {
		for _, l := range ls.open[account] {
			out = append(out, l)
		}
		delete(ls.open, account)
	}
	if accountID != "" {
		take(accountID)
	} else {
		for account := range ls.open {
			take(account)
		}
	}
	ls.mu.Unlock()
	ls.close(out)
}

// close marks leases taken out of the map closed and gives back what they hold.
func (ls *Leases) close(out []*lease) {
	for _, l := range out {
		l.mu.Lock()
		l.closed = true
		if l.id != "" {
			ls.giveBack(l)
		}
		l.mu.Unlock()
	}
}

package app

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/dispatch"
	"github.com/switchboard-hq/switchboard/tools/payments"
	"github.com/switchboard-hq/switchboard/tools/service"
)

// startBackground starts BuildOn's last layer, the background work every replica runs: the
// key and row watches, the batch writer, webhook deliveries, the SQLite checkpoints, the
// idempotency keys' expiry and the idle leases' return. The returned stop (App.Stop) ends it
// and waits for it, once.
func startBackground(ctx context.Context, cfg Config, d service.Deps, s *services, dr doors) func() {
	st, log := d.Store, d.Log
	bgCtx, cancelBg := context.WithCancel(context.WithoutCancel(ctx))
	var bg sync.WaitGroup
	bg.Go(func() { dr.authn.Watch(bgCtx, 5*time.Second) })
	bg.Go(func() { s.rows.Watch(bgCtx) })
	bg.Go(func() { s.batcher.Run(bgCtx) })
	bg.Go(func() { s.webhooks.Run(bgCtx, time.Second) }) // every replica: leases keep deliveries apart
	bg.Go(func() { repeat(bgCtx, log, time.Second, "checkpoint the SQLite write-ahead log", st.Checkpoint) })
	bg.Go(func() { repeat(bgCtx, log, time.Minute, "forget idempotency keys past 24 hours", s.idem.Sweep) })
	bg.Go(func() { s.wallet.Run(bgCtx, 2*time.Second) }) // every replica: a send ends once whoever sees it
	if cfg.BudgetLeases {
		bg.Go(func() { repeat(bgCtx, log, time.Second, "return idle leases", s.billing.ReturnIdleLeases) })
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			defer s.partners.close()
			s.billing.ReturnLeases("") // queued before the batch writer's last drain
			cancelBg()
			bg.Wait()
			dr.endAsks()
			dr.mcp.Close()
		})
	}
}

// Sweep concludes dispatches a crashed process abandoned (sending idempotent ones again for
// their real outcome) and refunds reservations nobody settled. It is safe on several
// replicas at once.
func (a *App) Sweep(ctx context.Context) (recovered, refunded int, err error) {
	return sweep(ctx, a.dispatch, a.billing, a.payments)
}

// sweep is App.Sweep and Admin.Sweep: one sweep, whoever runs it.
func sweep(ctx context.Context, d *dispatch.Service, b *billing.Service, p *payments.Service) (recovered, refunded int, err error) {
	if recovered, err = d.Recover(ctx); err != nil {
		return recovered, 0, err
	}
	refunded, err = b.Sweep(ctx)
	if err != nil || p == nil {
		return recovered, refunded, err
	}
	concluded, err := p.Reconcile(ctx)
	return recovered + concluded, refunded, err
}

// RunReprobe re-probes active intents every minute, each at the configured interval, until
// ctx ends (claims make it safe on every replica).
func (a *App) RunReprobe(ctx context.Context, every time.Duration) {
	repeat(ctx, a.log, time.Minute, "re-probe", func(ctx context.Context) error {
		_, err := a.partners.Reprobe(ctx, every, 4)
		return err
	})
}

// RunKeyRefresh follows key rotations (another replica's, or the operator's rotate-key) every
// 30 seconds until ctx ends.
func (a *App) RunKeyRefresh(ctx context.Context) {
	a.ring.RunRefresh(ctx, 30*time.Second, func(err error) { a.log.ErrorContext(ctx, "service keys", "err", err) })
}

// RunPayouts pays partners' accrued per-call fees on chain every interval until ctx ends.
func (a *App) RunPayouts(ctx context.Context, every time.Duration) {
	repeat(ctx, a.log, every, "payouts", func(ctx context.Context) error {
		_, err := a.payments.Payouts(ctx)
		return err
	})
}

// RunSweeper sweeps every interval until ctx ends. It first records the outcomes a previous
// run of this data directory journaled and could not commit (a crash, a database outage).
func (a *App) RunSweeper(ctx context.Context, every time.Duration) {
	if n, err := a.billing.ReplayJournal(ctx); err != nil {
		a.log.WarnContext(ctx, "journal replay; the sweeper retries", "err", err)
	} else if n > 0 {
		a.log.InfoContext(ctx, "journal replayed", "outcomes", n)
	}
	repeat(ctx, a.log, every, "sweep", func(ctx context.Context) error {
		_, _, err := a.Sweep(ctx)
		return err
	})
}

// repeat runs job every interval until ctx ends, logging its failures.
func repeat(ctx context.Context, log *slog.Logger, every time.Duration, name string, job func(context.Context) error) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := job(ctx); err != nil && ctx.Err() == nil {
				log.ErrorContext(ctx, name, "err", err)
			}
		}
	}
}

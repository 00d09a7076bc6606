package app

import (
	"context"
	"fmt"

	"github.com/switchboard-hq/switchboard/tools/wallets"
)

// ResealReport is what a re-seal did: the wallet and service key rows (wallets.ResealReport),
// and the idempotency answers (tools/idempotency: the answers of the last 24 hours, such as a
// new API key's secret, are sealed under the master key too).
type ResealReport struct {
	wallets.ResealReport
	IdempotencyAnswersResealed int `json:"idempotencyAnswersResealed"`
	// LeftIdempotencyAnswers are the answers still under an older key when the run ended: 0,
	// with leftWallets and leftServiceKeys, once the old key may be dropped.
	LeftIdempotencyAnswers int `json:"leftIdempotencyAnswers"`
}

// Reseal seals every wallet key, service key and idempotency answer still under an older
// master key again under the current one (the first of SWITCHBOARD_MASTER_KEY), batch wallets
// at a time. Each row moves on its own conditional update, so a run stopped anywhere is
// carried on by the next, replicas may serve meanwhile (they open rows under either key), and
// a finished run leaves nothing to do. done, when set, is told after each wallet. It fails
// when rows are left that no configured key opens: the report names them.
func (a *Admin) Reseal(ctx context.Context, batch int, done func()) (*ResealReport, error) {
	rep := &ResealReport{ResealReport: wallets.ResealReport{CurrentMasterKey: a.sealer.Current()}}
	err := a.ring.Reseal(ctx, &rep.ResealReport)
	if err == nil {
		err = wallets.ResealWallets(ctx, a.store, a.sealer, batch, &rep.ResealReport, done)
	}
	if err == nil {
		var unopenable []string
		rep.IdempotencyAnswersResealed, unopenable, err = a.idempotency.Reseal(ctx)
		rep.Unopenable = append(rep.Unopenable, unopenable...)
	}
	if err = leftAfter(ctx, a, rep, err); err != nil {
		return rep, err
	}
	if n := len(rep.Unopenable); n > 0 {
		return rep, fmt.Errorf("%d row(s) are sealed under a master key SWITCHBOARD_MASTER_KEY does not hold (%v): add that key after the current one and run reseal again", n, rep.Unopenable)
	}
	return rep, nil
}

// leftAfter counts the rows still under an older key once a run ended (with err, kept).
func leftAfter(ctx context.Context, a *Admin, rep *ResealReport, err error) error {
	if err != nil {
		return err
	}
	if rep.LeftWallets, rep.LeftServiceKeys, err = a.accounts.SealedElsewhere(ctx, rep.CurrentMasterKey); err != nil {
		return err
	}
	rep.LeftIdempotencyAnswers, err = a.idempotency.SealedElsewhere(ctx)
	return err
}

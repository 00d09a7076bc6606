package app

import (
	"context"
	"fmt"

	"github.com/switchboard-hq/switchboard/tools/wallets"
)

// Reseal seals every wallet key and service key still under an older master key again under
// the current one (the first of SWITCHBOARD_MASTER_KEY), batch wallets at a time. Each row
// moves on its own conditional update, so a run stopped anywhere is carried on by the next,
// replicas may serve meanwhile (they open rows under either key), and a finished run leaves
// nothing to do. done, when set, is told after each wallet. It fails when rows are left that no
// configured key opens: the report names them.
func (a *Admin) Reseal(ctx context.Context, batch int, done func()) (*wallets.ResealReport, error) {
	rep := &wallets.ResealReport{CurrentMasterKey: a.sealer.Current()}
	err := a.ring.Reseal(ctx, rep)
	if err == nil {
		err = wallets.ResealWallets(ctx, a.store, a.sealer, batch, rep, done)
	}
	if rep.LeftWallets, rep.LeftServiceKeys, err = leftAfter(ctx, a, rep.CurrentMasterKey, err); err != nil {
		return rep, err
	}
	if n := len(rep.Unopenable); n > 0 {
		return rep, fmt.Errorf("%d row(s) are sealed under a master key SWITCHBOARD_MASTER_KEY does not hold (%v): add that key after the current one and run reseal again", n, rep.Unopenable)
	}
	return rep, nil
}

// leftAfter counts the rows still under an older key once a run ended (with err, kept).
func leftAfter(ctx context.Context, a *Admin, current string, err error) (int, int, error) {
	if err != nil {
		return 0, 0, err
	}
	return a.store.SealedElsewhere(ctx, current)
}

package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app"
)

// resealCommand is `switchboard admin reseal`, the middle step of a master key rotation
// (docs/operations.md, "Rotating the master key").
var resealCommand = adminCommand{name: "reseal",
	help: "seal every wallet key, service key and idempotency answer (the last 24 hours' answers kept for Idempotency-Key retries, such as a new API key's secret) " +
		"that is under an older master key again under the current one (the first of SWITCHBOARD_MASTER_KEY), " +
		"after SWITCHBOARD_MASTER_KEY=new,old is on every replica; resumable: run it again after any stop, it carries on, and once it reports leftWallets 0, " +
		"leftServiceKeys 0 and leftIdempotencyAnswers 0 the old key may be dropped",
	run: func(ctx context.Context, adm *app.Admin, _ *adminOptions, _ []string) (any, error) {
		rep, err := adm.Reseal(ctx, 500, nil)
		if err != nil && rep != nil {
			// The report goes with the error: how far the run got, which rows no key opens.
			so, _ := json.Marshal(rep)
			return nil, fmt.Errorf("%w (the run so far: %s)", err, so)
		}
		return rep, err
	}}

package billing

import "context"

// alone is the recorder of a call whose start committed before dispatch and whose outcome
// commits in its own transaction before its caller is answered: a replica without a batch
// writer, and the sweeper's conclusions.
type alone struct{}

func (alone) conclude(ctx context.Context, t *Ticket, e Ending) error {
	inv, events, err := t.end(ctx, e)
	if err != nil {
		return err
	}
	return t.svc.store.InTx(ctx, t.svc.outcomeIn(&inv, e.Attempts, e.Settlement, e.Detail, events))
}

func (alone) kept(error) string { return sweeperKeeps }

package billing

import "context"

// afterAnswer is the recorder of a call whose start committed before dispatch and whose
// outcome may land after its caller is answered: queued to the batch writer (group commit),
// well before its hold's deadline. Past settleAhead before it, the sweeper could refund the
// hold under the settlement, so the outcome commits alone, before the answer.
type afterAnswer struct{}

func (afterAnswer) conclude(ctx context.Context, t *Ticket, e Ending) error {
	s := t.svc
	if !s.now().Add(settleAhead).Before(t.hold.Deadline()) {
		return alone{}.conclude(ctx, t, e)
	}
	inv, events, err := t.end(ctx, e)
	if err != nil {
		return err
	}
	s.rec.Batch.Add(inv.AccountID, s.outcomeIn(&inv, e.Attempts, e.Settlement, e.Detail, events), s.queued(ctx, inv.RequestID))
	return nil
}

func (afterAnswer) kept(error) string { return sweeperKeeps }

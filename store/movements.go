package store

import "context"

// WriteArgs writes an invocation's args (a movement's, completed with what it signs before
// it signs it).
func (q *Q) WriteArgs(ctx context.Context, inv *Invocation) error {
	return q.write(ctx, q.tx.NewUpdate().Model(inv).Column("args").WherePK())
}

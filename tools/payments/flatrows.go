package payments

import (
	"context"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/flatpay"
)

// Payment is flat-fee call requestID's payment (store.ErrNotFound: none was quoted).
func (s *Service) Payment(ctx context.Context, requestID string) (*flatpay.FlatPayment, error) {
	return flatpay.New(s.store).Get(ctx, requestID)
}

// QuotedIn writes p, a payment just quoted (Quoted), in the transaction that records its call.
func QuotedIn(p *flatpay.FlatPayment) func(ctx context.Context, q *store.Q) error {
	return func(ctx context.Context, q *store.Q) error { return flatpay.Insert(ctx, q, p) }
}

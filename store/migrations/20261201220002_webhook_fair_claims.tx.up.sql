-- Fair claims (issue 46): the deliveries in flight (a lease set) are counted per endpoint and
-- account at every claim, and a paused endpoint's pending deliveries are moved to the end of
-- its pause, by endpoint. Indexes only (expand).
CREATE INDEX webhook_deliveries_leased_idx ON webhook_deliveries (lease_until) WHERE lease_until IS NOT NULL;
--bun:split
CREATE INDEX webhook_deliveries_endpoint_due_idx ON webhook_deliveries (endpoint_id, next_attempt_at) WHERE state = 'pending';

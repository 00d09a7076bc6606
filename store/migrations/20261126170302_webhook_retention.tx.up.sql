-- The outbox's retention (issue 38): events older than the retention are pruned by the
-- delivery worker, oldest first, once none of their deliveries is pending.
CREATE INDEX webhook_events_created_idx ON webhook_events (created_at);

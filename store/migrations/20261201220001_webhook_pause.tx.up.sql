-- One account never stalls another's webhooks (issue 46): an endpoint whose attempt timed out
-- is paused until paused_until (no attempt before it; cleared by a success or a replay).
-- Nullable (expand): the previous release never reads or writes it.
ALTER TABLE webhook_endpoints ADD COLUMN paused_until {{.TS}};

-- A replayed webhook delivery is retried for a whole window again (stop 42): retry_from is
-- when its current retry window began, set by a replay; NULL is at its creation (every
-- delivery older than this column, and those a previous release creates mid-upgrade).
ALTER TABLE webhook_deliveries ADD COLUMN retry_from {{.TS}};

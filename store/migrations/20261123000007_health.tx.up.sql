-- Continuous re-probe: when each active intent is probed next, what the last probe found, how
-- many probes in a row failed, and why an intent was deactivated; and the latency of every call,
-- for the quality signals discover ranks by.
ALTER TABLE partner_intents ADD COLUMN next_probe_at {{.TS}};
--bun:split
ALTER TABLE partner_intents ADD COLUMN last_probe_at {{.TS}};
--bun:split
ALTER TABLE partner_intents ADD COLUMN last_probe_result TEXT NOT NULL DEFAULT '';
--bun:split
ALTER TABLE partner_intents ADD COLUMN probe_failures INTEGER NOT NULL DEFAULT 0;
--bun:split
ALTER TABLE partner_intents ADD COLUMN deactivated_reason TEXT NOT NULL DEFAULT '';
--bun:split
ALTER TABLE invocations ADD COLUMN latency_ms INTEGER;

-- Signed events (issue 38): an account's endpoints, the transactional outbox of events (written
-- in the transaction of what caused them), one delivery per event and endpoint, and each
-- delivery's attempts. New tables only (expand).
CREATE TABLE webhook_endpoints (
    id             TEXT PRIMARY KEY,
    account_id     TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    url            TEXT NOT NULL,
    description    TEXT NOT NULL,
    event_types    TEXT NOT NULL,          -- JSON array; [] is every type
    secret_salt    {{.Bytes}} NOT NULL,    -- the HMAC secret is derived from it and the server secret
    created_at     {{.TS}} NOT NULL,
    failing_since  {{.TS}},                -- the first failed attempt of the current run of failures
    disabled_at    {{.TS}},
    disabled_reason TEXT NOT NULL DEFAULT ''
);
--bun:split
CREATE INDEX webhook_endpoints_account_idx ON webhook_endpoints (account_id, created_at);
--bun:split
CREATE TABLE webhook_events (
    id          TEXT PRIMARY KEY,           -- the webhook-id: msg_...
    account_id  TEXT NOT NULL,              -- who receives it (no reference: written on hot paths)
    type        TEXT NOT NULL,
    body        TEXT NOT NULL,              -- the exact bytes sent and signed
    created_at  {{.TS}} NOT NULL,
    fanned_at   {{.TS}}                     -- deliveries created for the endpoints of that moment
);
--bun:split
CREATE INDEX webhook_events_unfanned_idx ON webhook_events (created_at) WHERE fanned_at IS NULL;
--bun:split
CREATE TABLE webhook_deliveries (
    id              TEXT PRIMARY KEY,
    event_id        TEXT NOT NULL REFERENCES webhook_events (id) ON DELETE CASCADE,
    endpoint_id     TEXT NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    account_id      TEXT NOT NULL,
    state           TEXT NOT NULL,          -- pending, delivered, failed (gave up)
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at {{.TS}} NOT NULL,
    lease_until     {{.TS}},
    leased_by       TEXT NOT NULL DEFAULT '',
    last_status     INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT NOT NULL DEFAULT '',
    created_at      {{.TS}} NOT NULL,
    delivered_at    {{.TS}}
);
--bun:split
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
--bun:split
CREATE INDEX webhook_deliveries_account_idx ON webhook_deliveries (account_id, created_at);
--bun:split
CREATE UNIQUE INDEX webhook_deliveries_pair_idx ON webhook_deliveries (event_id, endpoint_id);
--bun:split
CREATE TABLE webhook_attempts (
    id           TEXT PRIMARY KEY,
    delivery_id  TEXT NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    at           {{.TS}} NOT NULL,
    status       INTEGER NOT NULL,          -- the HTTP status, 0 when none came back
    error        TEXT NOT NULL,
    duration_ms  INTEGER NOT NULL
);
--bun:split
CREATE INDEX webhook_attempts_delivery_idx ON webhook_attempts (delivery_id, at);

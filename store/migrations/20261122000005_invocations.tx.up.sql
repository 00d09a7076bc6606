-- Every partner invocation and its state transitions, so an operator can answer "what
-- happened to request X".
CREATE TABLE invocations (
    request_id            TEXT PRIMARY KEY,
    account_id            TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    key_id                TEXT NOT NULL,
    intent_id             TEXT NOT NULL,
    handle                TEXT NOT NULL,
    category              TEXT NOT NULL,
    intent_revision       INTEGER NOT NULL,
    args                  TEXT NOT NULL,
    state                 TEXT NOT NULL,
    reserve_micro         BIGINT NOT NULL,
    max_partner_fee_micro BIGINT NOT NULL,
    max_platform_fee_micro BIGINT NOT NULL,
    attempts              INTEGER NOT NULL DEFAULT 0,
    http_status           INTEGER,
    outcome_code          TEXT NOT NULL DEFAULT '',
    outcome_message       TEXT NOT NULL DEFAULT '',
    output_schema_valid   BOOLEAN,
    partner_fee_micro     BIGINT NOT NULL DEFAULT 0,
    platform_fee_micro    BIGINT NOT NULL DEFAULT 0,
    refunded_micro        BIGINT NOT NULL DEFAULT 0,
    answer                TEXT,
    created_at            {{.TS}} NOT NULL,
    dispatched_at         {{.TS}},
    finished_at           {{.TS}}
);
--bun:split
CREATE INDEX invocations_account_idx ON invocations (account_id, created_at);
--bun:split
CREATE INDEX invocations_intent_idx ON invocations (intent_id, created_at);
--bun:split
CREATE TABLE invocation_events (
    id          TEXT PRIMARY KEY,
    request_id  TEXT NOT NULL REFERENCES invocations (request_id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,
    state       TEXT NOT NULL,
    detail      TEXT NOT NULL DEFAULT '',
    at          {{.TS}} NOT NULL
);
--bun:split
CREATE UNIQUE INDEX invocation_events_request_idx ON invocation_events (request_id, seq);

-- Idempotency keys (issue 38 item 5): one row per (caller, tool, key) for 24 hours. The row is
-- written in_flight in its own transaction before the tool runs and holds the tool's answer,
-- sealed, once it has one. call_id is the requestId a call of invoke_partner_message records
-- its invocation under, so a retry after a crash answers that record. New table only (expand).
CREATE TABLE idempotency_keys (
    scope        TEXT NOT NULL,          -- the account and the key (or portal session) calling
    tool         TEXT NOT NULL,
    idem_key     TEXT NOT NULL,          -- the Idempotency-Key as sent (1..255 characters)
    request_hash TEXT NOT NULL,          -- hex SHA-256 of the tool name and the canonical input
    call_id      TEXT NOT NULL,
    run_id       TEXT NOT NULL,          -- the current run (a run taken over gets a new one)
    state        TEXT NOT NULL,          -- in_flight, done
    code         TEXT NOT NULL DEFAULT '', -- the answer's error code ('' for a result)
    answer       {{.Bytes}},             -- the answer, sealed (AES-256-GCM), once done
    created_at   {{.TS}} NOT NULL,
    started_at   {{.TS}} NOT NULL,       -- the latest run's start (a run taken over restarts it)
    expires_at   {{.TS}} NOT NULL,
    PRIMARY KEY (scope, tool, idem_key)
);
--bun:split
CREATE INDEX idempotency_keys_expiry_idx ON idempotency_keys (expires_at);

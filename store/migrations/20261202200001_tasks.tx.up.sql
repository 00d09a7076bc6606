-- Long-running calls answered as tasks (MCP Tasks extension, REST Prefer: respond-async; issue
-- 50): one row per task, written BEFORE the task is returned, so any replica answers tasks/get.
-- request_id is the invocation the task runs (its money and record are the invocation's);
-- status: working, then completed, failed or cancelled. result is the tool's answer as JSON
-- (bounded by the writer), error the error model body of an answer that is an error.
-- cancel_requested is set by tasks/cancel on any replica; the replica that runs the task
-- (replica) sees it and cancels the partner call. ttl_ms counts from created_at.
CREATE TABLE tasks (
    id               TEXT PRIMARY KEY,
    account_id       TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    key_id           TEXT NOT NULL DEFAULT '',
    request_id       TEXT NOT NULL,
    tool             TEXT NOT NULL,
    status           TEXT NOT NULL,
    status_message   TEXT NOT NULL DEFAULT '',
    result           TEXT,
    error            TEXT,
    cancel_requested BOOLEAN NOT NULL DEFAULT FALSE,
    replica          TEXT NOT NULL DEFAULT '',
    ttl_ms           BIGINT NOT NULL,
    created_at       {{.TS}} NOT NULL,
    updated_at       {{.TS}} NOT NULL
);
--bun:split
CREATE UNIQUE INDEX tasks_request_idx ON tasks (request_id);
--bun:split
CREATE INDEX tasks_status_idx ON tasks (status, updated_at);

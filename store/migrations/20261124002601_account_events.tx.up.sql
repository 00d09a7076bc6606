-- Account events a human must hear of on every device (issue 26): a wallet's private key
-- exported. The other sessions show each event once, at their next page load.
CREATE TABLE account_events (
    id          TEXT PRIMARY KEY,
    account_id  TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    kind        TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    client_addr TEXT NOT NULL,
    detail      TEXT NOT NULL,
    created_at  {{.TS}} NOT NULL
);
--bun:split
CREATE INDEX account_events_account_idx ON account_events (account_id, created_at);
--bun:split
ALTER TABLE sessions ADD COLUMN events_seen_at {{.TS}};

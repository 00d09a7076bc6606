-- Portal sessions of signed-in humans: only a hash of the cookie's token is stored.
CREATE TABLE sessions (
    id           TEXT PRIMARY KEY,
    account_id   TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    token_hash   TEXT NOT NULL UNIQUE,
    method       TEXT NOT NULL,
    client_addr  TEXT NOT NULL,
    user_agent   TEXT NOT NULL,
    created_at   {{.TS}} NOT NULL,
    last_seen_at {{.TS}} NOT NULL,
    expires_at   {{.TS}} NOT NULL,
    revoked_at   {{.TS}}
);
--bun:split
CREATE INDEX sessions_account_idx ON sessions (account_id);

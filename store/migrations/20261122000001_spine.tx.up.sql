-- The spine: accounts, embedded wallets, API keys, e-mail one-time codes.
-- Rendered as a Go template: .TS, .Bytes and .JSON are the dialect's column types.
CREATE TABLE accounts (
    id              TEXT PRIMARY KEY,
    email           TEXT NOT NULL UNIQUE,
    signing_enabled BOOLEAN NOT NULL DEFAULT FALSE,
    created_at      {{.TS}} NOT NULL
);
--bun:split
CREATE TABLE wallets (
    id          TEXT PRIMARY KEY,
    account_id  TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    family      TEXT NOT NULL,
    address     TEXT NOT NULL,
    sealed_key  {{.Bytes}} NOT NULL,
    master_key_id TEXT NOT NULL,
    created_at  {{.TS}} NOT NULL,
    UNIQUE (account_id, family)
);
--bun:split
CREATE TABLE api_keys (
    id                     TEXT PRIMARY KEY,
    account_id             TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name                   TEXT NOT NULL,
    prefix                 TEXT NOT NULL,
    hash                   TEXT NOT NULL UNIQUE,
    scopes                 {{.JSON}} NOT NULL,
    spend_limit_micro      BIGINT NOT NULL,
    rate_limit_per_minute  INTEGER NOT NULL,
    created_at             {{.TS}} NOT NULL,
    last_used_at           {{.TS}},
    revoked_at             {{.TS}}
);
--bun:split
CREATE INDEX api_keys_account_idx ON api_keys (account_id);
--bun:split
CREATE TABLE email_codes (
    email       TEXT PRIMARY KEY,
    code_hash   TEXT NOT NULL,
    attempts    INTEGER NOT NULL DEFAULT 0,
    expires_at  {{.TS}} NOT NULL,
    created_at  {{.TS}} NOT NULL
);
--bun:split
CREATE TABLE email_sends (
    id          TEXT PRIMARY KEY,
    email_hash  TEXT NOT NULL,
    client_addr TEXT NOT NULL,
    sent_at     {{.TS}} NOT NULL
);
--bun:split
CREATE INDEX email_sends_email_idx ON email_sends (email_hash, sent_at);
--bun:split
CREATE INDEX email_sends_client_idx ON email_sends (client_addr, sent_at);

-- Token lookups: tokens learned beyond the embedded registry (public token lists, on-chain
-- metadata, the Jupiter token API) and the watch-only wallets an account connects.
-- Rendered as a Go template: .TS is the dialect's timestamp type.
CREATE TABLE tokens (
    chain          TEXT NOT NULL,
    address_key    TEXT NOT NULL,
    address        TEXT NOT NULL,
    ticker         TEXT NOT NULL,
    name           TEXT NOT NULL,
    ticker_key     TEXT NOT NULL,
    name_key       TEXT NOT NULL,
    base_key       TEXT NOT NULL,
    decimals       INTEGER NOT NULL,
    market_data_id TEXT NOT NULL DEFAULT '',
    listed         BOOLEAN NOT NULL DEFAULT FALSE,
    is_spam        BOOLEAN NOT NULL DEFAULT FALSE,
    spam_reason    TEXT NOT NULL DEFAULT '',
    source         TEXT NOT NULL,
    updated_at     {{.TS}} NOT NULL,
    PRIMARY KEY (chain, address_key)
);
--bun:split
CREATE INDEX tokens_ticker_idx ON tokens (ticker_key);
--bun:split
CREATE INDEX tokens_name_idx ON tokens (name_key);
--bun:split
CREATE INDEX tokens_base_idx ON tokens (base_key);
--bun:split
CREATE INDEX tokens_address_idx ON tokens (address_key);
--bun:split
CREATE TABLE connected_wallets (
    id          TEXT PRIMARY KEY,
    account_id  TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    family      TEXT NOT NULL,
    address     TEXT NOT NULL,
    address_key TEXT NOT NULL,
    label       TEXT NOT NULL DEFAULT '',
    created_at  {{.TS}} NOT NULL,
    UNIQUE (account_id, family, address_key)
);

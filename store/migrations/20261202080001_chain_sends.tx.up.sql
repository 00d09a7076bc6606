-- A wallet's on-chain sends (wallet_send, issue 49): one row per request id, written with the
-- signed transaction BEFORE it is broadcast, so a retry or a crash re-sends those same bytes
-- and never signs a second transaction. nonce is the EVM nonce (NULL on Solana); the unique
-- index refuses two sends of one address on one nonce. status: prepared (recorded, maybe not
-- sent), submitted, then confirmed, failed (mined and reverted, or refused by the node) or
-- dropped (its nonce used by another transaction). amount and fee are integers in the token's
-- and the native coin's smallest units, as text (they outgrow BIGINT).
CREATE TABLE chain_sends (
    request_id   TEXT PRIMARY KEY,
    account_id   TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    chain        TEXT NOT NULL,
    from_address TEXT NOT NULL,
    to_address   TEXT NOT NULL,
    token        TEXT NOT NULL,
    amount       TEXT NOT NULL,
    nonce        BIGINT,
    raw_tx       {{.Bytes}} NOT NULL,
    tx_hash      TEXT NOT NULL,
    valid_until  BIGINT NOT NULL DEFAULT 0,
    status       TEXT NOT NULL,
    reason       TEXT NOT NULL DEFAULT '',
    fee          TEXT NOT NULL DEFAULT '',
    block_number BIGINT NOT NULL DEFAULT 0,
    created_at   {{.TS}} NOT NULL,
    updated_at   {{.TS}} NOT NULL
);
--bun:split
CREATE UNIQUE INDEX chain_sends_nonce_idx ON chain_sends (chain, from_address, nonce);
--bun:split
CREATE INDEX chain_sends_status_idx ON chain_sends (status, updated_at);
--bun:split
-- The next nonce Switchboard gives each (chain, address): taken under a row lock (PostgreSQL;
-- SQLite has one writer) so two replicas never sign two transactions on one nonce.
CREATE TABLE chain_nonces (
    chain      TEXT NOT NULL,
    address    TEXT NOT NULL,
    next       BIGINT NOT NULL,
    updated_at {{.TS}} NOT NULL,
    PRIMARY KEY (chain, address)
);

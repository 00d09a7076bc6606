-- Flat-fee payments on chain: one row per quoted call, following its EIP-3009 authorization
-- from quote to escrow to settlement or refund; and partner payouts in the stablecoin.
CREATE TABLE flat_payments (
    request_id      TEXT PRIMARY KEY,
    account_id      TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    intent_id       TEXT NOT NULL,
    chain_id        BIGINT NOT NULL,
    token           TEXT NOT NULL,
    payer_contract  TEXT NOT NULL,
    partner_address TEXT NOT NULL,
    amount_atomic   BIGINT NOT NULL,
    partner_atomic  BIGINT NOT NULL,
    platform_atomic BIGINT NOT NULL,
    nonce           TEXT NOT NULL UNIQUE,
    valid_after     BIGINT NOT NULL,
    valid_before    BIGINT NOT NULL,
    state           TEXT NOT NULL,
    payer_address   TEXT NOT NULL DEFAULT '',
    pay_tx          TEXT NOT NULL DEFAULT '',
    close_tx        TEXT NOT NULL DEFAULT '',
    reason          TEXT NOT NULL DEFAULT '',
    created_at      {{.TS}} NOT NULL,
    updated_at      {{.TS}} NOT NULL
);
--bun:split
CREATE INDEX flat_payments_state_idx ON flat_payments (state, updated_at);
--bun:split
CREATE TABLE payouts (
    id            TEXT PRIMARY KEY,
    book          TEXT NOT NULL,
    chain_id      BIGINT NOT NULL,
    address       TEXT NOT NULL,
    amount_atomic BIGINT NOT NULL,
    state         TEXT NOT NULL,
    tx            TEXT NOT NULL DEFAULT '',
    reason        TEXT NOT NULL DEFAULT '',
    created_at    {{.TS}} NOT NULL,
    updated_at    {{.TS}} NOT NULL
);
--bun:split
CREATE INDEX payouts_state_idx ON payouts (state);

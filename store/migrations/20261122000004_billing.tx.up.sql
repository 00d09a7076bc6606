-- Billing: credit balances, per-key spend, reservations and a double-entry ledger.
-- Every movement is a transaction of ledger rows summing to zero; credit_accounts and
-- key_spend are the running balances the ledger must agree with (checked by LedgerCheck).
CREATE TABLE credit_accounts (
    account_id      TEXT PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    available_micro BIGINT NOT NULL DEFAULT 0,
    reserved_micro  BIGINT NOT NULL DEFAULT 0,
    held_micro      BIGINT NOT NULL DEFAULT 0,
    updated_at      {{.TS}} NOT NULL
);
--bun:split
CREATE TABLE key_spend (
    key_id      TEXT PRIMARY KEY REFERENCES api_keys (id) ON DELETE CASCADE,
    spent_micro BIGINT NOT NULL DEFAULT 0,
    held_micro  BIGINT NOT NULL DEFAULT 0
);
--bun:split
CREATE TABLE reservations (
    request_id      TEXT PRIMARY KEY,
    account_id      TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    key_id          TEXT NOT NULL,
    reserved_micro  BIGINT NOT NULL,
    worst_micro     BIGINT NOT NULL,
    state           TEXT NOT NULL,
    expires_at      {{.TS}} NOT NULL,
    created_at      {{.TS}} NOT NULL,
    closed_at       {{.TS}}
);
--bun:split
CREATE INDEX reservations_open_idx ON reservations (state, expires_at);
--bun:split
CREATE TABLE ledger_entries (
    id            TEXT PRIMARY KEY,
    txn_id        TEXT NOT NULL,
    request_id    TEXT,
    book          TEXT NOT NULL,
    amount_micro  BIGINT NOT NULL,
    kind          TEXT NOT NULL,
    memo          TEXT NOT NULL DEFAULT '',
    created_at    {{.TS}} NOT NULL
);
--bun:split
CREATE INDEX ledger_entries_request_idx ON ledger_entries (request_id);
--bun:split
CREATE INDEX ledger_entries_book_idx ON ledger_entries (book);
--bun:split
CREATE INDEX ledger_entries_txn_idx ON ledger_entries (txn_id);

-- Credit bought with an x402 payment (credit_topup): one row per quote, following the payer's
-- EIP-3009 TransferWithAuthorization to the treasury from quote to submission to credit. The
-- authorization (payer, nonce) credits once: the unique index refuses a second row for it.
CREATE TABLE credit_topups (
    request_id    TEXT PRIMARY KEY,
    account_id    TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    chain_id      BIGINT NOT NULL,
    token         TEXT NOT NULL,
    pay_to        TEXT NOT NULL,
    amount_atomic BIGINT NOT NULL,
    valid_before  BIGINT NOT NULL,
    state         TEXT NOT NULL,
    payer_address TEXT NOT NULL DEFAULT '',
    nonce         TEXT NOT NULL DEFAULT '',
    pay_tx        TEXT NOT NULL DEFAULT '',
    auth_before   BIGINT NOT NULL DEFAULT 0,
    reason        TEXT NOT NULL DEFAULT '',
    created_at    {{.TS}} NOT NULL,
    updated_at    {{.TS}} NOT NULL
);
--bun:split
CREATE UNIQUE INDEX credit_topups_authorization_idx ON credit_topups (chain_id, payer_address, nonce) WHERE nonce <> '';
--bun:split
CREATE INDEX credit_topups_state_idx ON credit_topups (state, updated_at);

-- Spend policies and approvals (issue 38). New tables only (expand). A policy is the account's
-- (key_id '') or one key's; its body is the JSON of DESIGN.md's policy shape, checked by the
-- policy package before it is written.
CREATE TABLE spend_policies (
    account_id  TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    key_id      TEXT NOT NULL DEFAULT '',
    body        TEXT NOT NULL,
    updated_at  {{.TS}} NOT NULL,
    updated_by  TEXT NOT NULL,              -- "portal", "admin" or the key that narrowed it
    PRIMARY KEY (account_id, key_id)
);
--bun:split
-- A call waiting for its owner's decision: the invocation (state awaiting_approval) holds the
-- quote and the args; this row holds the decision.
CREATE TABLE approvals (
    request_id  TEXT PRIMARY KEY,
    account_id  TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    key_id      TEXT NOT NULL,
    handle      TEXT NOT NULL,
    category    TEXT NOT NULL,
    rule        TEXT NOT NULL,              -- the rule that asked, e.g. approval.aboveUsd
    charge      TEXT NOT NULL,              -- JSON: the itemized most it can cost
    worst_micro BIGINT NOT NULL,
    state       TEXT NOT NULL,              -- pending, approved, declined
    created_at  {{.TS}} NOT NULL,
    expires_at  {{.TS}} NOT NULL,
    decided_at  {{.TS}},
    decided_by  TEXT NOT NULL DEFAULT ''
);
--bun:split
CREATE INDEX approvals_account_idx ON approvals (account_id, created_at);

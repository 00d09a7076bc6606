-- Every money movement is an invocation row (issues 47-49): a partner call, and also a credit
-- top-up, an x402 payment, a wallet send and a partner-proposed transaction, so one record,
-- one usage log and one policy judge cover them all. kind says which; network and tx_hash
-- name the chain transaction of an on-chain movement; value_micro is its USD value when it was
-- judged (a call's charge stays in its fee columns). Rows of a previous release are calls.
ALTER TABLE invocations ADD COLUMN kind TEXT NOT NULL DEFAULT 'call';
--bun:split
ALTER TABLE invocations ADD COLUMN network TEXT;
--bun:split
ALTER TABLE invocations ADD COLUMN tx_hash TEXT;
--bun:split
ALTER TABLE invocations ADD COLUMN value_micro BIGINT NOT NULL DEFAULT 0;

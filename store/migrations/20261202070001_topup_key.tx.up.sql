-- The key that paid a top-up (issue 48): the usage log shows a top-up as a movement of its key,
-- as a call is. Rows from before this column name the account's first root key (the one
-- agent_verify issued), the best the record knows; none when the account has no key.
ALTER TABLE credit_topups ADD COLUMN key_id TEXT NOT NULL DEFAULT '';
--bun:split
UPDATE credit_topups SET key_id = COALESCE((SELECT k.id FROM api_keys k
    WHERE k.account_id = credit_topups.account_id AND k.parent_id IS NULL
    ORDER BY k.created_at ASC, k.id ASC LIMIT 1), '')
WHERE key_id = '';
